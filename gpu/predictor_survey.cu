#include "gpu/predictor_survey.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "codec/entropy_coder.h"
#include "codec/format.h"
#include "codec/huffman_code.h"
#include "codec/parallel.h"
#include "codec/run_tokens.h"
#include "gpu/cuda_status.h"
#include "gpu/device_util.cuh"
#include "gpu/host_code.h"
#include "gpu/interp_frame_encode.h"
#include "gpu/run_kernels.h"
#include "gpu/run_steps.h"
#include "gpu/segment_plan.h"
#include "gpu/stream_fork.h"

namespace ebzip::gpu {
namespace {

constexpr uint64_t kBins = kHistogramBins;
// Frames per interpolation batch (a grid's y extent allows 65535).
constexpr uint32_t kMaxGroupFrames = 4096;
// Used symbols per histogram the first copy to the host has room for (as the
// compressor's): more take a second copy.
constexpr uint64_t kListedPerHistogram = 1024;
// Groups whose scratch is at most this run on lanes of their own (each lane
// its own scratch and outlier arrays): a small sample's candidate is a dozen
// launches that leave the GPU mostly idle, a large one's fill it.
constexpr size_t kLaneScratchBytes = size_t{32} << 20;

uint64_t Align16(uint64_t n) { return (n + 15) & ~uint64_t{15}; }

uint64_t Elements(const FrameParams& p) {
  uint64_t n = 1;
  for (uint64_t d : p.shape) n *= d;
  return n;
}

bool IsInterp(const PredictorConfig& c) { return c.predictor == format::kPredictorInterp; }

bool SameConfig(const PredictorConfig& a, const PredictorConfig& b) {
  return a.predictor == b.predictor && a.order == b.order && a.block == b.block;
}

// The lossless stages a candidate is estimated with (0, 1, 2). The device
// lists each pseudo-segment's used symbols once; the token stages' lists
// follow on the host from it and the segment's run counters, which change
// only the counts of the zero residual and of -2 .. +2 and add the tokens
// (TokenList): copying and listing whole 256 KiB histograms per stage cost
// small arrays more than their data. kStages: gpu/host_code.h.

// A pseudo-segment's stage-`stage` list of used symbols (ascending), from
// its symbols' list `symbols` and its run counters (gpu/run_steps.h), as
// run_steps::PatchTokenHistogram makes the dense histogram; returns the
// tokens' extra bits. `sums`, the symbols' entropy sums on entry, become
// the list's (the bins it changes, changed).
uint64_t TokenList(absl::Span<const SymbolCount> symbols, const uint32_t* counters,
                   uint32_t radius, uint8_t stage, std::vector<SymbolCount>* out,
                   EntropySums* sums) {
  // The bins the patch touches: radius - 2 .. radius + 2, and the tokens.
  struct Bins {
    uint32_t radius;
    uint32_t near[5] = {};
    uint32_t tokens[format::kTokensWithRunValues] = {};
    // (Callable where PatchTokenHistogram is; used on the host.)
    EBZIP_HD uint32_t& operator[](uint32_t i) {
      return i >= 2 * radius ? tokens[i - 2 * radius] : near[i + 2 - radius];
    }
    bool Near(uint32_t i) const { return i + 2 >= radius && i <= radius + 2; }
  } bins{radius};
  for (const SymbolCount& u : symbols) {
    if (bins.Near(u.symbol)) bins[u.symbol] = u.count;
  }
  const bool values = stage == format::kLosslessRunValues;
  const uint64_t extra = run_steps::PatchTokenHistogram(counters, radius, values, bins);
  out->clear();
  out->reserve(symbols.size() + format::kTokensWithRunValues);
  for (const SymbolCount& u : symbols) {
    uint32_t count = u.count;
    if (bins.Near(u.symbol)) {
      count = bins[u.symbol];
      sums->Remove(u.count);
      sums->Add(count);
    }
    if (count != 0) out->push_back({u.symbol, count});
  }
  const int tokens = values ? format::kTokensWithRunValues : format::kRunClasses;
  for (int t = 0; t < tokens; ++t) {
    if (bins.tokens[t] != 0) out->push_back({2 * radius + t, bins.tokens[t]});
    sums->Add(bins.tokens[t]);
  }
  return extra;
}

// Copies each stripe (blockIdx.y) into the sample buffer, a word at a time
// (stripes are whole rows of 4- or 8-byte elements).
struct DeviceStripe {
  const uint8_t* from;
  uint8_t* to;
  uint64_t bytes;
};
__global__ void GatherKernel(const DeviceStripe* stripes) {
  const DeviceStripe s = stripes[blockIdx.y];
  const uint32_t* from = reinterpret_cast<const uint32_t*>(s.from);
  uint32_t* to = reinterpret_cast<uint32_t*>(s.to);
  const uint64_t words = s.bytes / 4;
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < words;
       i += uint64_t{gridDim.x} * blockDim.x) {
    to[i] = from[i];
  }
}

// One block per pseudo-segment: its outliers, verbatim elements and fill runs
// (runs of set bits of the fill mask, as specials_kernels.cu counts them),
// from the masks the prediction left, into results[3p .. 3p + 2].
constexpr int kCountThreads = 256;
__global__ void __launch_bounds__(kCountThreads)
    SpecialCountsKernel(const Segment* segments, const uint32_t* outlier_mask,
                        const uint32_t* verbatim_mask, const uint32_t* fill_mask,
                        uint64_t* results) {
  __shared__ unsigned long long sums[3];
  if (threadIdx.x < 3) sums[threadIdx.x] = 0;
  __syncthreads();
  const Segment& seg = segments[blockIdx.x];
  const uint64_t words = (seg.geo.n + 31) / 32;
  unsigned long long outliers = 0, verbatim = 0, runs = 0;
  for (uint64_t w = threadIdx.x; w < words; w += kCountThreads) {
    const uint64_t at = seg.mask_base + w;
    outliers += __popc(outlier_mask[at]);
    verbatim += __popc(verbatim_mask[at]);
    const uint32_t fill = fill_mask[at];
    const uint32_t prev = w > 0 ? fill_mask[at - 1] : 0;
    runs += __popc(fill & ~((fill << 1) | (prev >> 31)));
  }
  if (outliers != 0) atomicAdd(&sums[0], outliers);
  if (verbatim != 0) atomicAdd(&sums[1], verbatim);
  if (runs != 0) atomicAdd(&sums[2], runs);
  __syncthreads();
  if (threadIdx.x < 3) results[3 * uint64_t{blockIdx.x} + threadIdx.x] = sums[threadIdx.x];
}

}  // namespace

