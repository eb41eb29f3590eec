// The GPU codec against the CPU reference (issue: same bytes, docs/design.md §3):
// archives byte-identical to codec/'s, each side decoding the other's, all
// three GPU decoders, batches, and corrupt archives. Every test skips where
// no CUDA device is visible, so CI (no GPU) stays green; on a GPU host they
// run under ctest label "gpu".
#include "gpu/gpu_codec.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "codec/archive.h"
#include "codec/byte_io.h"
#include "codec/crc32c.h"
#include "codec/huffman_code.h"
#include "codec/lorenzo.h"
#include "gpu/kernels.h"
#include "gtest/gtest.h"
#include "tests/bound_checker.h"
#include "tests/gpu/gpu_test_fields.h"
#include "tests/real_fields.h"

namespace ebzip::gpu {
namespace {

// This file holds the GPU codec to the CPU on format version 1 (Lorenzo,
// plain Huffman); version 2 has gpu_v2_compress_test.cc and
// gpu_v2_decode_test.cc.
CompressOptions Version1() {
  CompressOptions o;
  o.predictor = Predictor::kLorenzo;
  o.lossless = Lossless::kHuffman;
  return o;
}

using testing_fields::Check;
using testing_fields::ExpectSameAsCpu;
using testing_fields::MakeAnyField;
using testing_fields::MakeField;

TEST(GpuCodec, SmallAdversarialCases) {
  SKIP_WITHOUT_GPU();
  struct Case {
    std::vector<uint64_t> shape;
    DType dtype;
    BoundMode mode;
    double bound;
  };
  const std::vector<Case> cases = {
      {{1}, DType::kFloat32, BoundMode::kAbs, 1e-3},
      {{7}, DType::kFloat64, BoundMode::kRel, 1e-2},
      {{1000}, DType::kFloat32, BoundMode::kRel, 1e-4},
      {{33, 17}, DType::kFloat32, BoundMode::kAbs, 0.01},
      {{9, 10, 11}, DType::kFloat64, BoundMode::kRel, 1e-5},
      {{3, 9, 10, 11}, DType::kFloat32, BoundMode::kRel, 1e-3},
      {{5000}, DType::kFloat32, BoundMode::kAbs, 1e-12},   // nearly all outliers
      {{64, 64}, DType::kFloat32, BoundMode::kAbs, 1e30},  // one symbol
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    const ArraySpec spec{c.dtype, c.shape};
    CompressOptions options = Version1();
    options.mode = c.mode;
    options.bound = c.bound;
    ExpectSameAsCpu(spec, MakeAnyField(c.dtype, spec.num_elements(), seed++, true, std::nullopt),
                    options);
    options.fill_value = -1e34;
    ExpectSameAsCpu(spec, MakeAnyField(c.dtype, spec.num_elements(), seed++, true, -1e34), options);
  }
}

// Whole Lorenzo blocks of every default shape, which the kernels take in
// groups with compile-time extents, beside edge blocks, which they take one
// at a time: a block of nothing but NaN (its placeholder is 0), a block of
// fill, dense scattered specials in whole blocks, and outliers.
template <typename T>
std::vector<uint8_t> WithSpecialBlocks(const std::vector<uint64_t>& shape, uint32_t seed) {
  const uint64_t n = ArraySpec{DType::kFloat32, shape}.num_elements();
  auto bytes = MakeField<T>(n, seed, true, std::nullopt);
  T* v = reinterpret_cast<T*>(bytes.data());
  // The default block's extent along each of the last three dimensions.
  const int rank = static_cast<int>(shape.size());
  const std::vector<uint64_t> block = rank == 1   ? std::vector<uint64_t>{256}
                                      : rank == 2 ? std::vector<uint64_t>{16, 16}
                                                  : std::vector<uint64_t>{8, 8, 8};
  for (uint64_t i = 0; i < n; ++i) {
    // Coordinates along the last block.size() dimensions.
    uint64_t rest = i;
    bool first_block = true, second_block = true;
    for (int k = static_cast<int>(block.size()) - 1; k >= 0; --k) {
      const uint64_t c = rest % shape[rank - block.size() + k];
      rest /= shape[rank - block.size() + k];
      const bool last = k == static_cast<int>(block.size()) - 1;
      first_block &= c < block[k];
      second_block &= last ? (c >= block[k] && c < 2 * block[k]) : c < block[k];
    }
    if (rest != 0) continue;  // 4-D: only the first slice
    if (first_block) v[i] = std::numeric_limits<T>::quiet_NaN();
    if (second_block) v[i] = static_cast<T>(-1e34);
  }
  for (uint64_t i = n / 2; i < n; i += 7) v[i] = std::numeric_limits<T>::quiet_NaN();
  for (uint64_t i = n / 2 + 3; i < n; i += 29) v[i] = static_cast<T>(i % 2 ? 5000 : -5000);
  return bytes;
}

// Each shape in both dtypes: REL with fill, then ABS with -1e34 an ordinary
// (too large to quantize) value.
void ExpectSpecialBlocksAsOnTheCpu(const std::vector<std::vector<uint64_t>>& shapes,
                                   uint32_t seed) {
  for (const auto& shape : shapes) {
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
      const ArraySpec spec{dtype, shape};
      const auto data = dtype == DType::kFloat32 ? WithSpecialBlocks<float>(shape, seed++)
                                                 : WithSpecialBlocks<double>(shape, seed++);
      CompressOptions options = Version1();
      options.mode = BoundMode::kRel;
      options.bound = 1e-4;
      options.fill_value = -1e34;
      ExpectSameAsCpu(spec, data, options);
      options.fill_value.reset();
      options.mode = BoundMode::kAbs;
      options.bound = 0.01;
      ExpectSameAsCpu(spec, data, options);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(GpuCodec, SmallWholeBlocksWithSpecials) {
  SKIP_WITHOUT_GPU();
  ExpectSpecialBlocksAsOnTheCpu(
      {{4096}, {4100}, {64, 48}, {70, 33}, {16, 24, 40}, {17, 24, 41}, {2, 16, 16, 24}}, 100);
}

// The same at sizes where a tile holds many blocks: groups of several blocks
// (up to 16 for 1-D and 2-D, 8 for 3-D), and edge blocks between groups of
// one tile.
TEST(GpuCodec, GroupsOfWholeBlocksWithSpecials) {
  SKIP_WITHOUT_GPU();
  ExpectSpecialBlocksAsOnTheCpu(
      {{1 << 18}, {(1 << 18) + 77}, {300, 500}, {40, 72, 90}, {3, 24, 40, 33}}, 200);
}

// Blocks cut short along the first of three block dimensions alone, which
// prediction takes in groups with the missing planes' rows idle (or, frames
// of two and four rows, stacked: the next test): frames of one to seven
// rows, a plane of them after whole blocks (13 = 8 + 5), some also cut
// along the others (41, 33), and a 4-D frame of three rows per slice.
TEST(GpuCodec, ShallowBlocksWithSpecials) {
  SKIP_WITHOUT_GPU();
  ExpectSpecialBlocksAsOnTheCpu({{1, 64, 64},
                                 {2, 64, 64},
                                 {5, 40, 48},
                                 {13, 32, 64},
                                 {7, 41, 33},
                                 {2, 3, 16, 24},
                                 {3, 200, 64}},
                                300);
}

// Frames of two or four rows with 3-D blocks (the survey's samples of large
// 3-D frames are such), whose blocks prediction stacks four or two to a
// group block: whole groups (2 x 64 x 64 above: 64 blocks), groups and
// stacks left partial by the block count (45 and 42 blocks), edge blocks
// beside them (41, 33), and frames of several tiles.
TEST(GpuCodec, StackedShallowBlocksWithSpecials) {
  SKIP_WITHOUT_GPU();
  ExpectSpecialBlocksAsOnTheCpu(
      {{2, 40, 72}, {4, 48, 56}, {2, 41, 33}, {4, 24, 41}, {2, 256, 520}, {4, 200, 136}}, 400);
}

// Hundreds to thousands of chunks: the gap-array decoder's warp form and,
// for comparison, its block form, at bounds from a few to many subsequences
// per chunk and lane.
TEST(GpuCodec, ManyChunksDecodeAsOnTheCpu) {
  SKIP_WITHOUT_GPU();
  const ArraySpec spec{DType::kFloat32, {96, 64, 160}};
  const auto data = MakeField<float>(spec.num_elements(), 5, true, -1e34);
  for (uint32_t chunk : {256u, 1000u, 4096u}) {
    for (double rel : {1e-2, 1e-4, 1e-6}) {
      CompressOptions options = Version1();
      options.mode = BoundMode::kRel;
      options.bound = rel;
      options.fill_value = -1e34;
      options.chunk_symbols = chunk;
      options.subsequence_bits = chunk == 1000 ? 64 : 1024;
      // 3,840 and 983 chunks take the warp form, 240 the block form.
      ASSERT_EQ(spec.num_elements() / chunk >= kWarpGapDecodeMinChunks, chunk != 4096);
      ExpectSameAsCpu(spec, data, options);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(GpuCodec, SmallConstantAndNonFiniteArrays) {
  SKIP_WITHOUT_GPU();
  CompressOptions options = Version1();
  options.mode = BoundMode::kRel;
  options.bound = 1e-3;
  const ArraySpec spec{DType::kFloat32, {40, 50}};
  std::vector<float> constant(2000, 3.25f), nan(2000, std::nanf("")), zero(2000, 0.0f);
  for (const auto* v : {&constant, &nan, &zero}) {
    std::vector<uint8_t> bytes(v->size() * 4);
    std::memcpy(bytes.data(), v->data(), bytes.size());
    ExpectSameAsCpu(spec, bytes, options);
  }
  options.fill_value = 3.25;  // everything is fill
  std::vector<uint8_t> bytes(8000);
  std::memcpy(bytes.data(), constant.data(), bytes.size());
  ExpectSameAsCpu(spec, bytes, options);
}

// The range a relative bound is taken of, as the range kernel reads it (16
// bytes at a time, with the elements before the first aligned one and after
// the last whole vector taken one by one). A caller's device array need not
// start on the 16-byte grid (a frame task's rows, a request at an offset in
// a batch buffer), so the input here starts 0 to 3 elements past it, and
// the extremes sit at each kind of position, beside a larger fill value and
// non-finite values that must not count. The header's bound says which
// range the GPU found; the archive must be the CPU's.
TEST(GpuCodec, TheRangeSeesEveryElement) {
  SKIP_WITHOUT_GPU();
  constexpr uint64_t kN = 3 * 16384 + 7;
  constexpr double kMin = -2, kMax = 7;
  std::mt19937 rng(7);
  std::vector<uint64_t> places = {0,     1,     2,     3,      4,      5,      16382, 16383,
                                  16384, 16385, 16386, 16387,  kN - 4, kN - 3, kN - 2, kN - 1};
  for (int k = 0; k < 6; ++k) places.push_back(rng() % kN);
  for (const DType dtype : {DType::kFloat32, DType::kFloat64}) {
    const uint64_t size = DTypeSize(dtype);
    CompressOptions options = Version1();
    options.mode = BoundMode::kRel;
    options.bound = 1e-3;
    options.fill_value = 100;
    options.frame_elements = 16384;
    const ArraySpec spec{dtype, {kN}};
    const double expected =
        ResolveBound(options, dtype, ValueRange{true, kMin, kMax}).abs_bound;
    const uint64_t capacity = MaxArchiveBytes(spec, options);
    void* base = nullptr;
    void* out = nullptr;
    uint64_t* archive_size = nullptr;
    ASSERT_EQ(cudaMalloc(&base, kN * size + 16), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out, capacity), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&archive_size), 8), cudaSuccess);
    for (uint64_t shift = 0; shift < 16 / size; ++shift) {
      uint8_t* in = static_cast<uint8_t*>(base) + shift * size;
      CompressTask task{spec, options, in, static_cast<uint8_t*>(out), capacity, archive_size};
      auto need = CompressWorkspaceSize({&task, 1});
      ASSERT_TRUE(need.ok()) << need.status();
      Workspace ws{nullptr, need->device_bytes, nullptr, need->host_bytes};
      ASSERT_EQ(cudaMalloc(&ws.device, ws.device_bytes), cudaSuccess);
      ASSERT_EQ(cudaMallocHost(&ws.host, ws.host_bytes), cudaSuccess);
      for (const uint64_t p : places) {
        SCOPED_TRACE(::testing::Message() << DTypeName(dtype) << ", input " << shift
                                          << " elements past the grid, extremes at " << p);
        std::vector<double> v(kN);
        for (uint64_t i = 0; i < kN; ++i) {
          v[i] = 0.5 + 0.25 * std::sin(0.01 * static_cast<double>(i));
        }
        const uint64_t q = (p * 7919 + 13) % kN == p ? (p + 1) % kN : (p * 7919 + 13) % kN;
        v[p] = kMax;
        v[q] = kMin;
        // Beyond the extremes, but not part of the range.
        const double ignored[] = {100, std::numeric_limits<double>::infinity(),
                                  -std::numeric_limits<double>::infinity(), std::nan("")};
        for (int k = 0; k < 4; ++k) {
          const uint64_t at = (p + 1 + k) % kN;
          if (at != q) v[at] = ignored[k];
        }
        std::vector<uint8_t> bytes(kN * size);
        for (uint64_t i = 0; i < kN; ++i) {
          if (dtype == DType::kFloat32) {
            const float f = static_cast<float>(v[i]);
            std::memcpy(bytes.data() + 4 * i, &f, 4);
          } else {
            std::memcpy(bytes.data() + 8 * i, &v[i], 8);
          }
        }
        auto cpu = Compress(spec, bytes, options);
        ASSERT_TRUE(cpu.ok()) << cpu.status();
        ASSERT_EQ(cudaMemcpy(in, bytes.data(), bytes.size(), cudaMemcpyHostToDevice),
                  cudaSuccess);
        ASSERT_TRUE(CompressBatch({&task, 1}, ws, nullptr).ok());
        uint64_t got_size = 0;
        ASSERT_EQ(cudaMemcpy(&got_size, archive_size, 8, cudaMemcpyDeviceToHost), cudaSuccess);
        ASSERT_LE(got_size, capacity);
        std::vector<uint8_t> gpu(got_size);
        ASSERT_EQ(cudaMemcpy(gpu.data(), out, got_size, cudaMemcpyDeviceToHost), cudaSuccess);
        auto info = ReadArchiveInfo(gpu);
        ASSERT_TRUE(info.ok()) << info.status();
        EXPECT_EQ(info->header.abs_bound, expected);
        EXPECT_TRUE(gpu == *cpu) << testing_fields::WhereTheyDiffer(*cpu, gpu);
        if (HasFailure()) break;
      }
      cudaFree(ws.device);
      cudaFreeHost(ws.host);
      if (HasFailure()) break;
    }
    cudaFree(base);
    cudaFree(out);
    cudaFree(archive_size);
    if (HasFailure()) return;
  }
}

TEST(GpuCodec, RandomShapesDtypesAndBounds) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(42);
  for (int trial = 0; trial < 24; ++trial) {
    const int ndim = 1 + trial % 4;
    std::vector<uint64_t> shape(ndim);
    for (uint64_t& d : shape) d = 1 + rng() % (ndim == 1 ? 300000 : ndim == 2 ? 700 : 60);
    const DType dtype = rng() % 2 ? DType::kFloat32 : DType::kFloat64;
    CompressOptions options = Version1();
    options.mode = rng() % 2 ? BoundMode::kRel : BoundMode::kAbs;
    options.bound = options.mode == BoundMode::kRel ? std::pow(10.0, -1.0 - rng() % 6)
                                                    : std::pow(10.0, -4.0 + rng() % 5);
    options.gap_array = rng() % 4 != 0;
    if (rng() % 3 == 0) options.fill_value = -1e34;
    if (rng() % 3 == 0) options.frame_elements = 1 + rng() % 50000;  // many frames
    if (rng() % 3 == 0) options.chunk_symbols = 256 + rng() % 20000;
    if (rng() % 4 == 0) options.radius = 1 + rng() % 3000;
    const ArraySpec spec{dtype, shape};
    ExpectSameAsCpu(
        spec, MakeAnyField(dtype, spec.num_elements(), trial, trial % 2 == 0, options.fill_value),
        options);
    if (HasFatalFailure()) return;
  }
}

// Histogram windows wider than the first copy to the host carries (2048
// bins per frame): noise at a tight bound uses ~10,000 symbols per frame.
// Frames alternate noise and smooth data so that windows cross the copy's
// end partly, lie wholly past it, and follow a wide one narrow.
TEST(GpuCodec, WideHistogramsMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  constexpr uint64_t kFrame = 100000;
  std::vector<float> v(6 * kFrame);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> noise(-1, 1);
  for (uint64_t i = 0; i < v.size(); ++i) {
    const bool noisy = (i / kFrame) % 3 != 2;
    v[i] = noisy ? noise(rng) : static_cast<float>(std::sin(i * 1e-3));
  }
  std::vector<uint8_t> data(v.size() * 4);
  std::memcpy(data.data(), v.data(), data.size());
  CompressOptions options = Version1();
  options.mode = BoundMode::kAbs;
  options.bound = 1e-4;
  options.frame_elements = kFrame;
  ExpectSameAsCpu({DType::kFloat32, {v.size()}}, data, options);
}

// One batch, every archive byte-identical to the CPU's, with the codes built
// where `builder` says.
void ExpectBatchMatchesOneByOne(CodeBuilder builder) {
  const std::vector<ArraySpec> specs = {{DType::kFloat32, {1000}},
                                        {DType::kFloat32, {31, 47}},
                                        {DType::kFloat32, {5, 6, 7}},
                                        {DType::kFloat32, {123456}},
                                        {DType::kFloat32, {1}}};
  CompressOptions options = Version1();
  options.mode = BoundMode::kRel;
  options.bound = 1e-4;
  std::vector<std::vector<uint8_t>> data, expected;
  std::vector<void*> inputs, archives;
  std::vector<CompressTask> tasks;
  uint64_t* sizes = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&sizes), specs.size() * 8), cudaSuccess);
  for (size_t i = 0; i < specs.size(); ++i) {
    data.push_back(MakeField<float>(specs[i].num_elements(), 100 + i, true, std::nullopt));
    auto cpu = Compress(specs[i], data.back(), options);
    ASSERT_TRUE(cpu.ok());
    expected.push_back(*cpu);
    void* in = nullptr;
    void* out = nullptr;
    const uint64_t capacity = MaxArchiveBytes(specs[i], options);
    ASSERT_EQ(cudaMalloc(&in, data.back().size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out, capacity), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(in, data.back().data(), data.back().size(), cudaMemcpyHostToDevice),
              cudaSuccess);
    inputs.push_back(in);
    archives.push_back(out);
    tasks.push_back({specs[i], options, in, static_cast<uint8_t*>(out), capacity, sizes + i});
  }
  auto need = CompressWorkspaceSize(tasks, builder);
  ASSERT_TRUE(need.ok()) << need.status();
  Workspace ws{nullptr, need->device_bytes, nullptr, need->host_bytes};
  ASSERT_EQ(cudaMalloc(&ws.device, ws.device_bytes), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&ws.host, std::max<size_t>(ws.host_bytes, 1)), cudaSuccess);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  ASSERT_TRUE(CompressBatch(tasks, ws, stream, nullptr, builder).ok());
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  std::vector<uint64_t> got(specs.size());
  ASSERT_EQ(cudaMemcpy(got.data(), sizes, got.size() * 8, cudaMemcpyDeviceToHost), cudaSuccess);
  std::vector<ArchiveInfo> infos(specs.size());
  std::vector<DecompressTask> dtasks;
  std::vector<void*> outputs;
  for (size_t i = 0; i < specs.size(); ++i) {
    ASSERT_EQ(got[i], expected[i].size()) << "array " << i;
    std::vector<uint8_t> archive(got[i]);
    ASSERT_EQ(cudaMemcpy(archive.data(), archives[i], got[i], cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_TRUE(archive == expected[i]) << "array " << i;
    auto info = ReadArchiveInfo(archive);
    ASSERT_TRUE(info.ok());
    infos[i] = *info;
    void* out = nullptr;
    ASSERT_EQ(cudaMalloc(&out, specs[i].num_bytes()), cudaSuccess);
    outputs.push_back(out);
    dtasks.push_back({&infos[i], static_cast<const uint8_t*>(archives[i]), out});
  }
  auto dneed = DecompressWorkspaceSize(dtasks, DecoderKind::kAuto);
  ASSERT_TRUE(dneed.ok()) << dneed.status();
  Workspace dws{nullptr, dneed->device_bytes, nullptr, dneed->host_bytes};
  ASSERT_EQ(cudaMalloc(&dws.device, dws.device_bytes), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&dws.host, dws.host_bytes), cudaSuccess);
  ASSERT_TRUE(DecompressBatch(dtasks, DecoderKind::kAuto, dws, stream).ok());
  ASSERT_TRUE(FinishDecompress(dws, stream).ok());
  for (size_t i = 0; i < specs.size(); ++i) {
    std::vector<uint8_t> decoded(specs[i].num_bytes());
    ASSERT_EQ(cudaMemcpy(decoded.data(), outputs[i], decoded.size(), cudaMemcpyDeviceToHost),
              cudaSuccess);
    auto reference = Decompress(expected[i]);
    ASSERT_TRUE(reference.ok());
    EXPECT_TRUE(decoded == reference->data) << "array " << i;
    cudaFree(outputs[i]);
    cudaFree(inputs[i]);
    cudaFree(archives[i]);
  }
  cudaFree(sizes);
  cudaFree(ws.device);
  cudaFreeHost(ws.host);
  cudaFree(dws.device);
  cudaFreeHost(dws.host);
  cudaStreamDestroy(stream);
}

