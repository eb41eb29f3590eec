// gpu/runtime/host_codec.h: arrays in host memory compressed and decompressed
// on the GPU give the CPU codec's archives and arrays, byte for byte, and say
// they ran there; what the kernels do not take runs on the CPU with the same
// bytes; a corrupt archive is DATA_LOSS, never wrong data. Skipped where no
// GPU is visible.
#include "gpu/runtime/host_codec.h"

#include <vector>

#include "codec/archive.h"
#include "gtest/gtest.h"
#include "tests/noisy_field.h"

namespace ebzip::gpu::runtime {
namespace {

// The cases that give a fill value give this one.
constexpr double kFill = -9999;

std::vector<uint8_t> Field(const ArraySpec& spec, uint32_t seed) {
  return ebzip::testing::NoisyField(spec, kFill, seed);
}

struct Case {
  ArraySpec spec;
  BoundMode mode;
  Predictor predictor;
  Lossless lossless;
  bool fill;
};

class HostCodecTest : public ::testing::TestWithParam<Case> {};

TEST_P(HostCodecTest, TheGpuGivesTheCpuCodecsBytesBothWays) {
  if (!GpuVisible()) GTEST_SKIP() << "no GPU visible";
  const Case& c = GetParam();
  const std::vector<uint8_t> data = Field(c.spec, 3);
  CompressOptions o;
  o.mode = c.mode;
  o.bound = c.mode == BoundMode::kRel ? 1e-4 : 0.01;
  o.predictor = c.predictor;
  o.lossless = c.lossless;
  if (c.fill) o.fill_value = kFill;
  o.frame_elements = 1 << 18;
  RanOn ran_on = RanOn::kCpu;
  auto archive = CompressOnGpu(c.spec, data, o, &ran_on);
  ASSERT_TRUE(archive.ok()) << archive.status();
  EXPECT_EQ(ran_on, RanOn::kGpu);
  auto expected = Compress(c.spec, data, o);
  ASSERT_TRUE(expected.ok());
  EXPECT_TRUE(*archive == *expected) << archive->size() << " vs " << expected->size() << " bytes";

  auto info = ReadArchiveInfo(*expected);
  ASSERT_TRUE(info.ok());
  std::vector<uint8_t> out(c.spec.num_bytes(), 0xAB);
  ran_on = RanOn::kCpu;
  ASSERT_TRUE(DecompressIntoOnGpu(*info, *expected, absl::MakeSpan(out), &ran_on).ok());
  EXPECT_EQ(ran_on, RanOn::kGpu);
  auto cpu = Decompress(*expected);
  ASSERT_TRUE(cpu.ok());
  EXPECT_TRUE(out == cpu->data);
}

INSTANTIATE_TEST_SUITE_P(
    Arrays, HostCodecTest,
    ::testing::Values(
        Case{{DType::kFloat32, {64, 100, 100}}, BoundMode::kRel, Predictor::kAuto,
             Lossless::kAuto, true},
        Case{{DType::kFloat32, {1000000}}, BoundMode::kAbs, Predictor::kLorenzo,
             Lossless::kHuffman, false},
        Case{{DType::kFloat64, {300, 500}}, BoundMode::kRel, Predictor::kInterp, Lossless::kAuto,
             false},
        Case{{DType::kFloat32, {8, 20, 30, 40}}, BoundMode::kRel, Predictor::kAuto,
             Lossless::kZeroRuns, true}));

TEST(HostCodec, WhatTheKernelsDoNotTakeRunsOnTheCpuWithTheSameBytes) {
  if (!GpuVisible()) GTEST_SKIP() << "no GPU visible";
  const ArraySpec spec{DType::kFloat32, {100, 100}};
  const std::vector<uint8_t> data = Field(spec, 5);
  CompressOptions o;
  o.bound = 0.01;
  o.metadata = R"({"name": "t"})";  // the GPU codec writes no metadata block
  RanOn ran_on = RanOn::kGpu;
  auto archive = CompressOnGpu(spec, data, o, &ran_on);
  ASSERT_TRUE(archive.ok()) << archive.status();
  EXPECT_EQ(ran_on, RanOn::kCpu);
  auto expected = Compress(spec, data, o);
  ASSERT_TRUE(expected.ok());
  EXPECT_TRUE(*archive == *expected);
}

TEST(HostCodec, ACorruptArchiveIsDataLossNeverWrongData) {
  if (!GpuVisible()) GTEST_SKIP() << "no GPU visible";
  const ArraySpec spec{DType::kFloat32, {200, 300}};
  const std::vector<uint8_t> data = Field(spec, 7);
  CompressOptions o;
  o.bound = 0.01;
  auto archive = Compress(spec, data, o);
  ASSERT_TRUE(archive.ok());
  auto info = ReadArchiveInfo(*archive);
  ASSERT_TRUE(info.ok());
  // A byte inside the first frame's sections (past its 256-byte header),
  // which only the sections' checksums see.
  std::vector<uint8_t> bad = *archive;
  bad[info->frames[0].offset + 300] ^= 0x10;
  std::vector<uint8_t> out(spec.num_bytes());
  const absl::Status s = DecompressIntoOnGpu(*info, bad, absl::MakeSpan(out));
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  // The device is still usable afterwards.
  RanOn ran_on = RanOn::kCpu;
  ASSERT_TRUE(DecompressIntoOnGpu(*info, *archive, absl::MakeSpan(out), &ran_on).ok());
  EXPECT_EQ(ran_on, RanOn::kGpu);
}

}  // namespace
}  // namespace ebzip::gpu::runtime