const uint8_t* PredictorSurvey::SampleOf(const Frame& f) const {
  return f.gathered ? samples_ + f.sample_at : static_cast<const uint8_t*>(f.input);
}

absl::StatusOr<PredictorSurvey> PredictorSurvey::Plan(std::vector<SurveyFrame> frames,
                                                      int elem_size) {
  PredictorSurvey sv;
  sv.elem_size_ = elem_size;
  // Each frame's sample: the frame itself, or its stripes gathered.
  for (const SurveyFrame& in : frames) {
    Frame f;
    f.params = in.params;
    f.candidates = Candidates(in.params);
    if (f.candidates.size() < 2) return absl::InternalError("a survey of a single candidate");
    f.pseudo.resize(f.candidates.size());
    f.sample = ebzip::SampleOf(in.params);
    f.sample_params = SampleParams(in.params, f.sample);
    f.input = in.input;
    f.item = in.item;
    f.has_fill = in.has_fill;
    f.n = Elements(f.sample_params);
    f.sample_bytes = f.n * elem_size;
    for (const PredictorConfig& c : f.candidates) f.interp |= IsInterp(c);
    f.fill_mask = f.interp && f.has_fill;
    if (!f.sample.whole_frame()) {
      f.gathered = true;
      f.sample_at = sv.sample_bytes_;
      sv.sample_bytes_ += Align16(f.sample_bytes);
      const uint64_t row_bytes = f.n / f.sample_params.shape[0] * elem_size;
      const uint64_t stripe_bytes = f.sample.stripe_rows * row_bytes;
      for (size_t k = 0; k < f.sample.first_rows.size(); ++k) {
        const uint64_t from = f.sample.first_rows[k] * row_bytes;
        sv.stripes_.push_back({static_cast<const uint8_t*>(in.input) + from,
                               reinterpret_cast<uint8_t*>(f.sample_at + k * stripe_bytes),
                               stripe_bytes});
      }
    }
    if (f.fill_mask) {
      f.fill_at = sv.fill_bytes_;
      sv.fill_bytes_ += f.n;
      size_t ws = 0;
      CUDA_RETURN_IF_ERROR(FillMaskEncodeWorkspace(f.n, &ws));
      sv.fill_workspace_ = std::max(sv.fill_workspace_, ws);
    }
    sv.frames_.push_back(std::move(f));
  }

  // Interpolation candidates in batches: consecutive frames of one item whose
  // samples have one shape and lie at one stride take candidate k together.
  auto location = [&](const Frame& f) {
    return f.gathered ? f.sample_at : reinterpret_cast<uint64_t>(f.input);
  };
  std::vector<int> open;  // per candidate index: its open group, or -1
  for (uint32_t fi = 0; fi < sv.frames_.size(); ++fi) {
    const Frame& f = sv.frames_[fi];
    open.resize(std::max(open.size(), f.candidates.size()), -1);
    int first_interp = -1;
    for (uint32_t k = 0; k < f.candidates.size(); ++k) {
      if (!IsInterp(f.candidates[k])) continue;
      if (first_interp < 0) first_interp = static_cast<int>(k);
      Group* g = open[k] >= 0 ? &sv.groups_[open[k]] : nullptr;
      bool joins = false;
      if (g != nullptr && g->first_frame + g->frames == fi && g->frames < kMaxGroupFrames) {
        const Frame& first = sv.frames_[g->first_frame];
        const Frame& prev = sv.frames_[fi - 1];
        const uint64_t step = location(f) - location(prev);
        joins = first.sample_params.shape == f.sample_params.shape &&
                first.sample_params.radius == f.sample_params.radius &&
                first.has_fill == f.has_fill &&
                SameConfig(first.candidates[g->candidate], f.candidates[k]);
        if (joins) {
          // Samples of other arrays, or off the stride: each frame's own
          // input and bound (InterpEncodeBatch::segments).
          const bool regular = first.item == f.item && first.gathered == f.gathered &&
                               location(f) > location(prev) &&
                               (g->frames == 1 || step == g->stride);
          if (regular) g->stride = step;
          g->per_frame |= !regular;
          ++g->frames;
        }
      }
      if (!joins) {
        Group n;
        n.first_frame = fi;
        n.frames = 1;
        n.candidate = k;
        n.first_interp = static_cast<int>(k) == first_interp;
        open[k] = static_cast<int>(sv.groups_.size());
        sv.groups_.push_back(n);
      }
    }
  }

  // The pseudo-segments: Lorenzo candidates first (LaunchPredict takes them
  // as one table), then each group's frames, one after another.
  auto pseudo = [&](uint32_t fi, uint32_t k) {
    Frame& f = sv.frames_[fi];
    const FrameParams& p = f.sample_params;
    const PredictorConfig& c = f.candidates[k];
    Segment seg{};
    if (IsInterp(c)) {
      const std::array<uint16_t, kMaxDims> ones = {1, 1, 1, 1};
      seg.geo = MakeGeometry(p.shape, {ones.data(), p.shape.size()});
      seg.fill_coding = f.has_fill ? format::kFillCodingMask : format::kFillCodingRuns;
    } else {
      seg.geo = MakeGeometry(p.shape, {c.block.data(), p.shape.size()});
      seg.fill_coding = format::kFillCodingRuns;
    }
    seg.item = f.item;
    SetCodingParams(p, &seg);
    seg.predictor = c.predictor;
    seg.order = c.order;
    seg.highest_lossless = HighestStage(p);  // runs counted wherever tokens may be chosen
    seg.positions = 0;               // n; S once the encoder has run
    PlaceSegment(&seg, &sv.totals_);
    f.pseudo[k] = static_cast<uint32_t>(sv.pseudo_.size());
    sv.pseudo_.push_back(seg);
    sv.pseudo_frame_.push_back(fi);
    sv.listed_capacity_ += std::min<uint64_t>({kBins, 2 * uint64_t{p.radius}, f.n});
    return seg;
  };
  for (uint32_t fi = 0; fi < sv.frames_.size(); ++fi) {
    const Frame& f = sv.frames_[fi];
    for (uint32_t k = 0; k < f.candidates.size(); ++k) {
      if (IsInterp(f.candidates[k])) continue;
      const Segment seg = pseudo(fi, k);
      if (auto s =
              CheckGpuLimits(seg.geo, seg.chunk_symbols, static_cast<int>(seg.max_code_length));
          !s.ok()) {
        return s;
      }
    }
  }
  sv.lorenzo_ = static_cast<uint32_t>(sv.pseudo_.size());
  sv.lorenzo_tiles_ = sv.totals_.tiles;
  sv.lorenzo_symbols_ = sv.totals_.symbols;
  for (Group& g : sv.groups_) {
    g.first_pseudo = static_cast<uint32_t>(sv.pseudo_.size());
    for (uint32_t j = 0; j < g.frames; ++j) pseudo(g.first_frame + j, g.candidate);
    const Frame& first = sv.frames_[g.first_frame];
    auto plan = PlanInterp(InterpParamsFor(first.sample_params, first.candidates[g.candidate]),
                           first.has_fill);
    if (!plan.ok()) return plan.status();
    g.plan = *std::move(plan);
    auto scratch = InterpEncodeBatchScratch(g.plan, g.frames);
    if (!scratch.ok()) return scratch.status();
    sv.interp_scratch_ = std::max(sv.interp_scratch_, *scratch);
    sv.interp_outliers_ = std::max(sv.interp_outliers_, uint64_t{g.frames} * g.plan.geo.num_tiles);
  }
  if (sv.groups_.size() > 1 && sv.interp_scratch_ <= kLaneScratchBytes) {
    sv.lanes_ = static_cast<int>(std::min<size_t>(sv.groups_.size(), StreamFork::kMaxLanes));
    sv.interp_scratch_ = (sv.interp_scratch_ + 255) / 256 * 256;  // each lane's aligned
  }
  const uint64_t P = sv.pseudo_.size();
  // Results, 64-bit words: per pseudo-segment its outliers, verbatim
  // elements and fill runs; per frame its fill mask's section bytes and
  // tokens; per pseudo-segment the encoder's S and outliers (two 32-bit
  // words); then the pseudo-segments' run counters (32-bit).
  sv.results_ = 3 * P + 2 * sv.frames_.size() + P + (P * kRunCountersPerSegment + 1) / 2;
  return sv;
}

