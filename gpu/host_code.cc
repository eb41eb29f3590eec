#include "gpu/host_code.h"

#include <cuda_runtime_api.h>

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

absl::StatusOr<uint64_t> CopyRestOfLists(const UsedSymbols* host_info, SymbolCount* host_list,
                                         const SymbolCount* list, uint64_t lists,
                                         uint64_t capacity, cudaStream_t stream) {
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