TEST(GpuCodec, BatchOfArraysMatchesOneByOne) {
  SKIP_WITHOUT_GPU();
  ExpectBatchMatchesOneByOne(CodeBuilder::kDevice);
}

TEST(GpuCodec, BatchWithHostBuiltCodesMatchesOneByOne) {
  SKIP_WITHOUT_GPU();
  ExpectBatchMatchesOneByOne(CodeBuilder::kHost);
}

// A 1-D float32 array whose Lorenzo residuals are exactly `draw()`'s: with
// an absolute bound of 0.5 the quantization step is 1, integers quantize
// to themselves, and each block's first element (predicted from nothing)
// is 0. *histogram counts the residuals, so the frame's symbol counts are
// known exactly.
template <typename Draw>
std::vector<uint8_t> WalkWithResiduals(uint64_t n, Draw draw,
                                       std::map<int64_t, uint32_t>* histogram) {
  const uint64_t block = DefaultBlock(1)[0];
  std::vector<float> v(n);
  float x = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const int64_t r = i % block == 0 ? 0 : draw();
    x = i % block == 0 ? 0 : x + static_cast<float>(r);
    v[i] = x;
    ++(*histogram)[r];
  }
  std::vector<uint8_t> data(n * 4);
  std::memcpy(data.data(), v.data(), data.size());
  return data;
}

