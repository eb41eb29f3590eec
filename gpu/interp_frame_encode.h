// What the compressor adds around gpu/interp_kernels.h to code an
// interpolation frame inside a batch (FORMAT.md §15.3, §15.8): the fill
// byte mask the encoder takes, the encoder's outliers and S moved into the
// batch's tables, and the histogram of its symbols. One frame per launch;
// `segment` points at the frame's entry of the device segment table.
#ifndef EBZIP_GPU_INTERP_FRAME_ENCODE_H_
#define EBZIP_GPU_INTERP_FRAME_ENCODE_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "gpu/segment.h"

namespace ebzip::gpu {

// mask[i] = 1 where element i of the frame is bit-equal to its item's fill
// value, else 0 (n bytes). `elem_size`: 4 or 8.
cudaError_t LaunchFillByteMask(int elem_size, const Segment* segment, const Item* items,
                               uint64_t n, uint8_t* mask, cudaStream_t stream);

// After LaunchInterpEncode: segment->positions = counts[0] (S); each outlier
// k < counts[1] sets its element's bit in `outlier_mask` (the segment's
// words from mask_base on, zeroed before) and deltas[symbol_base + index] =
// its residual, as the Lorenzo kernels leave theirs for the section writer.
cudaError_t LaunchTakeInterpResults(Segment* segment, const uint32_t* counts,
                                    const uint32_t* outlier_index, const int32_t* outlier_residual,
                                    uint64_t max_outliers, uint32_t* outlier_mask, int32_t* deltas,
                                    cudaStream_t stream);

// Adds the frame's S symbols (symbol_base on, S read from the segment on the
// device) to `histogram` (its 65536 bins, zeroed before). `n`: the frame's
// elements, which S does not exceed (sizes the launch).
cudaError_t LaunchSymbolHistogram(const Segment* segment, const uint16_t* symbols, uint64_t n,
                                  uint32_t* histogram, cudaStream_t stream);

}  // namespace ebzip::gpu

#endif  // EBZIP_GPU_INTERP_FRAME_ENCODE_H_
