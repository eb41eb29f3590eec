// The codes built on the host (gpu/compress_host_codes.h).
#include "gpu/compress_host_codes.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "codec/format.h"
#include "codec/frame_codec.h"
#include "codec/huffman_code.h"
#include "codec/parallel.h"
#include "gpu/cuda_status.h"
#include "gpu/host_code.h"
#include "gpu/kernels.h"
#include "gpu/run_kernels.h"
#include "gpu/scoped_event.h"
#include "gpu/segment_plan.h"

namespace ebzip::gpu::compress {

namespace {

// Used symbols per segment that the first copy to the host has room for;
// more (noisy data at tight bounds) take a second copy. Smooth fields at
// REL 1e-4 use a few hundred.
constexpr uint64_t kListedPerSegment = 1024;

UploadLayout LayoutUpload(const UsedSymbols* info, uint64_t segments) {
  UploadLayout up;
  uint64_t bins = 0, section_bytes = 0;
  up.section_at.resize(segments);
  for (uint64_t s = 0; s < segments; ++s) {
    bins += info[s].count;
    up.section_at[s] = section_bytes;
    section_bytes += SectionRoom(info[s].count);
  }
  up.lengths = Align16(segments * sizeof(Codebook));
  up.codes = up.lengths + Align16(bins);
  up.sections = up.codes + bins * 4;
  up.bytes = up.sections + section_bytes;
  return up;
}

// The host's part: one frame's Huffman code from its used symbols, exactly
// as the CPU codec builds it from the whole histogram (codec/huffman_code.h):
// both rank symbols by weight, then by symbol, and assign canonical codes in
// symbol order, so unused symbols change nothing. Only the used symbols'
// lengths and codes go back up: the encoder looks up no other symbol.
void BuildCodebook(uint64_t s, const Segment& seg, const Buffers& b, const UploadLayout& up) {
  const UsedSymbols u = b.host_info[s];
  const HostCode code = BuildHostCode({b.host_list + u.offset, u.count}, 2 * seg.radius,
                                      static_cast<int>(seg.max_code_length), 0);
  const std::vector<uint32_t> codes = CanonicalCodes(code.lengths);
  std::memcpy(b.host_upload + up.lengths + u.offset, code.lengths.data(), u.count);
  std::memcpy(b.host_upload + up.codes + 4 * u.offset, codes.data(), 4 * uint64_t{u.count});
  std::memcpy(b.host_upload + up.sections + up.section_at[s], code.section.data(),
              code.section.size());
  reinterpret_cast<Codebook*>(b.host_upload)[s] = {up.section_at[s], code.section.size()};
}

}  // namespace

absl::StatusOr<UploadLayout> BuildCodesOnHost(const Plan& plan, const Buffers& b, cudaStream_t st,
                                              StageTimer* timer) {
  using Clock = std::chrono::steady_clock;
  auto note = [&](const char* step, Clock::time_point since) {
    if (timer) {
      timer->Note(step, std::chrono::duration<double, std::milli>(Clock::now() - since).count());
    }
  };
  const uint32_t S = static_cast<uint32_t>(plan.segments.size());
  const uint64_t capacity = std::min(S * kListedPerSegment, plan.listed_capacity);
  CUDA_RETURN_IF_ERROR(LaunchListUsedSymbols(b.histogram, S, b.used, b.info, b.list, st));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.host_info, b.info,
                                       S * sizeof(UsedSymbols) + capacity * sizeof(SymbolCount),
                                       cudaMemcpyDeviceToHost, st));
  if (S > 2 && plan.totals.symbols >= kPoolWarmUpElements) ParallelWarmUp(kPoolWarmUp);
  Clock::time_point since = Clock::now();
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st));
  note("wait for the symbol lists", since);
  if (auto rest = CopyRestOfLists(b.host_info, b.host_list, b.list, S, capacity, st); !rest.ok()) return rest.status();
  since = Clock::now();
  const UploadLayout up = LayoutUpload(b.host_info, S);
  std::vector<double> build_ms(timer ? S : 0);
  auto build = [&](uint64_t s) {
    const Clock::time_point start = Clock::now();
    BuildCodebook(s, plan.segments[s], b, up);
    if (timer) {
      build_ms[s] = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    }
  };
  // One or two codes take less time than waking the thread pool. (Not "few
  // symbols": a large frame's code can take several flattening rounds.)
  if (S <= 2) {
    for (uint32_t s = 0; s < S; ++s) build(s);
  } else {
    ParallelFor(S, build);
  }
  note(S <= 2 ? "build the codes" : "build the codes (thread pool)", since);
  if (timer) {
    timer->Note("of which the longest code", *std::max_element(build_ms.begin(), build_ms.end()));
  }
  CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(b.upload, b.host_upload, up.bytes, cudaMemcpyHostToDevice, st));
  CUDA_RETURN_IF_ERROR(LaunchUnpackCodes(b.info, b.list, S, b.upload + up.lengths,
                                         reinterpret_cast<const uint32_t*>(b.upload + up.codes),
                                         b.lengths, b.codes, st));
  return up;
}

