// Part of one frame: the elements of a box, decoded without the rest of the
// frame where its predictor allows (codec/region.h decides when it pays).
// Only the Huffman chunks holding the symbols the box needs are decoded,
// each up to its last needed position (a chunk holds a fixed range of
// positions, FORMAT.md §5.3, §15.4), then only the Lorenzo blocks the box
// meets (§8.3), or the interpolation tiles it meets with the lower faces of
// the next ones and the anchors their anchor-grid blocks need (§15.5).
// Nothing is added to the format for it.
#ifndef EBZIP_CODEC_REGION_FRAME_H_
#define EBZIP_CODEC_REGION_FRAME_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "codec/format.h"

namespace ebzip {

// Buffers kept from one frame to the next, so that a region over many
// frames allocates (and the system maps) them once.
struct RegionScratch {
  std::unique_ptr<uint16_t[]> symbols;  // uninitialized: only needed positions are written
  uint64_t symbols_size = 0;
  std::vector<uint8_t> mask;
};

// Decodes the box [lo[d], hi[d]) (lo[d] < hi[d] <= the frame's shape[d])
// of the frame into `out`, which spans the frame's elements in C order:
// the box's elements get exactly the values DecodeFrame gives them; others
// may be written or not. Every section's CRC and padding is checked, and
// every symbol, outlier, fill and verbatim entry the box reads as
// DecodeFrame checks it (not the chunks and entries it does not read).
absl::Status DecodeFrameRegion(absl::Span<const uint8_t> frame, const format::FrameHeader& header,
                               absl::Span<const uint64_t> lo, absl::Span<const uint64_t> hi,
                               uint8_t* out, RegionScratch* scratch,
                               const std::atomic<bool>* cancel = nullptr);

}  // namespace ebzip

#endif  // EBZIP_CODEC_REGION_FRAME_H_
