#include "codec/run_tokens.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "codec/parallel.h"

namespace ebzip {

TokenStats TokenHistogram(absl::Span<const uint16_t> symbols, uint32_t chunk_symbols,
                          const RunTokens& runs) {
  const uint32_t alphabet = 2 * runs.radius + (runs.enabled ? format::kRunClasses : 0);
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

TokenStats SymbolCounts::Tokens(uint32_t radius) const {
  TokenStats t;
  t.histogram.reserve(histogram.size() + format::kRunClasses);
  t.histogram = histogram;
  t.histogram[radius] = lone_zeros;
  t.histogram.insert(t.histogram.end(), run_classes.begin(), run_classes.end());
  t.extra_bits = extra_bits;
  return t;
}

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
  const uint64_t zero4 = uint64_t{zero} * 0x0001000100010001ull;
  std::mutex mu;
  ParallelFor((chunks + per_task - 1) / per_task, [&](uint64_t t) {
    std::vector<uint32_t> local(alphabet, 0);
    std::array<uint32_t, format::kRunClasses> classes{};
    uint64_t lone = 0, extra = 0;
    const uint64_t end_chunk = std::min(chunks, (t + 1) * per_task);
    for (uint64_t c = t * per_task; c < end_chunk; ++c) {
      const uint16_t* s = symbols.data() + c * chunk_symbols;
      const uint16_t* const end = symbols.data() + std::min<uint64_t>(n, (c + 1) * chunk_symbols);
      while (s < end) {
        if (*s != zero) {
          ++local[*s++];
          continue;
        }
        // Four symbols at a time: runs of zeros are most of a smooth field.
        const uint16_t* run_end = s + 1;
        while (end - run_end >= 4) {
          uint64_t four;
          std::memcpy(&four, run_end, sizeof(four));
          if (four != zero4) break;
          run_end += 4;
        }
        while (run_end < end && *run_end == zero) ++run_end;
        uint64_t k = static_cast<uint64_t>(run_end - s);
        local[zero] += static_cast<uint32_t>(k);
        s = run_end;
        // §15.8's tokens for a run of k.
        while (k >= format::kMaxRunPositions + 1) {
          ++classes[format::kRunClasses - 1];
          extra += format::kRunClasses;
          k -= format::kMaxRunPositions;
        }
        if (k >= 2) {
          const int klass = RunClass(static_cast<uint32_t>(k));
          ++classes[klass - 1];
          extra += klass;
        } else if (k == 1) {
          ++lone;
        }
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    for (uint32_t s = 0; s < alphabet; ++s) total.histogram[s] += local[s];
    for (int k = 0; k < format::kRunClasses; ++k) total.run_classes[k] += classes[k];
    total.lone_zeros += static_cast<uint32_t>(lone);
    total.extra_bits += extra;
  });
  return total;
}

}  // namespace ebzip