absl::Status LaunchStageLists(const Plan& plan, const Buffers& b, cudaStream_t st,
                              ScopedEvent* lists_ready) {
  const uint32_t S = static_cast<uint32_t>(plan.segments.size());
  // Histogram (and list) k * S + s: segment s's of stage k (the symbols'
  // for 0, each token stage's copy of them patched for 1 and 2).
  const uint32_t H = kStages * S;
  uint32_t* zero_runs = b.histogram + uint64_t{S} * kAlphabet;
  uint32_t* run_values = b.histogram + 2 * uint64_t{S} * kAlphabet;
  for (uint32_t* tokens : {zero_runs, run_values}) {
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(tokens, b.histogram, uint64_t{S} * kAlphabet * 4,
                                         cudaMemcpyDeviceToDevice, st));
  }
  if (plan.totals.chunks > b.slice_state_chunks) {
    return absl::InternalError("more chunks than slice states planned");
  }
  CUDA_RETURN_IF_ERROR(LaunchRunCounters(b.segments, S, plan.totals.chunks, b.symbols,
                                         b.run_counters, b.slice_states, st));
  CUDA_RETURN_IF_ERROR(LaunchTokenHistogram(b.segments, S, b.run_counters, zero_runs, run_values,
                                            b.extra_bits, st));
  CUDA_RETURN_IF_ERROR(LaunchListUsedSymbols(b.histogram, H, b.used, b.info, b.list, st));
  const uint64_t capacity = std::min(uint64_t{H} * kListedPerSegment, plan.listed_capacity);
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.host_info, b.info,
                                       H * sizeof(UsedSymbols) + capacity * sizeof(SymbolCount),
                                       cudaMemcpyDeviceToHost, st));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.host_counts, b.interp_counts, 2 * S * sizeof(uint32_t),
                                       cudaMemcpyDeviceToHost, st));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.host_extra_bits, b.extra_bits, S * sizeof(uint64_t),
                                       cudaMemcpyDeviceToHost, st));
  CUDA_RETURN_IF_ERROR(lists_ready->Record(st));
  return absl::OkStatus();
}

