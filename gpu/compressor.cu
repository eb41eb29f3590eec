// CompressBatch: plans the segment table on the host, then runs the pipeline
// (FORMAT.md §10 on the device): range -> bound -> prediction -> histogram ->
// Huffman code (on the device, or on the host and back) -> special-element
// scan -> chunk sizes -> layout -> encode and compaction into place -> CRCs
// -> headers.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cub/device/device_scan.cuh>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/format.h"
#include "codec/huffman_code.h"
#include "codec/parallel.h"
#include "codec/quantize_point.h"
#include "gpu/cuda_status.h"
#include "gpu/gpu_codec.h"
#include "gpu/kernels.h"
#include "gpu/segment_plan.h"
#include "gpu/workspace_carver.h"

namespace ebzip::gpu {

namespace {

constexpr uint64_t kAlphabet = 65536;  // histogram and code-table stride per segment
constexpr uint64_t kCodeSectionStride = 2 * kAlphabet + 16;  // worst-case code-length section
// Bytes a code-length section of `used` symbols can take: each symbol's
// length, and before each of the at most used + 1 zero runs a 0 and a LEB128
// count of 1 byte, 2 for the at most 512 runs of 128 or more of 65536 bins,
// 3 for the at most 4 of 16384 or more.
uint64_t SectionRoom(uint64_t used) { return std::min(3 * used + 2 + 512 + 4, kCodeSectionStride); }
uint64_t Align16(uint64_t n) { return (n + 15) & ~uint64_t{15}; }
// Used symbols per segment that the first copy to the host has room for;
// more (noisy data at tight bounds) take a second copy. Smooth fields at
// REL 1e-4 use a few hundred.
constexpr uint64_t kListedPerSegment = 1024;

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
  CodeBuilder builder = CodeBuilder::kDevice;
  // Room for every segment's used symbols (at most its symbols and its
  // alphabet, at most 65536), listed one segment after another.
  uint64_t listed_capacity = 0;
  uint32_t max_used = 0;       // of any segment
  uint64_t section_bytes = 0;  // device-built codes: every segment's section room
};

absl::StatusOr<Plan> MakePlan(absl::Span<const CompressTask> tasks, CodeBuilder builder) {
  Plan plan;
  plan.builder = builder;
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
    if (archive->header.version != format::kVersion1) {
      return absl::UnimplementedError(
          "the GPU codec writes format version 1 only (--predictor lorenzo --lossless huffman)");
    }
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
      const uint64_t max_used = std::min<uint64_t>({kAlphabet, 2 * uint64_t{p.radius}, seg.geo.n});
      // Halving ends with every weight 1, a tree of ceil(log2(symbols))
      // levels: the limit must hold that (20 bits, FrameParams, always do).
      if ((uint64_t{1} << p.max_code_length) < max_used) {
        return absl::UnimplementedError("code length limit below the alphabet's size");
      }
      seg.code_section_at = plan.section_bytes;
      plan.section_bytes += Align16(SectionRoom(max_used));
      plan.listed_capacity += max_used;
      plan.max_used = std::max(plan.max_used, static_cast<uint32_t>(max_used));
      PlaceSegment(&seg, &plan.totals);
      plan.segments.push_back(seg);

      format::AppendFrameHeader(FrameHeaderFor(p), &plan.frame_templates);
    }
    plan.max_crc_pieces += task.capacity / kCrcPieceBytes + 1;
  }
  plan.max_crc_pieces += plan.segments.size() * kSections;
  // The device build's sort (CUB's segmented sort) counts items in an int.
  if (builder == CodeBuilder::kDevice && plan.listed_capacity > uint64_t{1} << 30) {
    return absl::UnimplementedError("too many frames for one GPU batch");
  }
  return plan;
}

