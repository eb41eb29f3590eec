// The batch's plan (gpu/compress_plan.h): the segment table and every
// batch-wide array's size from shapes and options alone, the workspace
// carved from it, and the public worst case of an archive's size.
#include "gpu/compress_plan.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <cub/device/device_scan.cuh>
#include <vector>

#include "codec/archive.h"
#include "codec/format.h"
#include "codec/predictor_choice.h"
#include "codec/quantize_point.h"
#include "gpu/cuda_status.h"
#include "gpu/host_code.h"
#include "gpu/run_kernels.h"
#include "gpu/segment_plan.h"
#include "gpu/workspace_carver.h"

namespace ebzip::gpu::compress {

namespace {

// Histograms per segment: version 2 keeps both token stages' beside the
// symbols' (lossless 0, 1, 2 in that order).
uint64_t HistogramSets(const Plan& plan) { return plan.v2 ? 3 : 1; }
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
// choice can make. A batch is consecutive frames of one shape, radius and
// fill coding taking one candidate (of one array or of several: each frame
// brings its own bound), so at most a run of such frames, each candidate
// any of them has planned at the run's length (capped).
absl::Status PlanInterpBatches(Plan* plan) {
  const uint64_t S = plan->segments.size();
  auto fill_of = [&](uint64_t k) { return plan->items[plan->segments[k].item].has_fill != 0; };
  for (uint64_t s = 0; s < S;) {
    const FrameV2& f = plan->frames[s];
    const bool fill = fill_of(s);
    uint64_t e = s + 1;
    while (e < S && plan->frames[e].params.shape == f.params.shape &&
           plan->frames[e].params.radius == f.params.radius && fill_of(e) == fill) {
      ++e;
    }
    const uint64_t n = plan->segments[s].geo.n;
    const uint32_t frames = static_cast<uint32_t>(std::min<uint64_t>(e - s, InterpBatchCap(n, fill)));
    std::vector<PredictorConfig> planned;
    for (uint64_t k = s; k < e; ++k) {
      for (const PredictorConfig& c : plan->frames[k].candidates) {
        if (c.predictor != format::kPredictorInterp) continue;
        if (std::any_of(planned.begin(), planned.end(), [&](const PredictorConfig& p) {
              return p.order == c.order && p.block == c.block;
            })) {
          continue;
        }
        planned.push_back(c);
        auto ip = PlanInterp(InterpParamsFor(f.params, c), fill);
        if (!ip.ok()) return ip.status();
        auto scratch = InterpEncodeBatchScratch(*ip, frames);
        if (!scratch.ok()) return scratch.status();
        plan->interp_scratch = std::max(plan->interp_scratch, *scratch);
        plan->interp_outliers = std::max(plan->interp_outliers, frames * ip->geo.num_tiles);
        if (fill) plan->fill_mask_elements = std::max(plan->fill_mask_elements, frames * n);
      }
    }
    s = e;
  }
  return absl::OkStatus();
}

}  // namespace

FrameParams TaskFrameParams(const CompressTask& task, const ArchivePlan& archive, uint64_t f) {
  FrameParams p = archive.ParamsForFrame(f);
  if (task.first_row) p.first_row = *task.first_row;
  return p;
}

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
    if (task.first_row && archive->frame_count() != 1) {
      return absl::InvalidArgumentError("a frame task that plans more than one frame");
    }
    if (task.first_row && task.options.mode == BoundMode::kRel && !task.options.range) {
      // The frame's own range would give it a bound of its own.
      return absl::InvalidArgumentError("a frame task with a relative bound needs its range");
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
    item.frame_only = task.first_row.has_value();
    item.first_segment = plan.segments.size();
    item.num_segments = archive->frame_count();
    item.relative = task.options.mode == BoundMode::kRel;
    item.has_fill = task.options.fill_value.has_value();
    item.bound = task.options.bound;
    item.narrowing = NarrowingFor(task.options, task.spec.dtype);
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
    if (item.relative && task.options.range) {
      item.relative = 2;
      if (task.options.range->any) {
        item.min_key = OrderedKey(task.options.range->min);
        item.max_key = OrderedKey(task.options.range->max);
      }
    }
    plan.any_relative |= item.relative == 1;
    plan.items.push_back(item);
    format::AppendFileHeader(archive->header, &plan.file_templates);

    for (uint64_t f = 0; f < archive->frame_count(); ++f) {
      const FrameParams p = TaskFrameParams(task, *archive, f);
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
      SetCodingParams(p, &seg);
      seg.frame_index = static_cast<uint32_t>(f);
      const uint64_t max_used = std::min<uint64_t>({kAlphabet, 2 * uint64_t{p.radius}, seg.geo.n});
      // Halving ends with every weight 1, a tree of ceil(log2(symbols))
      // levels: the limit must hold that (20 bits, FrameParams, always do).
      if ((uint64_t{1} << p.max_code_length) < max_used) {
        return absl::UnimplementedError("code length limit below the alphabet's size");
      }
      // Version 2 lists both token stages' used symbols too (12 run classes
      // more, and 52 run-value tokens more than that).
      auto max_tokens = [&](uint64_t tokens) {
        return plan.v2 ? std::min<uint64_t>({kAlphabet, 2 * uint64_t{p.radius} + tokens, seg.geo.n})
                       : 0;
      };
      const uint64_t max_runs = max_tokens(format::kRunClasses);
      const uint64_t max_values = max_tokens(format::kTokensWithRunValues);
      seg.code_section_at = plan.section_bytes;
      plan.section_bytes += Align16(SectionRoom(std::max({max_used, max_runs, max_values})));
      plan.listed_capacity += max_used + max_runs + max_values;
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

namespace {

// Worst case of what goes up after the host builds the codes: every
// segment using all the symbols it can (version 2: and which list each
// segment's code is in).
uint64_t UploadBytes(const Plan& plan) {
  const uint64_t choice = plan.v2 ? Align16(plan.segments.size() * sizeof(UsedSymbols)) : 0;
  return Align16(plan.segments.size() * sizeof(Codebook)) + choice +
         Align16(plan.listed_capacity) + plan.listed_capacity * 4 + plan.section_bytes;
}

}  // namespace

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
    // Chunks as laid out before S is known: the most there are.
    b.slice_state_chunks = plan.totals.chunks;
    b.slice_states = d.Take<uint32_t>(b.slice_state_chunks * kSliceStatesPerChunk);
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

absl::Status UploadSegments(const Plan& plan, const Buffers& b, cudaStream_t st) {
  const size_t table = plan.segments.size() * sizeof(Segment);
  std::memcpy(b.host_segments, plan.segments.data(), table);
  std::memcpy(b.host_frame_templates, plan.frame_templates.data(), plan.frame_templates.size());
  CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(b.segments, b.host_segments, table, cudaMemcpyHostToDevice, st));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.frame_templates, b.host_frame_templates,
                                       plan.frame_templates.size(), cudaMemcpyHostToDevice, st));
  return absl::OkStatus();
}

}  // namespace ebzip::gpu::compress

namespace ebzip::gpu {

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

}  // namespace ebzip::gpu
