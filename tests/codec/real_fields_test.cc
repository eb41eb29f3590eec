// The CPU codec on the real fields of tests/real_fields.h: every field at
// five relative and two absolute bounds, checked by the independent checker
// in double precision against a bound the test computes itself (never the
// one the archive claims). Also: all three Huffman decoders agree byte for
// byte, an archive without a gap array decodes by self-synchronization, a
// fill value the compressor is not told about survives as a verbatim value,
// and a multi-frame archive decodes whole and frame by frame.
#include "tests/real_fields.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/types/span.h"
#include "client/io/loaded_array.h"
#include "codec/archive.h"
#include "codec/huffman_decoder.h"
#include "codec/region.h"
#include "codec/types.h"
#include "gtest/gtest.h"
#include "tests/bound_checker.h"
#include "tests/region_slice.h"

namespace ebzip {
namespace {

using ::ebzip::testing::CheckBound;
using ::ebzip::testing::CheckResult;

// Every field loaded once per process (ctest runs each test in its own).
const LoadedArray* Field(const std::string& name) {
  static auto* const cache = new std::map<std::string, LoadedArray>;
  auto it = cache->find(name);
  if (it != cache->end()) return &it->second;
  absl::StatusOr<LoadedArray> loaded = LoadRealField(name);
  if (!loaded.ok()) {
    ADD_FAILURE() << "loading real field " << name << ": " << loaded.status();
    return nullptr;
  }
  return &cache->emplace(name, *std::move(loaded)).first->second;
}

#define ASSERT_FIELD(var, name)         \
  const LoadedArray* var = Field(name); \
  ASSERT_NE(var, nullptr)

absl::Span<const float> Values(const LoadedArray& a) {
  return {reinterpret_cast<const float*>(a.data.data()), a.data.size() / sizeof(float)};
}

// The fields whose fill value the compressor is told about; the others are
// compressed as plain numbers (uwnd and etopo5 hold no fill points anyway).
bool PassesFill(const std::string& field) { return field == "temp" || field == "salt"; }

// The fill value the registry documents for the field (real_fields.h).
float DocumentedFill(const std::string& field) {
  if (field == "temp") return -1e34f;
  if (field == "salt") return -1e10f;
  return 0;
}

bool IsFill(float x, std::optional<double> fill) {
  return fill && ::ebzip::testing::SameBits(x, static_cast<float>(*fill));
}

// The finite range without the fill, computed here, not by the codec.
struct Range {
  uint64_t count = 0;
  double min = INFINITY;
  double max = -INFINITY;
  double span() const { return max - min; }
};

Range RangeOf(absl::Span<const float> v, std::optional<double> fill) {
  Range r;
  for (float x : v) {
    if (!std::isfinite(x) || IsFill(x, fill)) continue;
    ++r.count;
    r.min = std::fmin(r.min, x);
    r.max = std::fmax(r.max, x);
  }
  return r;
}

enum class BoundKind { kRel, kAbsRangeFraction, kAbsValue };

struct BoundCase {
  std::string field;
  BoundKind kind;
  double value;  // REL fraction; ABS as a fraction of the range; ABS value
};

std::string CaseName(const BoundCase& c) {
  const char* kind = c.kind == BoundKind::kRel                ? "rel"
                     : c.kind == BoundKind::kAbsRangeFraction ? "absrange"
                                                              : "abs";
  std::string value = absl::StrFormat("%g", c.value);
  absl::StrReplaceAll({{"-", "m"}, {".", "p"}, {"+", ""}}, &value);
  return absl::StrCat(c.field, "_", kind, "_", value);
}

// For gtest's test names and for ctest's listing of the parameter.
std::string ParamName(const ::testing::TestParamInfo<BoundCase>& info) {
  return CaseName(info.param);
}
void PrintTo(const BoundCase& c, std::ostream* os) { *os << CaseName(c); }

// A round absolute bound in the field's units, a few thousandths of its range.
double RoundAbsBound(const std::string& field) {
  if (field == "etopo5") return 10.0;  // metres; range about 19 km
  if (field == "temp") return 0.05;    // degrees C; range about 32
  if (field == "uwnd") return 0.1;     // m/s; range about 40
  if (field == "salt") return 0.01;    // psu; range about 41
  return 0;
}

std::vector<BoundCase> AllCases() {
  std::vector<BoundCase> cases;
  for (const char* field : {"etopo5", "temp", "uwnd", "salt"}) {
    for (double rel : {1e-2, 1e-3, 1e-4, 1e-5, 1e-6}) {
      cases.push_back({field, BoundKind::kRel, rel});
    }
    cases.push_back({field, BoundKind::kAbsRangeFraction, 5e-4});
    cases.push_back({field, BoundKind::kAbsValue, RoundAbsBound(field)});
  }
  return cases;
}

void Record(const std::string& what, uint64_t input_bytes, uint64_t archive_bytes) {
  const double ratio = static_cast<double>(input_bytes) / static_cast<double>(archive_bytes);
  ::testing::Test::RecordProperty("ratio", absl::StrFormat("%.4f", ratio));
  std::printf("RATIO %-28s %10llu -> %10llu bytes, ratio %8.3f\n", what.c_str(),
              static_cast<unsigned long long>(input_bytes),
              static_cast<unsigned long long>(archive_bytes), ratio);
}

// Decodes with `kind`, checks the spec and the bound against `abs_bound`
// (the test's own), and returns the decoded bytes (empty on failure).
std::vector<uint8_t> DecodeAndCheck(const LoadedArray& field, absl::Span<const uint8_t> archive,
                                    DecoderKind kind, double abs_bound,
                                    std::optional<double> fill) {
  SCOPED_TRACE(DecoderKindName(kind));
  absl::StatusOr<DecompressedArray> out = Decompress(archive, kind);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  EXPECT_EQ(out->spec.dtype, field.spec.dtype);
  EXPECT_EQ(out->spec.shape, field.spec.shape);
  // The archive may promise a tighter bound than asked, never a looser one.
  EXPECT_LE(out->abs_bound, abs_bound);
  EXPECT_EQ(out->data.size(), field.data.size());
  if (out->data.size() != field.data.size()) return {};
  const CheckResult r = CheckBound(reinterpret_cast<const float*>(field.data.data()),
                                   reinterpret_cast<const float*>(out->data.data()),
                                   field.spec.num_elements(), abs_bound, fill);
  EXPECT_TRUE(r.ok()) << r.Describe() << " (bound " << abs_bound << ")";
  EXPECT_EQ(r.checked, field.spec.num_elements());
  return std::move(out->data);
}

class RealFieldBoundTest : public ::testing::TestWithParam<BoundCase> {};

TEST_P(RealFieldBoundTest, ZeroViolations) {
  const BoundCase& c = GetParam();
  ASSERT_FIELD(field, c.field);
  ASSERT_EQ(field->spec.dtype, DType::kFloat32);
  const absl::Span<const float> values = Values(*field);

  std::optional<double> fill;
  if (PassesFill(c.field)) {
    ASSERT_TRUE(field->fill_value.has_value()) << c.field << " declares no fill value";
    ASSERT_EQ(static_cast<float>(*field->fill_value), DocumentedFill(c.field));
    fill = field->fill_value;
  }
  const Range range = RangeOf(values, fill);
  ASSERT_GT(range.count, 0u);
  ASSERT_GT(range.span(), 0);

  CompressOptions options;
  options.fill_value = fill;
  double abs_bound = 0;  // what every value must honour, by the test's reckoning
  switch (c.kind) {
    case BoundKind::kRel:
      options.mode = BoundMode::kRel;
      options.bound = c.value;
      abs_bound = c.value * range.span();
      break;
    case BoundKind::kAbsRangeFraction:
      options.mode = BoundMode::kAbs;
      options.bound = abs_bound = c.value * range.span();
      break;
    case BoundKind::kAbsValue:
      options.mode = BoundMode::kAbs;
      options.bound = abs_bound = c.value;
      break;
  }
  ASSERT_GT(abs_bound, 0);

  absl::StatusOr<std::vector<uint8_t>> archive = Compress(field->spec, field->data, options);
  ASSERT_TRUE(archive.ok()) << archive.status();
  Record(CaseName(c), field->data.size(), archive->size());

  if (c.field == "etopo5" && c.kind == BoundKind::kRel && c.value == 1e-4) {
    EXPECT_GT(field->data.size(), archive->size()) << "etopo5 at REL 1e-4 does not compress";
  }

  // Fill values are restored bit for bit: CheckBound treats them as exact.
  if (fill) {
    uint64_t fills = 0;
    for (float x : values) fills += IsFill(x, fill);
    EXPECT_GT(fills, 0u) << c.field << " was expected to hold fill points";
  }

  const std::vector<uint8_t> reference =
      DecodeAndCheck(*field, *archive, DecoderKind::kChunkParallel, abs_bound, fill);
  ASSERT_FALSE(reference.empty());

  // At REL 1e-4 every decoder must agree with the chunk-parallel one exactly.
  if (c.kind == BoundKind::kRel && c.value == 1e-4) {
    for (DecoderKind kind : {DecoderKind::kGapArray, DecoderKind::kSelfSync}) {
      const std::vector<uint8_t> other = DecodeAndCheck(*field, *archive, kind, abs_bound, fill);
      EXPECT_TRUE(other == reference) << DecoderKindName(kind) << " disagrees with "
                                      << DecoderKindName(DecoderKind::kChunkParallel);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fields, RealFieldBoundTest, ::testing::ValuesIn(AllCases()), ParamName);

// Without the fill value, temp's -1e34 points are ordinary numbers to the
// compressor: at an absolute bound their quantized value cannot fit, so they
// must be stored verbatim and come back bit for bit.
TEST(RealFieldTest, TempWithoutFillKeepsFillPointsVerbatim) {
  ASSERT_FIELD(field, "temp");
  const absl::Span<const float> values = Values(*field);
  uint64_t fills = 0;
  for (float x : values) fills += x == -1e34f;
  ASSERT_GT(fills, 0u);

  CompressOptions options;
  options.mode = BoundMode::kAbs;
  options.bound = 0.01;
  ASSERT_FALSE(options.fill_value.has_value());
  absl::StatusOr<std::vector<uint8_t>> archive = Compress(field->spec, field->data, options);
  ASSERT_TRUE(archive.ok()) << archive.status();
  Record("temp_abs_0p01_nofill", field->data.size(), archive->size());

  absl::StatusOr<ArchiveInfo> info = ReadArchiveInfo(*archive);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_FALSE(info->header.fill_value.has_value());
  uint64_t verbatim = 0;
  for (uint64_t i = 0; i < info->frames.size(); ++i) {
    absl::StatusOr<format::FrameHeader> h = ReadFrameHeader(*info, *archive, i);
    ASSERT_TRUE(h.ok()) << h.status();
    verbatim += h->verbatim_count;
  }
  EXPECT_GE(verbatim, fills);

  const std::vector<uint8_t> decoded =
      DecodeAndCheck(*field, *archive, DecoderKind::kChunkParallel, 0.01, std::nullopt);
  ASSERT_EQ(decoded.size(), field->data.size());
  const float* y = reinterpret_cast<const float*>(decoded.data());
  uint64_t inexact = 0;
  for (uint64_t i = 0; i < values.size(); ++i) {
    if (values[i] == -1e34f && !::ebzip::testing::SameBits(values[i], y[i])) ++inexact;
  }
  EXPECT_EQ(inexact, 0u) << "of " << fills << " fill points";
}

// No gap array in the archive: the self-synchronizing decoder must find the
// codeword boundaries on its own and agree with the chunk-parallel decoder.
TEST(RealFieldTest, UwndWithoutGapArrayDecodesBySelfSync) {
  ASSERT_FIELD(field, "uwnd");
  const Range range = RangeOf(Values(*field), std::nullopt);
  CompressOptions options;
  options.mode = BoundMode::kRel;
  options.bound = 1e-3;
  options.gap_array = false;
  absl::StatusOr<std::vector<uint8_t>> archive = Compress(field->spec, field->data, options);
  ASSERT_TRUE(archive.ok()) << archive.status();
  Record("uwnd_rel_0p001_nogap", field->data.size(), archive->size());

  absl::StatusOr<ArchiveInfo> info = ReadArchiveInfo(*archive);
  ASSERT_TRUE(info.ok()) << info.status();
  for (uint64_t i = 0; i < info->frames.size(); ++i) {
    absl::StatusOr<format::FrameHeader> h = ReadFrameHeader(*info, *archive, i);
    ASSERT_TRUE(h.ok()) << h.status();
    EXPECT_FALSE(h->has_gap_array) << "frame " << i;
  }

  const double abs_bound = 1e-3 * range.span();
  const std::vector<uint8_t> self_sync =
      DecodeAndCheck(*field, *archive, DecoderKind::kSelfSync, abs_bound, std::nullopt);
  const std::vector<uint8_t> chunk =
      DecodeAndCheck(*field, *archive, DecoderKind::kChunkParallel, abs_bound, std::nullopt);
  ASSERT_FALSE(self_sync.empty());
  EXPECT_TRUE(self_sync == chunk);
}

// Small frames: salt (20 depth levels) asked for slabs of 3 levels (the codec
// may round a frame to whole Lorenzo blocks, so the test only requires more
// than one). The whole array and every frame decoded alone must agree.
TEST(RealFieldTest, SaltInManyFrames) {
  ASSERT_FIELD(field, "salt");
  ASSERT_EQ(field->spec.shape.size(), 3u);
  const uint64_t row_elements = field->spec.shape[1] * field->spec.shape[2];
  const std::optional<double> fill = field->fill_value;
  ASSERT_TRUE(fill.has_value());
  const Range range = RangeOf(Values(*field), fill);

  CompressOptions options;
  options.mode = BoundMode::kRel;
  options.bound = 1e-4;
  options.fill_value = fill;
  options.frame_elements = 3 * row_elements;
  absl::StatusOr<std::vector<uint8_t>> archive = Compress(field->spec, field->data, options);
  ASSERT_TRUE(archive.ok()) << archive.status();
  Record("salt_rel_0p0001_frames", field->data.size(), archive->size());

  absl::StatusOr<ArchiveInfo> info = ReadArchiveInfo(*archive);
  ASSERT_TRUE(info.ok()) << info.status();
  const uint64_t rows = field->spec.shape[0];
  ASSERT_GT(info->frames.size(), 1u);

  const double abs_bound = 1e-4 * range.span();
  std::vector<uint8_t> reference;
  for (DecoderKind kind :
       {DecoderKind::kChunkParallel, DecoderKind::kGapArray, DecoderKind::kSelfSync}) {
    std::vector<uint8_t> decoded = DecodeAndCheck(*field, *archive, kind, abs_bound, fill);
    ASSERT_FALSE(decoded.empty());
    if (reference.empty()) {
      reference = std::move(decoded);
    } else {
      EXPECT_TRUE(decoded == reference) << DecoderKindName(kind) << " disagrees";
    }
  }

  const uint64_t row_bytes = row_elements * sizeof(float);
  uint64_t row = 0;
  for (uint64_t i = 0; i < info->frames.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("frame ", i));
    const uint64_t frame_rows = info->FrameRows(i);
    ASSERT_GT(frame_rows, 0u);
    std::vector<uint8_t> out(frame_rows * row_bytes);
    ASSERT_TRUE(DecompressFrame(*info, *archive, i, DecoderKind::kSelfSync, out.data()).ok());
    EXPECT_EQ(std::memcmp(out.data(), reference.data() + row * row_bytes, out.size()), 0);
    row += frame_rows;
  }
  EXPECT_EQ(row, rows);
}

// Regions of every real field by parts of frames (codec/region_frame.h):
// small boxes anywhere and at the far corner, 1 % boxes and single indices
// along each dimension, byte for byte the full decode's slice, for each
// predictor the writer may choose (and the fill mask where there is fill).
TEST(RealFieldTest, RegionsByPartsOfFramesEqualTheFullDecode) {
  for (const RealField& real : RealFields()) {
    ASSERT_FIELD(field, real.name);
    const std::vector<uint64_t>& shape = field->spec.shape;
    for (Predictor predictor : {Predictor::kLorenzo, Predictor::kInterp}) {
      SCOPED_TRACE(absl::StrCat(real.name, ", predictor ", static_cast<int>(predictor)));
      CompressOptions options;
      options.mode = BoundMode::kRel;
      options.bound = 1e-3;
      options.predictor = predictor;
      if (PassesFill(real.name)) options.fill_value = field->fill_value;
      // Frames of about a quarter of the array: regions meet some of them.
      options.frame_elements = std::max<uint64_t>(1, field->spec.num_elements() / 4);
      absl::StatusOr<std::vector<uint8_t>> archive = Compress(field->spec, field->data, options);
      ASSERT_TRUE(archive.ok()) << archive.status();
      absl::StatusOr<DecompressedArray> full = Decompress(*archive);
      ASSERT_TRUE(full.ok()) << full.status();
      absl::StatusOr<ArchiveInfo> info = ReadArchiveInfo(*archive);
      ASSERT_TRUE(info.ok()) << info.status();
      std::mt19937_64 rng(shape.size() * 1000 + static_cast<int>(predictor));
      std::vector<Hyperslab> regions;
      for (int k = 0; k < 12; ++k) {
        Hyperslab box = WholeArray(shape);
        for (size_t d = 0; d < shape.size(); ++d) {
          const uint64_t side =
              k < 4 ? 1 + rng() % std::min<uint64_t>(shape[d], 40)
                    : std::max<uint64_t>(1, static_cast<uint64_t>(
                                                std::pow(0.01, 1.0 / shape.size()) * shape[d]));
          box.count[d] = side;
          box.start[d] = k % 4 == 3 ? shape[d] - side : rng() % (shape[d] - side + 1);
        }
        regions.push_back(box);
      }
      for (size_t d = 0; d < shape.size(); ++d) {
        Hyperslab index = WholeArray(shape);
        index.start[d] = rng() % shape[d];
        index.count[d] = 1;
        regions.push_back(index);
      }
      for (const Hyperslab& r : regions) {
        SCOPED_TRACE(r.ToString());
        std::vector<uint8_t> got(r.NumElements() * sizeof(float));
        const absl::Status status = DecompressRegion(*info, *archive, r, DecoderKind::kAuto,
                                                     absl::MakeSpan(got), nullptr,
                                                     RegionFrames::kPart);
        ASSERT_TRUE(status.ok()) << status;
        EXPECT_TRUE(got == ::ebzip::testing::SliceOf(full->data, shape, r, sizeof(float)));
      }
    }
  }
}

}  // namespace
}  // namespace ebzip
