// codec/frame_task.h: frames compressed apart and written between
// ArchiveWriter's file header and index give the local codec's archive, for
// every predictor and both dtypes; frames received alone decode to their own
// rows; a frame at the wrong place, or cut short, is refused.
#include "codec/frame_task.h"

#include <cstring>
#include <vector>

#include "codec/archive.h"
#include "gtest/gtest.h"
#include "tests/noisy_field.h"

namespace ebzip {
namespace {

constexpr double kFill = -1e30;

std::vector<uint8_t> Field(const ArraySpec& spec) { return testing::NoisyField(spec, kFill, 17); }

struct Case {
  ArraySpec spec;
  uint64_t frame_elements;
  Predictor predictor;
  bool relative;  // a relative bound with the array's range given
};

CompressOptions OptionsFor(const Case& c, const ArraySpec& spec, absl::Span<const uint8_t> data) {
  CompressOptions o;
  o.frame_elements = c.frame_elements;
  o.predictor = c.predictor;
  o.fill_value = kFill;
  if (c.relative) {
    o.mode = BoundMode::kRel;
    o.bound = 1e-3;
    o.range = FiniteRange(spec, data, o.fill_value);
  } else {
    o.bound = 1e-2;
  }
  return o;
}

class FrameTaskTest : public ::testing::TestWithParam<Case> {};

TEST_P(FrameTaskTest, FramesCompressedApartMakeTheSameArchive) {
  const Case& c = GetParam();
  const std::vector<uint8_t> data = Field(c.spec);
  const CompressOptions o = OptionsFor(c, c.spec, data);
  auto whole = Compress(c.spec, data, o);
  ASSERT_TRUE(whole.ok()) << whole.status();

  auto plan = PlanArchive(c.spec, o, ResolveBound(o, c.spec.dtype, RangeFor(c.spec, data, o)));
  ASSERT_TRUE(plan.ok());
  ASSERT_GT(plan->frame_count(), 1u);
  ArchiveWriter writer(*plan);
  std::vector<uint8_t> spliced = writer.Begin();
  for (uint64_t i = 0; i < plan->frame_count(); ++i) {
    auto task = FrameTaskOf(*plan, o, i);
    ASSERT_TRUE(task.ok()) << task.status();
    EXPECT_EQ(task->first_row, i * plan->header.frame_rows);
    EXPECT_EQ(task->spec.num_bytes(), plan->FrameDataBytes(i));
    auto frame =
        CompressFrame(*task, {data.data() + plan->FrameDataOffset(i), plan->FrameDataBytes(i)});
    ASSERT_TRUE(frame.ok()) << frame.status();
    writer.AddFrame(frame->size());
    spliced.insert(spliced.end(), frame->begin(), frame->end());
  }
  writer.Finish(&spliced);
  EXPECT_TRUE(spliced == *whole) << spliced.size() << " vs " << whole->size() << " bytes";
}

TEST_P(FrameTaskTest, FramesReceivedAloneDecodeToTheirRows) {
  const Case& c = GetParam();
  const std::vector<uint8_t> data = Field(c.spec);
  auto archive = Compress(c.spec, data, OptionsFor(c, c.spec, data));
  ASSERT_TRUE(archive.ok());
  auto info = ReadArchiveInfo(*archive);
  auto whole = Decompress(*archive);
  ASSERT_TRUE(info.ok() && whole.ok());
  const uint64_t row_bytes = c.spec.num_bytes() / c.spec.shape[0];
  for (uint64_t i = 0; i < info->frames.size(); ++i) {
    const auto& e = info->frames[i];
    const absl::Span<const uint8_t> frame(archive->data() + e.offset, e.size);
    auto part = FramePart(info->header, i, frame);
    ASSERT_TRUE(part.ok()) << part.status();
    std::vector<uint8_t> rows(part->spec().num_bytes());
    ASSERT_TRUE(DecompressInto(*part, frame, absl::MakeSpan(rows)).ok());
    const uint64_t at = i * info->header.frame_rows * row_bytes;
    ASSERT_EQ(rows.size(), info->FrameRows(i) * row_bytes);
    EXPECT_EQ(0, std::memcmp(rows.data(), whole->data.data() + at, rows.size())) << "frame " << i;
    // The same bytes claimed for another place, or cut short, are refused.
    const uint64_t other = (i + 1) % info->frames.size();
    EXPECT_EQ(FramePart(info->header, other, frame).status().code(), absl::StatusCode::kDataLoss);
    EXPECT_EQ(FramePart(info->header, info->frames.size(), frame).status().code(),
              absl::StatusCode::kDataLoss);
    EXPECT_EQ(FramePart(info->header, i, frame.first(frame.size() - 8)).status().code(),
              absl::StatusCode::kDataLoss);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FrameTaskTest,
    ::testing::Values(
        Case{{DType::kFloat32, {1001, 257}}, 16 * 257, Predictor::kAuto, false},  // last short
        Case{{DType::kFloat64, {37, 20, 31}}, 4 * 20 * 31, Predictor::kAuto, true},
        Case{{DType::kFloat32, {100001}}, 4096, Predictor::kInterp, true},
        Case{{DType::kFloat32, {65, 64}}, 64 * 64, Predictor::kLorenzo, false},  // last one row
        Case{{DType::kFloat32, {9, 6, 20, 33}}, 2 * 6 * 20 * 33, Predictor::kInterp, false}));

TEST(FrameTask, RelativeBoundsNeedTheirRange) {
  CompressOptions o;
  o.mode = BoundMode::kRel;
  o.bound = 1e-3;
  const ArraySpec spec{DType::kFloat32, {64, 64}};
  auto plan = PlanArchive(spec, o, ResolveBound(o, spec.dtype, ValueRange{}));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(FrameTaskOf(*plan, o, 0).status().code(), absl::StatusCode::kFailedPrecondition);
  // Nor does a task built by hand compress with its frame's own range.
  const std::vector<uint8_t> data = Field(spec);
  const FrameTask task{spec, o, 0};
  EXPECT_EQ(CompressFrame(task, data).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(FrameTask, MetadataStaysWithTheFileHeaderUnlessItDecidesTheVersion) {
  const ArraySpec spec{DType::kFloat32, {64, 64}};
  CompressOptions o;
  o.bound = 1e-2;
  o.frame_elements = 16 * 64;
  o.metadata = R"({"units": "K"})";
  auto plan = PlanArchive(spec, o, ResolveBound(o, spec.dtype, ValueRange{}));
  ASSERT_TRUE(plan.ok());
  auto task = FrameTaskOf(*plan, o, 1);
  ASSERT_TRUE(task.ok());
  EXPECT_TRUE(task->options.metadata.empty());  // version 2 either way
  o.predictor = Predictor::kLorenzo;
  o.lossless = Lossless::kHuffman;  // version 1 without the metadata
  task = FrameTaskOf(*plan, o, 1);
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(task->options.metadata, o.metadata);
}

}  // namespace
}  // namespace ebzip
