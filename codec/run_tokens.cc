#include "codec/run_tokens.h"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <mutex>

#include "codec/parallel.h"

namespace ebzip {

TokenStats TokenHistogram(absl::Span<const uint16_t> symbols, uint32_t chunk_symbols,
                          const RunTokens& runs) {
  const uint32_t alphabet = runs.alphabet();
  TokenStats total;
  total.histogram.assign(alphabet, 0);
  const uint64_t n = symbols.size();
  // Tasks of whole chunks, so that no run is cut where a chunk is not.
  const uint64_t per_task = std::max<uint64_t>(1, (uint64_t{1} << 20) / chunk_symbols);
  const uint64_t chunks = (n + chunk_symbols - 1) / chunk_symbols;
  std::mutex mu;
  ParallelFor((chunks + per_task - 1) / per_task, [&](uint64_t t) {
    std::vector<uint32_t> local(alphabet, 0);
    uint64_t extra = 0;
    const uint64_t end_chunk = std::min(chunks, (t + 1) * per_task);
    for (uint64_t c = t * per_task; c < end_chunk; ++c) {
      const uint64_t begin = c * chunk_symbols;
      const uint64_t end = std::min<uint64_t>(n, begin + chunk_symbols);
      ForEachToken(symbols.subspan(begin, end - begin), runs,
                   [&](uint32_t s, int bits, uint32_t, uint32_t) {
                     ++local[s];
                     extra += bits;
                   });
    }
    std::lock_guard<std::mutex> lock(mu);
    for (uint32_t s = 0; s < alphabet; ++s) total.histogram[s] += local[s];
    total.extra_bits += extra;
  });
  return total;
}

TokenStats SymbolCounts::Tokens(uint32_t radius, bool values) const {
  const Runs& runs = values ? with_values : zero_runs;
  TokenStats t;
  t.histogram.reserve(histogram.size() + format::kTokensWithRunValues);
  t.histogram = histogram;
  t.histogram[radius] = runs.lone_zeros;
  t.histogram.insert(t.histogram.end(), runs.classes.begin(), runs.classes.end());
  if (values) {
    for (int j = 0; j < format::kRunValues; ++j) {
      // Only symbols are taken (with radius 1 or 2 some values are none).
      if (taken[j] != 0) t.histogram[radius + (j < 2 ? j - 2 : j - 1)] -= taken[j];
    }
    t.histogram.insert(t.histogram.end(), run_values.begin(), run_values.end());
  }
  t.extra_bits = runs.extra_bits;
  return t;
}

namespace {

// Bit j set where symbols[j] == zero, for the first `count` (<= 64).
uint64_t ZeroMask(const uint16_t* symbols, uint64_t count, uint16_t zero) {
  uint64_t mask = 0;
  uint64_t j = 0;
#if defined(__SSE2__)
  const __m128i z = _mm_set1_epi16(static_cast<int16_t>(zero));
  for (; j + 16 <= count; j += 16) {
    const __m128i a = _mm_cmpeq_epi16(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(symbols + j)), z);
    const __m128i b = _mm_cmpeq_epi16(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(symbols + j + 8)), z);
    mask |= uint64_t{static_cast<uint16_t>(_mm_movemask_epi8(_mm_packs_epi16(a, b)))} << j;
  }
#endif
  for (; j < count; ++j) mask |= uint64_t{symbols[j] == zero} << j;
  return mask;
}

// Set bits of x (no popcnt instruction in the x86-64 baseline).
int Popcount(uint64_t x) {
  x -= (x >> 1) & 0x5555555555555555ull;
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  return static_cast<int>((x * 0x0101010101010101ull) >> 56);
}

// The tokens of one chunk's runs of zeros, added to a task's counts, for
// both stages with tokens.
struct RunCounts {
  SymbolCounts::Runs zero_runs;
  SymbolCounts::Runs with_values;
  std::array<uint32_t, format::kRunValueTokens> run_values{};
  std::array<uint32_t, format::kRunValues> taken{};