// The call's arrays, carved from the workspaces.
struct Buffers {
  // Device.
  Segment* segments;
  Item* items;
  FrameLayout* layouts;
  CrcJob* crc_jobs;
  uint64_t* crc_job_pieces;
  uint64_t* crc_piece_prefix;
  uint8_t* frame_templates;
  uint8_t* file_templates;
  uint16_t* symbols;
  int32_t* deltas;
  uint32_t* histogram;
  uint32_t* used;     // per segment: its histogram's non-zero bins
  UsedSymbols* info;  // followed by the used-symbol list: one copy down
  SymbolCount* list;
  // Device-built codes.
  CodeBuildScratch build;
  Codebook* codebooks;
  uint8_t* sections;
  // Host-built codes: codebooks, lengths, codes, sections: one copy up.
  uint8_t* upload;
  uint32_t* masks;  // outliers, verbatim, fill
  SpecialCounts* tile_counts;
  SpecialCounts* tile_prefix;
  uint32_t* chunk_bits;
  uint64_t* chunk_words;
  uint64_t* chunk_gaps;
  uint64_t* word_prefix;
  uint64_t* gap_prefix;
  uint8_t* lengths;  // 65536 per segment, indexed by symbol
  uint32_t* codes;
  void* cub_temp;
  size_t cub_temp_bytes;
  // Host (pinned).
  UsedSymbols* host_info;  // followed by the list, room for every bin
  SymbolCount* host_list;
  uint8_t* host_upload;
  Segment* host_segments;
  Item* host_items;
  uint8_t* host_frame_templates;
  uint8_t* host_file_templates;
};

absl::StatusOr<size_t> CubTempBytes(const Plan& plan) {
  size_t a = 0, b = 0, c = 0;
  const uint64_t jobs = plan.segments.size() * kSections + 1;
  size_t d = 0;
  if (plan.builder == CodeBuilder::kDevice) {
    CUDA_RETURN_IF_ERROR(CodeBuildSortBytes(plan.listed_capacity, plan.segments.size(), &d));
  }
  CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveScan(
      nullptr, a, static_cast<SpecialCounts*>(nullptr), static_cast<SpecialCounts*>(nullptr),
      AddCounts(), SpecialCounts{}, plan.totals.mask_tiles));
  CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(nullptr, b, static_cast<uint64_t*>(nullptr),
                                                     static_cast<uint64_t*>(nullptr),
                                                     plan.totals.chunks));
  CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(nullptr, c, static_cast<uint64_t*>(nullptr),
                                                     static_cast<uint64_t*>(nullptr), jobs));
  return std::max({a, b, c, d});
}

// Worst case of what goes up after the host builds the codes: every
// segment using all the symbols it can.
uint64_t UploadBytes(const Plan& plan) {
  return Align16(plan.segments.size() * sizeof(Codebook)) + Align16(plan.listed_capacity) +
         plan.listed_capacity * 4 + plan.section_bytes;
}

// Where each part of the upload goes, once the used symbols are known:
// codebooks first, then the lengths and codes of the listed symbols in list
// order, then each segment's code-length section.
struct UploadLayout {
  uint64_t lengths = 0;  // byte offsets into the upload
  uint64_t codes = 0;
  uint64_t sections = 0;
  std::vector<uint64_t> section_at;  // into the sections
  uint64_t bytes = 0;                // to copy
};
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

