// Version-1 archives stay readable (FORMAT.md §11): archives written by the
// ebzip that predates format version 2 (commit 4c482bf), committed with the
// bytes that ebzip decoded them to, must decode to exactly those bytes with
// every decoder. testdata/make_v1_fixtures.sh says how they were made.
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "codec/archive.h"
#include "codec/byte_io.h"
#include "codec/format.h"
#include "gtest/gtest.h"

#ifndef EBZIP_TESTDATA_DIR
#error "EBZIP_TESTDATA_DIR must name tests/codec/testdata"
#endif

namespace ebzip {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes ReadFile(const std::string& name) {
  const std::string path = std::string(EBZIP_TESTDATA_DIR) + "/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct Fixture {
  const char* name;
  DType dtype;
  std::vector<uint64_t> shape;
  uint64_t frames;
  bool gap_array;
  bool fill;
};

const Fixture kFixtures[] = {
    {"v1_f32_2d_fill", DType::kFloat32, {40, 24}, 3, true, true},
    {"v1_f64_1d_rel_nogap", DType::kFloat64, {500}, 2, false, false},
    {"v1_f32_3d_defaults", DType::kFloat32, {4, 8, 8}, 1, true, false},
};

TEST(VersionOneFixtures, DecodeBitForBit) {
  for (const Fixture& f : kFixtures) {
    SCOPED_TRACE(f.name);
    const Bytes archive = ReadFile(std::string(f.name) + ".ebz");
    const Bytes expected = ReadFile(std::string(f.name) + ".expected");
    ASSERT_FALSE(archive.empty());
    ASSERT_EQ(expected.size(), (ArraySpec{f.dtype, f.shape}.num_bytes()));
    // They are what they claim to be: version 1 throughout.
    ASSERT_GE(archive.size(), format::kFileHeaderSize);
    EXPECT_EQ(LoadLE<uint16_t>(archive.data() + 4), format::kVersion1);
    auto info = ReadArchiveInfo(archive);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->header.version, format::kVersion1);
    EXPECT_EQ(info->header.metadata_bytes, 0u);
    EXPECT_TRUE(info->metadata.empty());
    EXPECT_EQ(info->spec().dtype, f.dtype);
    EXPECT_EQ(info->spec().shape, f.shape);
    EXPECT_EQ(info->header.fill_value.has_value(), f.fill);
    ASSERT_EQ(info->frames.size(), f.frames);
    for (const format::FrameHeader& h : info->frame_headers) {
      EXPECT_EQ(h.version, format::kVersion1);
      EXPECT_EQ(h.predictor, format::kPredictorLorenzo);
      EXPECT_EQ(h.lossless, format::kLosslessHuffman);
      EXPECT_EQ(h.fill_coding, format::kFillCodingRuns);
      EXPECT_EQ(h.positions, h.num_elements());
      EXPECT_EQ(h.has_gap_array, f.gap_array);
    }
    for (DecoderKind kind : {DecoderKind::kAuto, DecoderKind::kChunkParallel,
                             DecoderKind::kGapArray, DecoderKind::kSelfSync}) {
      auto out = Decompress(archive, kind);
      if (kind == DecoderKind::kGapArray && !f.gap_array) {
        EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition) << out.status();
        continue;
      }
      ASSERT_TRUE(out.ok()) << DecoderKindName(kind) << ": " << out.status();
      EXPECT_EQ(out->spec.shape, f.shape);
      EXPECT_TRUE(out->data == expected)
          << DecoderKindName(kind) << " decoder: the bytes differ from what ebzip 4c482bf decoded";
    }
    // Frame by frame, as the service's streaming reader decodes.
    Bytes frames(expected.size());
    const uint64_t row_bytes = expected.size() / f.shape[0];
    for (uint64_t i = 0; i < info->frames.size(); ++i) {
      absl::Status s = DecompressFrame(*info, archive, i, DecoderKind::kChunkParallel,
                                       frames.data() + i * info->header.frame_rows * row_bytes);
      EXPECT_TRUE(s.ok()) << "frame " << i << ": " << s;
    }
    EXPECT_TRUE(frames == expected);
  }
}

// The expected outputs are not a tautology: they hold the specials the
// inputs were made with (make_v1_fixtures.sh), restored bit for bit.
TEST(VersionOneFixtures, ExpectedOutputsHoldTheSpecials) {
  const Bytes a = ReadFile("v1_f32_2d_fill.expected");
  ASSERT_EQ(a.size(), 960u * 4);
  auto f32 = [&](uint64_t i) { return LoadLE<uint32_t>(a.data() + 4 * i); };
  for (uint64_t base : {0, 384, 768}) {
    EXPECT_EQ(f32(base + 3) & 0x7F800000u, 0x7F800000u);  // NaN
    EXPECT_NE(f32(base + 3) & 0x007FFFFFu, 0u);
    EXPECT_EQ(f32(base + 77), 0x7F800000u);                        // +Inf
    EXPECT_EQ(f32(base + 78), 0xFF800000u);                        // -Inf
    EXPECT_EQ(f32(base + 9), 0x80000000u);                         // -0.0
    EXPECT_EQ(LoadLE<float>(a.data() + 4 * (base + 11)), 1e-40f);  // subnormal
    EXPECT_EQ(LoadLE<float>(a.data() + 4 * (base + 100)), -9999.0f);
    for (int k = 0; k < 6; ++k) EXPECT_EQ(LoadLE<float>(a.data() + 4 * (base + 150 + k)), -9999.0f);
  }
}

}  // namespace
}  // namespace ebzip