// The premise of the tests below: unlimited, this histogram's Huffman code
// is deeper than the 20-bit limit, so the frame's code must be flattened.
int UnlimitedDepth(const std::map<int64_t, uint32_t>& histogram) {
  std::vector<uint32_t> counts;
  for (const auto& [residual, count] : histogram) counts.push_back(count);
  const std::vector<uint8_t> lengths = BuildCodeLengths(counts, 60);
  return *std::max_element(lengths.begin(), lengths.end());
}

void ExpectFlattenedAsOnTheCpu(uint64_t n, const std::vector<uint8_t>& data) {
  CompressOptions options = Version1();
  options.mode = BoundMode::kAbs;
  options.bound = 0.5;
  options.frame_elements = n;
  ExpectSameAsCpu({DType::kFloat32, {n}}, data, options);
}

// Residual counts in Fibonacci proportions over a small alphabet: the
// device tries several halvings at once, a warp each (frames of up to
// 1,024 symbols), and must keep the fewest that fit, as the host does.
TEST(GpuCodec, SmallAlphabetsAreFlattenedAsOnTheCpu) {
  SKIP_WITHOUT_GPU();
  std::vector<uint64_t> weight = {1, 1};
  while (weight.size() < 27)
    weight.push_back(weight[weight.size() - 1] + weight[weight.size() - 2]);
  std::vector<int64_t> pool;  // residual j + 1 as often as weight[j]
  for (size_t j = 0; j < weight.size(); ++j)
    pool.insert(pool.end(), weight[j], static_cast<int64_t>(j) + 1);
  for (const uint64_t seed : {1u, 2u}) {
    std::mt19937_64 rng(seed);
    std::shuffle(pool.begin(), pool.end(), rng);
    std::map<int64_t, uint32_t> histogram;
    size_t next = 0;
    // Enough elements that every entry of the pool is drawn (blocks' first
    // elements draw none), the rarest residuals included.
    const uint64_t block = DefaultBlock(1)[0];
    const uint64_t n = pool.size() + pool.size() / (block - 1) + block + 1;
    const auto data = WalkWithResiduals(
        n, [&] { return pool[next++ % pool.size()]; }, &histogram);
    ASSERT_GE(next, pool.size());
    ASSERT_LE(histogram.size(), 1024u);
    ASSERT_GT(UnlimitedDepth(histogram), 20);
    ExpectFlattenedAsOnTheCpu(n, data);
  }
}

