#include "gpu/host_code.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "codec/run_tokens.h"
#include "gpu/cuda_status.h"

namespace ebzip::gpu {

HostCode BuildHostCode(absl::Span<const SymbolCount> used, uint32_t alphabet, int max_length,
                       uint64_t extra_bits) {
  HostCode code;
  code.lengths = BuildCodeLengths(used, max_length);
  std::vector<uint32_t> symbols(used.size());
  for (size_t i = 0; i < used.size(); ++i) symbols[i] = used[i].symbol;
  code.section.reserve(SectionRoom(used.size()));
  AppendCodeLengths(symbols, code.lengths, alphabet, &code.section);
  code.bits = extra_bits + 8 * code.section.size();
  for (size_t i = 0; i < used.size(); ++i) code.bits += uint64_t{used[i].count} * code.lengths[i];
  return code;
}

void EntropySums::Add(uint64_t count) {
  if (count == 0) return;
  const double c = static_cast<double>(count);
  total += c;
  weighted_logs += c * std::log2(c);
}

void EntropySums::Remove(uint64_t count) {
  if (count == 0) return;
  const double c = static_cast<double>(count);
  total -= c;
  weighted_logs -= c * std::log2(c);
}

EntropySums SumsOf(absl::Span<const SymbolCount> used) {
  EntropySums sums;
  for (const SymbolCount& u : used) sums.Add(u.count);
  return sums;
}

double CodeFloor(const EntropySums& sums, uint64_t section_bytes, uint64_t extra_bits) {
  // Bins removed and added leave rounding where the exact total is 0.
  const double entropy =
      sums.total >= 1 ? sums.total * std::log2(sums.total) - sums.weighted_logs : 0;
  return std::max(entropy, 0.0) + static_cast<double>(extra_bits) +
         8.0 * static_cast<double>(section_bytes);
}

double CodeFloor(absl::Span<const SymbolCount> used, uint32_t alphabet, uint64_t extra_bits) {
  return CodeFloor(SumsOf(used), CodeLengthBytes(used, alphabet), extra_bits);
}

StageCode SmallestStageCode(const StageLists& lists, uint8_t allowed, uint32_t radius,
                            int max_length) {
  uint8_t order[kStages];
  double floor[kStages];
  int m = 0;
  for (uint8_t id = 0; id < kStages; ++id) {
    if (!(allowed >> id & 1)) continue;
    const double f = CodeFloor(lists.used[id], RunTokens::ForStage(id, radius).alphabet(),
                               lists.extra_bits[id]);
    int i = m++;
    for (; i > 0 && floor[i - 1] > f; --i) {
      order[i] = order[i - 1];
      floor[i] = floor[i - 1];
    }
    order[i] = id;
    floor[i] = f;
  }
  StageCode best;
  bool have = false;
  for (int i = 0; i < m; ++i) {
    const uint8_t id = order[i];
    if (have && FloorBeyond(floor[i], best.code.bits)) break;  // so are the floors after it
    HostCode code = BuildHostCode(lists.used[id], RunTokens::ForStage(id, radius).alphabet(),
                                  max_length, lists.extra_bits[id]);
    if (!have || code.bits < best.code.bits || (code.bits == best.code.bits && id < best.stage)) {
      best.stage = id;
      best.code = std::move(code);
    }
    have = true;
  }
  return best;
}

absl::StatusOr<uint64_t> CopyRestOfLists(const UsedSymbols* host_info, SymbolCount* host_list,
                                         const SymbolCount* list, uint64_t lists, uint64_t capacity,
                                         cudaStream_t stream) {
  const uint64_t listed = host_info[lists - 1].offset + host_info[lists - 1].count;
  if (listed > capacity) {
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host_list + capacity, list + capacity,
                                         (listed - capacity) * sizeof(SymbolCount),
                                         cudaMemcpyDeviceToHost, stream));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  }
  return listed;
}

}  // namespace ebzip::gpu
