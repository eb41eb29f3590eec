// codec/archive_parts.h: an array compressed in parts (each with the whole
// array's range) and assembled is byte for byte the archive of the whole
// array, for every bound mode, predictor, dtype and rank; a part archive of
// a range of frames decodes to exactly those rows of the full decode; parts
// that do not follow the plan are refused.
#include "codec/archive_parts.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "codec/archive.h"
#include "codec/format.h"
#include "gtest/gtest.h"
#include "tests/noisy_field.h"

namespace ebzip {
namespace {

using testing::NoisyField;

struct Case {
  ArraySpec spec;
  BoundMode mode;
  Predictor predictor;
  std::optional<double> fill;
  uint64_t parts;
};

class ArchivePartsTest : public ::testing::TestWithParam<Case> {
 protected:
  CompressOptions Options() const {
    const Case& c = GetParam();
    CompressOptions o;
    o.mode = c.mode;
    o.bound = c.mode == BoundMode::kRel ? 1e-3 : 0.05;
    o.predictor = c.predictor;
    o.fill_value = c.fill;
    o.frame_elements = 4096;  // many frames
    return o;
  }
  // The case's field (by `seed`) compressed whole with Options().
  std::vector<uint8_t> WholeArchive(uint32_t seed) const {
    const Case& c = GetParam();
    auto whole = Compress(c.spec, NoisyField(c.spec, c.fill, seed), Options());
    EXPECT_TRUE(whole.ok()) << whole.status();
    return whole.ok() ? *std::move(whole) : std::vector<uint8_t>();
  }
};

TEST_P(ArchivePartsTest, PartsAssembleIntoTheWholeArraysArchive) {
  const Case& c = GetParam();
  const std::vector<uint8_t> data = NoisyField(c.spec, c.fill, 7);
  const CompressOptions o = Options();
  auto whole = Compress(c.spec, data, o);
  ASSERT_TRUE(whole.ok()) << whole.status();

  // What a client does: the range once, the plan, then each part apart.
  const ValueRange range = RangeFor(c.spec, data, o);
  auto plan = PlanArchive(c.spec, o, ResolveBound(o, c.spec.dtype, range));
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_GT(plan->frame_count(), c.parts);
  const std::vector<FrameRange> ranges = SplitFrames(plan->frame_count(), c.parts);
  ASSERT_EQ(ranges.size(), c.parts);
  ArchiveAssembler assembler(*plan);
  std::vector<uint8_t> assembled = assembler.Begin();
  for (const FrameRange& r : ranges) {
    const ArraySpec part = PartSpec(*plan, r);
    const uint64_t offset = PartDataOffset(*plan, r);
    auto part_archive =
        Compress(part, {data.data() + offset, part.num_bytes()}, PartOptions(o, range));
    ASSERT_TRUE(part_archive.ok()) << part_archive.status();
    ASSERT_TRUE(assembler.AddPart(*part_archive, &assembled).ok());
  }
  ASSERT_TRUE(assembler.Finish(&assembled).ok());
  EXPECT_EQ(assembled, *whole);
}

TEST_P(ArchivePartsTest, PartArchivesDecodeToTheirRows) {
  const Case& c = GetParam();
  const std::vector<uint8_t> whole = WholeArchive(11);
  ASSERT_FALSE(whole.empty());
  auto full = Decompress(whole);
  ASSERT_TRUE(full.ok()) << full.status();
  auto info = ReadArchiveInfo(whole);
  ASSERT_TRUE(info.ok());
  const uint64_t row_bytes = c.spec.num_bytes() / c.spec.shape[0];
  uint64_t next_row = 0;
  for (const FrameRange& r : SplitFrames(info->header.frame_count, c.parts)) {
    auto part = PartArchive(*info, whole, r);
    ASSERT_TRUE(part.ok()) << part.status();
    auto decoded = Decompress(*part);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(decoded->abs_bound, full->abs_bound);
    const uint64_t first_row = r.first * info->header.frame_rows;
    EXPECT_EQ(first_row, next_row);
    ASSERT_EQ(decoded->spec.shape[0] * row_bytes, decoded->data.size());
    ASSERT_LE(first_row * row_bytes + decoded->data.size(), full->data.size());
    EXPECT_EQ(0, std::memcmp(decoded->data.data(), full->data.data() + first_row * row_bytes,
                             decoded->data.size()));
    next_row = first_row + decoded->spec.shape[0];
  }
  EXPECT_EQ(next_row, c.spec.shape[0]);
}

// Through a reader (a file, for the server's regions by path): the info is
// ReadArchiveInfo's, read without a byte of any frame's sections; a part
// reads only its own frames and equals PartArchive's.
TEST_P(ArchivePartsTest, AReaderReadsOnlyHeadersIndexAndThePartsFrames) {
  const Case& c = GetParam();
  const std::vector<uint8_t> whole = WholeArchive(12);
  ASSERT_FALSE(whole.empty());
  auto expected = ReadArchiveInfo(whole);
  ASSERT_TRUE(expected.ok());
  std::vector<bool> read_at(whole.size(), false);
  auto reader = [&](uint64_t offset, absl::Span<uint8_t> out) {
    if (offset > whole.size() || out.size() > whole.size() - offset) {
      return absl::DataLossError("past the end");
    }
    std::memcpy(out.data(), whole.data() + offset, out.size());
    std::fill(read_at.begin() + offset, read_at.begin() + offset + out.size(), true);
    return absl::OkStatus();
  };
  auto info = ReadArchiveInfoFrom(whole.size(), reader);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->frames.size(), expected->frames.size());
  for (size_t f = 0; f < info->frames.size(); ++f) {
    EXPECT_EQ(info->frames[f].offset, expected->frames[f].offset);
    EXPECT_EQ(info->frame_headers[f].sections[0].crc, expected->frame_headers[f].sections[0].crc);
    const auto& e = info->frames[f];
    for (uint64_t i = e.offset + format::kFrameHeaderSize; i < e.offset + e.size; ++i) {
      ASSERT_FALSE(read_at[i]) << "frame " << f << "'s sections were read";
    }
  }
  for (const FrameRange& r : SplitFrames(info->header.frame_count, c.parts)) {
    std::fill(read_at.begin(), read_at.end(), false);
    auto part = PartArchiveFrom(*info, r, reader);
    ASSERT_TRUE(part.ok()) << part.status();
    auto same = PartArchive(*expected, whole, r);
    ASSERT_TRUE(same.ok());
    EXPECT_EQ(*part, *same);
    for (uint64_t i = 0; i < whole.size(); ++i) {
      const auto& first = info->frames[r.first];
      const auto& last = info->frames[r.first + r.count - 1];
      if (i < first.offset || i >= last.offset + last.size) {
        ASSERT_FALSE(read_at[i]) << "byte " << i << " lies outside frames " << r.first << "+"
                                 << r.count;
      }
    }
  }
  // A reader's failure is the call's.
  auto failing = [](uint64_t, absl::Span<uint8_t>) {
    return absl::UnavailableError("the disk went away");
  };
  EXPECT_EQ(ReadArchiveInfoFrom(whole.size(), failing).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(PartArchiveFrom(*info, {0, 1}, failing).status().code(),
            absl::StatusCode::kUnavailable);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ArchivePartsTest,
    ::testing::Values(
        Case{{DType::kFloat32, {100000}}, BoundMode::kRel, Predictor::kAuto, std::nullopt, 3},
        Case{{DType::kFloat64, {70001}}, BoundMode::kAbs, Predictor::kLorenzo, std::nullopt, 4},
        Case{{DType::kFloat32, {203, 97}}, BoundMode::kRel, Predictor::kInterp, -999.0, 5},
        Case{{DType::kFloat32, {61, 20, 33}}, BoundMode::kRel, Predictor::kLorenzo, std::nullopt,
             2},
        Case{{DType::kFloat64, {37, 9, 10, 11}}, BoundMode::kRel, Predictor::kAuto, 1e20, 3},
        Case{{DType::kFloat32, {1000, 64}}, BoundMode::kAbs, Predictor::kInterp, std::nullopt, 7}));

ArchivePlan PlanOf(const ArraySpec& spec, const CompressOptions& o, const ValueRange& range) {
  auto plan = PlanArchive(spec, o, ResolveBound(o, spec.dtype, range));
  EXPECT_TRUE(plan.ok());
  return *plan;
}

TEST(ArchivePartsRefusals, APartWithAnotherRangeIsRefused) {
  const ArraySpec spec{DType::kFloat32, {400, 50}};
  const std::vector<uint8_t> data = NoisyField(spec, std::nullopt, 3);
  CompressOptions o;
  o.mode = BoundMode::kRel;
  o.bound = 1e-3;
  o.frame_elements = 4000;
  const ValueRange range = FiniteRange(spec, data, std::nullopt);
  const ArchivePlan plan = PlanOf(spec, o, range);
  const FrameRange first = SplitFrames(plan.frame_count(), 2)[0];
  const ArraySpec part = PartSpec(plan, first);
  // Scanned over the part alone: a narrower range, another bound.
  auto wrong = Compress(part, {data.data(), part.num_bytes()}, o);
  ASSERT_TRUE(wrong.ok());
  ArchiveAssembler assembler(plan);
  std::vector<uint8_t> out = assembler.Begin();
  const absl::Status s = assembler.AddPart(*wrong, &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
}

TEST(ArchivePartsRefusals, MissingAndExtraFramesAreRefused) {
  const ArraySpec spec{DType::kFloat64, {300, 40}};
  const std::vector<uint8_t> data = NoisyField(spec, std::nullopt, 5);
  CompressOptions o;
  o.bound = 0.01;
  o.frame_elements = 4000;
  const ArchivePlan plan = PlanOf(spec, o, ValueRange{});
  const std::vector<FrameRange> ranges = SplitFrames(plan.frame_count(), 2);
  ArchiveAssembler assembler(plan);
  std::vector<uint8_t> out = assembler.Begin();
  const ArraySpec part = PartSpec(plan, ranges[0]);
  auto first = Compress(part, {data.data(), part.num_bytes()}, o);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(assembler.AddPart(*first, &out).ok());
  EXPECT_EQ(assembler.Finish(&out).code(), absl::StatusCode::kFailedPrecondition);
  // The whole array's archive where only the second half's frames are left.
  auto whole = Compress(spec, data, o);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(assembler.AddPart(*whole, &out).code(), absl::StatusCode::kInternal);
  // Bytes that are no archive.
  std::vector<uint8_t> junk(first->begin(), first->begin() + first->size() / 2);
  EXPECT_EQ(assembler.AddPart(junk, &out).code(), absl::StatusCode::kInternal);
}

TEST(ArchivePartsRefusals, RangesOutsideTheArchiveAreInvalid) {
  const ArraySpec spec{DType::kFloat32, {64, 64}};
  const std::vector<uint8_t> data = NoisyField(spec, std::nullopt, 9);
  CompressOptions o;
  o.bound = 0.01;
  o.frame_elements = 1024;
  auto whole = Compress(spec, data, o);
  ASSERT_TRUE(whole.ok());
  auto info = ReadArchiveInfo(*whole);
  ASSERT_TRUE(info.ok());
  const uint64_t n = info->header.frame_count;
  EXPECT_FALSE(PartArchive(*info, *whole, {0, 0}).ok());
  EXPECT_FALSE(PartArchive(*info, *whole, {n, 1}).ok());
  EXPECT_FALSE(PartArchive(*info, *whole, {1, n}).ok());
  EXPECT_TRUE(PartArchive(*info, *whole, {n - 1, 1}).ok());
}

TEST(SplitFrames, CoversEveryFrameOnceInOrder) {
  for (uint64_t frames : {0, 1, 2, 7, 64, 1000}) {
    for (uint64_t parts : {1, 2, 3, 8, 2000}) {
      const std::vector<FrameRange> ranges = SplitFrames(frames, parts);
      EXPECT_EQ(ranges.size(), std::min(frames, parts));
      uint64_t next = 0, smallest = frames, largest = 0;
      for (const FrameRange& r : ranges) {
        EXPECT_EQ(r.first, next);
        EXPECT_GT(r.count, 0u);
        smallest = std::min(smallest, r.count);
        largest = std::max(largest, r.count);
        next += r.count;
      }
      EXPECT_EQ(next, frames);
      if (!ranges.empty()) {
        EXPECT_LE(largest - smallest, 1u);
      }
    }
  }
}

TEST(RangeOption, AGivenRangeIsUsedInsteadOfTheScan) {
  const ArraySpec spec{DType::kFloat32, {5000}};
  const std::vector<uint8_t> data = NoisyField(spec, std::nullopt, 2);
  CompressOptions o;
  o.mode = BoundMode::kRel;
  o.bound = 1e-3;
  o.range = ValueRange{true, -1000, 1000};
  auto archive = Compress(spec, data, o);
  ASSERT_TRUE(archive.ok()) << archive.status();
  auto info = ReadArchiveInfo(*archive);
  ASSERT_TRUE(info.ok());
  EXPECT_DOUBLE_EQ(info->header.abs_bound, 2.0);
  o.range = ValueRange{true, 1, -1};
  EXPECT_EQ(Compress(spec, data, o).status().code(), absl::StatusCode::kInvalidArgument);
  o.range = ValueRange{true, 0, INFINITY};
  EXPECT_EQ(Compress(spec, data, o).status().code(), absl::StatusCode::kInvalidArgument);
  o.mode = BoundMode::kAbs;
  o.range = ValueRange{true, 0, 1};
  EXPECT_EQ(Compress(spec, data, o).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ebzip