// Tens of thousands of rare residuals under a core whose counts halve (as
// trailing zeros of random words do): the device's trials run one after
// another over a tree partly in global memory, and the fitting tree's keys
// are re-sorted in global memory too.
TEST(GpuCodec, LargeAlphabetsAreFlattenedAsOnTheCpu) {
  SKIP_WITHOUT_GPU();
  constexpr uint64_t kN = uint64_t{1} << 22;
  std::mt19937_64 rng(17);
  auto draw = [&]() -> int64_t {
    const uint64_t r = rng();
    if (r % 128 == 0) return static_cast<int64_t>((r >> 8) % 30000) - 15000;  // rare
    const int64_t step = __builtin_ctzll((r >> 7) | (uint64_t{1} << 40));
    return (r >> 63) ? step : -step;
  };
  std::map<int64_t, uint32_t> histogram;
  const auto data = WalkWithResiduals(kN, draw, &histogram);
  ASSERT_GT(histogram.size(), 12288u);  // over what shared memory re-sorts
  ASSERT_GT(UnlimitedDepth(histogram), 20);
  ExpectFlattenedAsOnTheCpu(kN, data);
}

// Where two archives first differ, in FORMAT.md's terms.
std::string Locate(const std::vector<uint8_t>& expected, const std::vector<uint8_t>& got) {
  uint64_t first = 0;
  while (first < expected.size() && expected[first] == got[first]) ++first;
  std::string where = "byte " + std::to_string(first) + " of " + std::to_string(expected.size());
  auto info = ReadArchiveInfo(expected);
  if (!info.ok()) return where;
  for (size_t f = 0; f < info->frames.size(); ++f) {
    uint64_t at = info->frames[f].offset;
    if (first < at || first >= at + info->frames[f].size) continue;
    if (first < at + format::kFrameHeaderSize) {
      return where + ": frame " + std::to_string(f) + " header +" + std::to_string(first - at);
    }
    at += format::kFrameHeaderSize;
    for (int k = 0; k < format::kSectionCount; ++k) {
      const uint64_t len = info->frame_headers[f].sections[k].length;
      if (first < at + ((len + 7) & ~uint64_t{7})) {
        return where + ": frame " + std::to_string(f) + " section " + format::SectionName(k) +
               " +" + std::to_string(first - at) + " of " + std::to_string(len);
      }
      at += (len + 7) & ~uint64_t{7};
    }
  }
  return where + " (file header, index or trailer)";
}

