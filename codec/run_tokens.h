// Zero-run tokens (FORMAT.md §15.4): inside a chunk, a maximal run of k >= 2
// positions whose symbol is `radius` (a zero residual) is coded as tokens of
// class c = floor(log2 k) followed by c extra bits, which is what breaks
// Huffman's floor of one bit per value. One definition of the tokens for the
// encoder, the histogram the code is built from, and (through TokenAt) the
// decoders, on the host and the device.
#ifndef EBZIP_CODEC_RUN_TOKENS_H_
#define EBZIP_CODEC_RUN_TOKENS_H_

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/types/span.h"
#include "codec/format.h"
#include "codec/host_device.h"

namespace ebzip {

// Whether a frame's symbols are coded with run tokens, and the radius that
// names the zero residual. Run tokens are the symbols base() .. base()+11.
struct RunTokens {
  bool enabled = false;
  uint32_t radius = 0;

  EBZIP_HD uint32_t base() const { return 2 * radius; }
  EBZIP_HD bool IsRun(uint32_t symbol) const { return enabled && symbol >= base(); }
};

// The class of a run of k positions, 2 <= k <= kMaxRunPositions.
EBZIP_HD inline int RunClass(uint32_t k) {
  int c = 0;
  while ((k >> (c + 1)) != 0) ++c;
  return c;
}

// Calls token(symbol, extra_bits, extra_value, positions) for every token
// of the positions `symbols` (one chunk), in order (§15.8's split of long
// runs). Without runs, every symbol is its own token.
template <typename Fn>
void ForEachToken(absl::Span<const uint16_t> symbols, const RunTokens& runs, Fn token) {
  const uint64_t n = symbols.size();
  for (uint64_t i = 0; i < n;) {
    const uint16_t s = symbols[i];
    if (!runs.enabled || s != runs.radius) {
      token(s, 0, 0u, 1u);
      ++i;
      continue;
    }
    uint64_t k = 1;
    // Four at a time: runs are most of a smooth field's symbols.
    const uint64_t four = uint64_t{s} * 0x0001000100010001ull;
    while (i + k + 4 <= n) {
      uint64_t next;
      std::memcpy(&next, symbols.data() + i + k, sizeof(next));
      if (next != four) break;
      k += 4;
    }
    while (i + k < n && symbols[i + k] == s) ++k;
    i += k;
    while (k >= format::kMaxRunPositions + 1) {
      token(runs.base() + format::kRunClasses - 1, format::kRunClasses,
            (1u << format::kRunClasses) - 1, format::kMaxRunPositions);
      k -= format::kMaxRunPositions;
    }
    if (k >= 2) {
      const int c = RunClass(static_cast<uint32_t>(k));
      token(runs.base() + c - 1, c, static_cast<uint32_t>(k) - (1u << c),
            static_cast<uint32_t>(k));
    } else if (k == 1) {
      token(s, 0, 0u, 1u);
    }
  }
}

// The histogram of the tokens of `symbols` cut into chunks of chunk_symbols
// (alphabet 2 * radius, plus the run classes when enabled), and the extra
// bits they carry.
struct TokenStats {
  std::vector<uint32_t> histogram;
  uint64_t extra_bits = 0;
};
TokenStats TokenHistogram(absl::Span<const uint16_t> symbols, uint32_t chunk_symbols,
                          const RunTokens& runs);

// Both entropy stages' counts from one pass over the symbols (chunks of
// chunk_symbols, symbols below 2 * radius): the symbol histogram, and what
// the tokens of §15.4 make of it. Every symbol other than `radius` is its
// own token, so the token histogram is the symbol histogram with radius's
// count replaced by the zeros left alone (runs of one) and the run classes
// after it. Counting a run at once also spares the symbol histogram one
// increment of the same counter per zero, which a long run makes wait on
// each other.
struct SymbolCounts {
  std::vector<uint32_t> histogram;  // per symbol, 2 * radius
  std::array<uint32_t, format::kRunClasses> run_classes{};  // class c at c - 1
  uint32_t lone_zeros = 0;  // zeros not in a run token
  uint64_t extra_bits = 0;  // the run tokens'

  // TokenHistogram's result, with runs enabled.
  TokenStats Tokens(uint32_t radius) const;
};
SymbolCounts CountSymbols(absl::Span<const uint16_t> symbols, uint32_t chunk_symbols,
                          uint32_t radius);

}  // namespace ebzip

#endif  // EBZIP_CODEC_RUN_TOKENS_H_
