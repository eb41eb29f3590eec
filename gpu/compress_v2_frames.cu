// Version 2's predictor choice and interpolation frames
// (gpu/compress_v2_frames.h).
#include "gpu/compress_v2_frames.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "codec/archive.h"
#include "codec/format.h"
#include "codec/frame_codec.h"
#include "codec/frame_content.h"
#include "codec/resolve_bound.h"
#include "gpu/cuda_status.h"
#include "gpu/interp_frame_encode.h"
#include "gpu/interp_kernels.h"
#include "gpu/run_kernels.h"
#include "gpu/scoped_event.h"
#include "gpu/segment.h"
#include "gpu/segment_plan.h"

namespace ebzip::gpu::compress {

namespace {

// Whether interpolation frames a and z have one plan but for the bound:
// shape, tile, order, radius and fill coding.
bool SameInterpPlan(const Plan& plan, uint32_t a, uint32_t z) {
  const FrameV2& fa = plan.frames[a];
  const FrameV2& fz = plan.frames[z];
  return fz.params.shape == fa.params.shape && fz.config.order == fa.config.order &&
         fz.config.block == fa.config.block && fz.params.radius == fa.params.radius &&
         plan.segments[z].fill_coding == plan.segments[a].fill_coding;
}

// Whether interpolation segment e can join the batch of segments [s, e):
// one plan but for the bound, room left. Frames of several arrays (a batch
// of small requests) share a batch as well as one array's frames do.
bool JoinsBatch(const Plan& plan, uint32_t s, uint32_t e) {
  const Segment& a = plan.segments[s];
  if (plan.segments[e].predictor != format::kPredictorInterp || !SameInterpPlan(plan, s, e)) {
    return false;
  }
  return e - s < InterpBatchCap(a.geo.n, a.fill_coding == format::kFillCodingMask);
}

// Whether the batch [s, e) needs each frame's own input and bound
// (InterpEncodeBatch::segments): its frames span arrays, or their inputs do
// not lie at one stride.
bool PerFrame(const Plan& plan, uint32_t s, uint32_t e) {
  auto at = [&](uint32_t k) { return reinterpret_cast<uint64_t>(plan.segments[k].input); };
  for (uint32_t k = s + 1; k < e; ++k) {
    if (plan.segments[k].item != plan.segments[s].item || at(k) <= at(k - 1) ||
        at(k) - at(k - 1) != at(s + 1) - at(s)) {
      return true;
    }
  }
  return false;
}

}  // namespace

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
      plan->frames[s++].params = TaskFrameParams(tasks[i], *archive, f);
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
  std::vector<uint32_t> planned;  // interpolation frames with a plan of their own
  for (uint32_t s = 0; s < S; ++s) {
    Segment& seg = plan->segments[s];
    FrameV2& f = plan->frames[s];
    seg.predictor = f.config.predictor;
    seg.order = f.config.order;
    seg.geo = GeometryFor(f.params, f.config);
    // Runs are counted wherever tokens are allowed; the stage is picked later.
    seg.highest_lossless = HighestStage(f.params);
    seg.lossless = 0;
    seg.fill_coding = format::kFillCodingRuns;
    seg.positions = 0;
    if (seg.predictor == format::kPredictorInterp) {
      const bool has_fill = plan->items[seg.item].has_fill != 0;
      if (has_fill) seg.fill_coding = format::kFillCodingMask;
      // An earlier frame's plan where only the bound may differ (an array's
      // frames, and a batch of small arrays, mostly share one).
      auto same = std::find_if(planned.begin(), planned.end(), [&](uint32_t k) {
        return SameInterpPlan(*plan, k, s);
      });
      if (same != planned.end()) {
        f.interp = WithBound(plan->frames[*same].interp, f.params.abs_bound, f.params.quant_step);
      } else {
        planned.push_back(s);
        auto interp = PlanInterp(InterpParamsFor(f.params, f.config), has_fill);
        if (!interp.ok()) return interp.status();
        if (interp->encode_scratch > plan->interp_scratch ||
            interp->geo.num_tiles > plan->interp_outliers) {
          return absl::InternalError("interpolation plan larger than planned");
        }
        f.interp = *std::move(interp);
      }
    }
    PlaceSegment(&seg, &totals);
  }
  plan->totals = totals;
  std::memcpy(b.host_segments, plan->segments.data(), S * sizeof(Segment));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.segments, b.host_segments, S * sizeof(Segment),
                                       cudaMemcpyHostToDevice, st));
  return absl::OkStatus();
}

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
    if (PerFrame(plan, s, e)) {
      batch.segments = b.segments + s;
      batch.items = b.items;
    }
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

}  // namespace ebzip::gpu::compress