void PredictorSurvey::Carve(WorkspaceCarver* d, WorkspaceCarver* h) {
  if (empty()) return;
  const uint64_t P = pseudo_.size();
  segments_ = d->Take<Segment>(P);
  stripe_table_ = d->Take<Stripe>(stripes_.size());
  samples_ = d->Take<uint8_t>(sample_bytes_);
  fill_ = d->Take<uint8_t>(fill_bytes_);
  fill_ws_ = d->Take<uint8_t>(fill_workspace_);
  symbols_ = d->Take<uint16_t>(totals_.symbols);
  deltas_ = d->Take<int32_t>(lorenzo_symbols_);
  masks_ = d->Take<uint32_t>(3 * totals_.mask_words);
  histogram_ = d->Take<uint32_t>(P * kBins);
  used_ = d->Take<uint32_t>(P);
  static_assert(sizeof(UsedSymbols) == 16 && sizeof(SymbolCount) == 8);
  info_ = d->Take<UsedSymbols>(P + (listed_capacity_ + 1) / 2);
  results_dev_ = d->Take<uint64_t>(results_);
  run_counters_ = reinterpret_cast<uint32_t*>(results_dev_ + CountersAt());
  scratch_ = d->Take<uint8_t>(interp_scratch_ * lanes_);
  outlier_index_ = d->Take<uint32_t>(interp_outliers_ * lanes_);
  outlier_residual_ = d->Take<int32_t>(interp_outliers_ * lanes_);
  host_segments_ = h->Take<Segment>(P);
  host_stripes_ = h->Take<Stripe>(stripes_.size());
  // Room for every list (the pinned room a second copy of long lists needs:
  // into pageable memory it cost ~0.35 ms more on the H100).
  host_info_ = h->Take<UsedSymbols>(P + (listed_capacity_ + 1) / 2);
  host_results_ = h->Take<uint64_t>(results_);
}

