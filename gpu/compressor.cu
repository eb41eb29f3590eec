// CompressBatch: plans the segment table on the host, then runs the pipeline
// (FORMAT.md §10 on the device): range -> bound -> prediction -> histogram ->
// Huffman code (on the device, or on the host and back) -> special-element
// scan -> chunk sizes -> layout -> encode and compaction into place -> CRCs
// -> headers.
//
// The steps live beside it: the plan and workspace (compress_plan.h), the
// host-built codes (compress_host_codes.h) and version 2's predictor choice
// and interpolation frames (compress_v2_frames.h).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <cub/device/device_scan.cuh>

#include "codec/format.h"
#include "gpu/compress_host_codes.h"
#include "gpu/compress_plan.h"
#include "gpu/compress_v2_frames.h"
#include "gpu/cuda_status.h"
#include "gpu/gpu_codec.h"
#include "gpu/kernels.h"
#include "gpu/run_kernels.h"
#include "gpu/scoped_event.h"
#include "gpu/segment.h"
#include "gpu/segment_plan.h"
#include "gpu/stage_timer.h"
#include "gpu/stream_fork.h"

namespace ebzip::gpu {

using compress::AddCounts;
using compress::Buffers;
using compress::BuildCodesOnHost;
using compress::BuildStageCodesOnHost;
using compress::Carve;
using compress::ChoosePredictors;
using compress::CubTempBytes;
using compress::EncodeInterpFrames;
using compress::FrameV2;
using compress::kAlphabet;
using compress::LaunchStageLists;
using compress::MakePlan;
using compress::Plan;
using compress::UploadSegments;

absl::StatusOr<WorkspaceSize> CompressWorkspaceSize(absl::Span<const CompressTask> tasks,
                                                    CodeBuilder builder) {
  auto plan = MakePlan(tasks, builder);
  if (!plan.ok()) return plan.status();
  auto cub_bytes = CubTempBytes(*plan);
  if (!cub_bytes.ok()) return cub_bytes.status();
  WorkspaceSize size;
  Carve(*plan, *cub_bytes, nullptr, nullptr, &size);
  return size;
}

absl::Status CompressBatch(absl::Span<const CompressTask> tasks, const Workspace& ws, Stream stream,
                           StageTimer* timer, CodeBuilder builder) {
  auto plan_or = MakePlan(tasks, builder);
  if (!plan_or.ok()) return plan_or.status();
  Plan& plan = *plan_or;
  auto cub_bytes = CubTempBytes(plan);
  if (!cub_bytes.ok()) return cub_bytes.status();
  WorkspaceSize need;
  Carve(plan, *cub_bytes, nullptr, nullptr, &need);
  if (ws.device_bytes < need.device_bytes || ws.host_bytes < need.host_bytes) {
    return absl::InvalidArgumentError("workspace smaller than CompressWorkspaceSize");
  }
  const Buffers b = Carve(plan, *cub_bytes, ws.device, ws.host, nullptr);
  const uint32_t S = static_cast<uint32_t>(plan.segments.size());
  const uint32_t I = static_cast<uint32_t>(plan.items.size());
  const BatchTotals& t = plan.totals;  // version 2 lays segments out again: read it late
  const cudaStream_t st = stream;
  auto mark = [&](const char* stage) {
    if (timer) timer->Mark(stage, st);
  };
  if (timer) timer->Start(st);

  if (auto u = UploadSegments(plan, b, st); !u.ok()) return u;
  std::memcpy(b.host_items, plan.items.data(), I * sizeof(Item));
  std::memcpy(b.host_file_templates, plan.file_templates.data(), plan.file_templates.size());
  CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(b.items, b.host_items, I * sizeof(Item), cudaMemcpyHostToDevice, st));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.file_templates, b.host_file_templates,
                                       plan.file_templates.size(), cudaMemcpyHostToDevice, st));
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(b.histogram, 0, S * kAlphabet * 4, st));
  if (plan.v2) CUDA_RETURN_IF_ERROR(cudaMemsetAsync(b.fill_sizes, 0, 2 * S * 8, st));
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(b.masks, 0, 3 * t.mask_words * 4, st));
  mark("upload tables");

  // Bound, prediction, histogram.
  if (plan.any_relative) {
    CUDA_RETURN_IF_ERROR(LaunchRange(plan.elem_size, b.segments, S, b.items, t.tiles, st));
  }
  CUDA_RETURN_IF_ERROR(LaunchResolveBounds(b.items, I, st));
  mark("value range");
  if (plan.v2) {
    if (auto c = ChoosePredictors(tasks, &plan, b, st, timer); !c.ok()) return c;
    mark(plan.survey.empty() ? "predictor choice" : "survey: host estimates");
  }
  PredictOutputs out{b.symbols,
                     b.deltas,
                     b.histogram,
                     b.masks,
                     b.masks + t.mask_words,
                     b.masks + 2 * t.mask_words};
  CUDA_RETURN_IF_ERROR(LaunchPredict(plan.elem_size, b.segments, plan.segments.data(), S, b.items,
                                     t.tiles, out, st));
  mark("quantize+lorenzo+histogram");
  if (plan.v2) {
    if (auto e = EncodeInterpFrames(plan, b, st); !e.ok()) return e;
    mark("interpolation+histogram");
  }

  // Special elements per mask tile, and their scan. They need no code, so
  // version 2 counts them on a side lane while the host builds its codes
  // (the stream stays free for a second copy of long lists).
  const uint32_t* outlier_mask = b.masks;
  const uint32_t* verbatim_mask = b.masks + t.mask_words;
  const uint32_t* fill_mask = b.masks + 2 * t.mask_words;
  auto count_specials = [&](cudaStream_t lane) -> absl::Status {
    CUDA_RETURN_IF_ERROR(LaunchCountSpecials(b.segments, S, t.mask_tiles, outlier_mask,
                                             verbatim_mask, fill_mask, b.tile_counts, lane));
    size_t temp = b.cub_temp_bytes;
    CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveScan(b.cub_temp, temp, b.tile_counts,
                                                        b.tile_prefix, AddCounts(), SpecialCounts{},
                                                        t.mask_tiles, lane));
    return absl::OkStatus();
  };

  const Codebook* codebooks = b.codebooks;
  const uint8_t* code_sections = b.sections;
  bool any_runs = false;
  if (plan.v2) {
    ScopedEvent lists_ready;
    if (auto l = LaunchStageLists(plan, b, st, &lists_ready); !l.ok()) return l;
    auto side = StreamFork::Begin(st, 2);
    if (!side.ok()) return side.status();
    const absl::Status counted = count_specials(side->lane(1));
    auto codes = counted.ok() ? BuildStageCodesOnHost(&plan, b, st, &lists_ready, timer)
                              : absl::StatusOr<compress::StageCodes>(counted);
    // Joined after a failure too: the stream must not pass the lane's work.
    // Then the table the lane read takes the stages' layout.
    if (absl::Status j = side->Join(); !j.ok()) return j;
    if (!codes.ok()) return codes.status();
    if (auto u = UploadSegments(plan, b, st); !u.ok()) return u;
    codebooks = codes->codebooks;
    code_sections = codes->sections;
    for (const Segment& seg : plan.segments) any_runs |= seg.lossless != 0;
    mark("stage choice and codes (host)");
  } else if (plan.builder == CodeBuilder::kDevice) {
    CUDA_RETURN_IF_ERROR(LaunchListUsedSymbols(b.histogram, S, b.used, b.info, b.list, st));
    CUDA_RETURN_IF_ERROR(LaunchBuildCodes(b.segments, S, plan.listed_capacity, plan.max_used,
                                          b.info, b.list, b.build, b.lengths, b.codes, b.codebooks,
                                          b.sections, st));
    mark("huffman code (device)");
  } else {
    auto up = BuildCodesOnHost(plan, b, st, timer);
    if (!up.ok()) return up.status();
    codebooks = reinterpret_cast<const Codebook*>(b.upload);
    code_sections = b.upload + up->sections;
    mark("huffman code (host)");
  }

  // Sizes: bits per chunk, and their scans.
  if (!plan.v2) {
    if (auto c = count_specials(st); !c.ok()) return c;
  }
  size_t temp = b.cub_temp_bytes;
  if (any_runs) {
    CUDA_RETURN_IF_ERROR(LaunchRunChunkBits(b.segments, S, t.chunks, b.symbols, b.lengths,
                                            b.slice_states, b.chunk_bits, b.chunk_words,
                                            b.chunk_gaps, st));
  } else {
    CUDA_RETURN_IF_ERROR(LaunchChunkBits(b.segments, S, t.chunks, b.symbols, b.lengths,
                                         b.chunk_bits, b.chunk_words, b.chunk_gaps, st));
  }
  temp = b.cub_temp_bytes;
  CUDA_RETURN_IF_ERROR(
      cub::DeviceScan::ExclusiveSum(b.cub_temp, temp, b.chunk_words, b.word_prefix, t.chunks, st));
  temp = b.cub_temp_bytes;
  CUDA_RETURN_IF_ERROR(
      cub::DeviceScan::ExclusiveSum(b.cub_temp, temp, b.chunk_gaps, b.gap_prefix, t.chunks, st));
  mark("sizes and scans");

  // Layout, then every section straight into its place.
  const uint32_t jobs = S * kSections;
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(b.crc_job_pieces + jobs, 0, sizeof(uint64_t), st));
  CUDA_RETURN_IF_ERROR(LaunchLayout(plan.elem_size, b.segments, b.items, I, codebooks,
                                    b.tile_prefix, b.tile_counts, b.word_prefix, b.gap_prefix,
                                    b.chunk_words, b.chunk_gaps, b.fill_sizes, b.fill_mask_at,
                                    b.layouts, b.crc_jobs, b.crc_job_pieces, st));
  for (uint32_t s = 0; plan.v2 && s < S; ++s) {
    const FrameV2& f = plan.frames[s];
    if (plan.segments[s].fill_coding != format::kFillCodingMask) continue;
    CUDA_RETURN_IF_ERROR(LaunchFillMaskEncodeWrite(plan.segments[s].geo.n,
                                                   b.fill_workspace + f.fill_workspace_at,
                                                   f.fill_workspace_bytes, b.fill_mask_at + s, st));
  }
  if (any_runs) {
    CUDA_RETURN_IF_ERROR(LaunchRunEncode(b.segments, S, t.chunks, t.max_chunk_symbols,
                                         t.max_code_length, b.items, b.layouts, b.symbols,
                                         b.lengths, b.codes, b.slice_states, b.chunk_bits,
                                         b.word_prefix, b.gap_prefix, st));
  } else {
    CUDA_RETURN_IF_ERROR(LaunchEncode(b.segments, S, t.chunks, t.max_chunk_symbols,
                                      t.max_code_length, b.items, b.layouts, b.symbols, b.lengths,
                                      b.codes, b.chunk_bits, b.word_prefix, b.gap_prefix, st));
  }
  mark("layout+encode");
  // Version 2's masks are mostly empty tiles (outliers only at anchors, few
  // verbatim values at a step with room for the rounding): their blocks
  // leave at once, 0.29 -> 0.08 ms on 1 GiB at REL 1e-4. Version 1's writer
  // keeps 0.25 % of such a field verbatim (its step is twice the bound),
  // spread over the tiles, and the counts' load before the masks' cost it
  // 0.38 -> 0.43 ms (H200): its tiles are written without the test.
  CUDA_RETURN_IF_ERROR(LaunchWriteSpecials(plan.elem_size, b.segments, S, t.mask_tiles, b.items,
                                           b.layouts, outlier_mask, verbatim_mask, fill_mask,
                                           plan.v2 ? b.tile_counts : nullptr, b.tile_prefix,
                                           b.deltas, st));
  CUDA_RETURN_IF_ERROR(
      LaunchCopyCodeLengths(b.segments, S, b.items, b.layouts, codebooks, code_sections, st));
  mark("outliers+verbatim+fill");

  // Checksums, then the headers that carry them.
  temp = b.cub_temp_bytes;
  CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(b.cub_temp, temp, b.crc_job_pieces,
                                                     b.crc_piece_prefix, jobs + 1, st));
  CUDA_RETURN_IF_ERROR(LaunchCrc(b.crc_jobs, jobs, b.crc_piece_prefix, plan.max_crc_pieces, st));
  mark("crc32c");
  CUDA_RETURN_IF_ERROR(
      LaunchHeaders(b.segments, S, b.items, I, b.layouts, b.frame_templates, b.file_templates, st));
  mark("headers");
  return absl::OkStatus();
}

}  // namespace ebzip::gpu
