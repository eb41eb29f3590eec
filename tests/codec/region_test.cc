// Region decoding (codec/region.h): every region equals the matching slice
// of a full decode, byte for byte, sliced here by the test's own loop over
// the region's indices; malformed regions are INVALID_ARGUMENT.
#include "codec/region.h"
#include "codec/region_plan.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/format.h"
#include "codec/huffman_code.h"
#include "gtest/gtest.h"
#include "tests/region_slice.h"

namespace ebzip {
namespace {

using ::ebzip::testing::RegionsOf;
using ::ebzip::testing::SliceOf;

// A smooth field with a fill value (single elements and a stretch, a
// coastline), NaN, ±Inf, -0.0 and subnormals sprinkled in.
template <typename T>
std::vector<T> Field(const std::vector<uint64_t>& shape, std::mt19937_64& rng, T fill) {
  uint64_t n = 1;
  for (uint64_t s : shape) n *= s;
  std::vector<T> v(n);
  std::uniform_real_distribution<double> noise(-0.01, 0.01);
  for (uint64_t i = 0; i < n; ++i) {
    v[i] = static_cast<T>(std::sin(0.003 * static_cast<double>(i)) + noise(rng));
  }
  std::uniform_int_distribution<uint64_t> at(0, n - 1);
  for (int k = 0; k < 6; ++k) v[at(rng)] = fill;
  const uint64_t land = at(rng);
  std::fill(v.begin() + land, v.begin() + std::min(n, land + n / 10), fill);
  v[at(rng)] = std::numeric_limits<T>::quiet_NaN();
  v[at(rng)] = std::numeric_limits<T>::infinity();
  v[at(rng)] = -std::numeric_limits<T>::infinity();
  v[at(rng)] = static_cast<T>(-0.0);
  v[at(rng)] = std::numeric_limits<T>::denorm_min();
  return v;
}

struct Coding {
  Predictor predictor = Predictor::kAuto;
  Lossless lossless = Lossless::kAuto;
  bool fill = true;
};

// Counts the archives whose frames use run-value tokens (a codeword for one).
int run_value_archives = 0;

template <typename T>
void CheckRegions(const std::vector<uint64_t>& shape, Coding coding, uint64_t frame_elements,
                  uint64_t seed) {
  std::mt19937_64 rng(seed);
  const T fill = static_cast<T>(-9999);
  const std::vector<T> data = Field<T>(shape, rng, fill);
  const ArraySpec spec{sizeof(T) == 4 ? DType::kFloat32 : DType::kFloat64, shape};
  CompressOptions o;
  o.mode = BoundMode::kRel;
  o.bound = 1e-3;
  if (coding.fill) o.fill_value = static_cast<double>(fill);
  o.predictor = coding.predictor;
  o.lossless = coding.lossless;
  o.frame_elements = frame_elements;
  auto archive = Compress(
      spec, {reinterpret_cast<const uint8_t*>(data.data()), data.size() * sizeof(T)}, o);
  ASSERT_TRUE(archive.ok()) << archive.status();
  auto full = Decompress(*archive);
  ASSERT_TRUE(full.ok()) << full.status();
  auto info = ReadArchiveInfo(*archive);
  ASSERT_TRUE(info.ok()) << info.status();
  // A stage asked for is the stage every frame uses (run-value tokens:
  // lossless 2, FORMAT.md §15.4.1).
  if (coding.lossless == Lossless::kRunValues) {
    bool used = false;
    for (size_t f = 0; f < info->frames.size(); ++f) {
      const format::FrameHeader& h = info->frame_headers[f];
      EXPECT_EQ(h.lossless, format::kLosslessRunValues);
      auto lengths = ParseCodeLengths(
          absl::MakeConstSpan(*archive).subspan(info->frames[f].offset + format::kFrameHeaderSize,
                                                h.sections[format::kCodeLengths].length),
          h.alphabet(), h.max_code_length);
      ASSERT_TRUE(lengths.ok()) << lengths.status();
      for (uint32_t s = 2 * h.radius + format::kRunClasses; s < h.alphabet(); ++s) {
        used |= (*lengths)[s] != 0;
      }
    }
    run_value_archives += used;
  }
  for (const Hyperslab& r : RegionsOf(shape, rng)) {
    SCOPED_TRACE(r.ToString());
    const std::vector<uint8_t> want = SliceOf(full->data, shape, r, sizeof(T));
    // Whole frames, parts of frames, and the choice between them.
    for (RegionFrames frames : {RegionFrames::kAuto, RegionFrames::kWhole, RegionFrames::kPart}) {
      SCOPED_TRACE(absl::StrCat("frames ", static_cast<int>(frames)));
      std::vector<uint8_t> got(r.NumElements() * sizeof(T), 0xEE);
      const absl::Status s = DecompressRegion(*info, *archive, r, DecoderKind::kAuto,
                                              absl::MakeSpan(got), nullptr, frames);
      ASSERT_TRUE(s.ok()) << s;
      EXPECT_EQ(got, want);
    }
    // As whole frames (codec/region_plan.h, the GPU's way): the frames met,
    // decoded from their byte range alone, then the pieces gathered; in one
    // plan, and cut into groups of consecutive frames.
    auto whole = PlanWholeFrames(*info, r);
    ASSERT_TRUE(whole.ok()) << whole.status();
    ASSERT_EQ(whole->part.frames.size(), FramesOf(*info, r).size());
    for (size_t groups : {size_t{0}, size_t{1}, size_t{3}}) {
      SCOPED_TRACE(absl::StrCat(groups, " groups"));
      std::vector<WholeFramesPlan> plans;
      if (groups == 0) {
        if (!whole->pieces.empty()) plans.push_back(*whole);
      } else {
        auto grouped = PlanFrameGroups(*info, r, groups);
        ASSERT_TRUE(grouped.ok()) << grouped.status();
        plans = *std::move(grouped);
      }
      const size_t met = FramesOf(*info, r).size();
      EXPECT_EQ(plans.size(), std::min(std::max<size_t>(groups, 1), met));
      std::vector<uint8_t> got(r.NumElements() * sizeof(T), 0xEE);
      size_t frames_seen = 0;
      for (const WholeFramesPlan& plan : plans) {
        ASSERT_EQ(plan.pieces.size(), plan.part.frames.size());
        ASSERT_FALSE(plan.pieces.empty());
        frames_seen += plan.part.frames.size();
        const ArraySpec part = plan.part.spec();
        const Hyperslab box = PiecesBox(plan.pieces);
        std::vector<uint8_t> rows(part.num_bytes());
        const auto bytes = absl::MakeConstSpan(*archive).subspan(plan.bytes_begin,
                                                                 plan.bytes_end - plan.bytes_begin);
        ASSERT_TRUE(DecompressInto(plan.part, bytes, absl::MakeSpan(rows)).ok());
        for (const auto& piece : plan.pieces) {
          // Every piece lies in the box a region decoder is told it wants.
          for (size_t d = 0; d < shape.size(); ++d) {
            const uint64_t end =
                piece.rows.start[d] + (piece.rows.count[d] - 1) * piece.rows.step[d];
            EXPECT_GE(piece.rows.start[d], box.start[d]);
            EXPECT_LE(end, box.start[d] + (box.count[d] - 1) * box.step[d]);
          }
          const std::vector<uint8_t> p = SliceOf(rows, part.shape, piece.rows, sizeof(T));
          ASSERT_LE(piece.out_element * sizeof(T) + p.size(), got.size());
          std::copy(p.begin(), p.end(), got.begin() + piece.out_element * sizeof(T));
        }
      }
      EXPECT_EQ(frames_seen, met);
      EXPECT_EQ(got, want);
    }
    // The same region written as text parses back to itself.
    auto parsed = ParseHyperslab(r.ToString(), shape);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->start, r.start);
    EXPECT_EQ(parsed->count, r.count);
    if (r.NumElements() > 0) {
      EXPECT_EQ(parsed->step, r.step);
    }
  }
}

TEST(Region, EqualsTheSliceOfAFullDecode) {
  const std::vector<std::vector<uint64_t>> shapes = {
      {5000}, {97, 130}, {40, 33, 29}, {7, 9, 20, 24}, {1, 300}, {64, 1}};
  uint64_t seed = 1;
  // Every predictor with each lossless stage, with and without a fill value
  // (fill runs, or the fill mask of interpolation).
  std::vector<Coding> codings;
  for (Predictor p : {Predictor::kLorenzo, Predictor::kInterp, Predictor::kAuto}) {
    for (Lossless l : {Lossless::kHuffman, Lossless::kZeroRuns, Lossless::kRunValues}) {
      for (bool fill : {true, false}) codings.push_back({p, l, fill});
    }
  }
  for (const auto& shape : shapes) {
    for (const Coding& c : codings) {
      // One frame, and frames of a few rows (many frames, a last short one).
      for (uint64_t frame_elements : {uint64_t{1} << 24, uint64_t{2000}}) {
        SCOPED_TRACE(absl::StrCat(shape.size(), "-D, predictor ", static_cast<int>(c.predictor),
                                  ", lossless ", static_cast<int>(c.lossless), ", fill ", c.fill,
                                  ", frame_elements ", frame_elements));
        CheckRegions<float>(shape, c, frame_elements, seed++);
        CheckRegions<double>(shape, c, frame_elements, seed++);
      }
    }
  }
  // Lossless 2's region decodes met run-value tokens, not only their stage.
  EXPECT_GT(run_value_archives, 0);
}

TEST(Region, DecodesOnlyTheFramesItMeets) {
  const std::vector<uint64_t> shape = {64, 50};
  std::vector<float> data(64 * 50);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 97);
  CompressOptions o;
  o.bound = 0.01;
  o.frame_elements = 800;  // 16 rows a frame (the 2-D block): 4 frames
  auto archive = Compress({DType::kFloat32, shape},
                          {reinterpret_cast<const uint8_t*>(data.data()), data.size() * 4}, o);
  ASSERT_TRUE(archive.ok()) << archive.status();
  auto info = ReadArchiveInfo(*archive);
  ASSERT_TRUE(info.ok());
  ASSERT_EQ(info->header.frame_rows, 16u);
  auto r = ParseHyperslab("17:20,:", shape);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(FramesOf(*info, *r), std::vector<uint64_t>{1});
  r = ParseHyperslab("3:64:32,5", shape);  // rows 3 and 35
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(FramesOf(*info, *r), (std::vector<uint64_t>{0, 2}));
  // Corrupt a frame the region does not meet: the region still decodes;
  // one it meets: DATA_LOSS, as a full decode reports.
  std::vector<uint8_t> bad = *archive;
  const auto& f3 = info->frames[3];
  bad[f3.offset + f3.size - 9] ^= 0x40;
  auto bad_info = ReadArchiveInfo(bad);
  ASSERT_TRUE(bad_info.ok());
  std::vector<uint8_t> out(r->NumElements() * 4);
  EXPECT_TRUE(DecompressRegion(*bad_info, bad, *r, DecoderKind::kAuto, absl::MakeSpan(out)).ok());
  auto r5 = ParseHyperslab("50:51,:", shape);
  ASSERT_TRUE(r5.ok());
  std::vector<uint8_t> out5(r5->NumElements() * 4);
  EXPECT_EQ(DecompressRegion(*bad_info, bad, *r5, DecoderKind::kAuto, absl::MakeSpan(out5)).code(),
            absl::StatusCode::kDataLoss);
}

