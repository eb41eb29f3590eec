// The per-frame choice (FORMAT.md §15.9), worked out here from the text and
// compared with what the writer does: the sample's formula, and the lossless
// stage's rule (2 when H2 < min(H0, H1), otherwise 1 when H1 < H0, otherwise
// 0) over sizes computed here from the tokens of §15.4, §15.4.1 and §15.8.
// Another implementation must be able to reproduce the choice, hence the
// bytes.
#include "codec/predictor_choice.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/archive.h"
#include "codec/byte_io.h"
#include "codec/entropy_coder.h"
#include "codec/format.h"
#include "codec/huffman_code.h"
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

// §15.9's H0, H1 and H2 of `symbols` (each below 2·radius) cut into chunks
// of chunk_symbols: the tokens of §15.8 (none, zero-run tokens, and run-value
// tokens too), their histogram's code (§10.4), and the payload, extra bits
// and 8 × the code-length section's bytes.
std::array<uint64_t, 3> SpecStageBits(const std::vector<uint16_t>& symbols, uint32_t radius,
                                      uint32_t chunk_symbols, int max_code_length) {
  std::array<uint64_t, 3> bits{};
  for (int stage = 0; stage < 3; ++stage) {
    const uint32_t alphabet = 2 * radius + (stage == 0 ? 0 : stage == 1 ? 12 : 64);
    std::vector<uint32_t> histogram(alphabet, 0);
    uint64_t extra = 0;
    for (uint64_t begin = 0; begin < symbols.size(); begin += chunk_symbols) {
      const uint64_t end = std::min<uint64_t>(begin + chunk_symbols, symbols.size());
      for (uint64_t i = begin; i < end;) {
        if (stage == 0 || symbols[i] != radius) {
          ++histogram[symbols[i++]];
          continue;
        }
        uint64_t k = 0;
        while (i + k < end && symbols[i + k] == radius) ++k;
        i += k;
        for (; k >= 8192; k -= 8191) {  // class 12, e = 4095
          ++histogram[2 * radius + 11];
          extra += 12;
        }
        int c = 0;
        while ((k >> (c + 1)) != 0) ++c;
        const int v = i < end ? static_cast<int>(symbols[i]) - static_cast<int>(radius) : 0;
        const int j = v == -2 ? 0 : v == -1 ? 1 : v == 1 ? 2 : v == 2 ? 3 : -1;
        if (stage == 2 && j >= 0) {
          ++histogram[2 * radius + 12 + 4 * c + j];
          extra += c;
          ++i;
        } else if (k >= 2) {
          ++histogram[2 * radius + c - 1];
          extra += c;
        } else {
          ++histogram[radius];
        }
      }
    }
    const std::vector<uint8_t> lengths = BuildCodeLengths(histogram, max_code_length);
    std::vector<uint8_t> section;
    AppendCodeLengths(lengths, &section);
    bits[stage] = extra + 8 * section.size();
    for (uint32_t t = 0; t < alphabet; ++t) bits[stage] += uint64_t{histogram[t]} * lengths[t];
  }
  return bits;
}

// Symbol streams of several kinds: residuals of a geometric spread with runs
// of zeros that end on small residuals (run-value tokens pay), on large
// ones (zero-run tokens do), no zeros at all, runs longer than a token and
// runs that cross chunk ends; symbol 0 (outliers) here and there.
std::vector<uint16_t> Stream(int kind, uint32_t radius, uint64_t n, std::mt19937_64& rng) {
  std::vector<uint16_t> s;
  std::geometric_distribution<int> run(kind == 0 ? 0.05 : 0.2);
  std::uniform_int_distribution<int> coin(0, 99);
  auto residual = [&](int r) {  // symbols stay below 2·radius
    const int most = static_cast<int>(radius) - 1;
    s.push_back(static_cast<uint16_t>(static_cast<int>(radius) + std::clamp(r, -most, most)));
  };
  while (s.size() < n) {
    switch (kind) {
      case 0:  // runs, then ±1 or ±2
      case 1: {
        for (int k = run(rng); k > 0; --k) residual(0);
        const int r = 1 + coin(rng) % 2;
        residual(coin(rng) < 50 ? r : -r);
        if (kind == 1 && coin(rng) < 40) residual(coin(rng) % 7 - 3);
        break;
      }
      case 2:  // runs, then a large residual
        for (int k = run(rng); k > 0; --k) residual(0);
        residual((coin(rng) < 50 ? 1 : -1) * (5 + coin(rng) % 20));
        break;
      case 3:  // no zeros: a wide spread
        residual((coin(rng) < 50 ? 1 : -1) * (1 + coin(rng) % 40));
        break;
      case 4:  // long runs (split at 8191) ending on +1, and lone zeros
        for (int k = 5000 + coin(rng) * 200; k > 0; --k) residual(0);
        residual(1);
        residual(0);
        residual(-2);
        break;
      case 5:  // only zeros
        residual(0);
        break;
      case 6:  // mostly small non-zero residuals, a few zeros
        residual(coin(rng) < 10 ? 0 : (coin(rng) < 50 ? 1 : -1) * (1 + coin(rng) % 3));
        break;
    }
    if (coin(rng) == 0) s.push_back(0);  // an outlier
  }
  s.resize(n);
  return s;
}

