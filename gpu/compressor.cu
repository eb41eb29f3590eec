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
#include "codec/frame_content.h"
#include "codec/huffman_code.h"
#include "codec/parallel.h"
#include "codec/predictor_choice.h"
#include "codec/quantize_point.h"
#include "gpu/cuda_status.h"
#include "gpu/gpu_codec.h"
#include "gpu/host_code.h"
#include "gpu/interp_frame_encode.h"
#include "gpu/interp_kernels.h"
#include "gpu/kernels.h"
#include "gpu/predictor_survey.h"
#include "gpu/run_kernels.h"
#include "gpu/segment_plan.h"
#include "gpu/workspace_carver.h"

namespace ebzip::gpu {

namespace {

constexpr uint64_t kAlphabet = 65536;  // histogram and code-table stride per segment
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

// Version 2, per segment: what the choice of predictor (FORMAT.md §15.9)
// needs, and what it chose.
struct FrameV2 {
  FrameParams params;  // with the resolved bound once the device has it
  std::vector<PredictorConfig> candidates;
  int32_t surveyed = -1;  // its place in the survey's frames; -1: one candidate
  uint64_t fill_workspace_at = 0;
  size_t fill_workspace_bytes = 0;  // 0: no candidate codes a fill mask
  Geometry lorenzo{};               // the Lorenzo candidate's geometry
  PredictorConfig config;
  InterpPlan interp;  // when config is interpolation
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
  // Version 2: the predictor is chosen on the device's survey of the
  // frames' samples and the stage picked on the host (two synchronizations
  // besides the bound's), codes are built there, and the workspace has room
  // for whichever candidate wins. Interpolation frames are encoded in
  // batches of consecutive frames of one array and shape (InterpBatchCap).
  bool v2 = false;
  std::vector<FrameV2> frames;  // per segment
  PredictorSurvey survey;       // of the frames with several candidates
  size_t interp_scratch = 0;    // the largest batch's
  uint64_t interp_outliers = 0; // the most anchors of any batch
  uint64_t fill_mask_elements = 0;  // the largest batch that may code fill masks
  uint64_t fill_workspace = 0;
};

// Interpolation frames per batch: frames with a fill mask take a byte per
// element of scratch each, so their batches stop at kFillBatchElements.
constexpr uint32_t kMaxInterpBatch = 1024;
constexpr uint64_t kFillBatchElements = uint64_t{1} << 26;
uint32_t InterpBatchCap(uint64_t n, bool fill) {
  if (!fill) return kMaxInterpBatch;
  return static_cast<uint32_t>(std::clamp<uint64_t>(kFillBatchElements / n, 1, kMaxInterpBatch));
}

// Histograms per segment: version 2 keeps the tokens' beside the symbols'.
uint64_t HistogramSets(const Plan& plan) { return plan.v2 ? 2 : 1; }
// Whether the host builds the codes (version 2 always: it picks the stage).
bool HostCodes(const Plan& plan) { return plan.builder == CodeBuilder::kHost || plan.v2; }

// Version 2: the frame's candidates and its fill mask's workspace.
absl::Status PlanFrameV2(const FrameParams& p, bool has_fill, Plan* plan, FrameV2* frame) {
  frame->params = p;
  frame->candidates = Candidates(p);
  uint64_t n = 1;
  for (uint64_t d : p.shape) n *= d;
  bool interp = false;
  for (const PredictorConfig& c : frame->candidates) {
    if (c.predictor == format::kPredictorLorenzo) {
      frame->lorenzo = MakeGeometry(p.shape, {c.block.data(), p.shape.size()});
      if (auto s = CheckGpuLimits(frame->lorenzo, p.chunk_symbols, p.max_code_length); !s.ok()) {
        return s;
      }
      continue;
    }
    interp = true;
  }
  if (interp && has_fill) {
    CUDA_RETURN_IF_ERROR(FillMaskEncodeWorkspace(n, &frame->fill_workspace_bytes));
    frame->fill_workspace_at = plan->fill_workspace;
    plan->fill_workspace += Align16(frame->fill_workspace_bytes);
  }
  return absl::OkStatus();
}

// Version 2: room for the largest batch of interpolation frames that any
// choice can make. A batch is consecutive frames of one array and shape
// taking one candidate, so at most a run of such frames, each candidate's
// plan tried at the run's length (capped).
absl::Status PlanInterpBatches(Plan* plan) {
  const uint64_t S = plan->segments.size();
  for (uint64_t s = 0; s < S;) {
    const Segment& seg = plan->segments[s];
    const FrameV2& f = plan->frames[s];
    uint64_t e = s + 1;
    while (e < S && plan->segments[e].item == seg.item &&
           plan->frames[e].params.shape == f.params.shape) {
      ++e;
    }
    const bool fill = plan->items[seg.item].has_fill != 0;
    const uint64_t n = seg.geo.n;
    const uint32_t frames = static_cast<uint32_t>(std::min<uint64_t>(e - s, InterpBatchCap(n, fill)));
    for (const PredictorConfig& c : f.candidates) {
      if (c.predictor != format::kPredictorInterp) continue;
      auto ip = PlanInterp(InterpParamsFor(f.params, c), fill);
      if (!ip.ok()) return ip.status();
      auto scratch = InterpEncodeBatchScratch(*ip, frames);
      if (!scratch.ok()) return scratch.status();
      plan->interp_scratch = std::max(plan->interp_scratch, *scratch);
      plan->interp_outliers = std::max(plan->interp_outliers, frames * ip->geo.num_tiles);
      if (fill) plan->fill_mask_elements = std::max(plan->fill_mask_elements, frames * n);
    }
    s = e;
  }
  return absl::OkStatus();
}

// A frame's geometry for the kernels that see it: its Lorenzo blocks, or,
// for an interpolation frame (which those kernels skip), blocks of one
// element, so that only the range pass's tiles follow from it.
Geometry GeometryFor(const FrameParams& p, const PredictorConfig& config) {
  if (config.predictor == format::kPredictorLorenzo) {
    return MakeGeometry(p.shape, {config.block.data(), p.shape.size()});
  }
  const std::array<uint16_t, kMaxDims> ones = {1, 1, 1, 1};
  return MakeGeometry(p.shape, {ones.data(), p.shape.size()});
}

absl::StatusOr<Plan> MakePlan(absl::Span<const CompressTask> tasks, CodeBuilder builder) {
  Plan plan;
  plan.builder = builder;
  if (tasks.empty()) return absl::InvalidArgumentError("no arrays to compress");
  std::vector<ArchivePlan> archives;
  std::vector<SurveyFrame> surveyed;
  for (const CompressTask& task : tasks) {
    if (task.spec.dtype != tasks[0].spec.dtype) {
      return absl::InvalidArgumentError("a GPU batch takes one dtype");
    }
    // The bound is resolved on the device; the plan's placeholder bound only
    // fills header fields the device overwrites (version 2 plans again once
    // the bound is known).
    auto archive = PlanArchive(task.spec, task.options, ResolvedBound{1, 2});
    if (!archive.ok()) return archive.status();
    if (!task.options.metadata.empty()) {
      return absl::UnimplementedError("the GPU codec writes no metadata block");
    }
    plan.v2 |= archive->header.version != format::kVersion1;
    archives.push_back(*std::move(archive));
  }
  for (size_t i = 0; i < tasks.size(); ++i) {
    const CompressTask& task = tasks[i];
    const ArchivePlan* archive = &archives[i];
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
      seg.input = static_cast<const uint8_t*>(task.input) + archive->FrameDataOffset(f);
      if (plan.v2) {
        FrameV2 frame;
        if (auto s = PlanFrameV2(p, item.has_fill != 0, &plan, &frame); !s.ok()) return s;
        seg.geo = GeometryFor(p, frame.candidates[0]);
        if (frame.candidates.size() > 1) {
          frame.surveyed = static_cast<int32_t>(surveyed.size());
          surveyed.push_back({p, seg.input, static_cast<uint32_t>(i), item.has_fill != 0});
        }
        plan.frames.push_back(std::move(frame));
      } else {
        seg.geo = MakeGeometry(p.shape, {p.block.data(), p.shape.size()});
        if (auto s = CheckGpuLimits(seg.geo, p.chunk_symbols, p.max_code_length); !s.ok()) {
          return s;
        }
      }
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
      // Version 2 lists the tokens' used symbols too (12 run classes more).
      const uint64_t max_tokens =
          plan.v2 ? std::min<uint64_t>({kAlphabet, 2 * uint64_t{p.radius} + format::kRunClasses,
                                        seg.geo.n})
                  : 0;
      seg.code_section_at = plan.section_bytes;
      plan.section_bytes += Align16(SectionRoom(std::max(max_used, max_tokens)));
      plan.listed_capacity += max_used + max_tokens;
      plan.max_used = std::max(plan.max_used, static_cast<uint32_t>(max_used));
      PlaceSegment(&seg, &plan.totals);
      plan.segments.push_back(seg);

      format::AppendFrameHeader(FrameHeaderFor(p), &plan.frame_templates);
    }
    plan.max_crc_pieces += task.capacity / kCrcPieceBytes + 1;
  }
  plan.max_crc_pieces += plan.segments.size() * kSections;
  if (plan.v2) {
    if (auto s = PlanInterpBatches(&plan); !s.ok()) return s;
    auto survey = PredictorSurvey::Plan(std::move(surveyed), plan.elem_size);
    if (!survey.ok()) return survey.status();
    plan.survey = *std::move(survey);
  }
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
  // Version 2.
  uint32_t* run_counters;  // kRunCountersPerSegment per segment
  uint64_t* extra_bits;    // per segment: the run tokens' extra bits
  uint32_t* interp_counts;  // per segment: S and outliers of an interpolation frame
  uint8_t* interp_scratch;  // one batch of frames at a time
  uint32_t* outlier_index;  // one batch's anchors that are outliers
  int32_t* outlier_residual;
  uint8_t* fill_bytes;      // one batch's fill, a byte per element
  uint8_t* fill_workspace;  // each fill-mask frame's, kept from sizes to writing
  uint64_t* fill_sizes;     // per segment: fill-mask section bytes and tokens
  uint8_t** fill_mask_at;   // per segment: where LaunchLayout puts the mask
  uint32_t* host_counts;
  uint64_t* host_extra_bits;
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
// segment using all the symbols it can (version 2: and which list each
// segment's code is in).
uint64_t UploadBytes(const Plan& plan) {
  const uint64_t choice = plan.v2 ? Align16(plan.segments.size() * sizeof(UsedSymbols)) : 0;
  return Align16(plan.segments.size() * sizeof(Codebook)) + choice +
         Align16(plan.listed_capacity) + plan.listed_capacity * 4 + plan.section_bytes;
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

Buffers Carve(Plan& plan, size_t cub_temp_bytes, void* device, void* host,
              WorkspaceSize* size) {
  const uint64_t S = plan.segments.size();
  const uint64_t H = S * HistogramSets(plan);
  const uint64_t jobs = S * kSections;
  const uint64_t listed = plan.listed_capacity;
  const bool on_device = !HostCodes(plan);
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
  b.histogram = d.Take<uint32_t>(H * kAlphabet);
  b.used = d.Take<uint32_t>(H);
  static_assert(sizeof(UsedSymbols) == 16 && sizeof(SymbolCount) == 8);
  b.info = d.Take<UsedSymbols>(H + (listed + 1) / 2);
  b.list = b.info ? reinterpret_cast<SymbolCount*>(b.info + H) : nullptr;
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
  if (plan.v2) {
    b.run_counters = d.Take<uint32_t>(S * kRunCountersPerSegment);
    b.extra_bits = d.Take<uint64_t>(S);
    b.interp_counts = d.Take<uint32_t>(2 * S);
    b.interp_scratch = d.Take<uint8_t>(plan.interp_scratch);
    b.outlier_index = d.Take<uint32_t>(plan.interp_outliers);
    b.outlier_residual = d.Take<int32_t>(plan.interp_outliers);
    b.fill_bytes = d.Take<uint8_t>(plan.fill_mask_elements);
    b.fill_workspace = d.Take<uint8_t>(plan.fill_workspace);
  }
  b.fill_sizes = d.Take<uint64_t>(2 * S);
  b.fill_mask_at = d.Take<uint8_t*>(S);
  WorkspaceCarver h(host);
  if (!on_device) {
    b.host_info = h.Take<UsedSymbols>(H + (listed + 1) / 2);
    b.host_list = b.host_info ? reinterpret_cast<SymbolCount*>(b.host_info + H) : nullptr;
    b.host_upload = h.Take<uint8_t>(UploadBytes(plan));
  }
  if (plan.v2) {
    b.host_counts = h.Take<uint32_t>(2 * S);
    b.host_extra_bits = h.Take<uint64_t>(S);
  }
  b.host_segments = h.Take<Segment>(S);
  b.host_items = h.Take<Item>(plan.items.size());
  b.host_frame_templates = h.Take<uint8_t>(plan.frame_templates.size());
  b.host_file_templates = h.Take<uint8_t>(plan.file_templates.size());
  plan.survey.Carve(&d, &h);
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

// --- Version 2.

// A CUDA event for the length of a call (none allocates device memory).
class ScopedEvent {
 public:
  ~ScopedEvent() {
    if (event_ != nullptr) cudaEventDestroy(event_);
  }
  cudaError_t Record(cudaStream_t st) {
    if (event_ == nullptr) {
      if (cudaError_t e = cudaEventCreateWithFlags(&event_, cudaEventDisableTiming);
          e != cudaSuccess) {
        return e;
      }
    }
    return cudaEventRecord(event_, st);
  }
  cudaError_t Synchronize() { return cudaEventSynchronize(event_); }

 private:
  cudaEvent_t event_ = nullptr;
};

// Each frame's predictor, chosen as the CPU codec chooses it
// (codec/predictor_choice.h) on the device's survey of the same samples
// (gpu/predictor_survey.h): the survey's first part runs while the device's
// bound for every item comes to the host (the first synchronization, on an
// event); the host plans each archive again with the bound, the survey's
// second part ends in the second; then the segments are laid out for the
// winners.
absl::Status ChoosePredictors(absl::Span<const CompressTask> tasks, Plan* plan, const Buffers& b,
                              cudaStream_t st, StageTimer* timer) {
  auto mark = [&](const char* stage) {
    if (timer) timer->Mark(stage, st);
  };
  const uint32_t S = static_cast<uint32_t>(plan->segments.size());
  const uint32_t I = static_cast<uint32_t>(plan->items.size());
  CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(b.host_items, b.items, I * sizeof(Item), cudaMemcpyDeviceToHost, st));
  ScopedEvent bounds;
  if (plan->survey.empty()) {
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st));
  } else {
    CUDA_RETURN_IF_ERROR(bounds.Record(st));
    if (auto e = plan->survey.LaunchWithoutBounds(b.items, st); !e.ok()) return e;
    mark("survey: samples, fill, lorenzo");
    CUDA_RETURN_IF_ERROR(bounds.Synchronize());
  }
  for (uint32_t i = 0, s = 0; i < I; ++i) {
    const ResolvedBound bound{b.host_items[i].abs_bound, b.host_items[i].quant_step};
    auto archive = PlanArchive(tasks[i].spec, tasks[i].options, bound);
    if (!archive.ok()) return archive.status();
    for (uint64_t f = 0; f < archive->frame_count(); ++f) {
      plan->frames[s++].params = archive->ParamsForFrame(f);
    }
  }
  std::vector<FrameParams> surveyed;
  for (const FrameV2& f : plan->frames) {
    if (f.surveyed >= 0) surveyed.push_back(f.params);
  }
  if (auto e = plan->survey.LaunchWithBounds(surveyed, st); !e.ok()) return e;
  if (!plan->survey.empty()) mark("survey: interpolation, histograms");
  auto chosen = plan->survey.Finish(st, timer);
  if (!chosen.ok()) return chosen.status();
  for (FrameV2& f : plan->frames) {
    f.config = f.surveyed >= 0 ? (*chosen)[f.surveyed] : f.candidates[0];
  }
  BatchTotals totals;
  for (uint32_t s = 0; s < S; ++s) {
    Segment& seg = plan->segments[s];
    FrameV2& f = plan->frames[s];
    seg.predictor = f.config.predictor;
    seg.order = f.config.order;
    seg.geo = GeometryFor(f.params, f.config);
    // Runs are counted wherever they are allowed; the stage is picked later.
    seg.lossless = f.params.version >= 2 && f.params.lossless != Lossless::kHuffman;
    seg.fill_coding = format::kFillCodingRuns;
    seg.positions = 0;
    if (seg.predictor == format::kPredictorInterp) {
      const bool has_fill = plan->items[seg.item].has_fill != 0;
      // The previous frame's plan when it is the same frame's (an array's
      // frames share their shape, bound and often their winner).
      const FrameV2* prev = s > 0 ? &plan->frames[s - 1] : nullptr;
      if (prev != nullptr && plan->segments[s - 1].predictor == format::kPredictorInterp &&
          plan->segments[s - 1].item == seg.item && prev->params.shape == f.params.shape &&
          prev->config.order == f.config.order && prev->config.block == f.config.block) {
        f.interp = prev->interp;
      } else {
        auto interp = PlanInterp(InterpParamsFor(f.params, f.config), has_fill);
        if (!interp.ok()) return interp.status();
        if (interp->encode_scratch > plan->interp_scratch ||
            interp->geo.num_tiles > plan->interp_outliers) {
          return absl::InternalError("interpolation plan larger than planned");
        }
        f.interp = *std::move(interp);
      }
      if (has_fill) seg.fill_coding = format::kFillCodingMask;
    }
    PlaceSegment(&seg, &totals);
  }
  plan->totals = totals;
  std::memcpy(b.host_segments, plan->segments.data(), S * sizeof(Segment));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.segments, b.host_segments, S * sizeof(Segment),
                                       cudaMemcpyHostToDevice, st));
  return absl::OkStatus();
}

