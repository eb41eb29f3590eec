// The field offsets format.h publishes for template-based writers must be
// where AppendFileHeader/AppendFrameHeader put those fields.
#include <cstring>
#include <vector>

#include "codec/byte_io.h"
#include "codec/crc32c.h"
#include "codec/format.h"
#include "gtest/gtest.h"

namespace ebzip::format {
namespace {

TEST(FormatLayout, FileHeaderOffsets) {
  FileHeader h;
  h.shape = {3, 5};
  h.bound_value = 0.25;
  h.abs_bound = 1234.5;
  h.frame_rows = 3;
  h.frame_count = 1;
  std::vector<uint8_t> bytes;
  AppendFileHeader(h, &bytes);
  ASSERT_EQ(bytes.size(), kFileHeaderSize);
  EXPECT_EQ(LoadLE<double>(bytes.data() + kFileHeaderAbsBoundAt), 1234.5);
  EXPECT_EQ(LoadLE<uint32_t>(bytes.data() + kFileHeaderSize - 4),
            Crc32c(bytes.data(), kFileHeaderSize - 4));
}

TEST(FormatLayout, FrameHeaderOffsets) {
  FrameHeader h;
  h.ndim = 1;
  h.shape[0] = 7;
  h.abs_bound = 0.125;
  h.quant_step = 0.375;
  h.outlier_count = 11;
  h.verbatim_count = 12;
  h.fill_run_count = 13;
  for (int s = 0; s < kSectionCount; ++s) {
    h.sections[s].length = 1000 + s;
    h.sections[s].crc = 0xABC000 + s;
  }
  std::vector<uint8_t> bytes;
  AppendFrameHeader(h, &bytes);
  ASSERT_EQ(bytes.size(), kFrameHeaderSize);
  const uint8_t* p = bytes.data();
  EXPECT_EQ(LoadLE<double>(p + kFrameHeaderAbsBoundAt), 0.125);
  EXPECT_EQ(LoadLE<double>(p + kFrameHeaderQuantStepAt), 0.375);
  EXPECT_EQ(LoadLE<uint64_t>(p + kFrameHeaderCountsAt), 11u);
  EXPECT_EQ(LoadLE<uint64_t>(p + kFrameHeaderCountsAt + 8), 12u);
  EXPECT_EQ(LoadLE<uint64_t>(p + kFrameHeaderCountsAt + 16), 13u);
  for (int s = 0; s < kSectionCount; ++s) {
    EXPECT_EQ(LoadLE<uint64_t>(p + kFrameHeaderSectionsAt + 16 * s), 1000u + s);
    EXPECT_EQ(LoadLE<uint32_t>(p + kFrameHeaderSectionsAt + 16 * s + 8), 0xABC000u + s);
  }
  EXPECT_EQ(LoadLE<uint32_t>(p + kFrameHeaderSize - 4), Crc32c(p, kFrameHeaderSize - 4));
}

}  // namespace
}  // namespace ebzip::format
