// CompressBatch: plans the segment table on the host, then runs the pipeline
// (FORMAT.md §10 on the device): range -> bound -> prediction -> histogram to
// the host, codes back -> special-element scan -> chunk sizes -> layout ->
// encode and compaction into place -> CRCs -> headers.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <cub/device/device_scan.cuh>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/crc32c.h"
#include "codec/format.h"
#include "codec/huffman_code.h"
#include "codec/quantize_point.h"
#include "codec/parallel.h"
#include "gpu/cuda_status.h"
#include "gpu/gpu_codec.h"
#include "gpu/kernels.h"
#include "gpu/segment_plan.h"
#include "gpu/workspace_carver.h"

namespace ebzip::gpu {

namespace {

constexpr uint64_t kAlphabet = 65536;  // histogram and code-table stride per segment
constexpr uint64_t kCodeSectionStride = 2 * kAlphabet + 16;  // worst-case code-length section

struct AddCounts {
  __host__ __device__ SpecialCounts operator()(const SpecialCounts& a,
                                               const SpecialCounts& b) const {
    return a + b;
  }
};

// Everything fixed before launch, from shapes and options alone.
struct Plan {
  int elem_size = 0;
  std::vector<Segment> segments;
  std::vector<Item> items;
  std::vector<uint8_t> frame_templates;
  std::vector<uint8_t> file_templates;
  BatchTotals totals;
  uint64_t max_crc_pieces = 0;
  bool any_relative = false;
};

absl::StatusOr<Plan> MakePlan(absl::Span<const CompressTask> tasks) {
  Plan plan;
  if (tasks.empty()) return absl::InvalidArgumentError("no arrays to compress");
  for (size_t i = 0; i < tasks.size(); ++i) {
    const CompressTask& task = tasks[i];
    if (task.spec.dtype != tasks[0].spec.dtype) {
      return absl::InvalidArgumentError("a GPU batch takes one dtype");
    }
    // The bound is resolved on the device; the plan's placeholder bound only
    // fills header fields the device overwrites.
    auto archive = PlanArchive(task.spec, task.options, ResolvedBound{1, 2});
    if (!archive.ok()) return archive.status();
    plan.elem_size = static_cast<int>(DTypeSize(task.spec.dtype));
    Item item{};
    item.archive = task.archive;
    item.archive_size = task.archive_size;
    item.capacity = task.capacity;
    item.first_segment = plan.segments.size();
    item.num_segments = archive->frame_count();
    item.relative = task.options.mode == BoundMode::kRel;
    item.has_fill = task.options.fill_value.has_value();
    item.bound = task.options.bound;
    if (item.has_fill) {
      const double fill = *task.options.fill_value;
      if (plan.elem_size == 4) {
        item.fill_bits = ToBits(static_cast<float>(fill));
      } else {
        item.fill_bits = ToBits(fill);
      }
    }
    item.min_key = ~0ull;
    item.max_key = 0;
    plan.any_relative |= item.relative != 0;
    plan.items.push_back(item);
    format::AppendFileHeader(archive->header, &plan.file_templates);

    for (uint64_t f = 0; f < archive->frame_count(); ++f) {
      const FrameParams p = archive->ParamsForFrame(f);
      Segment seg{};
      seg.geo = MakeGeometry(p.shape, {p.block.data(), p.shape.size()});
      if (auto s = CheckGpuLimits(seg.geo, p.chunk_symbols, p.max_code_length); !s.ok()) return s;
      seg.input = static_cast<const uint8_t*>(task.input) + archive->FrameDataOffset(f);
      seg.item = static_cast<uint32_t>(i);
      seg.radius = p.radius;
      seg.chunk_symbols = p.chunk_symbols;
      seg.subsequence_bits = p.subsequence_bits;
      seg.chunk_group = p.chunk_group;
      seg.gap_array = p.gap_array;
      seg.max_code_length = static_cast<uint32_t>(p.max_code_length);
      seg.frame_index = static_cast<uint32_t>(f);
      PlaceSegment(&seg, &plan.totals);
      plan.segments.push_back(seg);

      format::AppendFrameHeader(FrameHeaderFor(p), &plan.frame_templates);
    }
    plan.max_crc_pieces += task.capacity / kCrcPieceBytes + 1;
  }
  plan.max_crc_pieces += plan.segments.size() * (kSections - 1);
  return plan;
}

// The call's arrays, carved from the workspaces.
struct Buffers {
  // Device.
  Segment* segments;
  Item* items;
  FrameLayout* layouts;
  Codebook* codebooks;
  CrcJob* crc_jobs;
  uint64_t* crc_job_pieces;
  uint64_t* crc_piece_prefix;
  uint32_t* piece_crcs;
  uint8_t* frame_templates;
  uint8_t* file_templates;
  uint16_t* symbols;
  int32_t* deltas;
  uint32_t* histogram;
  uint2* windows;   // per segment: its histogram's non-zero bins
  uint32_t* masks;  // outliers, verbatim, fill
  SpecialCounts* tile_counts;
  SpecialCounts* tile_prefix;
  uint32_t* chunk_bits;
  uint64_t* chunk_words;
  uint64_t* chunk_gaps;
  uint64_t* word_prefix;
  uint64_t* gap_prefix;
  uint8_t* lengths;
  uint32_t* codes;
  uint8_t* code_sections;
  void* cub_temp;
  size_t cub_temp_bytes;
  // Host (pinned).
  uint2* host_windows;
  uint32_t* host_histogram;
  uint8_t* host_lengths;
  uint32_t* host_codes;
  uint8_t* host_code_sections;
  Codebook* host_codebooks;
  Segment* host_segments;
  Item* host_items;
  uint8_t* host_frame_templates;
  uint8_t* host_file_templates;
};

absl::StatusOr<size_t> CubTempBytes(const Plan& plan) {
  size_t a = 0, b = 0, c = 0;
  const uint64_t jobs = plan.segments.size() * (kSections - 1) + 1;
  CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveScan(
      nullptr, a, static_cast<SpecialCounts*>(nullptr), static_cast<SpecialCounts*>(nullptr),
      AddCounts(), SpecialCounts{}, plan.totals.mask_tiles));
  CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(nullptr, b, static_cast<uint64_t*>(nullptr),
                                                     static_cast<uint64_t*>(nullptr),
                                                     plan.totals.chunks));
  CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(nullptr, c, static_cast<uint64_t*>(nullptr),
                                                     static_cast<uint64_t*>(nullptr), jobs));
  return std::max({a, b, c});
}

