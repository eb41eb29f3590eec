#include "gpu/host_code.h"

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

}  // namespace ebzip::gpu
