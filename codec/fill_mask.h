// The fill mask of an interpolation frame (FORMAT.md §15.6): which elements
// are fill, coded as the XOR of each row with the previous one (masks of
// depth levels and months repeat) and then as alternating run lengths, each
// a Huffman-coded class with extra bits, in chunks of 4096 tokens so that a
// GPU decodes chunks in parallel. Fill elements then need no symbol.
#ifndef EBZIP_CODEC_FILL_MASK_H_
#define EBZIP_CODEC_FILL_MASK_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace ebzip {

struct EncodedFillMask {
  std::vector<uint8_t> section;  // the fill section's bytes
  uint64_t tokens = 0;           // the frame header's fill_run_count
};

// `mask` holds one byte per element, 1 for fill; `row` is the number of
// elements per index along dimension 0 (n for a 1-D frame).
EncodedFillMask EncodeFillMask(absl::Span<const uint8_t> mask, uint64_t row);
// The same for a mask of `n` zeros (a frame with no fill element), without
// the mask.
EncodedFillMask EncodeNoFill(uint64_t n);

// Decodes the section into `mask` (mask.size() elements, 1 for fill) and
// returns the number of fill elements. DATA_LOSS (FORMAT.md §15.6's rules)
// on anything inconsistent.
absl::StatusOr<uint64_t> DecodeFillMask(absl::Span<const uint8_t> section, uint64_t tokens,
                                        uint64_t row, absl::Span<uint8_t> mask);

// DecodeFillMask in two steps, so that a frame whose mask has no fill
// element needs no mask: the run lengths of X for a frame of n elements
// (every check made), whether a run of 1s has a length, and M from them
// (the count of fill elements returned).
absl::StatusOr<std::vector<uint32_t>> DecodeFillRuns(absl::Span<const uint8_t> section,
                                                     uint64_t tokens, uint64_t n);
bool AnyFill(const std::vector<uint32_t>& runs);
uint64_t ExpandFillRuns(const std::vector<uint32_t>& runs, uint64_t row, absl::Span<uint8_t> mask);

}  // namespace ebzip

#endif  // EBZIP_CODEC_FILL_MASK_H_
