// A box [lo, hi) of a frame, padded to four dimensions as the block grids
// pad a frame (leading dimensions of extent 1), walked as lines along the
// last dimension: what the region decoders (region_frame.cc,
// lorenzo_frame.cc) visit.
#ifndef EBZIP_CODEC_FRAME_BOX_H_
#define EBZIP_CODEC_FRAME_BOX_H_

#include <array>
#include <cstdint>

#include "absl/types/span.h"
#include "codec/format.h"

namespace ebzip {

struct FrameBox {
  static constexpr int kDims = 4;
  std::array<uint64_t, kDims> lo{0, 0, 0, 0}, hi{1, 1, 1, 1}, dims{1, 1, 1, 1};

  // `l` and `u` per dimension of the frame `h`.
  FrameBox(const format::FrameHeader& h, absl::Span<const uint64_t> l,
           absl::Span<const uint64_t> u) {
    const int pad = kDims - h.ndim;
    for (int d = 0; d < h.ndim; ++d) {
      lo[pad + d] = l[d];
      hi[pad + d] = u[d];
      dims[pad + d] = h.shape[d];
    }
  }

  // Lines along the last dimension, each hi[3] - lo[3] elements.
  uint64_t lines() const { return (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]); }
  // The frame index of the first element of line `line` (C order).
  uint64_t LineStart(uint64_t line) const {
    const uint64_t x2 = lo[2] + line % (hi[2] - lo[2]);
    line /= hi[2] - lo[2];
    const uint64_t x1 = lo[1] + line % (hi[1] - lo[1]);
    const uint64_t x0 = lo[0] + line / (hi[1] - lo[1]);
    return ((x0 * dims[1] + x1) * dims[2] + x2) * dims[3] + lo[3];
  }
  // fn(first, count) for each line, in C order.
  template <typename Fn>
  void ForEach(Fn fn) const {
    for (uint64_t x0 = lo[0]; x0 < hi[0]; ++x0) {
      for (uint64_t x1 = lo[1]; x1 < hi[1]; ++x1) {
        for (uint64_t x2 = lo[2]; x2 < hi[2]; ++x2) {
          fn(((x0 * dims[1] + x1) * dims[2] + x2) * dims[3] + lo[3], hi[3] - lo[3]);
        }
      }
    }
  }
  // Whether frame element `index` lies in the box.
  bool Contains(uint64_t index) const {
    for (int d = kDims - 1; d >= 0; --d) {
      const uint64_t x = index % dims[d];
      if (x < lo[d] || x >= hi[d]) return false;
      index /= dims[d];
    }
    return true;
  }
};

}  // namespace ebzip

#endif  // EBZIP_CODEC_FRAME_BOX_H_