// The service reuses its device pool and pinned memory from batch to batch:
// nothing a call leaves behind may change the next call's archive.
TEST(GpuCodec, LeftoverBytesInBuffersChangeNothing) {
  SKIP_WITHOUT_GPU();
  struct Case {
    ArraySpec spec;
    BoundMode mode;
    double bound;
    bool specials;
    std::optional<double> fill;
  };
  const std::vector<Case> cases = {
      {{DType::kFloat32, {7, 13, 5}}, BoundMode::kRel, 1e-3, true, -1e34},
      {{DType::kFloat32, {300, 301}}, BoundMode::kRel, 1e-5, true, std::nullopt},
      {{DType::kFloat64, {3, 5, 9, 17}}, BoundMode::kAbs, 1e-6, true, -1e34},
      {{DType::kFloat32, {100000}}, BoundMode::kRel, 1e-5, false, std::nullopt},
      {{DType::kFloat32, {40, 50, 60}}, BoundMode::kRel, 1e-5, true, -1e34},
  };
  for (uint8_t junk : {uint8_t{0xA5}, uint8_t{0xFF}, uint8_t{0x00}}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(ShapeToString(c.spec.shape) + " junk " + std::to_string(junk));
      CompressOptions options = Version1();
      options.mode = c.mode;
      options.bound = c.bound;
      options.fill_value = c.fill;
      const auto data = MakeAnyField(c.spec.dtype, c.spec.num_elements(), 11, c.specials, c.fill);
      auto cpu = Compress(c.spec, data, options);
      ASSERT_TRUE(cpu.ok());
      const uint64_t capacity = MaxArchiveBytes(c.spec, options);
      void* in = nullptr;
      void* out = nullptr;
      uint64_t* size = nullptr;
      ASSERT_EQ(cudaMalloc(&in, data.size()), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&out, capacity), cudaSuccess);
      ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&size), 8), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(in, data.data(), data.size(), cudaMemcpyHostToDevice), cudaSuccess);
      CompressTask task{c.spec, options, in, static_cast<uint8_t*>(out), capacity, size};
      auto need = CompressWorkspaceSize({&task, 1});
      ASSERT_TRUE(need.ok());
      Workspace ws{nullptr, need->device_bytes, nullptr, need->host_bytes};
      ASSERT_EQ(cudaMalloc(&ws.device, ws.device_bytes), cudaSuccess);
      ASSERT_EQ(cudaMallocHost(&ws.host, ws.host_bytes), cudaSuccess);
      ASSERT_EQ(cudaMemset(out, junk, capacity), cudaSuccess);
      ASSERT_EQ(cudaMemset(ws.device, junk, ws.device_bytes), cudaSuccess);
      std::memset(ws.host, junk, ws.host_bytes);
      ASSERT_TRUE(CompressBatch({&task, 1}, ws, nullptr).ok());
      uint64_t got_size = 0;
      ASSERT_EQ(cudaMemcpy(&got_size, size, 8, cudaMemcpyDeviceToHost), cudaSuccess);
      std::vector<uint8_t> gpu(got_size);
      ASSERT_EQ(cudaMemcpy(gpu.data(), out, got_size, cudaMemcpyDeviceToHost), cudaSuccess);
      ASSERT_EQ(gpu.size(), cpu->size());
      EXPECT_TRUE(gpu == *cpu) << Locate(*cpu, gpu);
      cudaFree(in);
      cudaFree(out);
      cudaFree(size);
      cudaFree(ws.device);
      cudaFreeHost(ws.host);
    }
  }
}