absl::Status PredictorSurvey::LaunchWithoutBounds(const Item* items, cudaStream_t st) {
  items_ = items;
  if (empty()) return absl::OkStatus();
  const uint32_t P = static_cast<uint32_t>(pseudo_.size());
  const uint64_t W = totals_.mask_words;
  // The tables, with the device's addresses.
  for (uint32_t p = 0; p < P; ++p) {
    host_segments_[p] = pseudo_[p];
    host_segments_[p].input = SampleOf(frames_[pseudo_frame_[p]]);
  }
  for (size_t j = 0; j < stripes_.size(); ++j) {
    host_stripes_[j] = {stripes_[j].from, samples_ + reinterpret_cast<uint64_t>(stripes_[j].to),
                        stripes_[j].bytes};
  }
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(segments_, host_segments_, P * sizeof(Segment),
                                       cudaMemcpyHostToDevice, st));
  static_assert(sizeof(Stripe) == sizeof(DeviceStripe));
  if (!stripes_.empty()) {
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(stripe_table_, host_stripes_,
                                         stripes_.size() * sizeof(Stripe), cudaMemcpyHostToDevice,
                                         st));
  }
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(histogram_, 0, uint64_t{P} * kBins * 4, st));
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(masks_, 0, 3 * W * 4, st));
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(results_dev_, 0, results_ * 8, st));

  // The samples.
  if (!stripes_.empty()) {
    uint64_t most = 0;
    for (const Stripe& s : stripes_) most = std::max(most, s.bytes / 4);
    const uint64_t blocks = std::min<uint64_t>((most + kThreads - 1) / kThreads, 256);
    const dim3 grid(static_cast<uint32_t>(blocks), static_cast<uint32_t>(stripes_.size()));
    GatherKernel<<<grid, kThreads, 0, st>>>(reinterpret_cast<const DeviceStripe*>(stripe_table_));
    CUDA_RETURN_IF_ERROR(cudaGetLastError());
  }
  // Their fill: bytes once per frame (each frame is in one group of its
  // first interpolation candidate), the mask's section sizes.
  uint64_t* fill_sizes = results_dev_ + 3 * uint64_t{P};
  for (const Group& g : groups_) {
    const Frame& first = frames_[g.first_frame];
    if (!g.first_interp || !first.fill_mask) continue;
    CUDA_RETURN_IF_ERROR(LaunchFillByteMask(elem_size_, segments_ + g.first_pseudo, g.frames,
                                            items, first.n, fill_ + first.fill_at, first.n, st));
  }
  for (size_t fi = 0; fi < frames_.size(); ++fi) {
    const Frame& f = frames_[fi];
    if (!f.fill_mask) continue;
    const uint64_t row = f.sample_params.shape.size() == 1 ? f.n : f.n / f.sample_params.shape[0];
    CUDA_RETURN_IF_ERROR(LaunchFillMaskEncodeSizes(fill_ + f.fill_at, f.n, row, fill_ws_,
                                                   fill_workspace_, fill_sizes + 2 * fi,
                                                   fill_sizes + 2 * fi + 1, st));
  }
  // Every Lorenzo candidate, in one launch, which LaunchWithBounds's
  // interpolation candidates run beside (they start at the mark).
  if (lorenzo_ > 0) {
    if (!groups_.empty()) {
      if (absl::Status s = StreamFork::Mark(st); !s.ok()) return s;
    }
    const PredictOutputs out{symbols_, deltas_, histogram_, masks_, masks_ + W, masks_ + 2 * W};
    CUDA_RETURN_IF_ERROR(LaunchPredict(elem_size_, segments_, pseudo_.data(), lorenzo_, items,
                                       lorenzo_tiles_, out, st));
  }
  return absl::OkStatus();
}