Buffers Carve(const Plan& plan, size_t cub_temp_bytes, void* device, void* host,
              WorkspaceSize* size) {
  const uint64_t S = plan.segments.size();
  const uint64_t jobs = S * (kSections - 1);
  Buffers b{};
  WorkspaceCarver d(device);
  b.segments = d.Take<Segment>(S);
  b.items = d.Take<Item>(plan.items.size());
  b.layouts = d.Take<FrameLayout>(S);
  b.codebooks = d.Take<Codebook>(S);
  b.crc_jobs = d.Take<CrcJob>(jobs);
  b.crc_job_pieces = d.Take<uint64_t>(jobs + 1);
  b.crc_piece_prefix = d.Take<uint64_t>(jobs + 1);
  b.piece_crcs = d.Take<uint32_t>(plan.max_crc_pieces);
  b.frame_templates = d.Take<uint8_t>(plan.frame_templates.size());
  b.file_templates = d.Take<uint8_t>(plan.file_templates.size());
  b.symbols = d.Take<uint16_t>(plan.totals.symbols);
  b.deltas = d.Take<int32_t>(plan.totals.symbols);
  b.histogram = d.Take<uint32_t>(S * kAlphabet);
  b.windows = d.Take<uint2>(S);
  b.masks = d.Take<uint32_t>(3 * plan.totals.mask_words);
  b.tile_counts = d.Take<SpecialCounts>(plan.totals.mask_tiles);
  b.tile_prefix = d.Take<SpecialCounts>(plan.totals.mask_tiles);
  b.chunk_bits = d.Take<uint32_t>(plan.totals.chunks);
  b.chunk_words = d.Take<uint64_t>(plan.totals.chunks);
  b.chunk_gaps = d.Take<uint64_t>(plan.totals.chunks);
  b.word_prefix = d.Take<uint64_t>(plan.totals.chunks);
  b.gap_prefix = d.Take<uint64_t>(plan.totals.chunks);
  b.lengths = d.Take<uint8_t>(S * kAlphabet);
  b.codes = d.Take<uint32_t>(S * kAlphabet);
  b.code_sections = d.Take<uint8_t>(S * kCodeSectionStride);
  b.cub_temp = d.Take<uint8_t>(cub_temp_bytes);
  b.cub_temp_bytes = cub_temp_bytes;
  WorkspaceCarver h(host);
  b.host_windows = h.Take<uint2>(S);
  b.host_histogram = h.Take<uint32_t>(S * kAlphabet);
  b.host_lengths = h.Take<uint8_t>(S * kAlphabet);
  b.host_codes = h.Take<uint32_t>(S * kAlphabet);
  b.host_code_sections = h.Take<uint8_t>(S * kCodeSectionStride);
  b.host_codebooks = h.Take<Codebook>(S);
  b.host_segments = h.Take<Segment>(S);
  b.host_items = h.Take<Item>(plan.items.size());
  b.host_frame_templates = h.Take<uint8_t>(plan.frame_templates.size());
  b.host_file_templates = h.Take<uint8_t>(plan.file_templates.size());
  if (size) *size = {d.size(), h.size()};
  return b;
}