// SmallerCode (the writer's stage choice, codec/entropy_coder.h) among any
// set of stages takes the one §15.9's rule takes, and its size is §15.9's.
TEST(PredictorChoice, LosslessStageFollowsTheWrittenRule) {
  std::mt19937_64 rng(7);
  std::array<int, 3> chosen{};
  for (int kind = 0; kind <= 6; ++kind) {
    for (uint32_t radius : {8u, 512u, 32736u}) {
      for (uint32_t chunk_symbols : {64u, 16384u}) {
        const uint64_t n = kind == 4 ? 200000 : 20000;
        SCOPED_TRACE(absl::StrCat("kind ", kind, ", radius ", radius, ", chunk ", chunk_symbols));
        const std::vector<uint16_t> symbols = Stream(kind, radius, n, rng);
        const std::array<uint64_t, 3> h = SpecStageBits(symbols, radius, chunk_symbols, 20);
        for (uint8_t stages = 1; stages < 8; ++stages) {
          // 2 if allowed and H2 < min of the others allowed, else 1 if
          // allowed and H1 < H0 (if allowed), else 0: the lowest id of the
          // smallest size.
          int expected = -1;
          for (int id = 0; id < 3; ++id) {
            if ((stages >> id & 1) && (expected < 0 || h[id] < h[expected])) expected = id;
          }
          const StageCode code = SmallerCode(symbols, radius, chunk_symbols, 20, stages);
          EXPECT_EQ(code.runs.stage(), expected)
              << "stages " << int{stages} << ": H0 " << h[0] << ", H1 " << h[1] << ", H2 " << h[2];
          EXPECT_EQ(code.bits, h[expected]) << "stages " << int{stages};
          if (stages == 7) ++chosen[expected];
        }
      }
    }
  }
  // Every outcome of the rule was met.
  for (int id = 0; id < 3; ++id) EXPECT_GT(chosen[id], 0) << "lossless " << id << " never chosen";
}

// Through the writer with --lossless auto: a frame whose runs of zeros end
// on ±1 takes run-value tokens, one that is all zeros zero-run tokens (run-
// value tokens would only lengthen the code-length section), and noise
// plain Huffman.
TEST(PredictorChoice, WriterTakesTheStageOfTheRule) {
  const uint64_t n = 1 << 16;
  for (int kind = 0; kind < 3; ++kind) {
    SCOPED_TRACE(absl::StrCat("kind ", kind));
    std::mt19937_64 rng(kind);
    std::uniform_real_distribution<double> noise(-100, 100);
    std::vector<uint8_t> data(8 * n);
    for (uint64_t i = 0; i < n; ++i) {
      // A staircase: one step (2 × the bound) every 100 elements.
      const double v = kind == 0   ? 0.002 * static_cast<double>(i / 100)
                       : kind == 1 ? 1.5
                                   : noise(rng);
      StoreLE<double>(data.data() + 8 * i, v);
    }
    CompressOptions o;
    o.predictor = Predictor::kLorenzo;
    o.lossless = Lossless::kAuto;
    o.mode = BoundMode::kAbs;
    o.bound = 1e-3;
    o.radius = 1024;
    auto archive = Compress({DType::kFloat64, {n}}, data, o);
    ASSERT_TRUE(archive.ok()) << archive.status();
    auto info = ReadArchiveInfo(*archive);
    ASSERT_TRUE(info.ok()) << info.status();
    for (const format::FrameHeader& h : info->frame_headers) {
      EXPECT_EQ(h.lossless, kind == 0   ? format::kLosslessRunValues
                            : kind == 1 ? format::kLosslessZeroRuns
                                        : format::kLosslessHuffman);
    }
  }
}

}  // namespace
}  // namespace ebzip
