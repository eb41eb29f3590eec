// The per-frame choice's sample (FORMAT.md §15.9), worked out here from the
// text's formula and compared with what the writer samples: another
// implementation must be able to reproduce the choice, hence the bytes.
#include "codec/predictor_choice.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "codec/byte_io.h"
#include "codec/format.h"
#include "gtest/gtest.h"

namespace ebzip {
namespace {

// §15.9, as written: n elements, R = shape[1]·…·shape[ndim−1] (1 for
// ndim = 1); the whole frame when n ≤ 2^20; otherwise B = min(2^20, ⌊n/4⌋),
// m = max(min(2, shape[0]), ⌊B/R⌋), g = min(m, max(64, ⌈2^16/R⌉)), k = ⌊m/g⌋, stripe j at
// ⌊(2j + 1)·(shape[0] − g)/(2k)⌋. Returns the rows the sample copies, in
// order (every row for the whole frame).
std::vector<uint64_t> SpecSampleRows(const std::vector<uint64_t>& shape) {
  const uint64_t rows = shape[0];
  uint64_t r = 1;
  for (size_t d = 1; d < shape.size(); ++d) r *= shape[d];
  const uint64_t n = rows * r;
  std::vector<uint64_t> out;
  if (n <= (uint64_t{1} << 20)) {
    for (uint64_t i = 0; i < rows; ++i) out.push_back(i);
    return out;
  }
  const uint64_t b = std::min<uint64_t>(uint64_t{1} << 20, n / 4);
  const uint64_t m = std::max<uint64_t>(std::min<uint64_t>(2, rows), b / r);
  const uint64_t ceil_stripe = ((uint64_t{1} << 16) + r - 1) / r;
  const uint64_t g = std::min<uint64_t>(m, std::max<uint64_t>(64, ceil_stripe));
  const uint64_t k = m / g;
  for (uint64_t j = 0; j < k; ++j) {
    const uint64_t start = (2 * j + 1) * (rows - g) / (2 * k);
    for (uint64_t i = 0; i < g; ++i) out.push_back(start + i);
  }
  return out;
}

// The rows SampleOf's answer copies, in order.
std::vector<uint64_t> SampledRows(const FrameParams& p, const FrameSample& s) {
  std::vector<uint64_t> out;
  if (s.whole_frame()) {
    for (uint64_t i = 0; i < p.shape[0]; ++i) out.push_back(i);
    return out;
  }
  for (uint64_t first : s.first_rows) {
    for (uint64_t i = 0; i < s.stripe_rows; ++i) out.push_back(first + i);
  }
  return out;
}

FrameParams Params(std::vector<uint64_t> shape) {
  FrameParams p;
  p.version = format::kVersion;
  p.predictor = Predictor::kAuto;
  p.lossless = Lossless::kAuto;
  p.shape = std::move(shape);
  for (size_t d = 0; d < p.shape.size(); ++d) p.block[d] = 16;
  p.abs_bound = 1e-3;
  p.quant_step = 2e-3;
  return p;
}

TEST(PredictorChoice, SampleFollowsTheWrittenRule) {
  const std::vector<std::vector<uint64_t>> shapes = {
      {1000},                      // small: the whole frame
      {uint64_t{1} << 20},         // 2^20 elements: still the whole frame
      {(uint64_t{1} << 20) + 1},   // just over: a quarter, in 4 stripes
      {uint64_t{1} << 23},         // 2^20 in 16 stripes of 2^16
      {1024, 1024},                // 2^20: the whole frame
      {1025, 1024},                // a quarter: two stripes of 128 rows
      {540, 1081},                 // etopo20: the whole frame
      {2161, 4320},                // etopo5: three stripes of 64
      {20, 180, 360},              // levitus SALT: 5 rows of 20
      {132, 73, 144},              // UWND: 33 rows
      {12, 19, 90, 180},           // TEMP: 3 of 12 rows
      {12, 90, 180},               // coads: the whole frame
      {33, 100, 150},              // few rows, under 2^20: the whole frame
      {3, 500, 800},               // rows bigger than the quarter: two rows
      {2, 600000},                 // two rows bigger than the quarter: both
      {1, 2000, 1000},             // one row: the whole frame
      {4000, 300},                 // 1.2 M elements: four stripes
      {400000, 3, 5},              // many short rows
  };
  for (const auto& shape : shapes) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    const FrameParams p = Params(shape);
    const FrameSample sample = SampleOf(p);
    const std::vector<uint64_t> rows = SampledRows(p, sample);
    EXPECT_EQ(rows, SpecSampleRows(shape));
    // The sample taken as a frame: as many rows as it copies.
    EXPECT_EQ(SampleParams(p, sample).shape[0], rows.size());
    for (size_t d = 1; d < shape.size(); ++d) EXPECT_EQ(SampleParams(p, sample).shape[d], shape[d]);
  }
}

TEST(PredictorChoice, SampleOfKnownShapesByHand) {
  // Worked by hand from §15.9, so that the formula above is checked too.
  // etopo5, 2161 × 4320: B = 2^20, m = 242, g = 64, k = 3; stripes at
  // ⌊2097/6⌋, ⌊3·2097/6⌋, ⌊5·2097/6⌋.
  FrameSample s = SampleOf(Params({2161, 4320}));
  EXPECT_EQ(s.stripe_rows, 64u);
  EXPECT_EQ(s.first_rows, (std::vector<uint64_t>{349, 1048, 1747}));
  // etopo20, 540 × 1081 = 583,740 ≤ 2^20: the whole frame.
  EXPECT_TRUE(SampleOf(Params({540, 1081})).whole_frame());
  // levitus SALT, 20 × 180 × 360: n = 1,296,000, B = 324,000, R = 64,800,
  // m = g = 5, k = 1, at ⌊15/2⌋ = 7.
  s = SampleOf(Params({20, 180, 360}));
  EXPECT_EQ(s.stripe_rows, 5u);
  EXPECT_EQ(s.first_rows, (std::vector<uint64_t>{7}));
  // 3 × 500 × 800: B = 300,000 < R = 400,000, so m = 2 rows, g = 2, k = 1,
  // at ⌊1/2⌋ = 0.
  s = SampleOf(Params({3, 500, 800}));
  EXPECT_EQ(s.stripe_rows, 2u);
  EXPECT_EQ(s.first_rows, (std::vector<uint64_t>{0}));
  // 2^20 + 4 elements in one dimension: B = 262,145, g = 65,536, k = 4,
  // stripe j at ⌊(2j + 1)·983,044 / 8⌋.
  s = SampleOf(Params({(uint64_t{1} << 20) + 4}));
  EXPECT_EQ(s.stripe_rows, 65536u);
  EXPECT_EQ(s.first_rows, (std::vector<uint64_t>{122880, 368641, 614402, 860163}));
  // coads, 12 × 90 × 180 = 194,400 ≤ 2^20: the whole frame.
  EXPECT_TRUE(SampleOf(Params({12, 90, 180})).whole_frame());
}

// The writer's choice is the choice on the written sample: ChoosePredictor
// on the frame agrees with ChooseOnSample given the formula's rows, copied
// here (what a caller holding the frame elsewhere does), with and without
// fill values.
TEST(PredictorChoice, ChoiceIsTheChoiceOnTheWrittenSample) {
  std::mt19937_64 rng(23);
  for (const bool fill : {false, true}) {
    const std::vector<uint64_t> shape = {1200, 1000};
    FrameParams p = Params(shape);
    if (fill) p.fill_value = -9999.0;
    const uint64_t r = shape[1], n = shape[0] * shape[1];
    std::vector<uint8_t> data(4 * n);
    std::normal_distribution<double> noise(0, 0.002);
    for (uint64_t i = 0; i < shape[0]; ++i) {
      for (uint64_t j = 0; j < r; ++j) {
        float v = static_cast<float>(std::sin(0.02 * i) * std::cos(0.015 * j) + noise(rng));
        if (fill && (i * 7 + j * 3) % 97 < 20 && j > r / 2) v = -9999.0f;
        StoreLE<float>(data.data() + 4 * (i * r + j), v);
      }
    }
    const std::vector<uint64_t> rows = SpecSampleRows(shape);
    ASSERT_LT(rows.size(), shape[0]);
    std::vector<uint8_t> sample_data(4 * r * rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      std::memcpy(sample_data.data() + 4 * r * i, data.data() + 4 * r * rows[i], 4 * r);
    }
    const auto chosen = ChoosePredictor(p, data.data(), nullptr);
    ASSERT_TRUE(chosen.ok()) << chosen.status();
    const auto on_sample = ChooseOnSample(p, SampleOf(p), sample_data.data(), nullptr);
    ASSERT_TRUE(on_sample.ok()) << on_sample.status();
    EXPECT_EQ(chosen->predictor, on_sample->predictor);
    EXPECT_EQ(chosen->block, on_sample->block);
    EXPECT_EQ(chosen->order, on_sample->order);
  }
}

}  // namespace
}  // namespace ebzip
