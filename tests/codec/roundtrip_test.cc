// Round trips through the whole CPU codec, checked by the independent
// checker: adversarial arrays, every decoder, every rank, both dtypes.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "codec/archive.h"
#include "gtest/gtest.h"
#include "tests/bound_checker.h"

namespace ebzip {
namespace {

using ::ebzip::testing::CheckBound;

template <typename T>
absl::Span<const uint8_t> Bytes(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

template <typename T>
constexpr DType DTypeOf() {
  return sizeof(T) == 4 ? DType::kFloat32 : DType::kFloat64;
}

// Compresses, decompresses with every decoder, checks the bound and that all
// decoders agree byte for byte. Returns the archive.
template <typename T>
std::vector<uint8_t> RoundTrip(const std::vector<T>& data, std::vector<uint64_t> shape,
                               const CompressOptions& options) {
  ArraySpec spec{DTypeOf<T>(), shape};
  auto archive = Compress(spec, Bytes(data), options);
  EXPECT_TRUE(archive.ok()) << archive.status();
  if (!archive.ok()) return {};
  std::vector<uint8_t> reference;
  for (DecoderKind kind :
       {DecoderKind::kChunkParallel, DecoderKind::kGapArray, DecoderKind::kSelfSync}) {
    if (kind == DecoderKind::kGapArray && !options.gap_array) continue;
    auto out = Decompress(*archive, kind);
    EXPECT_TRUE(out.ok()) << DecoderKindName(kind) << ": " << out.status().ToString();
    if (!out.ok()) continue;
    EXPECT_EQ(out->spec.shape, shape);
    EXPECT_EQ(out->data.size(), data.size() * sizeof(T));
    const T* decoded = reinterpret_cast<const T*>(out->data.data());
    auto result = CheckBound(data.data(), decoded, data.size(), out->abs_bound, options.fill_value);
    EXPECT_TRUE(result.ok()) << DecoderKindName(kind) << ": " << result.Describe();
    if (reference.empty()) {
      reference = out->data;
    } else {
      EXPECT_EQ(reference, out->data) << DecoderKindName(kind) << " disagrees";
    }
  }
  return *archive;
}

CompressOptions Abs(double e) {
  CompressOptions o;
  o.mode = BoundMode::kAbs;
  o.bound = e;
  return o;
}
CompressOptions Rel(double e) {
  CompressOptions o;
  o.mode = BoundMode::kRel;
  o.bound = e;
  return o;
}

template <typename T>
std::vector<T> Smooth(uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 0.01);
  std::vector<T> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = static_cast<T>(std::sin(i * 0.001) * 100 + noise(rng));
  return v;
}

TEST(RoundTrip, SmoothFloatAllRanks) {
  std::vector<float> data = Smooth<float>(37 * 29 * 23 * 3, 1);
  for (auto shape : std::vector<std::vector<uint64_t>>{
           {37 * 29 * 23 * 3}, {37 * 3, 29 * 23}, {37, 29 * 3, 23}, {3, 37, 29, 23}}) {
    for (double e : {1e-1, 1e-3, 1e-5}) {
      SCOPED_TRACE(ShapeToString(shape) + " abs " + std::to_string(e));
      RoundTrip(data, shape, Abs(e));
    }
  }
}

TEST(RoundTrip, DoubleRelBounds) {
  std::vector<double> data = Smooth<double>(100 * 77, 2);
  for (double e : {1e-2, 1e-4, 1e-6}) RoundTrip(data, {100, 77}, Rel(e));
}

TEST(RoundTrip, SpecialValuesAreBitExact) {
  std::vector<float> data = Smooth<float>(5000, 3);
  const float nan_payload = [] {
    uint32_t bits = 0x7FC12345u;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }();
  data[0] = std::numeric_limits<float>::quiet_NaN();
  data[1] = nan_payload;
  data[2] = INFINITY;
  data[3] = -INFINITY;
  data[4] = -0.0f;
  data[5] = std::numeric_limits<float>::denorm_min();
  data[6] = -1e-40f;
  data[4999] = NAN;
  for (int i = 100; i < 200; ++i) data[i] = -1e34f;  // a fill value without --fill
  RoundTrip(data, {50, 100}, Abs(1e-3));
  RoundTrip(data, {5000}, Rel(1e-4));
}

TEST(RoundTrip, FillValueIsExactAndOutOfRange) {
  std::vector<float> data = Smooth<float>(64 * 64, 4);
  for (int i = 0; i < 64 * 20; ++i) data[i] = -1e34f;
  CompressOptions o = Rel(1e-3);
  o.fill_value = -1e34;
  auto archive = RoundTrip(data, {64, 64}, o);
  auto out = Decompress(archive);
  ASSERT_TRUE(out.ok());
  // The range excludes the fill value, so the bound is ~1e-3 * 200, not 1e31.
  EXPECT_LT(out->abs_bound, 1.0);
}

TEST(RoundTrip, FillValueWithoutFillElements) {
  // A fill value that no element has: an interpolation frame codes a mask of
  // zeros, which its decoder skips as no mask at all (and must not read as
  // fill runs).
  std::vector<float> data = Smooth<float>(96 * 80, 5);
  for (Predictor p : {Predictor::kAuto, Predictor::kInterp, Predictor::kLorenzo}) {
    CompressOptions o = Abs(1e-3);
    o.fill_value = -1e34;
    o.predictor = p;
    RoundTrip(data, {96, 80}, o);
    RoundTrip(data, {6, 16, 80}, o);
  }
}

TEST(RoundTrip, ConstantArrays) {
  for (float v : {0.0f, 3.25f, -7e30f, 1e-30f}) {
    std::vector<float> data(1000, v);
    RoundTrip(data, {10, 100}, Rel(1e-3));
    RoundTrip(data, {1000}, Abs(1e-3));
  }
}

TEST(RoundTrip, OneElement) {
  RoundTrip(std::vector<float>{42.5f}, {1}, Abs(0.1));
  RoundTrip(std::vector<double>{-1e300}, {1, 1, 1, 1}, Rel(1e-3));
  RoundTrip(std::vector<float>{NAN}, {1}, Rel(1e-3));
}

TEST(RoundTrip, ShapesNotMultipleOfBlock) {
  std::vector<float> data = Smooth<float>(17 * 9 * 5, 5);
  RoundTrip(data, {17, 9, 5}, Abs(1e-2));
  RoundTrip(data, {17 * 9 * 5}, Abs(1e-2));
  RoundTrip(data, {17 * 9, 5}, Abs(1e-2));
  // Fewer rows than one block along dimension 0.
  RoundTrip(data, {5, 153}, Abs(1e-2));
  RoundTrip(data, {3, 5, 51}, Abs(1e-2));
  RoundTrip(data, {1, 3, 5, 51}, Abs(1e-2));
}

TEST(RoundTrip, TinyBoundMakesMostPointsOutliers) {
  std::vector<float> data = Smooth<float>(4096, 6);
  RoundTrip(data, {4096}, Abs(1e-30));
  RoundTrip(data, {64, 64}, Abs(DBL_MIN));
}

TEST(RoundTrip, HugeBounds) {
  std::vector<float> data = Smooth<float>(4096, 7);
  RoundTrip(data, {4096}, Abs(1e6));
  RoundTrip(data, {4096}, Abs(1e300));
  RoundTrip(data, {4096}, Abs(DBL_MAX));
  RoundTrip(data, {4096}, Rel(10));
}

// A relative bound whose absolute bound passes DBL_MAX / 2: the step with
// room for the rounding must stay finite (at DBL_MAX), as twice the bound
// does, for every predictor and both types (codec/resolve_bound.h). Found by
// the service fuzzer: such a request made an infinite step.
TEST(RoundTrip, RelativeBoundPastHalfOfDblMax) {
  std::vector<double> wide = Smooth<double>(40 * 30, 10);
  for (double& x : wide) x *= 1e6;  // a range of about 2e8: REL 1e300 is 2e308, clamped
  std::vector<float> narrow(wide.begin(), wide.end());
  for (Predictor p : {Predictor::kAuto, Predictor::kInterp, Predictor::kLorenzo}) {
    for (double rel : {1e300, 8e299}) {  // abs_bound DBL_MAX, and about 1.6e308
      SCOPED_TRACE(std::to_string(static_cast<int>(p)) + " rel " + std::to_string(rel));
      CompressOptions o = Rel(rel);
      o.predictor = p;
      RoundTrip(wide, {40, 30}, o);
      RoundTrip(narrow, {40, 30}, o);
    }
  }
}

TEST(RoundTrip, DoublesBeyondFloatRange) {
  std::vector<double> data = Smooth<double>(3000, 8);
  for (int i = 0; i < 3000; i += 7) data[i] = (i % 2 ? 1 : -1) * 1e200 * (1 + i);
  data[5] = DBL_MAX;
  data[6] = -DBL_MAX;
  RoundTrip(data, {3000}, Abs(1e-3));
  RoundTrip(data, {30, 100}, Rel(1e-6));
}

TEST(RoundTrip, RandomNoiseAndSmallRadius) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1000, 1000);
  std::vector<float> data(20000);
  for (float& x : data) x = u(rng);
  CompressOptions o = Abs(1e-2);
  o.radius = 4;  // most residuals become outliers
  RoundTrip(data, {200, 100}, o);
}