absl::StatusOr<StageCodes> BuildStageCodesOnHost(Plan* plan, const Buffers& b, cudaStream_t st,
                                                 ScopedEvent* lists_ready, StageTimer* timer) {
  using Clock = std::chrono::steady_clock;
  auto note = [&](const char* step, Clock::time_point since) {
    if (timer) {
      timer->Note(step, std::chrono::duration<double, std::milli>(Clock::now() - since).count());
    }
  };
  const uint32_t S = static_cast<uint32_t>(plan->segments.size());
  const uint32_t H = kStages * S;
  const uint64_t capacity = std::min(uint64_t{H} * kListedPerSegment, plan->listed_capacity);
  if (S > 2 && plan->totals.symbols >= kPoolWarmUpElements) ParallelWarmUp(kPoolWarmUp);
  Clock::time_point since = Clock::now();
  CUDA_RETURN_IF_ERROR(lists_ready->Synchronize());
  note("stage codes: wait for the device", since);
  since = Clock::now();
  auto rest = CopyRestOfLists(b.host_info, b.host_list, b.list, H, capacity, st);
  if (!rest.ok()) return rest.status();
  const uint64_t listed = *rest;
  if (listed > capacity) note("stage codes: second copy of the lists", since);
  since = Clock::now();
  std::vector<HostCode> chosen(S);
  std::vector<uint8_t> stage(S);
  auto build = [&](uint64_t s) {
    const Segment& seg = plan->segments[s];
    StageLists lists;
    for (uint8_t id = 0; id < kStages; ++id) {
      const UsedSymbols u = b.host_info[id * uint64_t{S} + s];
      lists.used[id] = {b.host_list + u.offset, u.count};
      lists.extra_bits[id] = id == format::kLosslessHuffman ? 0 : b.host_extra_bits[s];
    }
    StageCode best = SmallestStageCode(lists, AllowedStages(plan->frames[s].params), seg.radius,
                                       static_cast<int>(seg.max_code_length));
    stage[s] = best.stage;
    chosen[s] = std::move(best.code);
  };
  if (S <= 2) {
    for (uint32_t s = 0; s < S; ++s) build(s);
  } else {
    ParallelFor(S, build);
  }
  note(S <= 2 ? "stage codes: build" : "stage codes: build (thread pool)", since);
  since = Clock::now();
  // Upload: codebooks, which list each code is in, lengths and codes at
  // their list positions, sections.
  const uint64_t which_at = Align16(S * sizeof(Codebook));
  const uint64_t lengths_at = which_at + Align16(S * sizeof(UsedSymbols));
  const uint64_t codes_at = lengths_at + Align16(listed);
  const uint64_t sections_at = codes_at + 4 * listed;
  uint8_t* up = b.host_upload;
  auto* books = reinterpret_cast<Codebook*>(up);
  auto* which = reinterpret_cast<UsedSymbols*>(up + which_at);
  uint64_t cursor = 0;
  for (uint32_t s = 0; s < S; ++s) {
    const UsedSymbols u = b.host_info[stage[s] * uint64_t{S} + s];
    which[s] = u;
    const HostCode& code = chosen[s];
    const std::vector<uint32_t> codes = CanonicalCodes(code.lengths);
    std::memcpy(up + lengths_at + u.offset, code.lengths.data(), u.count);
    std::memcpy(up + codes_at + 4 * u.offset, codes.data(), 4 * uint64_t{u.count});
    std::memcpy(up + sections_at + cursor, code.section.data(), code.section.size());
    books[s] = {cursor, code.section.size()};
    cursor += code.section.size();
  }
  CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(b.upload, up, sections_at + cursor, cudaMemcpyHostToDevice, st));
  CUDA_RETURN_IF_ERROR(LaunchUnpackCodes(
      reinterpret_cast<const UsedSymbols*>(b.upload + which_at), b.list, S, b.upload + lengths_at,
      reinterpret_cast<const uint32_t*>(b.upload + codes_at), b.lengths, b.codes, st));

  // The segments over their positions, with their stage, and their headers.
  BatchTotals totals;
  plan->frame_templates.clear();
  for (uint32_t s = 0; s < S; ++s) {
    Segment& seg = plan->segments[s];
    const FrameV2& f = plan->frames[s];
    seg.lossless = stage[s];
    seg.positions = seg.predictor == format::kPredictorInterp ? b.host_counts[2 * s] : 0;
    if (seg.predictor == format::kPredictorInterp &&
        (seg.positions == 0 || seg.positions > seg.geo.n)) {
      return absl::InternalError("interpolation frame with a symbol count out of range");
    }
    const uint64_t counted_at = seg.slice_chunk_base;  // where the runs' slice states are
    PlaceSegment(&seg, &totals);
    seg.slice_chunk_base = counted_at;
    format::FrameHeader h = FrameHeaderFor(f.params);
    h.predictor = f.config.predictor;
    h.order = f.config.order;
    h.block = f.config.block;
    h.lossless = stage[s];
    h.fill_coding = static_cast<uint8_t>(seg.fill_coding);
    h.positions = static_cast<uint32_t>(seg.positions);
    format::AppendFrameHeader(h, &plan->frame_templates);
  }
  plan->totals = totals;
  note("stage codes: upload and segments", since);
  return StageCodes{reinterpret_cast<const Codebook*>(b.upload), b.upload + sections_at};
}

}  // namespace ebzip::gpu::compress
