// Lorenzo prediction on pre-quantized integers, inside fixed blocks whose
// outside neighbours count as 0. The N-D Lorenzo residual is the composition
// of one backward difference per dimension, and its inverse the composition
// of one prefix sum per dimension, so both run as separable in-place passes.
#ifndef EBZIP_CODEC_LORENZO_H_
#define EBZIP_CODEC_LORENZO_H_

#include <array>
#include <atomic>
#include <cstdint>

#include "absl/types/span.h"
#include "codec/types.h"

namespace ebzip {

// A frame seen as 4-D: ranks below 4 get leading dimensions of extent 1 with
// blocks of 1, which makes no difference to the prediction.
struct BlockGrid {
  std::array<uint64_t, kMaxDims> dims{1, 1, 1, 1};
  std::array<uint64_t, kMaxDims> block{1, 1, 1, 1};

  static BlockGrid Make(absl::Span<const uint64_t> shape, absl::Span<const uint16_t> block);
  uint64_t size() const { return dims[0] * dims[1] * dims[2] * dims[3]; }
};

// q -> residuals, in place. Inputs must satisfy |q| <= 2^26. Once *cancel
// is set (codec/cancel.h) the passes skip their remaining pieces, leaving
// `values` partly transformed: the caller checks the flag and discards them.
void LorenzoForward(const BlockGrid& grid, int32_t* values,
                    const std::atomic<bool>* cancel = nullptr);
// residuals -> q, in place. Wraps (does not trap) on corrupt input; the
// caller bounds-checks nothing here because reconstruction is total.
// Cancelled as LorenzoForward is.
void LorenzoInverse(const BlockGrid& grid, int32_t* values,
                    const std::atomic<bool>* cancel = nullptr);

// The default block for a rank: 256 / 16x16 / 8x8x8 / 1x8x8x8 (4-D runs the
// 3-D predictor on each slice along dimension 0).
std::array<uint16_t, kMaxDims> DefaultBlock(int ndim);

}  // namespace ebzip

#endif  // EBZIP_CODEC_LORENZO_H_
