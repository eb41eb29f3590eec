// The quantization step's room for rounding (codec/resolve_bound.h): the
// margin covers the narrowing, the step keeps it only where it applies, and
// on a field far from zero at a tight bound it turns the values that used to
// go verbatim back into symbols, every value still within the bound.
#include "codec/resolve_bound.h"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "codec/archive.h"
#include "gtest/gtest.h"
#include "tests/bound_checker.h"

namespace ebzip {
namespace {

float UlpF32(float x) { return std::nextafter(x, INFINITY) - x; }
double UlpF64(double x) { return std::nextafter(x, INFINITY) - x; }

TEST(RoundingMargin, CoversTheNarrowingWithoutWaste) {
  for (double magnitude : {1e-30, 1e-3, 0.75, 1.0, 300.0, 65535.9, 65536.0, 1e30}) {
    SCOPED_TRACE(magnitude);
    // The largest float32 at or below the magnitude: its spacing is the
    // largest any reconstruction below the magnitude can round by (twice).
    float top = static_cast<float>(magnitude);
    if (static_cast<double>(top) > magnitude) top = std::nextafter(top, 0.0f);
    const double f32 = RoundingMargin(Narrowing::kFloat32, magnitude);
    EXPECT_GT(f32, static_cast<double>(UlpF32(top)) / 2);
    EXPECT_LE(f32, static_cast<double>(UlpF32(top)));
    // float64: the product below 4 * magnitude and the sum below it.
    const double f64 = RoundingMargin(Narrowing::kFloat64, magnitude);
    EXPECT_GE(f64, UlpF64(4 * magnitude) / 2 + UlpF64(magnitude) / 2);
    EXPECT_LE(f64, 4 * UlpF64(4 * magnitude));
  }
}

TEST(ResolveBoundFor, TheStepLeavesRoomOnlyWithARangeAndANarrowing) {
  // REL 1e-4 of [250, 300]: abs_bound 0.005; float32 values below 512 are
  // 2^-15 apart, so they round by up to 2^-16.
  const double eb = 1e-4 * 50;
  const ResolvedBound f32 = ResolveBoundFor(BoundMode::kRel, 1e-4, true, 250, 300,
                                            Narrowing::kFloat32);
  EXPECT_EQ(f32.abs_bound, eb);
  EXPECT_EQ(f32.quant_step, 2 * (eb - (std::ldexp(1.0, -16) + std::ldexp(1.0, -39))));
  const ResolvedBound f64 = ResolveBoundFor(BoundMode::kRel, 1e-4, true, 250, 300,
                                            Narrowing::kFloat64);
  // float64: room for the f64 roundings alone, 2^-41 below 512.
  EXPECT_EQ(f64.quant_step, 2 * (eb - std::ldexp(1.0, -41)));
  // Version 1's writer, an absolute bound (no range known) and a bound at
  // the type's precision (the margin would pass half the bound) keep twice
  // the bound.
  EXPECT_EQ(ResolveBoundFor(BoundMode::kRel, 1e-4, true, 250, 300, Narrowing::kNone).quant_step,
            2 * eb);
  EXPECT_EQ(ResolveBoundFor(BoundMode::kAbs, eb, false, 0, 0, Narrowing::kFloat32).quant_step,
            2 * eb);
  const ResolvedBound tight = ResolveBoundFor(BoundMode::kRel, 1e-7, true, 250, 300,
                                              Narrowing::kFloat32);
  EXPECT_EQ(tight.quant_step, 2 * tight.abs_bound);
  // A bound past DBL_MAX / 2 (REL 1e300 of a range of 1e8): the step stays
  // finite, at DBL_MAX, with room for the rounding as without it.
  for (Narrowing n : {Narrowing::kNone, Narrowing::kFloat32, Narrowing::kFloat64}) {
    const ResolvedBound huge = ResolveBoundFor(BoundMode::kRel, 1e300, true, 0, 1e8, n);
    EXPECT_EQ(huge.abs_bound, 1e300 * 1e8);
    EXPECT_EQ(huge.quant_step, DBL_MAX);
  }
  // A zero range: exact reconstruction, step from the value as before.
  EXPECT_EQ(ResolveBoundFor(BoundMode::kRel, 1e-4, true, 300, 300, Narrowing::kFloat32).quant_step,
            300);
}

// A temperature-like float32 field near 290 K: smooth layers with a little
// noise from a fixed-seed generator, the bound well above the noise.
std::vector<float> WarmField(uint64_t nz, uint64_t ny, uint64_t nx) {
  std::mt19937 random(7);
  std::uniform_real_distribution<double> noise(-0.005, 0.005);
  std::vector<float> v;
  v.reserve(nz * ny * nx);
  for (uint64_t k = 0; k < nz; ++k) {
    for (uint64_t j = 0; j < ny; ++j) {
      for (uint64_t i = 0; i < nx; ++i) {
        const double lat = static_cast<double>(j) / ny, lon = static_cast<double>(i) / nx;
        v.push_back(static_cast<float>(300 + 25 * std::sin(6.28 * lon + 0.3 * k) * std::cos(3 * lat) +
                                       noise(random)));
      }
    }
  }
  return v;
}

struct Coded {
  uint64_t bytes = 0;
  uint64_t verbatim = 0;
  double step = 0, abs_bound = 0;
};

Coded CodeAndCheck(const ArraySpec& spec, const std::vector<float>& field,
                   const CompressOptions& options) {
  const absl::Span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(field.data()),
                                        field.size() * sizeof(float));
  auto archive = Compress(spec, bytes, options);
  EXPECT_TRUE(archive.ok()) << archive.status();
  if (!archive.ok()) return {};
  auto info = ReadArchiveInfo(*archive);
  EXPECT_TRUE(info.ok()) << info.status();
  auto out = Decompress(*archive);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!info.ok() || !out.ok()) return {};
  Coded c;
  c.bytes = archive->size();
  c.abs_bound = info->header.abs_bound;
  for (const format::FrameHeader& h : info->frame_headers) {
    c.verbatim += h.verbatim_count;
    c.step = h.quant_step;
  }
  const testing::CheckResult r =
      testing::CheckBound(field.data(), reinterpret_cast<const float*>(out->data.data()),
                          field.size(), c.abs_bound);
  EXPECT_TRUE(r.ok()) << r.Describe();
  return c;
}

TEST(ResolveBoundFor, AWarmFieldAtATightBoundKeepsItsValuesOutOfVerbatim) {
  const ArraySpec spec{DType::kFloat32, {16, 128, 256}};
  const std::vector<float> field = WarmField(16, 128, 256);
  CompressOptions v1;
  v1.mode = BoundMode::kRel;
  v1.bound = 1e-4;
  v1.predictor = Predictor::kLorenzo;
  v1.lossless = Lossless::kHuffman;
  const Coded before = CodeAndCheck(spec, field, v1);
  // Version 1's step is twice the bound: about 0.25 % of these values round
  // past it after narrowing and are stored verbatim.
  EXPECT_EQ(before.step, 2 * before.abs_bound);
  EXPECT_GT(before.verbatim, field.size() / 1000);

  for (Predictor predictor : {Predictor::kLorenzo, Predictor::kInterp}) {
    SCOPED_TRACE(static_cast<int>(predictor));
    CompressOptions v2 = v1;
    v2.predictor = predictor;
    v2.lossless = Lossless::kAuto;
    const Coded after = CodeAndCheck(spec, field, v2);
    EXPECT_LT(after.step, 2 * after.abs_bound);
    EXPECT_EQ(after.verbatim, 0u);
  }
}

}  // namespace
}  // namespace ebzip