  // §15.8's tokens for a run of k >= 1 zeros followed by `next` in its chunk
  // (kNoRunValue at the chunk's end).
  void Add(uint64_t k, uint32_t next, uint32_t radius) {
    uint32_t splits = 0;
    while (k >= format::kMaxRunPositions + 1) {
      ++splits;
      k -= format::kMaxRunPositions;
    }
    for (SymbolCounts::Runs* r : {&zero_runs, &with_values}) {
      r->classes[format::kRunClasses - 1] += splits;
      r->extra_bits += uint64_t{splits} * format::kRunClasses;
    }
    const int klass = 63 - __builtin_clzll(k);  // RunClass(k), without its loop
    const int j = next == kNoRunValue ? -1 : RunValueIndex(next, radius);
    if (j >= 0) {
      ++run_values[format::kRunValues * klass + j];
      ++taken[j];
      with_values.extra_bits += klass;
    }
    for (SymbolCounts::Runs* r : {&zero_runs, &with_values}) {
      if (r == &with_values && j >= 0) continue;
      if (k >= 2) {
        ++r->classes[klass - 1];
        r->extra_bits += klass;
      } else {
        ++r->lone_zeros;
      }
    }
  }
};

void AddRuns(const SymbolCounts::Runs& from, SymbolCounts::Runs* to) {
  for (int k = 0; k < format::kRunClasses; ++k) to->classes[k] += from.classes[k];
  to->lone_zeros += from.lone_zeros;
  to->extra_bits += from.extra_bits;
}

}  // namespace

SymbolCounts CountSymbols(absl::Span<const uint16_t> symbols, uint32_t chunk_symbols,
                          uint32_t radius) {
  const uint32_t alphabet = 2 * radius;
  SymbolCounts total;
  total.histogram.assign(alphabet, 0);
  const uint64_t n = symbols.size();
  // Tasks of whole chunks: runs end where chunks do (§15.4).
  const uint64_t per_task = std::max<uint64_t>(1, (uint64_t{1} << 20) / chunk_symbols);
  const uint64_t chunks = (n + chunk_symbols - 1) / chunk_symbols;
  const uint16_t zero = static_cast<uint16_t>(radius);
  std::mutex mu;
  ParallelFor((chunks + per_task - 1) / per_task, [&](uint64_t t) {
    // 64 symbols at a time, with a mask of their zeros: the zeros are
    // counted from the mask, and their runs found from its bits, with no
    // branch per symbol (at tight bounds zeros and others alternate
    // unpredictably).
    std::vector<uint32_t> counts(alphabet, 0);
    uint32_t* const local = counts.data();
    uint64_t zeros = 0;
    RunCounts runs;
    const uint64_t end_chunk = std::min(chunks, (t + 1) * per_task);
    for (uint64_t c = t * per_task; c < end_chunk; ++c) {
      const uint64_t chunk_end = std::min<uint64_t>(n, (c + 1) * chunk_symbols);
      uint64_t run = 0;  // zeros of the run still open at the block's start
      for (uint64_t i = c * chunk_symbols; i < chunk_end; i += 64) {
        const uint64_t count = std::min<uint64_t>(64, chunk_end - i);
        const uint16_t* const block = symbols.data() + i;
        const uint64_t valid = count == 64 ? ~uint64_t{0} : (uint64_t{1} << count) - 1;
        const uint64_t z = ZeroMask(block, count, zero);
        zeros += static_cast<uint64_t>(Popcount(z));
        for (uint64_t others = ~z & valid; others != 0; others &= others - 1) {
          ++local[block[__builtin_ctzll(others)]];
        }
        // Runs: from each position, the ones of z that follow it.
        uint64_t pos = 0;
        while (pos < count) {
          const uint64_t rest = z >> pos;  // pos < 64
          if (run > 0 || (rest & 1)) {
            // Inside a run: it lasts while z has ones.
            const uint64_t ones = (~rest == 0) ? 64 - pos : __builtin_ctzll(~rest);
            const uint64_t len = std::min(ones, count - pos);
            run += len;
            pos += len;
            if (pos < count) {
              runs.Add(run, block[pos], radius);
              run = 0;
            }
          } else {
            if (rest == 0) break;
            pos += __builtin_ctzll(rest);
          }
        }
      }
      if (run > 0) runs.Add(run, kNoRunValue, radius);
    }
    local[zero] += static_cast<uint32_t>(zeros);
    std::lock_guard<std::mutex> lock(mu);
    for (uint32_t s = 0; s < alphabet; ++s) total.histogram[s] += local[s];
    AddRuns(runs.zero_runs, &total.zero_runs);
    AddRuns(runs.with_values, &total.with_values);
    for (int k = 0; k < format::kRunValueTokens; ++k) total.run_values[k] += runs.run_values[k];
    for (int j = 0; j < format::kRunValues; ++j) total.taken[j] += runs.taken[j];
  });
  return total;
}

}  // namespace ebzip