TEST(GpuCodec, SmallOverflowWritesNothing) {
  SKIP_WITHOUT_GPU();
  const ArraySpec spec{DType::kFloat32, {4096}};
  CompressOptions options = Version1();
  options.bound = 1e-9;  // incompressible
  testing_fields::ExpectOverflowWritesNothing(spec, MakeField<float>(4096, 5, true, std::nullopt),
                                              options, 1024);
}

// Where each section of frame `f` starts in the archive.
std::array<uint64_t, format::kSectionCount> SectionOffsets(const ArchiveInfo& info, uint64_t f) {
  const format::FrameHeader& h = info.frame_headers[f];
  std::array<uint64_t, format::kSectionCount> section_at;
  uint64_t at = info.frames[f].offset + format::kFrameHeaderSize;
  for (int s = 0; s < format::kSectionCount; ++s) {
    section_at[s] = at;
    at += AlignUp(h.sections[s].length, format::kAlignment);
  }
  return section_at;
}

// Rewrites section `s`'s CRC in frame `f`'s header, for the length there,
// then the header's own CRC, so that an edit of the section (which must keep
// its padded length) reaches the validation logic.
void FixSectionCrc(std::vector<uint8_t>& archive, const ArchiveInfo& info, uint64_t f, int s) {
  uint8_t* entry = archive.data() + info.frames[f].offset + format::kFrameHeaderSectionsAt + 16 * s;
  StoreLE<uint32_t>(entry + 8,
                    Crc32c(archive.data() + SectionOffsets(info, f)[s], LoadLE<uint64_t>(entry)));
  uint8_t* fh = archive.data() + info.frames[f].offset;
  StoreLE<uint32_t>(fh + format::kFrameHeaderSize - 4, Crc32c(fh, format::kFrameHeaderSize - 4));
}

// Corruptions the CRCs catch, and ones made to pass the CRCs that only the
// device's cross-checks can catch: each must be DATA_LOSS, never a wrong array.
// Flips a bit in the middle of each section, with and without the CRCs
// rewritten to match, and decodes with every decoder.
void ExpectCorruptionCaught(uint32_t chunk_symbols) {
  SCOPED_TRACE("chunk_symbols " + std::to_string(chunk_symbols));
  const ArraySpec spec{DType::kFloat32, {300, 200}};
  const std::vector<uint8_t> data = MakeField<float>(60000, 9, true, -1e34);
  CompressOptions options = Version1();
  options.mode = BoundMode::kRel;
  options.bound = 1e-4;
  options.fill_value = -1e34;
  options.chunk_symbols = chunk_symbols;
  auto archive = Compress(spec, data, options);
  ASSERT_TRUE(archive.ok());
  auto info = ReadArchiveInfo(*archive);
  ASSERT_TRUE(info.ok());
  const format::FrameHeader& h = info->frame_headers[0];
  const std::array<uint64_t, format::kSectionCount> section_at = SectionOffsets(*info, 0);
  for (int s = 0; s < format::kSectionCount; ++s) {
    if (h.sections[s].length == 0) continue;
    for (bool fixed : {false, true}) {
      std::vector<uint8_t> bad = *archive;
      bad[section_at[s] + h.sections[s].length / 2] ^= 0x10;
      if (fixed) FixSectionCrc(bad, *info, 0, s);
      for (DecoderKind d :
           {DecoderKind::kGapArray, DecoderKind::kSelfSync, DecoderKind::kChunkParallel}) {
        auto out = DecompressHost(bad, d);
        if (out.ok()) {
          // A flip the format cannot see (e.g. in a verbatim value) must still
          // decode exactly as the CPU decodes the same bytes.
          auto cpu = Decompress(bad);
          ASSERT_TRUE(cpu.ok()) << format::SectionName(s) << " fixed=" << fixed
                                << ": GPU accepted, CPU says " << cpu.status();
          EXPECT_TRUE(cpu->data == out->data) << format::SectionName(s);
        } else {
          EXPECT_EQ(out.status().code(), absl::StatusCode::kDataLoss)
              << format::SectionName(s) << ": " << out.status();
          if (!fixed) {
            EXPECT_NE(out.status().message().find("checksum"), std::string::npos) << out.status();
          }
        }
      }
    }
  }
}