// The bins [first, first + count) of a segment's histogram that can be
// non-zero; count 0 when none is.
struct Window {
  uint32_t first;
  uint32_t count;
};
Window WindowOf(const Buffers& b, uint64_t s) {
  const uint2 w = b.host_windows[s];
  return w.x <= w.y ? Window{w.x, w.y - w.x + 1} : Window{0, 0};
}

// The host's part: one frame's Huffman code from the used window of its
// histogram, exactly as the CPU codec builds it from the whole alphabet
// (codec/huffman_code.h): both rank symbols by weight, then by index, and
// assign canonical codes in index order, so bins that are zero change
// nothing. Only the window's lengths and codes go back up: the encoder
// looks up no other symbol.
void BuildCodebook(uint64_t s, const Segment& seg, const Buffers& b) {
  const uint32_t alphabet = 2 * seg.radius;
  const Window w = WindowOf(b, s);
  const uint32_t* hist = b.host_histogram + s * kAlphabet + w.first;
  std::vector<uint8_t> used = BuildCodeLengths({hist, w.count}, static_cast<int>(seg.max_code_length));
  std::vector<uint32_t> codes = CanonicalCodes(used);
  std::vector<uint8_t> lengths(alphabet, 0);
  std::copy(used.begin(), used.end(), lengths.begin() + w.first);
  std::vector<uint8_t> section;
  AppendCodeLengths(lengths, &section);
  std::memcpy(b.host_lengths + s * kAlphabet + w.first, used.data(), w.count);
  std::memcpy(b.host_codes + s * kAlphabet + w.first, codes.data(), w.count * sizeof(uint32_t));
  std::memcpy(b.host_code_sections + s * kCodeSectionStride, section.data(), section.size());
  b.host_codebooks[s] = {s * kCodeSectionStride, static_cast<uint32_t>(section.size()),
                         Crc32c(section.data(), section.size())};
}

}  // namespace

uint64_t MaxArchiveBytes(const ArraySpec& spec, const CompressOptions& options) {
  auto plan = PlanArchive(spec, options, ResolvedBound{1, 2});
  if (!plan.ok()) return 0;
  const uint64_t elem = DTypeSize(spec.dtype);
  uint64_t total = format::kFileHeaderSize + format::FrameIndexSize(plan->frame_count()) +
                   format::kTrailerSize;
  for (uint64_t f = 0; f < plan->frame_count(); ++f) {
    const FrameParams p = plan->ParamsForFrame(f);
    uint64_t n = 1;
    for (uint64_t d : p.shape) n *= d;
    const uint64_t chunks = (n + p.chunk_symbols - 1) / p.chunk_symbols;
    const uint64_t bits = n * p.max_code_length;
    total += format::kFrameHeaderSize + kSections * 8;   // header, padding
    total += kCodeSectionStride;                         // code lengths
    total += (chunks + p.chunk_group - 1) / p.chunk_group * 8 + chunks * 4;
    total += bits / p.subsequence_bits + chunks;         // gap array
    total += bits / 8 + chunks * 4;                      // bitstream
    // An element is an outlier or not, and verbatim, fill or neither (fill
    // runs are at most one per two elements, 8 bytes each).
    total += n * 8 + std::max<uint64_t>(n * (4 + elem) + 8, (n + 1) / 2 * 8);
  }
  return total;
}