// Whether interpolation segment e can join the batch of segments [s, e):
// one array, shape and candidate, inputs at one stride, room left.
bool JoinsBatch(const Plan& plan, uint32_t s, uint32_t e) {
  const Segment& a = plan.segments[s];
  const Segment& z = plan.segments[e];
  const FrameV2& fa = plan.frames[s];
  const FrameV2& fz = plan.frames[e];
  if (z.predictor != format::kPredictorInterp || z.item != a.item ||
      fz.params.shape != fa.params.shape || fz.config.order != fa.config.order ||
      fz.config.block != fa.config.block || z.fill_coding != a.fill_coding) {
    return false;
  }
  const bool fill = a.fill_coding == format::kFillCodingMask;
  if (e - s >= InterpBatchCap(a.geo.n, fill)) return false;
  auto at = [&](uint32_t k) { return reinterpret_cast<uint64_t>(plan.segments[k].input); };
  const uint64_t step = at(e) - at(e - 1);
  return at(e) > at(e - 1) && (e - s == 1 || step == at(s + 1) - at(s));
}

// Interpolation frames in batches (the Lorenzo ones are coded by
// LaunchPredict): fill bytes, the encoder, its outliers and S into the
// batch's tables, the histograms, and each fill mask's size.
absl::Status EncodeInterpFrames(const Plan& plan, const Buffers& b, cudaStream_t st) {
  const BatchTotals& t = plan.totals;
  const uint32_t S = static_cast<uint32_t>(plan.segments.size());
  for (uint32_t s = 0; s < S;) {
    const Segment& seg = plan.segments[s];
    if (seg.predictor != format::kPredictorInterp) {
      ++s;
      continue;
    }
    uint32_t e = s + 1;
    while (e < S && JoinsBatch(plan, s, e)) ++e;
    const uint32_t frames = e - s;
    const FrameV2& f = plan.frames[s];
    const uint64_t n = seg.geo.n;
    const uint64_t tiles = f.interp.geo.num_tiles;
    const bool fill = seg.fill_coding == format::kFillCodingMask;
    auto scratch = InterpEncodeBatchScratch(f.interp, frames);
    if (!scratch.ok()) return scratch.status();
    if (*scratch > plan.interp_scratch || frames * tiles > plan.interp_outliers ||
        (fill && frames * n > plan.fill_mask_elements)) {
      return absl::InternalError("interpolation batch larger than planned");
    }
    if (fill) {
      CUDA_RETURN_IF_ERROR(LaunchFillByteMask(plan.elem_size, b.segments + s, frames, b.items, n,
                                              b.fill_bytes, n, st));
    }
    InterpEncodeBatch batch;
    batch.frames = frames;
    batch.input = seg.input;
    batch.input_stride = frames > 1 ? static_cast<const uint8_t*>(plan.segments[s + 1].input) -
                                          static_cast<const uint8_t*>(seg.input)
                                    : 0;
    batch.fill_mask = fill ? b.fill_bytes : nullptr;
    batch.fill_stride = n;
    batch.out.symbols = b.symbols + seg.symbol_base;
    batch.out.verbatim_mask = b.masks + t.mask_words + seg.mask_base;
    batch.out.outlier_index = b.outlier_index;
    batch.out.outlier_residual = b.outlier_residual;
    batch.out.counts = b.interp_counts + 2 * uint64_t{s};
    batch.symbols_stride = n;  // segments are placed one after another
    batch.verbatim_stride = seg.mask_tiles * kMaskTileWords;
    batch.outlier_stride = tiles;
    batch.counts_stride = 2;
    if (auto r = LaunchInterpEncodeBatch(f.interp, batch, b.interp_scratch, st); !r.ok()) return r;
    CUDA_RETURN_IF_ERROR(LaunchTakeInterpResults(b.segments + s, frames, batch.out.counts, 2,
                                                 b.outlier_index, b.outlier_residual, tiles, tiles,
                                                 b.masks, b.deltas, st));
    CUDA_RETURN_IF_ERROR(LaunchSymbolHistogram(b.segments + s, frames, b.symbols, n,
                                               b.histogram + uint64_t{s} * kAlphabet, st));
    for (uint32_t k = s; fill && k < e; ++k) {
      const FrameV2& fk = plan.frames[k];
      const uint64_t row = fk.params.shape.size() == 1 ? n : n / fk.params.shape[0];
      CUDA_RETURN_IF_ERROR(LaunchFillMaskEncodeSizes(
          b.fill_bytes + (k - s) * n, n, row, b.fill_workspace + fk.fill_workspace_at,
          fk.fill_workspace_bytes, b.fill_sizes + 2 * k, b.fill_sizes + 2 * k + 1, st));
    }
    s = e;
  }
  return absl::OkStatus();
}