// Four chunks take the gap-array decoder's block form; over
// kWarpGapDecodeMinChunks chunks take its warp form.
TEST(GpuCodec, SmallCorruptArchivesAreRejected) {
  SKIP_WITHOUT_GPU();
  ExpectCorruptionCaught(Version1().chunk_symbols);
  static_assert(60000 / 64 > kWarpGapDecodeMinChunks);
  ExpectCorruptionCaught(64);
}

// Each gap entry must be checked (FORMAT.md §5.4), also those of
// subsequences that begin inside one thread's or lane's run: 32-bit
// subsequences give every run several. Entry j of chunk 0, one more than it
// should be, CRCs rewritten: the CPU's gap-array decoder rejects it, and so
// must both GPU forms.
void ExpectEveryGapEntryChecked(uint64_t n, uint32_t chunk_symbols, int entries) {
  SCOPED_TRACE("n " + std::to_string(n) + ", chunk_symbols " + std::to_string(chunk_symbols));
  const ArraySpec spec{DType::kFloat32, {n}};
  const std::vector<uint8_t> data = MakeField<float>(n, 5, false, std::nullopt);
  CompressOptions options = Version1();
  options.mode = BoundMode::kRel;
  options.bound = 1e-4;
  options.chunk_symbols = chunk_symbols;
  options.subsequence_bits = 32;
  auto archive = Compress(spec, data, options);
  ASSERT_TRUE(archive.ok()) << archive.status();
  ASSERT_TRUE(DecompressHost(*archive, DecoderKind::kGapArray).ok());
  auto info = ReadArchiveInfo(*archive);
  ASSERT_TRUE(info.ok());
  const uint64_t gaps = SectionOffsets(*info, 0)[format::kGapArray];
  // Chunk 0 has at least chunk_symbols / 32 entries: codewords take a bit
  // or more.
  ASSERT_LT(entries, static_cast<int>(chunk_symbols / 32));
  for (int j = 1; j <= entries; ++j) {
    std::vector<uint8_t> bad = *archive;
    ++bad[gaps + j];
    FixSectionCrc(bad, *info, 0, format::kGapArray);
    auto cpu = Decompress(bad, DecoderKind::kGapArray);
    ASSERT_FALSE(cpu.ok()) << "entry " << j << ": the CPU accepted it";
    auto gpu = DecompressHost(bad, DecoderKind::kGapArray);
    ASSERT_FALSE(gpu.ok()) << "entry " << j << ": the GPU accepted it";
    EXPECT_EQ(gpu.status().code(), absl::StatusCode::kDataLoss) << gpu.status();
  }
}

TEST(GpuCodec, EveryGapEntryIsChecked) {
  SKIP_WITHOUT_GPU();
  // Four chunks: the block form, 512 threads over 512+ subsequences.
  ExpectEveryGapEntryChecked(60000, 16384, 100);
  // 600 chunks: the warp form, 32 lanes over 32+ subsequences.
  static_assert(600 > kWarpGapDecodeMinChunks);
  ExpectEveryGapEntryChecked(600 * 1024, 1024, 31);
}

// A zero item of a code-length section (FORMAT.md §5.1): where its 0 byte
// is, and its run's LEB128.
struct ZeroItem {
  uint64_t at;
  int leb_bytes;
  uint64_t run;
};
std::vector<ZeroItem> ZeroItems(absl::Span<const uint8_t> section) {
  std::vector<ZeroItem> items;
  for (uint64_t p = 0; p < section.size();) {
    if (section[p++] != 0) continue;
    ZeroItem item{p - 1, 0, 0};
    uint8_t b;
    do {
      b = section[p++];
      item.run |= uint64_t{b & 0x7Fu} << (7 * item.leb_bytes++);
    } while (b & 0x80);
    items.push_back(item);
  }
  return items;
}

// A zero item for `run` with a LEB128 of `leb_bytes` (at least the shortest).
void AppendZeroItem(uint64_t run, int leb_bytes, std::vector<uint8_t>* out) {
  out->push_back(0);
  for (int i = 0; i < leb_bytes; ++i, run >>= 7) {
    out->push_back(static_cast<uint8_t>((run & 0x7F) | (i + 1 < leb_bytes ? 0x80 : 0)));
  }
}

