// Which predictor codes a frame (FORMAT.md §15.9): each candidate runs on a
// sample of the frame and the smallest estimated frame wins, the way SZ3
// picks its predictor. Sizes of both entropy stages are exact from
// histograms, so an estimate costs a prediction pass, not an encoding.
#ifndef EBZIP_CODEC_PREDICTOR_CHOICE_H_
#define EBZIP_CODEC_PREDICTOR_CHOICE_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "codec/frame_codec.h"
#include "codec/frame_content.h"

namespace ebzip {

// The candidates §15.9 lists for the frame, restricted by p.predictor and
// p.interp_order, in order of preference.
std::vector<PredictorConfig> Candidates(const FrameParams& p);

// The frame's estimated size in bits with this content, under p.lossless.
uint64_t EstimateBits(const FrameParams& p, const FrameContent& content);

// The sample of §15.9: stripes of stripe_rows whole rows starting at each of
// first_rows, copied together and taken as a frame; no stripes: the whole
// frame is the sample.
struct FrameSample {
  uint64_t stripe_rows = 0;
  std::vector<uint64_t> first_rows;
  bool whole_frame() const { return first_rows.empty(); }
};
FrameSample SampleOf(const FrameParams& p);
// The frame parameters of the sample taken as a frame.
FrameParams SampleParams(const FrameParams& p, const FrameSample& sample);

// The candidate with the smallest estimate on the frame's sample (the first
// of equal ones). CANCELLED soon after *cancel is set. `fill`: FindFill's
// for the frame, or null (computed here when needed). When the sample is the
// whole frame and `whole` is given, *whole gets the winner's content, which
// is the frame's: the caller need not predict it again.
absl::StatusOr<PredictorConfig> ChoosePredictor(const FrameParams& p, const uint8_t* data,
                                                const std::atomic<bool>* cancel,
                                                const FrameFill* fill = nullptr,
                                                std::optional<FrameContent>* whole = nullptr);

// ChoosePredictor's answer from the sample alone, copied together at
// `sample_data` (what a caller holding the frame elsewhere, such as on a GPU,
// brings to the host).
absl::StatusOr<PredictorConfig> ChooseOnSample(const FrameParams& p, const FrameSample& sample,
                                               const uint8_t* sample_data,
                                               const std::atomic<bool>* cancel);

}  // namespace ebzip

#endif  // EBZIP_CODEC_PREDICTOR_CHOICE_H_
