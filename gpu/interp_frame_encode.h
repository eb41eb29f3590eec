// What the compressor adds around gpu/interp_kernels.h to code an
// interpolation frame inside a batch (FORMAT.md §15.3, §15.8): the fill
// byte mask the encoder takes, the encoder's outliers and S moved into the
// batch's tables, and the histogram of its symbols. `segments` points at the
// first frame's entry of the device segment table.
#ifndef EBZIP_GPU_INTERP_FRAME_ENCODE_H_
#define EBZIP_GPU_INTERP_FRAME_ENCODE_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "gpu/segment.h"

namespace ebzip::gpu {

// Each launch takes `count` consecutive segments of `n` elements each
// (frames of one array, or a survey's samples; gpu/predictor_survey.h), the
// arrays of segment k at k times the given strides.

// mask[i] = 1 where element i of the frame is bit-equal to its item's fill
// value, else 0 (n bytes; segment k's at mask + k * mask_stride).
// `elem_size`: 4 or 8.
cudaError_t LaunchFillByteMask(int elem_size, const Segment* segments, uint32_t count,
                               const Item* items, uint64_t n, uint8_t* mask, uint64_t mask_stride,
                               cudaStream_t stream);

// After LaunchInterpEncodeBatch: segment->positions = counts[0] (S); each
// outlier k < counts[1] sets its element's bit in `outlier_mask` (the
// segment's words from mask_base on, zeroed before) and deltas[symbol_base +
// index] = its residual, as the Lorenzo kernels leave theirs for the section
// writer. Segment k's counts at counts + k * counts_stride, its outliers at
// k * outlier_stride; max_outliers 0 sets S alone (nothing else is read).
cudaError_t LaunchTakeInterpResults(Segment* segments, uint32_t count, const uint32_t* counts,
                                    uint64_t counts_stride, const uint32_t* outlier_index,
                                    const int32_t* outlier_residual, uint64_t outlier_stride,
                                    uint64_t max_outliers, uint32_t* outlier_mask, int32_t* deltas,
                                    cudaStream_t stream);

// Adds each segment's S symbols (symbol_base on, S read from the segment on
// the device) to its histogram (65536 bins, segment k's at histograms + k *
// 65536, zeroed before). `n`: the frames' elements, which S does not exceed
// (sizes the launch).
cudaError_t LaunchSymbolHistogram(const Segment* segments, uint32_t count, const uint16_t* symbols,
                                  uint64_t n, uint32_t* histograms, cudaStream_t stream);

}  // namespace ebzip::gpu

#endif  // EBZIP_GPU_INTERP_FRAME_ENCODE_H_