// The code-length section is parsed by a whole block, a piece of 8 KiB at a
// time (gpu/code_length_scan.h). A section of several pieces, its bytes
// mutated and its zero items re-encoded as other writers may (padded
// LEB128s, split runs: the same lengths), around the pieces' boundaries and
// elsewhere, with the CRCs rewritten, must be accepted exactly where the CPU
// accepts it and decode as the CPU decodes it.
TEST(GpuCodec, EditedCodeLengthsAgreeWithTheCpu) {
  SKIP_WITHOUT_GPU();
  // A random walk on a grid of 3 quantization steps (1/64, exact in float),
  // so that residuals are multiples of 3 up to +-9000: ~6000 symbols used,
  // each between zero runs of 2, ~18 KiB of lengths and zero items.
  std::vector<float> v(100000);
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> steps(-3000, 3000);
  int32_t grid = 0;
  for (float& x : v) x = static_cast<float>(3 * (grid += steps(rng))) / 64;
  const ArraySpec spec{DType::kFloat32, {v.size()}};
  CompressOptions options = Version1();
  options.mode = BoundMode::kAbs;
  options.bound = 1.0 / 128;
  auto archive =
      Compress(spec, {reinterpret_cast<const uint8_t*>(v.data()), 4 * v.size()}, options);
  ASSERT_TRUE(archive.ok()) << archive.status();
  auto info = ReadArchiveInfo(*archive);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->frames.size(), 1u);
  auto original = Decompress(*archive);
  ASSERT_TRUE(original.ok()) << original.status();
  const format::FrameHeader& h = info->frame_headers[0];
  const uint64_t at = SectionOffsets(*info, 0)[format::kCodeLengths];
  const uint64_t size = h.sections[format::kCodeLengths].length;
  const auto section = absl::MakeConstSpan(*archive).subspan(at, size);
  constexpr uint64_t kPiece = 8192;
  ASSERT_GT(size, 2 * kPiece + 16);
  // Longer sections fit in the padding after this one: later sections stay.
  const uint64_t slack = AlignUp(size, format::kAlignment) - size;
  ASSERT_GE(slack, 2u) << "pick a field whose section leaves room";
  auto near_boundary = [&](uint64_t p) { return (p + 8) % kPiece < 16 && p > 8; };

  int accepted = 0, rejected = 0;
  // Decodes `edited` on both sides; `same` says it must decode as the original.
  auto expect_agree = [&](const std::vector<uint8_t>& edited, bool same) {
    auto cpu = Decompress(edited);
    auto gpu = DecompressHost(edited);
    ASSERT_EQ(gpu.ok(), cpu.ok()) << "GPU: " << gpu.status() << "; CPU: " << cpu.status();
    if (same) {
      ASSERT_TRUE(cpu.ok()) << cpu.status();
    }
    if (gpu.ok()) {
      ASSERT_TRUE(gpu->data == cpu->data);
      if (same) {
        ASSERT_TRUE(gpu->data == original->data);
      }
      ++accepted;
    } else {
      ASSERT_EQ(gpu.status().code(), absl::StatusCode::kDataLoss) << gpu.status();
      ++rejected;
    }
  };

  std::vector<uint64_t> positions = {0, 1, 2, size - 2, size - 1};
  for (uint64_t boundary : {kPiece, 2 * kPiece}) {
    for (uint64_t p = boundary - 4; p < boundary + 4; ++p) positions.push_back(p);
  }
  for (uint64_t k = 1; k < 16; ++k) positions.push_back(k * size / 16 + k);
  for (uint64_t p : positions) {
    const uint8_t was = section[p];
    for (int value : {0x00, 0x01, 0x7F, 0x80, 0x81, 0xFF, int{h.max_code_length},
                      h.max_code_length + 1, was ^ 0x80}) {
      if (value == was) continue;
      SCOPED_TRACE("byte " + std::to_string(p) + " of " + std::to_string(size) + " set to " +
                   std::to_string(value));
      std::vector<uint8_t> bad = *archive;
      bad[at + p] = static_cast<uint8_t>(value);
      FixSectionCrc(bad, *info, 0, format::kCodeLengths);
      expect_agree(bad, false);
      if (HasFatalFailure()) return;
    }
  }
  const int mutations_rejected = rejected;

  const std::vector<ZeroItem> items = ZeroItems(section);
  for (size_t i = 0; i < items.size(); ++i) {
    const ZeroItem& item = items[i];
    if (!near_boundary(item.at) && i % 128 != 0) continue;
    const uint64_t end = item.at + 1 + item.leb_bytes;
    std::vector<std::vector<uint8_t>> rewrites;
    const int padded = std::min<int>(6, item.leb_bytes + static_cast<int>(slack));
    if (padded > item.leb_bytes) AppendZeroItem(item.run, padded, &rewrites.emplace_back());
    if (item.run >= 2) {
      std::vector<uint8_t>& split = rewrites.emplace_back();
      AppendZeroItem(1, 1, &split);
      AppendZeroItem(item.run - 1, item.leb_bytes, &split);
    }
    for (const std::vector<uint8_t>& rewrite : rewrites) {
      SCOPED_TRACE("zero item at " + std::to_string(item.at) + " rewritten in " +
                   std::to_string(rewrite.size()) + " bytes");
      std::vector<uint8_t> edited = *archive;
      std::vector<uint8_t> bytes(section.begin(), section.begin() + item.at);
      bytes.insert(bytes.end(), rewrite.begin(), rewrite.end());
      bytes.insert(bytes.end(), section.begin() + end, section.end());
      ASSERT_LE(bytes.size(), size + slack);
      std::copy(bytes.begin(), bytes.end(), edited.begin() + at);
      StoreLE<uint64_t>(edited.data() + info->frames[0].offset + format::kFrameHeaderSectionsAt +
                            16 * format::kCodeLengths,
                        bytes.size());
      FixSectionCrc(edited, *info, 0, format::kCodeLengths);
      expect_agree(edited, true);
      if (HasFatalFailure()) return;
    }
  }
  EXPECT_GT(mutations_rejected, 200);
  EXPECT_GT(accepted, 50);
  std::printf("%d edits accepted, %d rejected\n", accepted, rejected);
}

// The real fields at the bounds users ask for, and a frame size that cuts
// them into several frames.
TEST(GpuCodec, RealFieldsAreByteIdentical) {
  SKIP_WITHOUT_GPU();
  for (const char* name : {"etopo5", "temp", "uwnd", "salt"}) {
    auto loaded = testing_fields::GpuHostField(name);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    if (!loaded->has_value()) continue;
    const LoadedArray& field = **loaded;
    for (double rel : {1e-2, 1e-3, 1e-4, 1e-5}) {
      CompressOptions options = Version1();
      options.mode = BoundMode::kRel;
      options.bound = rel;
      options.fill_value = field.fill_value;
      ExpectSameAsCpu(field.spec, field.data, options);
      options.frame_elements = field.spec.num_elements() / 5;
      ExpectSameAsCpu(field.spec, field.data, options);
      if (HasFatalFailure()) return;
    }
  }
}

}  // namespace
}  // namespace ebzip::gpu