Buffers Carve(const Plan& plan, size_t cub_temp_bytes, void* device, void* host,
              WorkspaceSize* size) {
  const uint64_t S = plan.segments.size();
  const uint64_t jobs = S * kSections;
  const uint64_t listed = plan.listed_capacity;
  const bool on_device = plan.builder == CodeBuilder::kDevice;
  Buffers b{};
  WorkspaceCarver d(device);
  b.segments = d.Take<Segment>(S);
  b.items = d.Take<Item>(plan.items.size());
  b.layouts = d.Take<FrameLayout>(S);
  b.crc_jobs = d.Take<CrcJob>(jobs);
  b.crc_job_pieces = d.Take<uint64_t>(jobs + 1);
  b.crc_piece_prefix = d.Take<uint64_t>(jobs + 1);
  b.frame_templates = d.Take<uint8_t>(plan.frame_templates.size());
  b.file_templates = d.Take<uint8_t>(plan.file_templates.size());
  b.symbols = d.Take<uint16_t>(plan.totals.symbols);
  b.deltas = d.Take<int32_t>(plan.totals.symbols);
  b.histogram = d.Take<uint32_t>(S * kAlphabet);
  b.used = d.Take<uint32_t>(S);
  static_assert(sizeof(UsedSymbols) == 16 && sizeof(SymbolCount) == 8);
  b.info = d.Take<UsedSymbols>(S + (listed + 1) / 2);
  b.list = b.info ? reinterpret_cast<SymbolCount*>(b.info + S) : nullptr;
  if (on_device) {
    CodeBuildScratch& x = b.build;
    x.keys[0] = d.Take<uint64_t>(listed);
    x.keys[1] = d.Take<uint64_t>(listed);
    x.leaf_weight = d.Take<uint32_t>(listed);
    x.internal_weight = d.Take<uint32_t>(listed);
    x.merged_weight = d.Take<uint32_t>(listed);
    x.merged_node = d.Take<uint32_t>(listed);
    x.parent = d.Take<uint32_t>(2 * listed);
    x.height = d.Take<uint8_t>(2 * listed);
    x.depth = d.Take<uint8_t>(listed);
    x.leaf_depth = d.Take<uint8_t>(listed);
    x.place_length = d.Take<uint8_t>(listed);
    x.sort_begin = d.Take<int>(S);
    x.sort_end = d.Take<int>(S);
    b.codebooks = d.Take<Codebook>(S);
    b.sections = d.Take<uint8_t>(plan.section_bytes);
  } else {
    b.upload = d.Take<uint8_t>(UploadBytes(plan));
  }
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
  b.cub_temp = d.Take<uint8_t>(cub_temp_bytes);
  b.cub_temp_bytes = cub_temp_bytes;
  b.build.sort_temp = b.cub_temp;  // the sort runs between the scans
  b.build.sort_temp_bytes = cub_temp_bytes;
  WorkspaceCarver h(host);
  if (!on_device) {
    b.host_info = h.Take<UsedSymbols>(S + (listed + 1) / 2);
    b.host_list = b.host_info ? reinterpret_cast<SymbolCount*>(b.host_info + S) : nullptr;
    b.host_upload = h.Take<uint8_t>(UploadBytes(plan));
  }
  b.host_segments = h.Take<Segment>(S);
  b.host_items = h.Take<Item>(plan.items.size());
  b.host_frame_templates = h.Take<uint8_t>(plan.frame_templates.size());
  b.host_file_templates = h.Take<uint8_t>(plan.file_templates.size());
  if (size) *size = {d.size(), h.size()};
  return b;
}

// The host's part: one frame's Huffman code from its used symbols, exactly
// as the CPU codec builds it from the whole histogram (codec/huffman_code.h):
// both rank symbols by weight, then by symbol, and assign canonical codes in
// symbol order, so unused symbols change nothing. Only the used symbols'
// lengths and codes go back up: the encoder looks up no other symbol.
void BuildCodebook(uint64_t s, const Segment& seg, const Buffers& b, const UploadLayout& up) {
  const UsedSymbols u = b.host_info[s];
  const absl::Span<const SymbolCount> used(b.host_list + u.offset, u.count);
  const std::vector<uint8_t> lengths =
      BuildCodeLengths(used, static_cast<int>(seg.max_code_length));
  const std::vector<uint32_t> codes = CanonicalCodes(lengths);
  std::vector<uint32_t> symbols(u.count);
  for (uint32_t i = 0; i < u.count; ++i) symbols[i] = used[i].symbol;
  std::vector<uint8_t> section;
  section.reserve(SectionRoom(u.count));
  AppendCodeLengths(symbols, lengths, 2 * seg.radius, &section);
  std::memcpy(b.host_upload + up.lengths + u.offset, lengths.data(), u.count);
  std::memcpy(b.host_upload + up.codes + 4 * u.offset, codes.data(), 4 * uint64_t{u.count});
  std::memcpy(b.host_upload + up.sections + up.section_at[s], section.data(), section.size());
  reinterpret_cast<Codebook*>(b.host_upload)[s] = {up.section_at[s], section.size()};
}

