// A stage's Huffman code built on the host from a frame's used symbols, as
// codec/entropy_coder.cc builds it from the whole histogram (the same
// lengths, the same code-length section, the same size in bits). The
// compressor builds the codes it writes this way (version 2), and the
// predictor survey (gpu/predictor_survey.h) the codes it only counts.
#ifndef EBZIP_GPU_HOST_CODE_H_
#define EBZIP_GPU_HOST_CODE_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codec/format.h"
#include "codec/huffman_code.h"
#include "gpu/kernels.h"

namespace ebzip::gpu {

// The worst-case code-length section of a 65536-symbol alphabet, with room.
inline constexpr uint64_t kCodeSectionStride = 2 * 65536 + 16;

// Bytes a code-length section of `used` symbols can take: each symbol's
// length, and before each of the at most used + 1 zero runs a 0 and a LEB128
// count of 1 byte, 2 for the at most 512 runs of 128 or more of 65536 bins,
// 3 for the at most 4 of 16384 or more.
inline uint64_t SectionRoom(uint64_t used) {
  return std::min(3 * used + 2 + 512 + 4, kCodeSectionStride);
}

// One stage's code for a segment's used symbols (ascending): lengths in list
// order, the code-length section, and the stage's size in bits (payload,
// `extra_bits` and 8 per section byte).
struct HostCode {
  std::vector<uint8_t> lengths;
  std::vector<uint8_t> section;
  uint64_t bits = 0;
};
HostCode BuildHostCode(absl::Span<const SymbolCount> used, uint32_t alphabet, int max_length,
                       uint64_t extra_bits);

// A lower bound of BuildHostCode(used, alphabet, ..., extra_bits).bits: the
// histogram's entropy (Gibbs: no prefix code takes fewer bits) plus
// extra_bits plus the code-length section's exact bits. It lets a caller
// skip the codes that cannot win; without the section, a small frame's
// floors (whose sections are a tenth of their bits) skipped few.
double CodeFloor(absl::Span<const SymbolCount> used, uint32_t alphabet, uint64_t extra_bits);

// What a histogram's entropy is made of: its total and the sum of
// count * log2(count) over its bins. A token stage's histogram differs from
// the symbols' in a few bins (the residuals around zero, and the tokens),
// so its sums are the symbols' with those bins changed: no log over every
// bin again.
struct EntropySums {
  double total = 0;
  double weighted_logs = 0;
  void Add(uint64_t count);
  void Remove(uint64_t count);
};
EntropySums SumsOf(absl::Span<const SymbolCount> used);
// CodeFloor of a histogram with these sums and a code-length section of
// `section_bytes` (CodeLengthBytes).
double CodeFloor(const EntropySums& sums, uint64_t section_bytes, uint64_t extra_bits);

// Whether a code with CodeFloor `floor` takes more than `bits`: the floor
// passes them by far more than its arithmetic's rounding.
inline bool FloorBeyond(double floor, uint64_t bits) {
  return floor * (1 - 1e-9) - 1 > static_cast<double>(bits);
}

// The lossless stages (FORMAT.md §15.2): plain Huffman, zero-run tokens,
// run-value tokens.
inline constexpr uint32_t kStages = format::kLosslessRunValues + 1;

// How long the thread pool's workers spin (ParallelWarmUp) while the host
// waits for the device's lists before building codes from them on the
// pool: longer than the waits of a 1 GiB batch (1.1 ms before the survey's
// estimates, 3.5 ms before the stage codes on the H200), after which they
// sleep again and the codes start as before. Only batches of at least
// kPoolWarmUpElements do: a small batch's host steps are short, and a
// server under load (a batch every few milliseconds) would keep the
// workers spinning beside the threads that move its requests' bytes.
inline constexpr std::chrono::microseconds kPoolWarmUp{5000};
inline constexpr uint64_t kPoolWarmUpElements = uint64_t{1} << 26;

// The lossless stages' used-symbol lists of one frame (FORMAT.md §15.4):
// stage id's list and the extra bits of its tokens (0 for stage 0).
struct StageLists {
  absl::Span<const SymbolCount> used[kStages];
  uint64_t extra_bits[kStages] = {};
};
struct StageCode {
  uint8_t stage = 0;
  HostCode code;
};
// The smallest code among the stages whose bit is set in `allowed`, the
// lower stage of equal ones (§15.9), as building every one would pick; the
// codes are built in the order of their floors, and a stage whose floor
// passes the best so far is not built.
StageCode SmallestStageCode(const StageLists& lists, uint8_t allowed, uint32_t radius,
                            int max_length);

// The host's copy of `lists` histograms' used-symbol lists (LaunchListUsedSymbols:
// `host_info` holds their UsedSymbols, `host_list` the first `capacity`
// entries, both already copied and waited for): copies the rest from the
// device's `list` when there is more, waits, and returns how many entries
// the lists hold.
absl::StatusOr<uint64_t> CopyRestOfLists(const UsedSymbols* host_info, SymbolCount* host_list,
                                         const SymbolCount* list, uint64_t lists, uint64_t capacity,
                                         cudaStream_t stream);

}  // namespace ebzip::gpu

#endif  // EBZIP_GPU_HOST_CODE_H_
