// codec/slab.h: frames compressed apart as one-frame slab archives and moved
// into the array's archive give the local codec's bytes; frames moved out of
// an archive decode to their own rows; a frame at the wrong place is refused.
#include "codec/slab.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "codec/archive.h"
#include "gtest/gtest.h"

namespace ebzip {
namespace {

std::vector<uint8_t> Field(const ArraySpec& spec) {
  std::vector<uint8_t> bytes(spec.num_bytes());
  for (uint64_t i = 0; i < spec.num_elements(); ++i) {
    double v = std::sin(0.003 * static_cast<double>(i)) * 50 + static_cast<double>(i % 7);
    if (i % 997 == 0) v = NAN;
    if (spec.dtype == DType::kFloat32) {
      const float f = static_cast<float>(v);
      std::memcpy(bytes.data() + 4 * i, &f, 4);
    } else {
      std::memcpy(bytes.data() + 8 * i, &v, 8);
    }
  }
  return bytes;
}

struct Case {
  ArraySpec spec;
  uint64_t frame_elements;
};

class SlabTest : public ::testing::TestWithParam<Case> {};

TEST_P(SlabTest, FramesCompressedApartMakeTheSameArchive) {
  const Case& c = GetParam();
  const std::vector<uint8_t> data = Field(c.spec);
  CompressOptions o;
  o.bound = 1e-2;
  o.frame_elements = c.frame_elements;
  auto whole = Compress(c.spec, data, o);
  ASSERT_TRUE(whole.ok()) << whole.status();

  auto plan = PlanArchive(c.spec, o, ResolveBound(o, ValueRange{}));
  ASSERT_TRUE(plan.ok());
  ASSERT_GT(plan->frame_count(), 1u);
  auto slab_options = SlabOptions(o);
  ASSERT_TRUE(slab_options.ok());
  ArchiveWriter writer(*plan);
  std::vector<uint8_t> spliced = writer.Begin();
  for (uint64_t i = 0; i < plan->frame_count(); ++i) {
    const ArraySpec slab = SlabSpec(*plan, i);
    auto slab_archive = Compress(
        slab, {data.data() + plan->FrameDataOffset(i), plan->FrameDataBytes(i)}, *slab_options);
    ASSERT_TRUE(slab_archive.ok()) << slab_archive.status();
    auto frame = FrameFromSlabArchive(*slab_archive, i * plan->header.frame_rows);
    ASSERT_TRUE(frame.ok()) << frame.status();
    writer.AddFrame(frame->size());
    spliced.insert(spliced.end(), frame->begin(), frame->end());
  }
  const std::vector<uint8_t> tail = writer.Finish();
  spliced.insert(spliced.end(), tail.begin(), tail.end());
  EXPECT_TRUE(spliced == *whole) << spliced.size() << " vs " << whole->size() << " bytes";
}

TEST_P(SlabTest, FramesMovedOutDecodeToTheirRows) {
  const Case& c = GetParam();
  const std::vector<uint8_t> data = Field(c.spec);
  CompressOptions o;
  o.bound = 1e-2;
  o.frame_elements = c.frame_elements;
  auto archive = Compress(c.spec, data, o);
  ASSERT_TRUE(archive.ok());
  auto info = ReadArchiveInfo(*archive);
  auto whole = Decompress(*archive);
  ASSERT_TRUE(info.ok() && whole.ok());
  const uint64_t row_bytes = c.spec.num_bytes() / c.spec.shape[0];
  for (uint64_t i = 0; i < info->frames.size(); ++i) {
    const auto& e = info->frames[i];
    const absl::Span<const uint8_t> frame(archive->data() + e.offset, e.size);
    auto slab = SlabArchiveOfFrame(info->header, i, frame);
    ASSERT_TRUE(slab.ok()) << slab.status();
    auto rows = Decompress(*slab);
    ASSERT_TRUE(rows.ok()) << rows.status();
    const uint64_t at = i * info->header.frame_rows * row_bytes;
    ASSERT_LE(at + rows->data.size(), whole->data.size());
    EXPECT_EQ(0, std::memcmp(rows->data.data(), whole->data.data() + at, rows->data.size()))
        << "frame " << i;
    // The same bytes claimed for another place are refused.
    const uint64_t other = (i + 1) % info->frames.size();
    EXPECT_EQ(SlabArchiveOfFrame(info->header, other, frame).status().code(),
              absl::StatusCode::kDataLoss);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, SlabTest,
    ::testing::Values(Case{{DType::kFloat32, {1001, 257}}, 16 * 257},   // last frame short
                      Case{{DType::kFloat64, {37, 20, 31}}, 4 * 20 * 31},
                      Case{{DType::kFloat32, {100001}}, 4096},
                      Case{{DType::kFloat32, {65, 64}}, 64 * 64}));  // last frame one row

TEST(Slab, RelativeBoundsCannotBeSplit) {
  CompressOptions o;
  o.mode = BoundMode::kRel;
  o.bound = 1e-3;
  EXPECT_EQ(SlabOptions(o).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace ebzip
