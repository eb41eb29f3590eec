// Canonical, length-limited Huffman codes: built from a histogram, stored as
// code lengths only (as DEFLATE does), and assigned codes canonically so the
// lengths alone determine every codeword.
#ifndef EBZIP_CODEC_HUFFMAN_CODE_H_
#define EBZIP_CODEC_HUFFMAN_CODE_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace ebzip {

// Code lengths for every symbol of the histogram (0 for unused symbols),
// none longer than max_length. Deterministic: ties break on symbol value.
// A histogram with one used symbol gets a 1-bit code. At least one count must
// be non-zero and max_length must allow 2^max_length >= used symbols.
std::vector<uint8_t> BuildCodeLengths(absl::Span<const uint32_t> histogram, int max_length);

// A symbol that occurs, and how often.
struct SymbolCount {
  uint32_t symbol;
  uint32_t count;  // > 0
};
// The same lengths for the used symbols alone (ascending, as a histogram
// lists them), in their order: the GPU codec sends only these to the host.
std::vector<uint8_t> BuildCodeLengths(absl::Span<const SymbolCount> used, int max_length);

// Canonical codewords (right-aligned, MSB first) for the given lengths.
std::vector<uint32_t> CanonicalCodes(absl::Span<const uint8_t> lengths);

// Calls fn(symbol, length) for every symbol with a code, in symbol order.
// Most of an alphabet (65,536 symbols at the default radius) has none, and
// each frame's code and decode table pass over all of it: runs of zeros go
// by eight lengths at a time.
template <typename Fn>
void ForEachCodedSymbol(absl::Span<const uint8_t> lengths, Fn&& fn) {
  const uint8_t* p = lengths.data();
  const size_t n = lengths.size();
  size_t s = 0;
  for (; s + 8 <= n; s += 8) {
    uint64_t word;
    std::memcpy(&word, p + s, 8);
    if (word == 0) continue;
    for (size_t i = s; i < s + 8; ++i) {
      if (p[i] != 0) fn(static_cast<uint32_t>(i), p[i]);
    }
  }
  for (; s < n; ++s) {
    if (p[s] != 0) fn(static_cast<uint32_t>(s), p[s]);
  }
}

// The code-length section (FORMAT.md §Code lengths).
void AppendCodeLengths(absl::Span<const uint8_t> lengths, std::vector<uint8_t>* out);
// The most bytes that section takes for an alphabet of `alphabet` symbols:
// a byte per symbol, plus at most one more per run of unused symbols (a run
// of r costs at most r + 1 bytes), and runs are separated by used symbols.
inline uint64_t MaxCodeLengthBytes(uint64_t alphabet) { return alphabet + (alphabet + 1) / 2; }
// The same bytes for an alphabet of `alphabet` symbols of which only
// `symbols` (ascending) have codes, of `lengths`, in time of those alone.
void AppendCodeLengths(absl::Span<const uint32_t> symbols, absl::Span<const uint8_t> lengths,
                       uint32_t alphabet, std::vector<uint8_t>* out);
// The bytes those two write for the used symbols `used` (ascending) of an
// alphabet of `alphabet`: they depend on which symbols are used, not on
// their lengths, so a code's size can be known before its lengths are.
uint64_t CodeLengthBytes(absl::Span<const SymbolCount> used, uint32_t alphabet);
// Parses exactly `alphabet` lengths, each <= max_length, at least one used,
// satisfying Kraft's inequality. DATA_LOSS otherwise.
absl::StatusOr<std::vector<uint8_t>> ParseCodeLengths(absl::Span<const uint8_t> bytes,
                                                      uint32_t alphabet, int max_length);

}  // namespace ebzip

#endif  // EBZIP_CODEC_HUFFMAN_CODE_H_