absl::StatusOr<WorkspaceSize> CompressWorkspaceSize(absl::Span<const CompressTask> tasks) {
  auto plan = MakePlan(tasks);
  if (!plan.ok()) return plan.status();
  auto cub_bytes = CubTempBytes(*plan);
  if (!cub_bytes.ok()) return cub_bytes.status();
  WorkspaceSize size;
  Carve(*plan, *cub_bytes, nullptr, nullptr, &size);
  return size;
}

absl::Status CompressBatch(absl::Span<const CompressTask> tasks, const Workspace& ws,
                           Stream stream, StageTimer* timer) {
  auto plan_or = MakePlan(tasks);
  if (!plan_or.ok()) return plan_or.status();
  const Plan& plan = *plan_or;
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
  const BatchTotals& t = plan.totals;
  const cudaStream_t st = stream;
  auto mark = [&](const char* stage) {
    if (timer) timer->Mark(stage, st);
  };
  if (timer) timer->Start(st);

  std::memcpy(b.host_segments, plan.segments.data(), S * sizeof(Segment));
  std::memcpy(b.host_items, plan.items.data(), I * sizeof(Item));
  std::memcpy(b.host_frame_templates, plan.frame_templates.data(), plan.frame_templates.size());
  std::memcpy(b.host_file_templates, plan.file_templates.data(), plan.file_templates.size());
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.segments, b.host_segments, S * sizeof(Segment),
                                       cudaMemcpyHostToDevice, st));
  CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(b.items, b.host_items, I * sizeof(Item), cudaMemcpyHostToDevice, st));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.frame_templates, b.host_frame_templates,
                                       plan.frame_templates.size(), cudaMemcpyHostToDevice, st));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.file_templates, b.host_file_templates,
                                       plan.file_templates.size(), cudaMemcpyHostToDevice, st));
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(b.histogram, 0, S * kAlphabet * 4, st));
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(b.masks, 0, 3 * t.mask_words * 4, st));
  mark("upload tables");

  // Bound, prediction, histogram.
  if (plan.any_relative) {
    CUDA_RETURN_IF_ERROR(LaunchRange(plan.elem_size, b.segments, S, b.items, t.tiles, st));
  }
  CUDA_RETURN_IF_ERROR(LaunchResolveBounds(b.items, I, st));
  mark("value range");
  PredictOutputs out{b.symbols, b.deltas, b.histogram, b.masks, b.masks + t.mask_words,
                     b.masks + 2 * t.mask_words};
  CUDA_RETURN_IF_ERROR(LaunchPredict(plan.elem_size, b.segments, S, b.items, t.tiles, out, st));
  mark("quantize+lorenzo+histogram");

  // The host's part, the codec's only synchronizations: the used window of
  // each histogram to the host (a few hundred of 65536 bins on smooth data),
  // codes for it back.
  CUDA_RETURN_IF_ERROR(LaunchHistogramWindows(b.histogram, S, b.windows, st));
  CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(b.host_windows, b.windows, S * sizeof(uint2), cudaMemcpyDeviceToHost, st));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st));
  for (uint32_t s = 0; s < S; ++s) {
    const Window w = WindowOf(b, s);
    if (w.count == 0) continue;
    const uint64_t at = s * kAlphabet + w.first;
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.host_histogram + at, b.histogram + at, w.count * 4,
                                         cudaMemcpyDeviceToHost, st));
  }
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st));
  ParallelFor(S, [&](uint64_t s) { BuildCodebook(s, plan.segments[s], b); });
  for (uint32_t s = 0; s < S; ++s) {
    const Window w = WindowOf(b, s);
    if (w.count == 0) continue;
    const uint64_t at = s * kAlphabet + w.first;
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.lengths + at, b.host_lengths + at, w.count,
                                         cudaMemcpyHostToDevice, st));
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.codes + at, b.host_codes + at, w.count * 4,
                                         cudaMemcpyHostToDevice, st));
  }
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.code_sections, b.host_code_sections,
                                       S * kCodeSectionStride, cudaMemcpyHostToDevice, st));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.codebooks, b.host_codebooks, S * sizeof(Codebook),
                                       cudaMemcpyHostToDevice, st));
  mark("huffman code (host)");

  // Sizes: special elements per mask tile, bits per chunk, and their scans.
  const uint32_t* outlier_mask = b.masks;
  const uint32_t* verbatim_mask = b.masks + t.mask_words;
  const uint32_t* fill_mask = b.masks + 2 * t.mask_words;
  CUDA_RETURN_IF_ERROR(LaunchCountSpecials(b.segments, S, t.mask_tiles, outlier_mask,
                                           verbatim_mask, fill_mask, b.tile_counts, st));
  size_t temp = b.cub_temp_bytes;
  CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveScan(b.cub_temp, temp, b.tile_counts,
                                                      b.tile_prefix, AddCounts(), SpecialCounts{},
                                                      t.mask_tiles, st));
  CUDA_RETURN_IF_ERROR(LaunchChunkBits(b.segments, S, t.chunks, b.symbols, b.lengths,
                                       b.chunk_bits, b.chunk_words, b.chunk_gaps, st));
  temp = b.cub_temp_bytes;
  CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(b.cub_temp, temp, b.chunk_words,
                                                     b.word_prefix, t.chunks, st));
  temp = b.cub_temp_bytes;
  CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(b.cub_temp, temp, b.chunk_gaps,
                                                     b.gap_prefix, t.chunks, st));
  mark("sizes and scans");

  // Layout, then every section straight into its place.
  const uint32_t jobs = S * (kSections - 1);
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(b.crc_job_pieces + jobs, 0, sizeof(uint64_t), st));
  CUDA_RETURN_IF_ERROR(LaunchLayout(plan.elem_size, b.segments, b.items, I, b.codebooks,
                                    b.tile_prefix, b.tile_counts, b.word_prefix, b.gap_prefix,
                                    b.chunk_words, b.chunk_gaps, b.layouts, b.crc_jobs,
                                    b.crc_job_pieces, st));
  CUDA_RETURN_IF_ERROR(LaunchEncode(b.segments, S, t.chunks, t.max_chunk_symbols,
                                    t.max_code_length, b.items, b.layouts, b.symbols, b.lengths,
                                    b.codes, b.chunk_bits, b.word_prefix, b.gap_prefix, st));
  mark("layout+encode");
  CUDA_RETURN_IF_ERROR(LaunchWriteSpecials(plan.elem_size, b.segments, S, t.mask_tiles, b.items,
                                           b.layouts, outlier_mask, verbatim_mask, fill_mask,
                                           b.tile_prefix, b.deltas, st));
  CUDA_RETURN_IF_ERROR(LaunchCopyCodeLengths(b.segments, S, b.items, b.layouts, b.codebooks,
                                             b.code_sections, st));
  mark("outliers+verbatim+fill");

  // Checksums, then the headers that carry them.
  temp = b.cub_temp_bytes;
  CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(b.cub_temp, temp, b.crc_job_pieces,
                                                     b.crc_piece_prefix, jobs + 1, st));
  CUDA_RETURN_IF_ERROR(LaunchCrcPieces(b.crc_jobs, jobs, b.crc_piece_prefix, plan.max_crc_pieces,
                                       b.piece_crcs, st));
  CUDA_RETURN_IF_ERROR(
      LaunchCrcCombine(b.crc_jobs, jobs, b.crc_piece_prefix, b.piece_crcs, nullptr, st));
  mark("crc32c");
  CUDA_RETURN_IF_ERROR(LaunchHeaders(b.segments, S, b.items, I, b.layouts, b.frame_templates,
                                     b.file_templates, st));
  mark("headers");
  return absl::OkStatus();
}

}  // namespace ebzip::gpu
