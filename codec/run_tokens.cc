#include "codec/run_tokens.h"

#include <algorithm>
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

}  // namespace ebzip
