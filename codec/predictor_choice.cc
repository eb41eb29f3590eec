#include "codec/predictor_choice.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "codec/cancel.h"
#include "codec/entropy_coder.h"
#include "codec/parallel.h"

namespace ebzip {
namespace {

// §15.9's sample: frames of at most kWholeSample elements are their own
// sample; larger ones are sampled by stripes, kSampleElements or a quarter
// of the frame's elements, whichever is fewer, and two rows at least.
constexpr uint64_t kWholeSample = uint64_t{1} << 20;
constexpr uint64_t kSampleElements = uint64_t{1} << 20;
constexpr uint64_t kStripeElements = uint64_t{1} << 16;
constexpr uint64_t kStripeRows = 64;
constexpr uint64_t kConcurrentSample = uint64_t{1} << 17;

PredictorConfig Interp(int ndim, int interpolated, uint16_t tile, uint8_t order) {
  PredictorConfig c;
  c.predictor = format::kPredictorInterp;
  c.order = order;
  for (int d = 0; d < ndim; ++d) c.block[d] = d >= ndim - interpolated ? tile : 1;
  return c;
}

}  // namespace

std::vector<PredictorConfig> Candidates(const FrameParams& p) {
  const int ndim = static_cast<int>(p.shape.size());
  std::vector<PredictorConfig> out;
  if (p.version < 2 || p.predictor != Predictor::kInterp) {
    PredictorConfig lorenzo;
    lorenzo.block = p.block;
    out.push_back(lorenzo);
  }
  if (p.version < 2 || p.predictor == Predictor::kLorenzo) return out;
  std::vector<std::pair<int, uint16_t>> tilings;  // (interpolated dims, tile)
  if (ndim == 1) tilings = {{1, 256}};
  if (ndim == 2) tilings = {{2, 32}, {2, 64}};
  if (ndim >= 3) tilings = {{3, 16}, {2, 64}};
  for (const auto& [dims, tile] : tilings) {
    for (uint8_t order : {3, 1}) {
      if (p.interp_order != 0 && p.interp_order != order) continue;
      out.push_back(Interp(ndim, dims, tile, order));
    }
  }
  return out;
}

uint64_t EstimateBits(const FrameParams& p, const FrameContent& content) {
  const uint64_t entropy = SmallerCode(content.symbols(), p.radius, p.chunk_symbols,
                                       p.max_code_length, AllowedStages(p))
                               .bits;
  return entropy + 64 * content.outlier_count() +
         8 * (4 + DTypeSize(p.dtype)) * content.verbatim_count() + 8 * content.fill_bytes();
}

FrameSample SampleOf(const FrameParams& p) {
  FrameSample sample;
  const uint64_t rows = p.shape[0];
  uint64_t row = 1;
  for (size_t d = 1; d < p.shape.size(); ++d) row *= p.shape[d];
  sample.stripe_rows = rows;
  const uint64_t n = row * rows;
  if (n <= kWholeSample) return sample;
  // A quarter of the frame at most, so that the five candidates together
  // cost about as much as predicting the frame once: on etopo5, TEMP, UWND
  // and SALT at REL 1e-2 to 1e-5 this makes the same choices as a sample of
  // up to 2^20 elements, and SALT compresses in half the time. Smaller
  // frames keep the whole frame (a quarter chose up to 10 % worse on 3-D
  // frames of 2^18 to 2^20 elements whose rows are few), and two rows at
  // least (one row of three chose 29 % worse).
  const uint64_t budget = std::min(kSampleElements, n / 4);
  const uint64_t m = std::max<uint64_t>(std::min<uint64_t>(2, rows), budget / row);
  const uint64_t g = std::min(m, std::max<uint64_t>(kStripeRows, (kStripeElements + row - 1) / row));
  const uint64_t count = m / g;
  // One stripe of every row (a frame of one row): the frame itself.
  if (count * g == rows) return sample;
  sample.stripe_rows = g;
  // Stripe k in the middle of the k-th of `count` equal parts of the rows
  // it can start at: spread over the frame, but not at its first and last
  // rows (a map's poles, a box's walls), which misled the choice on etopo20.
  for (uint64_t k = 0; k < count; ++k) {
    sample.first_rows.push_back((2 * k + 1) * (rows - g) / (2 * count));
  }
  return sample;
}

FrameParams SampleParams(const FrameParams& p, const FrameSample& sample) {
  FrameParams s = p;
  if (!sample.whole_frame()) s.shape[0] = sample.first_rows.size() * sample.stripe_rows;
  return s;
}

namespace {

// The candidate with the smallest estimate on the sample `data` (the first
// of equal ones). `fill`: the sample's, or null without interpolation
// candidates or a fill value. With `whole`, the winner's content goes there.
absl::StatusOr<PredictorConfig> Pick(const FrameParams& sample,
                                     const std::vector<PredictorConfig>& candidates,
                                     const uint8_t* data, const std::atomic<bool>* cancel,
                                     const FrameFill* fill, std::optional<FrameContent>* whole) {
  // Two candidates run side by side, each on as many threads as are free:
  // each one's own parallel loops leave threads idle (its serial steps, a
  // sample of a single task), which the other then uses. Only on samples of
  // kConcurrentSample elements or more: below that, two candidates' codes
  // (a histogram and code lengths over the whole alphabet each) would take
  // more than codec/memory_bounds.cc allows for the frame. The best so far
  // is kept as they finish; the smallest estimate wins, the first
  // candidate of equal ones (§15.9), whatever the order they finish in.
  std::mutex mu;
  size_t best = 0;
  uint64_t best_bits = ~uint64_t{0};
  bool any = false;
  std::optional<FrameContent> best_content;
  absl::Status failure;
  uint64_t sample_elements = 1;
  for (uint64_t d : sample.shape) sample_elements *= d;
  const int concurrent = sample_elements >= kConcurrentSample ? 2 : 1;
  auto run = [&](uint64_t i) {
    auto content = FrameContent::Predict(sample, candidates[i], data, cancel, fill);
    if (!content.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      if (failure.ok()) failure = content.status();
      return;
    }
    const uint64_t bits = EstimateBits(sample, *content);
    std::lock_guard<std::mutex> lock(mu);
    if (!any || bits < best_bits || (bits == best_bits && i < best)) {
      any = true;
      best = i, best_bits = bits;
      if (whole != nullptr) best_content = *std::move(content);
    }
  };
  ParallelFor(candidates.size(), run, concurrent);
  if (!failure.ok()) return failure;
  if (Cancelled(cancel)) return CancelledStatus("frame encoding");
  if (best_content) *whole = std::move(best_content);
  return candidates[best];
}

bool NeedsFill(const FrameParams& p) {
  return p.fill_value && p.version >= 2 && p.predictor != Predictor::kLorenzo;
}

}  // namespace

absl::StatusOr<PredictorConfig> ChoosePredictor(const FrameParams& p, const uint8_t* data,
                                                const std::atomic<bool>* cancel,
                                                const FrameFill* fill,
                                                std::optional<FrameContent>* whole) {
  const std::vector<PredictorConfig> candidates = Candidates(p);
  if (candidates.size() == 1) return candidates[0];
  // The sample (FORMAT.md §15.9): the whole frame, or stripes of whole rows
  // spread over it (one place of a field is often unlike the rest: the
  // middle rows of a map of the Earth are mostly ocean), copied together.
  const FrameSample sample = SampleOf(p);
  const uint8_t* sample_data = data;
  std::vector<uint8_t> stripes;
  if (!sample.whole_frame()) {
    uint64_t row_bytes = DTypeSize(p.dtype);
    for (size_t d = 1; d < p.shape.size(); ++d) row_bytes *= p.shape[d];
    const uint64_t g = sample.stripe_rows;
    stripes.resize(sample.first_rows.size() * g * row_bytes);
    for (size_t k = 0; k < sample.first_rows.size(); ++k) {
      std::memcpy(stripes.data() + k * g * row_bytes, data + sample.first_rows[k] * row_bytes,
                  g * row_bytes);
    }
    sample_data = stripes.data();
  }
  // Every interpolation candidate codes the same fill mask: found once.
  FrameFill own, sample_fill;
  const FrameFill* fill_of_sample = nullptr;
  if (NeedsFill(p)) {
    if (fill == nullptr) {
      own = FindFill(p, data);
      fill = &own;
    }
    if (sample.whole_frame()) {
      fill_of_sample = fill;
    } else {
      sample_fill = FillOfStripes(p, *fill, sample.first_rows, sample.stripe_rows);
      fill_of_sample = &sample_fill;
    }
  }
  return Pick(SampleParams(p, sample), candidates, sample_data, cancel, fill_of_sample,
              sample.whole_frame() ? whole : nullptr);
}

absl::StatusOr<PredictorConfig> ChooseOnSample(const FrameParams& p, const FrameSample& sample,
                                               const uint8_t* sample_data,
                                               const std::atomic<bool>* cancel) {
  const std::vector<PredictorConfig> candidates = Candidates(p);
  if (candidates.size() == 1) return candidates[0];
  const FrameParams params = SampleParams(p, sample);
  FrameFill fill;
  if (NeedsFill(p)) fill = FindFill(params, sample_data);
  return Pick(params, candidates, sample_data, cancel, NeedsFill(p) ? &fill : nullptr, nullptr);
}

}  // namespace ebzip
