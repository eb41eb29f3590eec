// Launchers of the small kernels that join version 2's pieces into the
// decompressor's pipeline (gpu/decompressor.cu): the outlier lists of
// interpolation frames, the interpolation decoder's error words, and fill
// elements from a fill mask (FORMAT.md §15.7). Each enqueues on `stream` and
// returns the launch error; none allocates or synchronizes.
#ifndef EBZIP_GPU_INTERP_FRAME_KERNELS_H_
#define EBZIP_GPU_INTERP_FRAME_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "gpu/interp_tile.h"
#include "gpu/segment.h"

namespace ebzip::gpu {

// The outlier sections (FORMAT.md §5.6: every index, then every residual) of
// the interpolation segments into index[] and residual[], entry j of segment
// s at s.outlier_base + j; Lorenzo segments' entries are left alone
// (LaunchScatterOutliers takes them). An index that is not below the frame's
// n or not above the one before it is kErrOutliers, as the CPU decoder says.
cudaError_t LaunchUnpackInterpOutliers(const Segment* segments, uint32_t num_segments,
                                       uint64_t total_outliers, const Item* items,
                                       uint32_t* index, int32_t* residual, DeviceStatus* status,
                                       cudaStream_t stream);

// errors[s]: segment s's interp::DecodeError bits (0: none). The first
// segment with any is reported as kErrInterp, the bits in
// DeviceStatus::section.
cudaError_t LaunchReportInterpErrors(const uint32_t* errors, uint32_t num_segments,
                                     DeviceStatus* status, cudaStream_t stream);

// A region's frame (no fill mask) before the chunks it needs decode (a
// ChunkRange with a list): every one of its `positions` symbols set to the
// zero residual, then the anchor of each outlier to symbol 0, which an
// outlier's anchor has (§15.5.1). The positions no chunk decoded then read
// as consistent residuals of 0, so the interpolation decoder's checks, run
// over every anchor, find only what the decoded symbols hold. Outliers that
// are not anchors of the frame are left to those checks.
cudaError_t LaunchPrepareRegionSymbols(const interp::Geometry& g, uint16_t* symbols,
                                       uint64_t positions, const uint32_t* outlier_index,
                                       uint64_t num_outliers, cudaStream_t stream);

// output[i] = T(fill_value) wherever mask[i] != 0, i < n (a fill mask's
// elements, §15.7 step 4). `mask` is 8-byte aligned.
cudaError_t LaunchFillFromMask(int elem_size, const uint8_t* mask, uint64_t n, double fill_value,
                               void* output, cudaStream_t stream);

}  // namespace ebzip::gpu

#endif  // EBZIP_GPU_INTERP_FRAME_KERNELS_H_