TEST(RoundTrip, ManyFramesAndSmallChunks) {
  std::vector<float> data = Smooth<float>(40 * 33 * 17, 10);
  CompressOptions o = Rel(1e-4);
  o.frame_elements = 33 * 17 * 8;  // one block row of 8 per frame
  o.chunk_symbols = 100;
  o.subsequence_bits = 32;
  o.chunk_group = 3;
  RoundTrip(data, {40, 33, 17}, o);
  o.gap_array = false;
  RoundTrip(data, {40, 33, 17}, o);
}

TEST(RoundTrip, ArchiveIsDeterministic) {
  std::vector<float> data = Smooth<float>(100000, 11);
  auto a = Compress({DType::kFloat32, {100000}}, Bytes(data), Rel(1e-4));
  auto b = Compress({DType::kFloat32, {100000}}, Bytes(data), Rel(1e-4));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

TEST(Compress, RejectsBadArguments) {
  std::vector<float> data(100, 1.0f);
  ArraySpec spec{DType::kFloat32, {100}};
  for (double bad : {0.0, -1.0, double{NAN}, double{INFINITY}}) {
    auto r = Compress(spec, Bytes(data), Abs(bad));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(Compress({DType::kFloat32, {99}}, Bytes(data), Abs(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Compress({DType::kFloat32, {}}, Bytes(data), Abs(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Compress({DType::kFloat32, {10, 0, 10}}, Bytes(data), Abs(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Compress({DType::kFloat32, {1, 1, 1, 1, 100}}, Bytes(data), Abs(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  CompressOptions fill = Abs(1);
  fill.fill_value = NAN;
  EXPECT_EQ(Compress(spec, Bytes(data), fill).status().code(), absl::StatusCode::kInvalidArgument);
}

// A caller's buffer gets the same bytes as Decompress's own, frame by frame;
// a buffer of the wrong size is refused before anything is written.
TEST(DecompressInto, FillsTheCallersBufferOrRefusesItsSize) {
  const auto data = Smooth<float>(64 * 1000, 11);
  CompressOptions o = Rel(1e-3);
  o.frame_elements = 4096;  // several frames
  auto archive = Compress({DType::kFloat32, {64, 1000}}, Bytes(data), o);
  ASSERT_TRUE(archive.ok()) << archive.status();
  auto info = ReadArchiveInfo(*archive);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_GT(info->frames.size(), 1u);
  auto reference = Decompress(*archive);
  ASSERT_TRUE(reference.ok()) << reference.status();

  std::vector<uint8_t> out(data.size() * sizeof(float), 0xAB);
  ASSERT_TRUE(DecompressInto(*info, *archive, absl::MakeSpan(out)).ok());
  EXPECT_EQ(out, reference->data);

  std::vector<uint8_t> small(out.size() - 4, 0xAB);
  auto s = DecompressInto(*info, *archive, absl::MakeSpan(small));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(small, std::vector<uint8_t>(out.size() - 4, 0xAB));
}

}  // namespace
}  // namespace ebzip