// Where BuildStageCodesOnHost left the codes on the device.
struct StageCodes {
  const Codebook* codebooks;
  const uint8_t* sections;
};

// The second synchronization: the tokens' histogram beside the symbols',
// both lists of used symbols, S and the extra bits to the host; there both
// stages' codes are built and the smaller taken (FORMAT.md §15.9, as
// codec/entropy_coder.h's SmallerCode); the chosen codes go up, and the
// segments are laid out again over their S positions with their stage.
absl::StatusOr<StageCodes> BuildStageCodesOnHost(Plan* plan, const Buffers& b, cudaStream_t st) {
  const uint32_t S = static_cast<uint32_t>(plan->segments.size());
  const uint32_t H = 2 * S;
  uint32_t* tokens = b.histogram + uint64_t{S} * kAlphabet;
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(tokens, b.histogram, uint64_t{S} * kAlphabet * 4,
                                       cudaMemcpyDeviceToDevice, st));
  CUDA_RETURN_IF_ERROR(
      LaunchRunCounters(b.segments, S, plan->totals.chunks, b.symbols, b.run_counters, st));
  CUDA_RETURN_IF_ERROR(
      LaunchTokenHistogram(b.segments, S, b.run_counters, tokens, b.extra_bits, st));
  CUDA_RETURN_IF_ERROR(LaunchListUsedSymbols(b.histogram, H, b.used, b.info, b.list, st));
  const uint64_t capacity = std::min(uint64_t{H} * kListedPerSegment, plan->listed_capacity);
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.host_info, b.info,
                                       H * sizeof(UsedSymbols) + capacity * sizeof(SymbolCount),
                                       cudaMemcpyDeviceToHost, st));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.host_counts, b.interp_counts, 2 * S * sizeof(uint32_t),
                                       cudaMemcpyDeviceToHost, st));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.host_extra_bits, b.extra_bits, S * sizeof(uint64_t),
                                       cudaMemcpyDeviceToHost, st));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st));
  const uint64_t listed = b.host_info[H - 1].offset + b.host_info[H - 1].count;
  if (listed > capacity) {
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.host_list + capacity, b.list + capacity,
                                         (listed - capacity) * sizeof(SymbolCount),
                                         cudaMemcpyDeviceToHost, st));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st));
  }
  std::vector<HostCode> chosen(S);
  std::vector<uint8_t> runs(S);
  auto build = [&](uint64_t s) {
    const Segment& seg = plan->segments[s];
    const FrameParams& p = plan->frames[s].params;
    const bool allow_runs = p.version >= 2 && p.lossless != Lossless::kHuffman;
    const bool allow_plain = !allow_runs || p.lossless != Lossless::kZeroRuns;
    auto used = [&](uint64_t k) {
      return absl::MakeConstSpan(b.host_list + b.host_info[k].offset, b.host_info[k].count);
    };
    const int max_length = static_cast<int>(seg.max_code_length);
    HostCode plain, run;
    if (allow_plain) plain = BuildHostCode(used(s), 2 * seg.radius, max_length, 0);
    if (allow_runs) {
      run = BuildHostCode(used(S + s), 2 * seg.radius + format::kRunClasses, max_length,
                          b.host_extra_bits[s]);
    }
    runs[s] = allow_runs && (!allow_plain || run.bits < plain.bits);
    chosen[s] = runs[s] ? std::move(run) : std::move(plain);
  };
  if (S <= 2) {
    for (uint32_t s = 0; s < S; ++s) build(s);
  } else {
    ParallelFor(S, build);
  }
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
    const UsedSymbols u = b.host_info[runs[s] ? S + s : s];
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
    seg.lossless = runs[s];
    seg.positions = seg.predictor == format::kPredictorInterp ? b.host_counts[2 * s] : 0;
    if (seg.predictor == format::kPredictorInterp &&
        (seg.positions == 0 || seg.positions > seg.geo.n)) {
      return absl::InternalError("interpolation frame with a symbol count out of range");
    }
    PlaceSegment(&seg, &totals);
    format::FrameHeader h = FrameHeaderFor(f.params);
    h.predictor = f.config.predictor;
    h.order = f.config.order;
    h.block = f.config.block;
    h.lossless = runs[s] ? format::kLosslessZeroRuns : format::kLosslessHuffman;
    h.fill_coding = static_cast<uint8_t>(seg.fill_coding);
    h.positions = static_cast<uint32_t>(seg.positions);
    format::AppendFrameHeader(h, &plan->frame_templates);
  }
  plan->totals = totals;
  std::memcpy(b.host_segments, plan->segments.data(), S * sizeof(Segment));
  std::memcpy(b.host_frame_templates, plan->frame_templates.data(), plan->frame_templates.size());
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.segments, b.host_segments, S * sizeof(Segment),
                                       cudaMemcpyHostToDevice, st));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.frame_templates, b.host_frame_templates,
                                       plan->frame_templates.size(), cudaMemcpyHostToDevice, st));
  return StageCodes{reinterpret_cast<const Codebook*>(b.upload), b.upload + sections_at};
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
    if (p.version >= 2 && p.fill_value) total += MaxFillMaskSectionBytes(n);
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
  CUDA_RETURN_IF_ERROR(LaunchPredict(plan.elem_size, b.segments, S, b.items, t.tiles, out, st));
  mark("quantize+lorenzo+histogram");
  if (plan.v2) {
    if (auto e = EncodeInterpFrames(plan, b, st); !e.ok()) return e;
    mark("interpolation+histogram");
  }

  const Codebook* codebooks = b.codebooks;
  const uint8_t* code_sections = b.sections;
  bool any_runs = false;
  if (plan.v2) {
    auto codes = BuildStageCodesOnHost(&plan, b, st);
    if (!codes.ok()) return codes.status();
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
  const auto chunk_bits = any_runs ? LaunchRunChunkBits : LaunchChunkBits;
  CUDA_RETURN_IF_ERROR(chunk_bits(b.segments, S, t.chunks, b.symbols, b.lengths, b.chunk_bits,
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
                                    b.chunk_words, b.chunk_gaps, b.fill_sizes, b.fill_mask_at,
                                    b.layouts, b.crc_jobs, b.crc_job_pieces, st));
  for (uint32_t s = 0; plan.v2 && s < S; ++s) {
    const FrameV2& f = plan.frames[s];
    if (plan.segments[s].fill_coding != format::kFillCodingMask) continue;
    CUDA_RETURN_IF_ERROR(LaunchFillMaskEncodeWrite(plan.segments[s].geo.n,
                                                   b.fill_workspace + f.fill_workspace_at,
                                                   f.fill_workspace_bytes, b.fill_mask_at + s, st));
  }
  const auto encode = any_runs ? LaunchRunEncode : LaunchEncode;
  CUDA_RETURN_IF_ERROR(encode(b.segments, S, t.chunks, t.max_chunk_symbols, t.max_code_length,
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
