// Regions on the GPU (gpu/region_reader.h: codec/region_plan.h's frames in
// groups, only the interpolation tiles a region meets, GatherRegion): every
// region equals the CPU codec's DecompressRegion and the
// test's own slice of a full decode, byte for byte, for every predictor and
// lossless stage, fills and specials, float32 and float64, 1-D to 4-D, one
// frame and many; a corrupt frame the region meets is DATA_LOSS, one it
// does not meet is never read; a malformed region is INVALID_ARGUMENT; one
// reader serves regions of many archives in turn, also after an error.
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/archive.h"
#include "codec/region.h"
#include "gpu/gpu_codec.h"
#include "gpu/region_reader.h"
#include "gtest/gtest.h"
#include "tests/gpu/gpu_test_fields.h"
#include "tests/region_slice.h"

namespace ebzip::gpu {
namespace {

using ::ebzip::testing::RegionsOf;
using ::ebzip::testing::SliceOf;

// Every region of `RegionsOf` through the GPU, against the CPU and the slice.
void CheckRegions(const std::vector<uint8_t>& archive, uint64_t seed) {
  auto info = ReadArchiveInfo(archive);
  ASSERT_TRUE(info.ok()) << info.status();
  const std::vector<uint64_t> shape = info->header.shape;
  const size_t elem = DTypeSize(info->header.dtype);
  auto full = Decompress(archive);
  ASSERT_TRUE(full.ok()) << full.status();
  std::mt19937_64 rng(seed);
  for (const Hyperslab& r : RegionsOf(shape, rng)) {
    SCOPED_TRACE(r.ToString());
    auto got = DecompressRegionHost(archive, r);
    ASSERT_TRUE(got.ok()) << got.status();
    std::vector<uint8_t> cpu(r.NumElements() * elem);
    ASSERT_TRUE(DecompressRegion(*info, archive, r, DecoderKind::kAuto, absl::MakeSpan(cpu)).ok());
    EXPECT_EQ(*got, cpu);
    EXPECT_EQ(*got, SliceOf(full->data, shape, r, elem));
  }
}

TEST(GpuRegion, EqualsTheCpuAndTheSliceOfAFullDecode) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::vector<uint64_t>> shapes = {
      {5000}, {97, 130}, {40, 33, 29}, {7, 9, 20, 24}, {1, 300}, {64, 1}};
  uint64_t seed = 1;
  for (const auto& shape : shapes) {
    for (Predictor p : {Predictor::kLorenzo, Predictor::kInterp, Predictor::kAuto}) {
      for (Lossless l : {Lossless::kHuffman, Lossless::kZeroRuns, Lossless::kRunValues}) {
        for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
          for (uint64_t frame_elements : {uint64_t{1} << 24, uint64_t{2000}}) {
            const bool fill = seed % 2 == 0;
            SCOPED_TRACE(absl::StrCat(ShapeToString(shape), " predictor ", static_cast<int>(p),
                                      " lossless ", static_cast<int>(l), " ", DTypeName(dtype),
                                      " frame_elements ", frame_elements, " fill ", fill));
            const ArraySpec spec{dtype, shape};
            CompressOptions o;
            o.mode = BoundMode::kRel;
            o.bound = 1e-3;
            o.predictor = p;
            o.lossless = l;
            o.frame_elements = frame_elements;
            if (fill) o.fill_value = -9999.0;
            auto archive = Compress(spec,
                                    testing_fields::MakeAnyField(dtype, spec.num_elements(),
                                                                 static_cast<uint32_t>(seed), true,
                                                                 o.fill_value),
                                    o);
            ASSERT_TRUE(archive.ok()) << archive.status();
            CheckRegions(*archive, seed++);
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

TEST(GpuRegion, RealFields) {
  SKIP_WITHOUT_GPU();
  uint64_t seed = 100;
  for (const char* name : {"etopo20", "temp", "uwnd", "salt"}) {
    auto field = testing_fields::GpuHostField(name);
    ASSERT_TRUE(field.ok()) << field.status();
    if (!field->has_value()) continue;
    const LoadedArray& loaded = **field;
    SCOPED_TRACE(name);
    CompressOptions o;
    o.mode = BoundMode::kRel;
    o.bound = 1e-4;
    o.fill_value = loaded.fill_value;
    o.frame_elements = loaded.spec.num_elements() / 5;  // several frames
    auto archive = Compress(loaded.spec, loaded.data, o);
    ASSERT_TRUE(archive.ok()) << archive.status();
    CheckRegions(*archive, seed++);
  }
}

TEST(GpuRegion, ReadsOnlyTheFramesItMeets) {
  SKIP_WITHOUT_GPU();
  const std::vector<uint64_t> shape = {64, 50};
  std::vector<float> data(64 * 50);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 97);
  CompressOptions o;
  o.bound = 0.01;
  o.frame_elements = 800;  // 16 rows a frame: 4 frames
  auto archive = Compress({DType::kFloat32, shape},
                          {reinterpret_cast<const uint8_t*>(data.data()), data.size() * 4}, o);
  ASSERT_TRUE(archive.ok()) << archive.status();
  auto info = ReadArchiveInfo(*archive);
  ASSERT_TRUE(info.ok());
  ASSERT_EQ(info->frames.size(), 4u);
  // A bit flipped in frame 3's payload: the header still parses.
  std::vector<uint8_t> bad = *archive;
  const auto& f3 = info->frames[3];
  bad[f3.offset + f3.size - 9] ^= 0x40;
  ASSERT_TRUE(ReadArchiveInfo(bad).ok());
  // Rows 3 and 35 (frames 0 and 2): frame 3 lies outside the bytes sent up.
  auto skip = ParseHyperslab("3:64:32,5", shape);
  ASSERT_TRUE(skip.ok());
  auto got = DecompressRegionHost(bad, *skip);
  ASSERT_TRUE(got.ok()) << got.status();
  auto full = Decompress(*archive);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(*got, SliceOf(full->data, shape, *skip, 4));
  auto meets = ParseHyperslab("50:51,:", shape);
  ASSERT_TRUE(meets.ok());
  EXPECT_EQ(DecompressRegionHost(bad, *meets).status().code(), absl::StatusCode::kDataLoss);
}

TEST(GpuRegion, OneReaderServesRegionsOfManyArchivesInTurn) {
  SKIP_WITHOUT_GPU();
  struct Case {
    std::vector<uint64_t> shape;
    DType dtype;
    Predictor predictor;
    uint64_t frame_elements;
  };
  const std::vector<Case> cases = {
      {{40, 33, 29}, DType::kFloat32, Predictor::kInterp, 2000},
      {{7, 9, 20, 24}, DType::kFloat64, Predictor::kInterp, 3000},
      {{97, 130}, DType::kFloat32, Predictor::kLorenzo, 1000},
      {{300, 200}, DType::kFloat32, Predictor::kInterp, uint64_t{1} << 24},
      // Frames of many tiles: 16 x 16 tiles of 64 x 64, and 2 x 16 x 16 of
      // 1 x 64 x 64 in each of four frames.
      {{1024, 1024}, DType::kFloat32, Predictor::kInterp, uint64_t{1} << 24},
      {{8, 1024, 1024}, DType::kFloat64, Predictor::kInterp, 2 * 1024 * 1024}};
  std::vector<std::vector<uint8_t>> archives;
  std::vector<ArchiveInfo> infos;
  std::vector<DecompressedArray> fulls;
  for (size_t c = 0; c < cases.size(); ++c) {
    const ArraySpec spec{cases[c].dtype, cases[c].shape};
    CompressOptions o;
    o.mode = BoundMode::kRel;
    o.bound = 1e-4;
    o.predictor = cases[c].predictor;
    o.frame_elements = cases[c].frame_elements;
    auto archive = Compress(
        spec, testing_fields::MakeAnyField(spec.dtype, spec.num_elements(), 7 + c, true, {}), o);
    ASSERT_TRUE(archive.ok()) << archive.status();
    auto info = ReadArchiveInfo(*archive);
    ASSERT_TRUE(info.ok()) << info.status();
    auto full = Decompress(*archive);
    ASSERT_TRUE(full.ok()) << full.status();
    archives.push_back(*std::move(archive));
    infos.push_back(*std::move(info));
    fulls.push_back(*std::move(full));
  }
  RegionReader reader(3);
  std::mt19937_64 rng(5);
  for (int round = 0; round < 3; ++round) {
    for (size_t c = 0; c < cases.size(); ++c) {
      const size_t elem = DTypeSize(cases[c].dtype);
      std::vector<Hyperslab> regions = RegionsOf(cases[c].shape, rng);
      // Small boxes away from the first tiles: a frame of many tiles then
      // decodes only the chunk prefixes they need.
      for (int b = 0; b < 4; ++b) {
        Hyperslab box = WholeArray(cases[c].shape);
        for (size_t d = 0; d < box.start.size(); ++d) {
          const uint64_t extent = cases[c].shape[d];
          box.count[d] = std::max<uint64_t>(1, extent / (8 + rng() % 8));
          box.start[d] = extent / 2 + rng() % (extent - box.count[d] - extent / 2 + 1);
        }
        regions.push_back(box);
      }
      for (const Hyperslab& r : regions) {
        SCOPED_TRACE(absl::StrCat("case ", c, " ", r.ToString()));
        std::vector<uint8_t> got(r.NumElements() * elem, 0xEE);
        ASSERT_TRUE(reader.Read(infos[c], archives[c], r, got.data()).ok());
        EXPECT_EQ(got, SliceOf(fulls[c].data, cases[c].shape, r, elem));
      }
      // A damaged frame the whole array meets, then the next read is whole.
      std::vector<uint8_t> bad = archives[c];
      const auto& last = infos[c].frames.back();
      bad[last.offset + last.size - 9] ^= 0x10;
      const Hyperslab all = WholeArray(cases[c].shape);
      std::vector<uint8_t> sink(all.NumElements() * elem);
      EXPECT_EQ(reader.Read(infos[c], bad, all, sink.data()).code(), absl::StatusCode::kDataLoss);
    }
  }
}

// A region of frames of many tiles decodes only some chunks of each: every
// decoder form takes such a list (with and without a gap array).
TEST(GpuRegion, EveryDecoderGivesTheSameRegions) {
  SKIP_WITHOUT_GPU();
  const std::vector<uint64_t> shape = {4, 1024, 1024};
  const ArraySpec spec{DType::kFloat32, shape};
  for (bool gap_array : {true, false}) {
    CompressOptions o;
    o.mode = BoundMode::kRel;
    o.bound = 1e-4;
    o.predictor = Predictor::kInterp;
    o.gap_array = gap_array;
    o.frame_elements = 2 * 1024 * 1024;  // two frames
    auto archive = Compress(
        spec, testing_fields::MakeAnyField(spec.dtype, spec.num_elements(), 31, false, {}), o);
    ASSERT_TRUE(archive.ok()) << archive.status();
    auto info = ReadArchiveInfo(*archive);
    ASSERT_TRUE(info.ok());
    auto full = Decompress(*archive);
    ASSERT_TRUE(full.ok());
    std::vector<DecoderKind> decoders = {DecoderKind::kSelfSync, DecoderKind::kChunkParallel};
    if (gap_array) decoders.push_back(DecoderKind::kGapArray);
    for (const char* text :
         {"1:3,300:340,500:560", "2,600:700,900:1000", "0:4,200:203,:", "3,1023,1023"}) {
      auto r = ParseHyperslab(text, shape);
      ASSERT_TRUE(r.ok());
      const std::vector<uint8_t> want = SliceOf(full->data, shape, *r, 4);
      for (DecoderKind d : decoders) {
        SCOPED_TRACE(absl::StrCat(text, " gap array ", gap_array, " ", DecoderKindName(d)));
        RegionReader reader(2, d);
        std::vector<uint8_t> got(want.size(), 0xEE);
        ASSERT_TRUE(reader.Read(*info, *archive, *r, got.data()).ok());
        EXPECT_EQ(got, want);
      }
    }
  }
}

TEST(GpuRegion, MalformedRegionsAreInvalidArguments) {
  SKIP_WITHOUT_GPU();
  const std::vector<uint64_t> shape = {10, 20};
  std::vector<float> data(200, 1.5f);
  CompressOptions o;
  o.bound = 0.01;
  auto archive = Compress({DType::kFloat32, shape},
                          {reinterpret_cast<const uint8_t*>(data.data()), data.size() * 4}, o);
  ASSERT_TRUE(archive.ok());
  Hyperslab past = WholeArray(shape);
  past.count[1] = 21;
  Hyperslab zero_step = WholeArray(shape);
  zero_step.step[0] = 0;
  Hyperslab too_few;
  too_few.start = {0};
  too_few.count = {1};
  too_few.step = {1};
  for (const Hyperslab& r : {past, zero_step, too_few}) {
    EXPECT_EQ(DecompressRegionHost(*archive, r).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace ebzip::gpu