TEST(Region, MalformedRegionsAreInvalidArguments) {
  const std::vector<uint64_t> shape = {10, 20, 30};
  for (const char* text : {"", "1:2,3:4", "1:2,3:4,5:6,7:8", "0:11,:,:", "-1:5,:,:", "5:2,:,:",
                           "0:5:0,:,:", "0:5:-1,:,:", "a:b,:,:", "1:2:3:4,:,:", "10,:,:",
                           "0:10,0:21,:", ":,:,30", " 1:2,:,:", "1.5:2,:,:", "0x1:2,:,:"}) {
    SCOPED_TRACE(text);
    auto r = ParseHyperslab(text, shape);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  }
  auto ok = ParseHyperslab("9,19:20,::7", shape);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->count, (std::vector<uint64_t>{1, 1, 5}));  // 0, 7, 14, 21, 28
  auto empty = ParseHyperslab("3:3,:,:", shape);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->NumElements(), 0u);
  // Hyperslabs built in code are checked too (the service takes them so).
  Hyperslab h = WholeArray(shape);
  h.step[1] = 0;
  EXPECT_EQ(CheckHyperslab(h, shape).code(), absl::StatusCode::kInvalidArgument);
  h = WholeArray(shape);
  h.count[2] = 31;
  EXPECT_EQ(CheckHyperslab(h, shape).code(), absl::StatusCode::kInvalidArgument);
  h = WholeArray(shape);
  h.start[0] = 5;
  h.step[0] = UINT64_MAX;  // the last index would overflow: one element only
  h.count[0] = 2;
  EXPECT_EQ(CheckHyperslab(h, shape).code(), absl::StatusCode::kInvalidArgument);
  h.count[0] = 1;
  EXPECT_TRUE(CheckHyperslab(h, shape).ok());
}

}  // namespace
}  // namespace ebzip