// The codes built on the host (CodeBuilder::kHost), the call's one
// synchronization (two when frames use many symbols): each histogram's used
// symbols to the host, listed in one copy; their codes back up in one.
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
  Clock::time_point since = Clock::now();
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st));
  note("wait for the symbol lists", since);
  const uint64_t listed = b.host_info[S - 1].offset + b.host_info[S - 1].count;
  if (listed > capacity) {
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.host_list + capacity, b.list + capacity,
                                         (listed - capacity) * sizeof(SymbolCount),
                                         cudaMemcpyDeviceToHost, st));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st));
  }
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

}  // namespace

uint64_t MaxArchiveBytes(const ArraySpec& spec, const CompressOptions& options) {
  auto plan = PlanArchive(spec, options, ResolvedBound{1, 2});
  if (!plan.ok()) return 0;
  const uint64_t elem = DTypeSize(spec.dtype);
  uint64_t total =
      format::kFileHeaderSize + format::FrameIndexSize(plan->frame_count()) + format::kTrailerSize;
  for (uint64_t f = 0; f < plan->frame_count(); ++f) {
    const FrameParams p = plan->ParamsForFrame(f);
    uint64_t n = 1;
    for (uint64_t d : p.shape) n *= d;
    const uint64_t chunks = (n + p.chunk_symbols - 1) / p.chunk_symbols;
    const uint64_t bits = n * p.max_code_length;
    total += format::kFrameHeaderSize + kSections * 8;  // header, padding
    total += kCodeSectionStride;                        // code lengths
    total += (chunks + p.chunk_group - 1) / p.chunk_group * 8 + chunks * 4;
    total += bits / p.subsequence_bits + chunks;  // gap array
    total += bits / 8 + chunks * 4;               // bitstream
    // An element is an outlier or not, and verbatim, fill or neither (fill
    // runs are at most one per two elements, 8 bytes each).
    total += n * 8 + std::max<uint64_t>(n * (4 + elem) + 8, (n + 1) / 2 * 8);
  }
  return total;
}

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
  PredictOutputs out{b.symbols,
                     b.deltas,
                     b.histogram,
                     b.masks,
                     b.masks + t.mask_words,
                     b.masks + 2 * t.mask_words};
  CUDA_RETURN_IF_ERROR(LaunchPredict(plan.elem_size, b.segments, S, b.items, t.tiles, out, st));
  mark("quantize+lorenzo+histogram");

  const Codebook* codebooks = b.codebooks;
  const uint8_t* code_sections = b.sections;
  if (plan.builder == CodeBuilder::kDevice) {
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

  // Sizes: special elements per mask tile, bits per chunk, and their scans.
  const uint32_t* outlier_mask = b.masks;
  const uint32_t* verbatim_mask = b.masks + t.mask_words;
  const uint32_t* fill_mask = b.masks + 2 * t.mask_words;
  CUDA_RETURN_IF_ERROR(LaunchCountSpecials(b.segments, S, t.mask_tiles, outlier_mask, verbatim_mask,
                                           fill_mask, b.tile_counts, st));
  size_t temp = b.cub_temp_bytes;
  CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveScan(b.cub_temp, temp, b.tile_counts,
                                                      b.tile_prefix, AddCounts(), SpecialCounts{},
                                                      t.mask_tiles, st));
  CUDA_RETURN_IF_ERROR(LaunchChunkBits(b.segments, S, t.chunks, b.symbols, b.lengths, b.chunk_bits,
                                       b.chunk_words, b.chunk_gaps, st));
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
                                    b.chunk_words, b.chunk_gaps, b.layouts, b.crc_jobs,
                                    b.crc_job_pieces, st));
  CUDA_RETURN_IF_ERROR(LaunchEncode(b.segments, S, t.chunks, t.max_chunk_symbols, t.max_code_length,
                                    b.items, b.layouts, b.symbols, b.lengths, b.codes, b.chunk_bits,
                                    b.word_prefix, b.gap_prefix, st));
  mark("layout+encode");
  CUDA_RETURN_IF_ERROR(LaunchWriteSpecials(plan.elem_size, b.segments, S, t.mask_tiles, b.items,
                                           b.layouts, outlier_mask, verbatim_mask, fill_mask,
                                           b.tile_prefix, b.deltas, st));
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
