// Version 2's steps before the codes: each frame's predictor, chosen on the
// device's survey (gpu/predictor_survey.h), and the interpolation frames'
// encoding in batches (the Lorenzo ones are coded by LaunchPredict).
#ifndef EBZIP_GPU_COMPRESS_V2_FRAMES_H_
#define EBZIP_GPU_COMPRESS_V2_FRAMES_H_

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "gpu/compress_plan.h"
#include "gpu/gpu_codec.h"
#include "gpu/stage_timer.h"

namespace ebzip::gpu::compress {

// Each frame's predictor, chosen as the CPU codec chooses it
// (codec/predictor_choice.h) on the device's survey of the same samples
// (gpu/predictor_survey.h): the survey's first part runs while the device's
// bound for every item comes to the host (the first synchronization, on an
// event); the host plans each archive again with the bound, the survey's
// second part ends in the second; then the segments are laid out for the
// winners.
absl::Status ChoosePredictors(absl::Span<const CompressTask> tasks, Plan* plan, const Buffers& b,
                              cudaStream_t st, StageTimer* timer);

// Interpolation frames in batches (the Lorenzo ones are coded by
// LaunchPredict): fill bytes, the encoder, its outliers and S into the
// batch's tables, the histograms, and each fill mask's size.
absl::Status EncodeInterpFrames(const Plan& plan, const Buffers& b, cudaStream_t st);

}  // namespace ebzip::gpu::compress

#endif  // EBZIP_GPU_COMPRESS_V2_FRAMES_H_
