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

// Whether a frame's symbols are coded with run tokens (and run-value
// tokens, §15.4.1), and the radius that names the zero residual. Tokens are
// the symbols from base() on: 12 run tokens, then with `values` 52
// run-value tokens.
struct RunTokens {
  bool enabled = false;
  uint32_t radius = 0;
  bool values = false;  // run-value tokens too; only with `enabled`

  // The tokens of a frame header's `lossless` stage.
  EBZIP_HD static RunTokens ForStage(uint32_t lossless, uint32_t radius) {
    return {lossless != format::kLosslessHuffman, radius,
            lossless == format::kLosslessRunValues};
  }
  EBZIP_HD uint8_t stage() const {
    return !enabled ? format::kLosslessHuffman
                    : (values ? format::kLosslessRunValues : format::kLosslessZeroRuns);
  }
  EBZIP_HD uint32_t base() const { return 2 * radius; }
  EBZIP_HD uint32_t alphabet() const {
    return base() + (!enabled ? 0 : (values ? format::kTokensWithRunValues : format::kRunClasses));
  }
  EBZIP_HD bool IsRun(uint32_t symbol) const { return enabled && symbol >= base(); }
};

// The class of a run of k positions, 1 <= k <= kMaxRunPositions:
// floor(log2 k), 0 for k = 0 too. One count-leading-zeros instruction: the
// GPU's token walks call it for every run, with their lanes diverged.
EBZIP_HD inline int RunClass(uint32_t k) {
#ifdef __CUDA_ARCH__
  return 31 - __clz(k | 1u);
#else
  return 31 - __builtin_clz(k | 1u);
#endif
}

// A residual's index among the run-value tokens' (-2, -1, +1, +2), or -1.
EBZIP_HD inline int RunValueIndex(uint32_t symbol, uint32_t radius) {
  const int v = static_cast<int>(symbol) - static_cast<int>(radius);
  return v == -2 ? 0 : v == -1 ? 1 : v == 1 ? 2 : v == 2 ? 3 : -1;
}

// What a token symbol t (IsRun(t)) stands for: 2^klass + e zeros (e its
// klass extra bits), then, for a run-value token, one position of `value`.
// With radius 1 or 2 some run-value tokens name a value that is no symbol
// (below 0 or from 2 * radius on): `valid` is false, and a decoder rejects
// the frame where one occurs (FORMAT.md §15.4.1).
inline constexpr uint32_t kNoRunValue = 0xFFFFFFFFu;
struct RunTokenShape {
  int klass;
  uint32_t value;  // kNoRunValue for a run token
  bool valid;
};
EBZIP_HD inline RunTokenShape ShapeOf(uint32_t token, uint32_t radius) {
  const uint32_t u = token - 2 * radius;
  if (u < static_cast<uint32_t>(format::kRunClasses)) {
    return {static_cast<int>(u) + 1, kNoRunValue, true};
  }
  const uint32_t w = u - format::kRunClasses;
  const int j = static_cast<int>(w & 3);
  const int64_t value = int64_t{radius} + (j < 2 ? j - 2 : j - 1);
  const bool valid = value >= 0 && value < int64_t{2} * radius;
  return {static_cast<int>(w >> 2), valid ? static_cast<uint32_t>(value) : kNoRunValue, valid};
}

// The run-value token of class c with the residual of index j.
EBZIP_HD inline uint32_t RunValueToken(uint32_t radius, int c, int j) {
  return 2 * radius + format::kRunClasses + format::kRunValues * c + j;
}

// Calls token(symbol, extra_bits, extra_value, positions) for every token
// of the positions `symbols` (one chunk), in order (§15.8's split of long
// runs, and with run values a run's last token taking the residual after
// it). Without runs, every symbol is its own token.
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
    const int j = runs.values && i < n ? RunValueIndex(symbols[i], runs.radius) : -1;
    const int c = RunClass(static_cast<uint32_t>(k));
    if (j >= 0) {
      token(RunValueToken(runs.radius, c, j), c, static_cast<uint32_t>(k) - (1u << c),
            static_cast<uint32_t>(k) + 1);
      ++i;
    } else if (k >= 2) {
      token(runs.base() + c - 1, c, static_cast<uint32_t>(k) - (1u << c),
            static_cast<uint32_t>(k));
    } else if (k == 1) {
      token(s, 0, 0u, 1u);
    }
  }
}

// The histogram of the tokens of `symbols` cut into chunks of chunk_symbols
// (over runs.alphabet()), and the extra bits they carry.
struct TokenStats {
  std::vector<uint32_t> histogram;
  uint64_t extra_bits = 0;
};
TokenStats TokenHistogram(absl::Span<const uint16_t> symbols, uint32_t chunk_symbols,
                          const RunTokens& runs);

// All three entropy stages' counts from one pass over the symbols (chunks
// of chunk_symbols, symbols below 2 * radius): the symbol histogram, and
// what the tokens of §15.4 and of §15.4.1 make of it. Every symbol other
// than `radius` is its own token unless a run-value token takes it, so a
// token histogram is the symbol histogram with radius's count replaced by
// the zeros left alone (runs of one), the taken residuals' counts lowered,
// and the token counts after it. Counting a run at once also spares the
// symbol histogram one increment of the same counter per zero, which a
// long run makes wait on each other.
struct SymbolCounts {
  // The run tokens of one stage.
  struct Runs {
    std::array<uint32_t, format::kRunClasses> classes{};  // class c at c - 1
    uint32_t lone_zeros = 0;  // zeros not in a token
    uint64_t extra_bits = 0;
  };
  std::vector<uint32_t> histogram;  // per symbol, 2 * radius
  Runs zero_runs;                   // lossless 1
  Runs with_values;                 // lossless 2's run tokens
  std::array<uint32_t, format::kRunValueTokens> run_values{};  // class c, value j at 4c + j
  std::array<uint32_t, format::kRunValues> taken{};  // residuals in run-value tokens

  // TokenHistogram's result for lossless 1 (runs) or 2 (runs and values).
  TokenStats Tokens(uint32_t radius, bool values = false) const;
};
SymbolCounts CountSymbols(absl::Span<const uint16_t> symbols, uint32_t chunk_symbols,
                          uint32_t radius);

}  // namespace ebzip

#endif  // EBZIP_CODEC_RUN_TOKENS_H_