absl::Status PredictorSurvey::LaunchWithBounds(absl::Span<const FrameParams> params,
                                               cudaStream_t st) {
  if (params.size() != frames_.size()) return absl::InternalError("survey: frames differ");
  params_.assign(params.begin(), params.end());
  if (empty()) return absl::OkStatus();
  const uint32_t P = static_cast<uint32_t>(pseudo_.size());
  const uint64_t W = totals_.mask_words;
  uint64_t* specials = results_dev_;
  uint32_t* interp_counts =
      reinterpret_cast<uint32_t*>(results_dev_ + 3 * uint64_t{P} + 2 * frames_.size());

  // The interpolation candidates, a batch per group, planned with the bound,
  // the groups dealt round the lanes.
  auto launch_group = [&](const Group& g, int lane, cudaStream_t ls) -> absl::Status {
    const Frame& first = frames_[g.first_frame];
    FrameParams p = SampleParams(params[g.first_frame], first.sample);
    auto plan = PlanInterp(InterpParamsFor(p, first.candidates[g.candidate]), first.has_fill);
    if (!plan.ok()) return plan.status();
    auto scratch = InterpEncodeBatchScratch(*plan, g.frames);
    if (!scratch.ok()) return scratch.status();
    if (*scratch > interp_scratch_ || plan->geo.num_tiles != g.plan.geo.num_tiles) {
      return absl::InternalError("survey: interpolation plan larger than planned");
    }
    const Segment& seg = pseudo_[g.first_pseudo];
    InterpEncodeBatch batch;
    batch.frames = g.frames;
    batch.input = SampleOf(first);
    batch.input_stride = g.stride;
    batch.fill_mask = first.has_fill ? fill_ + first.fill_at : nullptr;
    batch.fill_stride = first.n;
    batch.out.symbols = symbols_ + seg.symbol_base;
    batch.out.verbatim_mask = masks_ + W + seg.mask_base;
    batch.out.outlier_index = outlier_index_ + lane * interp_outliers_;
    batch.out.outlier_residual = outlier_residual_ + lane * interp_outliers_;
    batch.out.counts = interp_counts + 2 * uint64_t{g.first_pseudo};
    batch.symbols_stride = first.n;
    batch.verbatim_stride = seg.mask_tiles * kMaskTileWords;
    batch.outlier_stride = plan->geo.num_tiles;
    batch.counts_stride = 2;
    if (g.per_frame) {
      batch.segments = segments_ + g.first_pseudo;
      batch.items = items_;
    }
    if (auto e = LaunchInterpEncodeBatch(*plan, batch, scratch_ + lane * interp_scratch_, ls);
        !e.ok()) {
      return e;
    }
    // S into the pseudo-segments (their chunks cover it), then histograms.
    CUDA_RETURN_IF_ERROR(LaunchTakeInterpResults(segments_ + g.first_pseudo, g.frames,
                                                 batch.out.counts, 2, nullptr, nullptr, 0, 0,
                                                 nullptr, nullptr, ls));
    CUDA_RETURN_IF_ERROR(LaunchSymbolHistogram(segments_ + g.first_pseudo, g.frames, symbols_,
                                               first.n, histogram_ + g.first_pseudo * kBins, ls));
    return absl::OkStatus();
  };
  // Beside the Lorenzo candidates, which leave most of the GPU idle on
  // shallow samples (two rows of a large 3-D frame: its 8-deep blocks cut
  // to a quarter).
  auto fork = lorenzo_ > 0 ? StreamFork::BeginAtMark(st, lanes_) : StreamFork::Begin(st, lanes_);
  if (!fork.ok()) return fork.status();
  absl::Status launched;
  for (size_t gi = 0; gi < groups_.size() && launched.ok(); ++gi) {
    const int lane = static_cast<int>(gi % lanes_);
    launched.Update(launch_group(groups_[gi], lane, fork->lane(lane)));
  }
  // Joined after a failure too: the caller's stream must not pass work that
  // is still running on a lane.
  if (absl::Status s = fork->Join(); !s.ok()) return s;
  if (!launched.ok()) return launched;

  // Run counters (each sample's own chunks), used symbols, counts; to the
  // host.
  CUDA_RETURN_IF_ERROR(
      LaunchRunCounters(segments_, P, totals_.chunks, symbols_, run_counters_, nullptr, st));
  SymbolCount* list = reinterpret_cast<SymbolCount*>(info_ + P);
  CUDA_RETURN_IF_ERROR(LaunchListUsedSymbols(histogram_, P, used_, info_, list, st));
  SpecialCountsKernel<<<P, kCountThreads, 0, st>>>(segments_, masks_, masks_ + W, masks_ + 2 * W,
                                                   specials);
  CUDA_RETURN_IF_ERROR(cudaGetLastError());
  const uint64_t capacity = std::min(uint64_t{P} * kListedPerHistogram, listed_capacity_);
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host_info_, info_,
                                       P * sizeof(UsedSymbols) + capacity * sizeof(SymbolCount),
                                       cudaMemcpyDeviceToHost, st));
  CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(host_results_, results_dev_, results_ * 8, cudaMemcpyDeviceToHost, st));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<PredictorConfig>> PredictorSurvey::Finish(cudaStream_t st,
                                                                     StageTimer* timer) {
  if (empty()) return std::vector<PredictorConfig>();
  using Clock = std::chrono::steady_clock;
  auto note = [&](const char* step, Clock::time_point since) {
    if (timer) {
      timer->Note(step, std::chrono::duration<double, std::milli>(Clock::now() - since).count());
    }
  };
  const absl::Span<const FrameParams> params = params_;
  const uint32_t P = static_cast<uint32_t>(pseudo_.size());
  const uint32_t H = kStages * P;
  SymbolCount* list = reinterpret_cast<SymbolCount*>(info_ + P);
  const uint64_t capacity = std::min(uint64_t{P} * kListedPerHistogram, listed_capacity_);
  uint64_t elements = 0;
  for (const FrameParams& p : params) elements += Elements(p);
  if (P > 1 && elements >= kPoolWarmUpElements) ParallelWarmUp(kPoolWarmUp);
  Clock::time_point since = Clock::now();
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(st));
  note("survey: wait for the device", since);
  SymbolCount* host_list = reinterpret_cast<SymbolCount*>(host_info_ + P);
  if (host_info_[P - 1].offset + host_info_[P - 1].count > listed_capacity_) {
    return absl::InternalError("survey: more symbols than planned");
  }
  since = Clock::now();
  auto listed = CopyRestOfLists(host_info_, host_list, list, P, capacity, st);
  if (!listed.ok()) return listed.status();
  if (*listed > capacity) note("survey: second copy of the lists", since);
  since = Clock::now();

  // Each candidate's estimate (EstimateBits), then each frame's smallest.
  const uint64_t* host_specials = host_results_;
  const uint64_t* host_fill_sizes = host_results_ + 3 * uint64_t{P};
  const uint32_t* host_counts =
      reinterpret_cast<const uint32_t*>(host_results_ + 3 * uint64_t{P} + 2 * frames_.size());
  const uint32_t* host_counters = reinterpret_cast<const uint32_t*>(host_results_ + CountersAt());
  // EstimateBits for pseudo-segment p takes the smallest code of the stages
  // its frame allows (SmallerCode over AllowedStages; which stage that is
  // does not matter here, only its size). Histogram k = stage * P + p.
  auto allowed = [&](uint64_t p) { return AllowedStages(params[pseudo_frame_[p]]); };
  auto needed = [&](uint64_t k) { return (allowed(k % P) >> (k / P) & 1) != 0; };
  auto symbols = [&](uint64_t p) {
    return absl::MakeConstSpan(host_list + host_info_[p].offset, host_info_[p].count);
  };
  // The token stages' lists (k >= P), where needed, and every list's
  // entropy sums (a token stage's from the symbols' and the bins it changes).
  std::vector<std::vector<SymbolCount>> tokens(H - P);
  std::vector<uint64_t> token_extra(H - P, 0);
  std::vector<EntropySums> sums(H);
  auto token_list = [&](uint64_t k) {
    if (k < P || !needed(k)) return;
    const uint64_t p = k % P;
    sums[k] = sums[p];
    token_extra[k - P] =
        TokenList(symbols(p), host_counters + p * kRunCountersPerSegment, pseudo_[p].radius,
                  static_cast<uint8_t>(k / P), &tokens[k - P], &sums[k]);
  };
  auto used = [&](uint64_t k) {
    return k < P ? symbols(k) : absl::MakeConstSpan(tokens[k - P]);
  };
  auto extra = [&](uint64_t k) { return k >= P ? token_extra[k - P] : 0; };
  auto sections = [&](uint64_t p) {
    const Segment& seg = pseudo_[p];
    const uint32_t fi = pseudo_frame_[p];
    const bool interp = seg.predictor == format::kPredictorInterp;
    const uint64_t outliers = interp ? host_counts[2 * p + 1] : host_specials[3 * p];
    const uint64_t verbatim = host_specials[3 * p + 1];
    const uint64_t fill_bytes = interp ? (frames_[fi].fill_mask ? host_fill_sizes[2 * fi] : 0)
                                       : 8 * host_specials[3 * p + 2];
    return 64 * outliers + 8 * (4 + DTypeSize(params[fi].dtype)) * verbatim + 8 * fill_bytes;
  };
  // A lower bound of each estimate first, so that the codes of a candidate
  // that cannot win are never built.
  std::vector<double> code_floor(H, 0);
  auto floor_of = [&](uint64_t k) {
    if (!needed(k)) return;
    const uint32_t alphabet =
        RunTokens::ForStage(static_cast<uint8_t>(k / P), pseudo_[k % P].radius).alphabet();
    code_floor[k] = CodeFloor(sums[k], CodeLengthBytes(used(k), alphabet), extra(k));
  };
  // Its allowed stages in order of their floors.
  auto stages_of = [&](uint64_t p, uint32_t order[kStages]) {
    uint32_t m = 0;
    for (uint32_t id = 0; id < kStages; ++id) {
      if (!needed(id * uint64_t{P} + p)) continue;
      uint32_t i = m++;
      for (; i > 0 && code_floor[order[i - 1] * uint64_t{P} + p] >
                          code_floor[id * uint64_t{P} + p];
           --i) {
        order[i] = order[i - 1];
      }
      order[i] = id;
    }
    return m;
  };
  // Then per frame, candidates in order of their bounds, each one's codes
  // built while its bound could still beat the best estimate so far; the
  // smallest estimate wins, the first candidate of equal ones (§15.9).
  std::vector<PredictorConfig> chosen(frames_.size());
  auto choose = [&](uint64_t fi) {
    const Frame& f = frames_[fi];
    const size_t m = f.candidates.size();
    std::vector<double> floor(m);
    for (size_t c = 0; c < m; ++c) {
      const uint64_t p = f.pseudo[c];
      uint32_t order[kStages];
      const uint32_t stages = stages_of(p, order);
      floor[c] = (stages > 0 ? code_floor[order[0] * uint64_t{P} + p] : 0) +
                 static_cast<double>(sections(p));
    }
    std::vector<size_t> order(m);
    for (size_t c = 0; c < m; ++c) order[c] = c;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return floor[a] < floor[b]; });
    size_t best = m;
    uint64_t best_bits = 0;
    for (size_t c : order) {
      if (best < m && FloorBeyond(floor[c], best_bits)) break;
      const uint64_t p = f.pseudo[c];
      const Segment& seg = pseudo_[p];
      // The stage with the lowest floor first; the others only where they
      // can still take fewer bits.
      uint32_t stage_order[kStages];
      const uint32_t stages = stages_of(p, stage_order);
      uint64_t entropy = ~uint64_t{0};
      for (uint32_t i = 0; i < stages; ++i) {
        const uint64_t k = stage_order[i] * uint64_t{P} + p;
        if (i > 0 && FloorBeyond(code_floor[k], entropy)) continue;
        const uint32_t alphabet = RunTokens::ForStage(stage_order[i], seg.radius).alphabet();
        entropy = std::min(
            entropy,
            BuildHostCode(used(k), alphabet, static_cast<int>(seg.max_code_length), extra(k)).bits);
      }
      const uint64_t bits = entropy + sections(p);
      if (best == m || bits < best_bits || (bits == best_bits && c < best)) {
        best = c;
        best_bits = bits;
      }
    }
    chosen[fi] = f.candidates[best];
  };
  // A pseudo-segment's sums and token lists, then its stages' floors: one
  // pass of the thread pool (each pass costs a wake-up of its threads).
  auto lists_and_floors = [&](uint64_t p) {
    sums[p] = SumsOf(symbols(p));
    for (uint32_t id = 1; id < kStages; ++id) token_list(id * uint64_t{P} + p);
    for (uint32_t id = 0; id < kStages; ++id) floor_of(id * uint64_t{P} + p);
  };
  if (P <= 1) {
    for (uint32_t p = 0; p < P; ++p) lists_and_floors(p);
  } else {
    ParallelFor(P, lists_and_floors);
  }
  if (frames_.size() <= 1) {
    for (size_t fi = 0; fi < frames_.size(); ++fi) choose(fi);
  } else {
    ParallelFor(frames_.size(), choose);
  }
  note(H <= kStages ? "survey: estimates" : "survey: estimates (thread pool)", since);
  return chosen;
}

}  // namespace ebzip::gpu
