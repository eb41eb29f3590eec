// Format version 2 (FORMAT.md §15) through the GPU decompressor: archives
// the CPU codec writes with every predictor, entropy stage, interpolation
// order and fill coding, in both dtypes and every rank, must decode on the
// GPU to exactly the CPU decoder's bytes with each GPU decoder, alone and in
// batches that mix versions 1 and 2; and corrupt ones (bytes flipped, with
// and without their CRCs rewritten; outliers, verbatim values, fill masks and
// symbol counts edited consistently) must be rejected exactly where the CPU
// rejects them, never decoded into something else. Every test skips where
// no CUDA device is visible (ctest label "gpu").
//
// EBZIP_GPU_TEST_CPU_STANDIN=1 puts the CPU decoder in the GPU's place, so
// that the harness itself (archives, edits, coverage) can be checked on a
// machine without a GPU; it says nothing about the GPU.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/archive.h"
#include "codec/byte_io.h"
#include "codec/crc32c.h"
#include "codec/fill_mask.h"
#include "codec/format.h"
#include "codec/region.h"
#include "gpu/gpu_codec.h"
#include "gpu/region_reader.h"
#include "gtest/gtest.h"
#include "tests/gpu/gpu_test_fields.h"
#include "tests/real_fields.h"

namespace ebzip::gpu {
namespace {

using Bytes = std::vector<uint8_t>;

bool CpuStandIn() { return std::getenv("EBZIP_GPU_TEST_CPU_STANDIN") != nullptr; }

// Skips without a GPU, unless the CPU decoder stands in for it.
#define SKIP_WITHOUT_DECODER()                                                              \
  do {                                                                                      \
    if (absl::Status s = DeviceAvailable(); !s.ok() && !CpuStandIn()) {                     \
      GTEST_SKIP() << s.message();                                                          \
    }                                                                                       \
  } while (0)

absl::StatusOr<DecompressedArray> GpuDecode(const Bytes& archive, DecoderKind decoder) {
  if (CpuStandIn()) return Decompress(archive, decoder);
  return DecompressHost(archive, decoder);
}

uint64_t Product(const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

// ---------------------------------------------------------------------------
// Data.

// A field smooth along every dimension, with noise, a step (so that anchors
// get large residuals: outliers under a small radius) and optionally the
// values that must survive bit for bit (NaN, +-Inf, -0.0, subnormals, one
// far from the others) and a fill value: in a box at the origin (whole
// tiles of fill, fill anchors), in whole rows (the first after the origin's
// and the last), in a long run and scattered.
template <typename T>
Bytes MakeField(const std::vector<uint64_t>& shape, uint32_t seed, bool specials,
                std::optional<double> fill) {
  const uint64_t n = Product(shape);
  const int rank = static_cast<int>(shape.size());
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 0.05);
  std::vector<T> v(n);
  static constexpr double kAmp[4] = {40, 30, 20, 10};
  static constexpr double kFreq[4] = {0.07, 0.05, 0.031, 0.013};
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t rest = i;
    double x = noise(rng);
    for (int d = rank - 1; d >= 0; --d) {
      const uint64_t c = rest % shape[d];
      rest /= shape[d];
      x += kAmp[d] * std::sin(kFreq[d] * static_cast<double>(c) + d);
    }
    if (i >= n / 2) x += 3000;
    v[i] = static_cast<T>(x);
  }
  if (specials && n > 16) {
    std::uniform_int_distribution<uint64_t> at(0, n - 1);
    for (int k = 0; k < 3; ++k) v[at(rng)] = std::numeric_limits<T>::quiet_NaN();
    v[at(rng)] = std::numeric_limits<T>::infinity();
    v[at(rng)] = -std::numeric_limits<T>::infinity();
    v[at(rng)] = static_cast<T>(-0.0);
    v[at(rng)] = static_cast<T>(-0.0);
    v[at(rng)] = std::numeric_limits<T>::denorm_min();
    v[at(rng)] = -std::numeric_limits<T>::denorm_min();
    v[at(rng)] = static_cast<T>(5e4);  // far from the others, yet inside a REL range
    v[0] = seed % 2 ? std::numeric_limits<T>::quiet_NaN() : static_cast<T>(-0.0);  // an anchor
  }
  if (fill) {
    const T f = static_cast<T>(*fill);
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t rest = i;
      bool in_box = true;
      for (int d = rank - 1; d >= 0; --d) {
        const uint64_t c = rest % shape[d];
        rest /= shape[d];
        // Whole tiles where the array is large enough (1-D: 256 elements;
        // 2-D: 32x32 or 64x64; 3-D: 16^3), half of it along each dimension
        // where not.
        if (rank == 1) {
          in_box &= n >= 1024 ? (c >= 256 && c < 768) : (c >= n / 4 && c < n / 2);
        } else {
          in_box &= c < (shape[d] >= 128 ? 64 : shape[d] / 2);
        }
      }
      if (in_box) v[i] = f;
    }
    const uint64_t row = n / shape[0];
    if (rank > 1 && shape[0] >= 3) {
      const uint64_t first = std::min<uint64_t>(shape[0] - 2, 65);
      std::fill_n(v.begin() + first * row, row, f);
      std::fill_n(v.end() - row, row, f);
    }
    std::fill_n(v.begin() + n / 3, n / 7, f);
    for (uint64_t i = 7; i < n; i += 97) v[i] = f;
  }
  Bytes bytes(n * sizeof(T));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

Bytes MakeAnyField(DType dtype, const std::vector<uint64_t>& shape, uint32_t seed, bool specials,
                   std::optional<double> fill) {
  return dtype == DType::kFloat32 ? MakeField<float>(shape, seed, specials, fill)
                                  : MakeField<double>(shape, seed, specials, fill);
}

Bytes Constant(DType dtype, uint64_t n, double value) {
  Bytes bytes(n * DTypeSize(dtype));
  for (uint64_t i = 0; i < n; ++i) {
    if (dtype == DType::kFloat32) {
      StoreLE<float>(bytes.data() + 4 * i, static_cast<float>(value));
    } else {
      StoreLE<double>(bytes.data() + 8 * i, value);
    }
  }
  return bytes;
}

std::string Describe(const ArraySpec& spec, const CompressOptions& o) {
  static constexpr const char* kPredictor[] = {"auto", "lorenzo", "interp"};
  static constexpr const char* kLossless[] = {"auto", "huffman", "runs", "run-values"};
  return absl::StrCat(ShapeToString(spec.shape), " ", DTypeName(spec.dtype), " ",
                      BoundModeName(o.mode), " ", o.bound, " predictor ",
                      kPredictor[static_cast<int>(o.predictor)], " lossless ",
                      kLossless[static_cast<int>(o.lossless)], " order ", o.interp_order,
                      o.fill_value ? " fill" : "", " frame_elements ", o.frame_elements,
                      " radius ", o.radius, " chunk ", o.chunk_symbols,
                      o.gap_array ? "" : " no gap array");
}

// ---------------------------------------------------------------------------
// What the archives decoded so far exercised, so that a test can insist it
// reached what it is about.
struct Coverage {
  int v1_frames = 0;
  int lorenzo_v2_frames = 0;
  int interp_frames = 0;
  int linear = 0;
  int cubic = 0;
  int run_frames = 0;
  int run_value_frames = 0;
  int mask_frames = 0;
  int fill_run_frames = 0;
  int interp_outlier_frames = 0;
  int multi_frame_archives = 0;
  int mixed_predictor_archives = 0;
};

Coverage Cover(const ArchiveInfo& info) {
  Coverage c;
  bool lorenzo = false, interp = false;
  for (const format::FrameHeader& h : info.frame_headers) {
    if (h.version == format::kVersion1) {
      ++c.v1_frames;
    } else if (h.predictor == format::kPredictorLorenzo) {
      ++c.lorenzo_v2_frames;
    } else {
      ++c.interp_frames;
      c.linear += h.order == 1;
      c.cubic += h.order == 3;
      c.interp_outlier_frames += h.outlier_count > 0;
    }
    lorenzo |= h.predictor == format::kPredictorLorenzo;
    interp |= h.predictor == format::kPredictorInterp;
    c.run_frames += h.lossless == format::kLosslessZeroRuns;
    c.run_value_frames += h.lossless == format::kLosslessRunValues;
    c.mask_frames += h.fill_coding == format::kFillCodingMask;
    c.fill_run_frames += h.fill_coding == format::kFillCodingRuns && h.fill_run_count > 0;
  }
  c.multi_frame_archives = info.frame_headers.size() > 1;
  c.mixed_predictor_archives = lorenzo && interp;
  return c;
}

void Add(Coverage* total, const Coverage& c) {
  total->v1_frames += c.v1_frames;
  total->lorenzo_v2_frames += c.lorenzo_v2_frames;
  total->interp_frames += c.interp_frames;
  total->linear += c.linear;
  total->cubic += c.cubic;
  total->run_frames += c.run_frames;
  total->run_value_frames += c.run_value_frames;
  total->mask_frames += c.mask_frames;
  total->fill_run_frames += c.fill_run_frames;
  total->interp_outlier_frames += c.interp_outlier_frames;
  total->multi_frame_archives += c.multi_frame_archives;
  total->mixed_predictor_archives += c.mixed_predictor_archives;
}

void PrintCoverage(const Coverage& c) {
  std::printf(
      "frames: %d v1, %d Lorenzo v2, %d interpolation (%d linear, %d cubic, %d with outliers); "
      "%d with run tokens, %d with run-value tokens, %d fill masks, %d with fill runs; %d "
      "multi-frame archives, %d mixing predictors\n",
      c.v1_frames, c.lorenzo_v2_frames, c.interp_frames, c.linear, c.cubic, c.interp_outlier_frames,
      c.run_frames, c.run_value_frames, c.mask_frames, c.fill_run_frames, c.multi_frame_archives,
      c.mixed_predictor_archives);
}

// ---------------------------------------------------------------------------
// Comparison.

std::vector<DecoderKind> DecodersFor(const ArchiveInfo& info) {
  std::vector<DecoderKind> decoders = {DecoderKind::kAuto, DecoderKind::kSelfSync,
                                       DecoderKind::kChunkParallel};
  bool gaps = true;
  for (const format::FrameHeader& h : info.frame_headers) gaps &= h.has_gap_array;
  if (gaps) decoders.push_back(DecoderKind::kGapArray);
  return decoders;
}

// Empty when equal, else where they first differ.
std::string FirstDifference(const Bytes& got, const Bytes& want, size_t element_size) {
  if (got.size() != want.size()) {
    return absl::StrCat("sizes ", got.size(), " and ", want.size());
  }
  if (std::memcmp(got.data(), want.data(), got.size()) == 0) return "";
  uint64_t i = 0;
  while (got[i] == want[i]) ++i;
  uint64_t count = 0;
  for (uint64_t e = 0; e < got.size() / element_size; ++e) {
    count += std::memcmp(got.data() + e * element_size, want.data() + e * element_size,
                         element_size) != 0;
  }
  return absl::StrCat("first at element ", i / element_size, ", ", count, " elements differ");
}

// The archive (which the CPU decodes) decodes on the GPU to the CPU's bytes,
// with every decoder that applies.
void ExpectSameAsCpu(const Bytes& archive, const std::string& what, Coverage* coverage) {
  SCOPED_TRACE(what);
  auto info = ReadArchiveInfo(archive);
  ASSERT_TRUE(info.ok()) << info.status();
  Add(coverage, Cover(*info));
  auto cpu = Decompress(archive);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  for (DecoderKind d : DecodersFor(*info)) {
    auto gpu = GpuDecode(archive, d);
    ASSERT_TRUE(gpu.ok()) << DecoderKindName(d) << ": " << gpu.status();
    const std::string diff = FirstDifference(gpu->data, cpu->data, DTypeSize(info->header.dtype));
    ASSERT_EQ(diff, "") << DecoderKindName(d) << " differs from the CPU";
  }
}

void CompressAndCompare(const ArraySpec& spec, const Bytes& data, const CompressOptions& options,
                        Coverage* coverage) {
  auto archive = Compress(spec, data, options);
  ASSERT_TRUE(archive.ok()) << Describe(spec, options) << ": " << archive.status();
  ExpectSameAsCpu(*archive, Describe(spec, options), coverage);
}

// ---------------------------------------------------------------------------
// Round trips.

struct Combo {
  Predictor predictor;
  Lossless lossless;
  int order;
  BoundMode mode;
  double bound;
  bool fill;
  bool many_frames;
  uint32_t radius = 32768;
  uint32_t chunk_symbols = 16384;
  bool gap_array = true;
};

CompressOptions OptionsFor(const Combo& c, const ArraySpec& spec) {
  CompressOptions o;
  o.predictor = c.predictor;
  o.lossless = c.lossless;
  o.interp_order = c.order;
  o.mode = c.mode;
  o.bound = c.bound;
  if (c.fill) o.fill_value = -1e34;
  // Frames of a few rows each (whole Lorenzo blocks along dimension 0).
  if (c.many_frames) o.frame_elements = std::max<uint64_t>(1, spec.num_elements() / 5);
  o.radius = c.radius;
  o.chunk_symbols = c.chunk_symbols;
  if (c.chunk_symbols < 1024) o.subsequence_bits = 64;
  o.gap_array = c.gap_array;
  return o;
}

const std::vector<Combo>& Combos() {
  static const std::vector<Combo> combos = {
      {Predictor::kAuto, Lossless::kAuto, 0, BoundMode::kRel, 1e-3, true, false},
      {Predictor::kInterp, Lossless::kZeroRuns, 3, BoundMode::kAbs, 0.05, true, false},
      {Predictor::kInterp, Lossless::kHuffman, 1, BoundMode::kRel, 1e-4, false, false},
      {Predictor::kLorenzo, Lossless::kZeroRuns, 0, BoundMode::kRel, 1e-2, true, false},
      {Predictor::kInterp, Lossless::kAuto, 1, BoundMode::kAbs, 0.5, true, true},
      {Predictor::kAuto, Lossless::kHuffman, 0, BoundMode::kRel, 1e-5, false, true, 32768, 16384,
       false},
      // Small radii: anchors across the step are outliers, many others verbatim.
      {Predictor::kInterp, Lossless::kZeroRuns, 3, BoundMode::kRel, 1e-3, true, false, 16, 1000},
      {Predictor::kInterp, Lossless::kAuto, 0, BoundMode::kAbs, 0.5, true, true, 200, 128},
      {Predictor::kLorenzo, Lossless::kAuto, 0, BoundMode::kAbs, 1e-3, false, true, 32768, 256},
      // Run-value tokens (FORMAT.md §15.4.1) forced, with both predictors.
      {Predictor::kInterp, Lossless::kRunValues, 3, BoundMode::kRel, 1e-3, true, false},
      {Predictor::kLorenzo, Lossless::kRunValues, 0, BoundMode::kRel, 1e-2, false, true, 32768,
       1000},
      // Radius 2: the residual -2 is symbol 0, an outlier, which a run takes.
      {Predictor::kAuto, Lossless::kRunValues, 0, BoundMode::kAbs, 0.5, true, false, 2, 512},
  };
  return combos;
}

TEST(GpuV2Decode, EveryOptionAsOnTheCpu) {
  SKIP_WITHOUT_DECODER();
  const std::vector<std::vector<uint64_t>> shapes = {
      {1},        {7},           {1000},       {70000},           {33, 17},
      {200, 150}, {1, 300},      {9, 10, 11},  {40, 36, 50},      {3, 9, 10, 11},
      {2, 20, 24, 30}};
  Coverage coverage;
  uint32_t seed = 1;
  for (const auto& shape : shapes) {
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
      const ArraySpec spec{dtype, shape};
      for (const Combo& combo : Combos()) {
        const CompressOptions options = OptionsFor(combo, spec);
        CompressAndCompare(spec, MakeAnyField(dtype, shape, seed++, true, options.fill_value),
                           options, &coverage);
        if (HasFatalFailure()) return;
      }
    }
  }
  PrintCoverage(coverage);
  EXPECT_GT(coverage.interp_frames, 100);
  EXPECT_GT(coverage.linear, 20);
  EXPECT_GT(coverage.cubic, 20);
  EXPECT_GT(coverage.lorenzo_v2_frames, 20);
  EXPECT_GT(coverage.run_frames, 20);
  EXPECT_GT(coverage.run_value_frames, 20);
  EXPECT_GT(coverage.mask_frames, 20);
  EXPECT_GT(coverage.fill_run_frames, 5);
  EXPECT_GT(coverage.interp_outlier_frames, 5);
  EXPECT_GT(coverage.multi_frame_archives, 10);
}

// Arrays of one value, of nothing but fill (a frame whose only symbols are
// its anchors), fill but one element, a fill value that never occurs, and
// nothing but non-finite or subnormal values.
TEST(GpuV2Decode, DegenerateArraysAsOnTheCpu) {
  SKIP_WITHOUT_DECODER();
  Coverage coverage;
  for (const std::vector<uint64_t>& shape :
       std::vector<std::vector<uint64_t>>{{3000}, {40, 50}, {9, 10, 11}, {2, 5, 17, 19}}) {
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
      const ArraySpec spec{dtype, shape};
      const uint64_t n = spec.num_elements();
      for (Predictor predictor : {Predictor::kInterp, Predictor::kAuto}) {
        for (Lossless lossless : {Lossless::kAuto, Lossless::kHuffman, Lossless::kRunValues}) {
          CompressOptions o;
          o.predictor = predictor;
          o.lossless = lossless;
          o.mode = BoundMode::kRel;
          o.bound = 1e-3;
          CompressAndCompare(spec, Constant(dtype, n, 3.25), o, &coverage);
          CompressAndCompare(spec, Constant(dtype, n, std::nan("")), o, &coverage);
          CompressAndCompare(spec, Constant(dtype, n, -0.0), o, &coverage);
          CompressAndCompare(spec,
                             Constant(dtype, n,
                                      dtype == DType::kFloat32
                                          ? std::numeric_limits<float>::denorm_min()
                                          : std::numeric_limits<double>::denorm_min()),
                             o, &coverage);
          o.fill_value = 3.25;
          CompressAndCompare(spec, Constant(dtype, n, 3.25), o, &coverage);  // all fill
          Bytes one = Constant(dtype, n, 3.25);
          std::memset(one.data() + (n / 2) * DTypeSize(dtype), 0, DTypeSize(dtype));
          CompressAndCompare(spec, one, o, &coverage);
          o.mode = BoundMode::kAbs;
          o.bound = 0.01;
          CompressAndCompare(spec, MakeAnyField(dtype, shape, 5, true, std::nullopt), o,
                             &coverage);  // a fill value never met
          if (HasFatalFailure()) return;
        }
      }
    }
  }
  PrintCoverage(coverage);
  EXPECT_GT(coverage.mask_frames, 20);
}

// Many frames of a few rows each, predictor and entropy stage chosen per
// frame: archives whose frames mix Lorenzo and interpolation.
TEST(GpuV2Decode, FramesChosenOneByOneAsOnTheCpu) {
  SKIP_WITHOUT_DECODER();
  Coverage coverage;
  std::mt19937 rng(7);
  for (int trial = 0; trial < 16; ++trial) {
    const int rank = 1 + trial % 4;
    std::vector<uint64_t> shape(rank);
    for (uint64_t& d : shape) d = 2 + rng() % (rank == 1 ? 60000 : rank == 2 ? 300 : 40);
    shape[0] = std::max<uint64_t>(shape[0], 16);
    const DType dtype = trial % 2 ? DType::kFloat64 : DType::kFloat32;
    const ArraySpec spec{dtype, shape};
    CompressOptions o;
    o.mode = rng() % 2 ? BoundMode::kRel : BoundMode::kAbs;
    o.bound = o.mode == BoundMode::kRel ? std::pow(10.0, -1.0 - rng() % 5)
                                        : std::pow(10.0, -3.0 + rng() % 4);
    if (rng() % 2) o.fill_value = -1e34;
    o.frame_elements = 1 + rng() % std::max<uint64_t>(1, spec.num_elements() / 4);
    Bytes data = MakeAnyField(dtype, shape, 100 + trial, trial % 3 != 0, o.fill_value);
    // Half the frames noise, half smooth: the choice differs between them.
    std::mt19937 noise_rng(trial);
    std::uniform_real_distribution<double> noise(-500, 500);
    const uint64_t row = spec.num_elements() / shape[0];
    for (uint64_t r = 0; r < shape[0]; ++r) {
      if ((r / 8) % 2 == 0) continue;
      for (uint64_t i = r * row; i < (r + 1) * row; ++i) {
        if (dtype == DType::kFloat32) {
          StoreLE<float>(data.data() + 4 * i, static_cast<float>(noise(noise_rng)));
        } else {
          StoreLE<double>(data.data() + 8 * i, noise(noise_rng));
        }
      }
    }
    CompressAndCompare(spec, data, o, &coverage);
    if (HasFatalFailure()) return;
  }
  PrintCoverage(coverage);
  EXPECT_GT(coverage.multi_frame_archives, 8);
}

// Real fields, compressed with the defaults (version 2, everything chosen
// per frame) at a few bounds, with the field's fill value.
TEST(GpuV2Decode, RealFieldsAsOnTheCpu) {
  SKIP_WITHOUT_DECODER();
  Coverage coverage;
  for (const char* name : {"etopo20", "temp", "uwnd", "salt"}) {
    auto field = testing_fields::GpuHostField(name);
    ASSERT_TRUE(field.ok()) << field.status();
    if (!field->has_value()) continue;
    const LoadedArray* loaded = &**field;
    for (double rel : {1e-2, 1e-4}) {
      CompressOptions o;
      o.mode = BoundMode::kRel;
      o.bound = rel;
      o.fill_value = loaded->fill_value;
      CompressAndCompare(loaded->spec, loaded->data, o, &coverage);
      if (HasFatalFailure()) return;
    }
  }
  PrintCoverage(coverage);
}

// ---------------------------------------------------------------------------
// Batches.

// Decodes the archives (one dtype) as one batch and compares each with the
// CPU; returns FinishDecompress's status (OK when they all matched).
absl::Status DecodeBatch(const std::vector<Bytes>& archives, DecoderKind decoder,
                         std::vector<Bytes>* outputs) {
  std::vector<ArchiveInfo> infos;
  for (const Bytes& a : archives) {
    auto info = ReadArchiveInfo(a);
    if (!info.ok()) return info.status();
    infos.push_back(*std::move(info));
  }
  std::vector<void*> device;
  auto free_all = [&] {
    for (void* p : device) cudaFree(p);
  };
  auto alloc = [&](size_t bytes) {
    void* p = nullptr;
    if (cudaMalloc(&p, std::max<size_t>(bytes, 1)) != cudaSuccess) return static_cast<void*>(nullptr);
    device.push_back(p);
    return p;
  };
  std::vector<DecompressTask> tasks;
  for (size_t i = 0; i < archives.size(); ++i) {
    void* a = alloc(archives[i].size());
    void* out = alloc(infos[i].spec().num_bytes());
    if (a == nullptr || out == nullptr) {
      free_all();
      return absl::ResourceExhaustedError("cudaMalloc");
    }
    cudaMemcpy(a, archives[i].data(), archives[i].size(), cudaMemcpyHostToDevice);
    tasks.push_back({&infos[i], static_cast<const uint8_t*>(a), out});
  }
  auto need = DecompressWorkspaceSize(tasks, decoder);
  if (!need.ok()) {
    free_all();
    return need.status();
  }
  Workspace ws{alloc(need->device_bytes), need->device_bytes, nullptr, need->host_bytes};
  cudaMallocHost(&ws.host, std::max<size_t>(need->host_bytes, 1));
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  absl::Status status = DecompressBatch(tasks, decoder, ws, stream);
  if (status.ok()) status = FinishDecompress(ws, stream);
  outputs->clear();
  for (size_t i = 0; status.ok() && i < archives.size(); ++i) {
    Bytes& out = outputs->emplace_back(infos[i].spec().num_bytes());
    cudaMemcpy(out.data(), tasks[i].output, out.size(), cudaMemcpyDeviceToHost);
  }
  cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  cudaFreeHost(ws.host);
  free_all();
  return status;
}

std::vector<Bytes> MixedArchives(DType dtype, Coverage* coverage) {
  struct Entry {
    std::vector<uint64_t> shape;
    Predictor predictor;
    Lossless lossless;
    bool fill;
    uint64_t frame_elements;
    uint32_t radius;
  };
  // Archive 1 has one interpolation frame with outliers (its radius is small).
  const std::vector<Entry> entries = {
      {{64, 64}, Predictor::kLorenzo, Lossless::kHuffman, false, 1 << 24, 32768},  // version 1
      {{100, 80}, Predictor::kInterp, Lossless::kZeroRuns, true, 1 << 24, 8},
      {{5000}, Predictor::kLorenzo, Lossless::kZeroRuns, true, 1 << 24, 32768},
      {{300, 40}, Predictor::kAuto, Lossless::kAuto, true, 2000, 32768},
      {{120, 50}, Predictor::kLorenzo, Lossless::kHuffman, true, 1500, 32768},  // version 1
      {{7, 9, 30}, Predictor::kInterp, Lossless::kHuffman, false, 1 << 24, 32768},
      {{1}, Predictor::kInterp, Lossless::kAuto, false, 1 << 24, 32768},
      {{90, 70}, Predictor::kLorenzo, Lossless::kRunValues, true, 2100, 32768},
      {{60, 80}, Predictor::kInterp, Lossless::kRunValues, false, 1 << 24, 8},
  };
  std::vector<Bytes> archives;
  uint32_t seed = 50;
  for (const Entry& e : entries) {
    const ArraySpec spec{dtype, e.shape};
    CompressOptions o;
    o.predictor = e.predictor;
    o.lossless = e.lossless;
    o.mode = BoundMode::kRel;
    o.bound = 1e-3;
    if (e.fill) o.fill_value = -1e34;
    o.frame_elements = e.frame_elements;
    o.radius = e.radius;
    auto a = Compress(spec, MakeAnyField(dtype, e.shape, seed++, true, o.fill_value), o);
    EXPECT_TRUE(a.ok()) << a.status();
    if (!a.ok()) return {};
    auto info = ReadArchiveInfo(*a);
    EXPECT_TRUE(info.ok());
    if (info.ok()) Add(coverage, Cover(*info));
    archives.push_back(*std::move(a));
  }
  return archives;
}

TEST(GpuV2Decode, BatchesMixingVersionsAsOnTheCpu) {
  SKIP_WITHOUT_DECODER();
  if (CpuStandIn()) GTEST_SKIP() << "batches need the device";
  Coverage coverage;
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    const std::vector<Bytes> archives = MixedArchives(dtype, &coverage);
    ASSERT_FALSE(archives.empty());
    for (DecoderKind d :
         {DecoderKind::kAuto, DecoderKind::kSelfSync, DecoderKind::kChunkParallel}) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " ", DecoderKindName(d)));
      std::vector<Bytes> outputs;
      const absl::Status s = DecodeBatch(archives, d, &outputs);
      ASSERT_TRUE(s.ok()) << s;
      for (size_t i = 0; i < archives.size(); ++i) {
        auto cpu = Decompress(archives[i]);
        ASSERT_TRUE(cpu.ok());
        EXPECT_EQ(FirstDifference(outputs[i], cpu->data, DTypeSize(dtype)), "") << "archive " << i;
      }
    }
  }
  PrintCoverage(coverage);
  EXPECT_GT(coverage.v1_frames, 4);
  EXPECT_GT(coverage.interp_frames, 4);
  EXPECT_GT(coverage.mask_frames, 2);
  EXPECT_GT(coverage.run_value_frames, 2);
}

// ---------------------------------------------------------------------------
// Corruption.

// An archive taken apart into frames (header and sections) and put back
// together, every length, CRC, offset and the index recomputed: for edits
// that keep the container consistent so that they reach the decoder.
struct FrameParts {
  format::FrameHeader header;
  std::array<Bytes, format::kSectionCount> sections;
};
struct ArchiveParts {
  Bytes head;  // file header and metadata block
  std::vector<FrameParts> frames;
};

ArchiveParts Split(const Bytes& a) {
  auto info = ReadArchiveInfo(a);
  EXPECT_TRUE(info.ok()) << info.status();
  ArchiveParts p;
  if (!info.ok()) return p;
  p.head.assign(a.begin(), a.begin() + info->frames[0].offset);
  for (size_t f = 0; f < info->frames.size(); ++f) {
    FrameParts& fp = p.frames.emplace_back();
    fp.header = info->frame_headers[f];
    uint64_t at = info->frames[f].offset + format::kFrameHeaderSize;
    for (int s = 0; s < format::kSectionCount; ++s) {
      const uint64_t length = fp.header.sections[s].length;
      fp.sections[s].assign(a.begin() + at, a.begin() + at + length);
      at += AlignUp(length, format::kAlignment);
    }
  }
  return p;
}

Bytes Join(ArchiveParts p) {
  Bytes out = std::move(p.head);
  std::vector<format::FrameIndexEntry> index;
  for (FrameParts& f : p.frames) {
    for (int s = 0; s < format::kSectionCount; ++s) {
      f.header.sections[s].length = f.sections[s].size();
      f.header.sections[s].crc = Crc32c(f.sections[s].data(), f.sections[s].size());
    }
    const uint64_t offset = out.size();
    format::AppendFrameHeader(f.header, &out);
    for (const Bytes& s : f.sections) {
      out.insert(out.end(), s.begin(), s.end());
      out.resize(AlignUp(out.size(), format::kAlignment), 0);
    }
    index.push_back({offset, out.size() - offset});
  }
  const uint64_t index_offset = out.size();
  format::AppendFrameIndex(index, &out);
  format::AppendTrailer(index_offset, &out);
  return out;
}

// Where section s of frame f begins in the archive.
uint64_t SectionAt(const ArchiveInfo& info, uint64_t f, int s) {
  uint64_t at = info.frames[f].offset + format::kFrameHeaderSize;
  for (int k = 0; k < s; ++k) {
    at += AlignUp(info.frame_headers[f].sections[k].length, format::kAlignment);
  }
  return at;
}

// Section s's CRC in frame f's header rewritten for its bytes, then the
// header's own.
void FixSectionCrc(Bytes& a, const ArchiveInfo& info, uint64_t f, int s) {
  uint8_t* entry = a.data() + info.frames[f].offset + format::kFrameHeaderSectionsAt + 16 * s;
  StoreLE<uint32_t>(entry + 8, Crc32c(a.data() + SectionAt(info, f, s), LoadLE<uint64_t>(entry)));
  uint8_t* fh = a.data() + info.frames[f].offset;
  StoreLE<uint32_t>(fh + format::kFrameHeaderSize - 4, Crc32c(fh, format::kFrameHeaderSize - 4));
}

struct Verdicts {
  int rejected = 0;
  int accepted = 0;
};

// The CPU and the GPU agree on the archive, decoder by decoder: both reject
// it (the GPU with DATA_LOSS), or both decode it to the same bytes. With
// `must_name`, the GPU's rejection names it: the checksums and the padding
// check run beside the decoders, and their finding must come first.
void ExpectAgree(const Bytes& a, const std::string& what, Verdicts* verdicts,
                 const char* must_name = nullptr) {
  SCOPED_TRACE(what);
  std::vector<DecoderKind> decoders = {DecoderKind::kSelfSync, DecoderKind::kChunkParallel};
  auto info = ReadArchiveInfo(a);
  if (info.ok()) decoders = DecodersFor(*info);
  for (DecoderKind d : decoders) {
    if (d == DecoderKind::kAuto) continue;  // the CPU's and the GPU's pick different decoders
    auto cpu = Decompress(a, d);
    auto gpu = GpuDecode(a, d);
    if (!cpu.ok()) {
      ASSERT_FALSE(gpu.ok()) << DecoderKindName(d) << ": the CPU says " << cpu.status()
                             << ", the GPU decoded it";
      EXPECT_EQ(gpu.status().code(), absl::StatusCode::kDataLoss)
          << DecoderKindName(d) << ": " << gpu.status();
      if (must_name != nullptr) {
        EXPECT_NE(gpu.status().message().find(must_name), std::string::npos)
            << DecoderKindName(d) << ": " << gpu.status();
      }
      ++verdicts->rejected;
    } else {
      ASSERT_TRUE(gpu.ok()) << DecoderKindName(d) << ": the CPU decoded it, the GPU says "
                            << gpu.status();
      ASSERT_EQ(FirstDifference(gpu->data, cpu->data, DTypeSize(cpu->spec.dtype)), "")
          << DecoderKindName(d) << " differs from the CPU";
      ++verdicts->accepted;
    }
  }
}

struct Sample {
  std::string name;
  Bytes archive;
};

std::vector<Sample> CorruptionSamples() {
  struct Recipe {
    std::string name;
    DType dtype;
    std::vector<uint64_t> shape;
    Predictor predictor;
    Lossless lossless;
    int order;
    bool fill;
    bool gap_array;
    uint64_t frame_elements;
  };
  const std::vector<Recipe> recipes = {
      {"f32 48x40 interp cubic, mask, runs, gap array", DType::kFloat32, {48, 40},
       Predictor::kInterp, Lossless::kZeroRuns, 3, true, true, 1 << 24},
      {"f64 3000 interp linear, mask, huffman, no gap array", DType::kFloat64, {3000},
       Predictor::kInterp, Lossless::kHuffman, 1, true, false, 1 << 24},
      {"f32 24x8x10 interp, no fill value, runs", DType::kFloat32, {24, 8, 10},
       Predictor::kInterp, Lossless::kZeroRuns, 0, false, true, 1 << 24},
      {"f32 48x40 Lorenzo, runs, fill runs", DType::kFloat32, {48, 40}, Predictor::kLorenzo,
       Lossless::kZeroRuns, 0, true, true, 1 << 24},
      {"f32 64x50 interp, mask, frames", DType::kFloat32, {64, 50}, Predictor::kInterp,
       Lossless::kAuto, 3, true, true, 1000},
      {"f32 48x40 interp cubic, mask, run values, gap array", DType::kFloat32, {48, 40},
       Predictor::kInterp, Lossless::kRunValues, 3, true, true, 1 << 24},
      {"f64 40x60 Lorenzo, run values, no gap array", DType::kFloat64, {40, 60},
       Predictor::kLorenzo, Lossless::kRunValues, 0, false, false, 1 << 24},
  };
  std::vector<Sample> samples;
  uint32_t seed = 900;
  for (const Recipe& r : recipes) {
    CompressOptions o;
    o.predictor = r.predictor;
    o.lossless = r.lossless;
    o.interp_order = r.order;
    o.mode = BoundMode::kRel;
    o.bound = 1e-3;
    o.radius = 8;  // anchors across the step are outliers
    o.chunk_symbols = 256;
    o.subsequence_bits = 64;
    o.gap_array = r.gap_array;
    o.frame_elements = r.frame_elements;
    if (r.fill) o.fill_value = -1e34;
    auto a = Compress({r.dtype, r.shape}, MakeAnyField(r.dtype, r.shape, seed++, true, o.fill_value),
                      o);
    EXPECT_TRUE(a.ok()) << r.name << ": " << a.status();
    if (a.ok()) samples.push_back({r.name, *std::move(a)});
  }
  return samples;
}

// Bytes flipped in every section of the first frames, with and without
// their CRCs rewritten, and padding bytes set.
TEST(GpuV2Decode, FlippedBytesAreRejectedWhereTheCpuRejectsThem) {
  SKIP_WITHOUT_DECODER();
  Verdicts verdicts;
  for (const Sample& sample : CorruptionSamples()) {
    auto info = ReadArchiveInfo(sample.archive);
    ASSERT_TRUE(info.ok());
    ASSERT_EQ(Join(Split(sample.archive)), sample.archive) << sample.name;
    for (uint64_t f = 0; f < std::min<uint64_t>(2, info->frames.size()); ++f) {
      const format::FrameHeader& h = info->frame_headers[f];
      for (int s = 0; s < format::kSectionCount; ++s) {
        const uint64_t length = h.sections[s].length;
        if (length == 0) continue;
        const uint64_t at = SectionAt(*info, f, s);
        for (uint64_t p : {uint64_t{0}, length / 3, length / 2, length - 1}) {
          for (uint8_t flip : {uint8_t{0x01}, uint8_t{0x80}}) {
            for (bool fixed : {false, true}) {
              Bytes bad = sample.archive;
              bad[at + p] ^= flip;
              if (fixed) FixSectionCrc(bad, *info, f, s);
              ExpectAgree(bad,
                          absl::StrCat(sample.name, ", frame ", f, ", ", format::SectionName(s),
                                       " byte ", p, " ^ ", flip, fixed ? ", CRC fixed" : ""),
                          &verdicts, fixed ? nullptr : "checksum");
              if (HasFatalFailure()) return;
            }
          }
        }
        if (AlignUp(length, format::kAlignment) > length) {
          Bytes bad = sample.archive;
          bad[at + length] = 0x20;  // no CRC covers padding
          ExpectAgree(bad, absl::StrCat(sample.name, ", frame ", f, ", ",
                                        format::SectionName(s), " padding"),
                      &verdicts, "padding");
          if (HasFatalFailure()) return;
        }
      }
    }
  }
  std::printf("%d decodes rejected, %d accepted\n", verdicts.rejected, verdicts.accepted);
  EXPECT_GT(verdicts.rejected, 300);
}

bool IsAnchor(const format::FrameHeader& h, uint64_t i) {
  for (int d = h.ndim - 1; d >= 0; --d) {
    const uint64_t c = i % h.shape[d];
    i /= h.shape[d];
    if (h.block[d] > 1 && c % h.block[d] != 0) return false;
  }
  return true;
}

// A region of a frame of many tiles (no fill value) decodes only the chunks
// its tiles and their anchors need, the rest of the frame read as zero
// residuals. With bytes flipped in its symbols, outliers or chunk index and
// the CRC fixed, the GPU's region is never a silent wrong answer: where it
// decodes, the CPU's region decodes to the same bytes; where the CPU
// decodes the whole archive, the GPU decodes the region; and damage to
// chunks the region does not need leaves it decodable.
TEST(GpuV2Decode, RegionsOfEditedArchivesAgreeWithTheCpu) {
  SKIP_WITHOUT_DECODER();
  const std::vector<uint64_t> shape = {1024, 512};
  const ArraySpec spec{DType::kFloat32, shape};
  int rejected = 0, accepted = 0, skipped = 0;
  for (Lossless lossless : {Lossless::kZeroRuns, Lossless::kHuffman, Lossless::kRunValues}) {
    CompressOptions o;
    o.predictor = Predictor::kInterp;
    o.lossless = lossless;
    o.mode = BoundMode::kRel;
    o.bound = 1e-3;
    o.chunk_symbols = 4096;
    auto archive = Compress(spec, MakeAnyField(DType::kFloat32, shape, 77, false, std::nullopt), o);
    ASSERT_TRUE(archive.ok()) << archive.status();
    auto info = ReadArchiveInfo(*archive);
    ASSERT_TRUE(info.ok());
    auto region = ParseHyperslab("700:760,300:340", shape);
    ASSERT_TRUE(region.ok());
    const size_t bytes = region->NumElements() * 4;
    gpu::RegionReader reader;
    std::mt19937_64 rng(lossless == Lossless::kZeroRuns  ? 1
                        : lossless == Lossless::kHuffman ? 2
                                                         : 3);
    for (int s : {format::kBitstream, format::kOutliers, format::kChunkIndex}) {
      const uint64_t length = info->frame_headers[0].sections[s].length;
      for (int k = 0; k < 24 && length > 0; ++k) {
        Bytes bad = *archive;
        const uint64_t p = rng() % length;
        bad[SectionAt(*info, 0, s) + p] ^= static_cast<uint8_t>(1u << (rng() % 8));
        FixSectionCrc(bad, *info, 0, s);
        SCOPED_TRACE(absl::StrCat(format::SectionName(s), " byte ", p));
        auto edited = ReadArchiveInfo(bad);  // its header holds the new CRC
        ASSERT_TRUE(edited.ok()) << edited.status();
        std::vector<uint8_t> gpu_out(bytes), cpu_out(bytes);
        const absl::Status gpu = reader.Read(*edited, bad, *region, gpu_out.data());
        const absl::Status cpu =
            DecompressRegion(*edited, bad, *region, DecoderKind::kAuto, absl::MakeSpan(cpu_out));
        if (gpu.ok()) {
          ASSERT_TRUE(cpu.ok()) << "the GPU decoded the region, the CPU says " << cpu;
          ASSERT_EQ(gpu_out, cpu_out);
          ++accepted;
          // Damage the region never reads: the frame's other chunks.
          skipped += !Decompress(bad).ok();
        } else {
          EXPECT_EQ(gpu.code(), absl::StatusCode::kDataLoss) << gpu;
          EXPECT_FALSE(Decompress(bad).ok()) << "the CPU decodes the archive, the GPU region "
                                             << "says " << gpu;
          ++rejected;
        }
      }
    }
  }
  std::printf("%d regions rejected, %d decoded (%d of them where the whole archive is not)\n",
              rejected, accepted, skipped);
  EXPECT_GT(rejected, 0);
  EXPECT_GT(accepted, 0);
  EXPECT_GT(skipped, 0) << "no region skipped a damaged chunk: not decoded in part?";
}

// Consistent edits (every CRC and length rewritten) of interpolation frames'
// outliers, verbatim values, fill masks and symbol counts: each breaks one
// rule of §15.7 (or none, and then both must decode it alike).
TEST(GpuV2Decode, SemanticEditsAreRejectedWhereTheCpuRejectsThem) {
  SKIP_WITHOUT_DECODER();
  Verdicts verdicts;
  int outlier_edits = 0, mask_edits = 0;
  for (const Sample& sample : CorruptionSamples()) {
    const ArchiveParts intact = Split(sample.archive);
    for (size_t f = 0; f < intact.frames.size(); ++f) {
      const format::FrameHeader& h = intact.frames[f].header;
      const uint64_t n = h.num_elements();
      auto edit = [&](const std::string& name, auto fn) {
        ArchiveParts p = intact;
        if (!fn(p.frames[f])) return;
        ExpectAgree(Join(std::move(p)), absl::StrCat(sample.name, ", frame ", f, ": ", name),
                    &verdicts);
      };
      // Outliers (§5.6: indices, then residuals).
      const uint64_t outliers = h.outlier_count;
      auto index = [](FrameParts& fp, uint64_t k) { return fp.sections[format::kOutliers].data() + 4 * k; };
      if (outliers >= 1) {
        ++outlier_edits;
        edit("outlier index beyond the frame", [&](FrameParts& fp) {
          StoreLE<uint32_t>(index(fp, outliers - 1), static_cast<uint32_t>(n));
          return true;
        });
        edit("outlier index past the next element", [&](FrameParts& fp) {
          const uint32_t i = LoadLE<uint32_t>(index(fp, 0));
          if (outliers > 1 && i + 1 >= LoadLE<uint32_t>(index(fp, 1))) return false;
          if (i + 1 >= n) return false;
          StoreLE<uint32_t>(index(fp, 0), i + 1);
          return true;
        });
        edit("outlier residual changed", [&](FrameParts& fp) {
          uint8_t* r = index(fp, outliers);
          StoreLE<int32_t>(r, LoadLE<int32_t>(r) + 7);
          return true;
        });
      }
      if (outliers >= 2) {
        edit("outlier indices swapped", [&](FrameParts& fp) {
          const uint32_t a = LoadLE<uint32_t>(index(fp, 0)), b = LoadLE<uint32_t>(index(fp, 1));
          StoreLE<uint32_t>(index(fp, 0), b);
          StoreLE<uint32_t>(index(fp, 1), a);
          return true;
        });
        edit("outlier index repeated", [&](FrameParts& fp) {
          StoreLE<uint32_t>(index(fp, 1), LoadLE<uint32_t>(index(fp, 0)));
          return true;
        });
      }
      // An outlier at element 0 (an anchor, whose symbol is not 0) added
      // in front: in order, but at no outlier symbol.
      edit("outlier added", [&](FrameParts& fp) {
        Bytes& sec = fp.sections[format::kOutliers];
        if (outliers >= n || (outliers > 0 && LoadLE<uint32_t>(sec.data()) == 0)) return false;
        Bytes added = {0, 0, 0, 0};
        added.insert(added.end(), sec.begin(), sec.begin() + 4 * outliers);
        added.insert(added.end(), {5, 0, 0, 0});
        added.insert(added.end(), sec.begin() + 4 * outliers, sec.end());
        sec = added;
        ++fp.header.outlier_count;
        return true;
      });
      // Verbatim values (§5.7).
      if (h.verbatim_count >= 2) {
        edit("verbatim indices swapped", [&](FrameParts& fp) {
          uint8_t* v = fp.sections[format::kVerbatim].data();
          const uint32_t a = LoadLE<uint32_t>(v), b = LoadLE<uint32_t>(v + 4);
          StoreLE<uint32_t>(v, b);
          StoreLE<uint32_t>(v + 4, a);
          return true;
        });
      }
      // The symbol count S (§15.2), one off either way.
      for (int delta : {-1, 1}) {
        edit(absl::StrCat("positions ", delta > 0 ? "+1" : "-1"), [&](FrameParts& fp) {
          fp.header.positions = static_cast<uint32_t>(fp.header.positions + delta);
          return true;
        });
      }
      // The fill mask (§15.6), decoded, one element toggled, coded again.
      if (h.fill_coding != format::kFillCodingMask) continue;
      const uint64_t row = h.ndim == 1 ? n : n / h.shape[0];
      std::vector<uint8_t> mask(n);
      auto fills = DecodeFillMask(intact.frames[f].sections[format::kFillRuns], h.fill_run_count,
                                  row, absl::MakeSpan(mask));
      ASSERT_TRUE(fills.ok()) << fills.status();
      auto toggle = [&](const std::string& name, bool anchor, uint8_t from, int positions_delta) {
        uint64_t e = n;
        for (uint64_t i = n / 2; i < n + n / 2; ++i) {
          if (IsAnchor(h, i % n) == anchor && mask[i % n] == from) {
            e = i % n;
            break;
          }
        }
        if (e == n) return;
        ++mask_edits;
        edit(name, [&](FrameParts& fp) {
          std::vector<uint8_t> m = mask;
          m[e] ^= 1;
          EncodedFillMask enc = EncodeFillMask(m, row);
          fp.sections[format::kFillRuns] = enc.section;
          fp.header.fill_run_count = enc.tokens;
          fp.header.positions = static_cast<uint32_t>(fp.header.positions + positions_delta);
          return true;
        });
      };
      // An element without a symbol more: S no longer matches (§15.7 step 1).
      toggle("mask: a non-anchor becomes fill", false, 0, 0);
      toggle("mask: a fill non-anchor becomes data", false, 1, 0);
      // ... and with S following the mask: the bitstream then has a symbol
      // too many or too few.
      toggle("mask: a non-anchor becomes fill, S - 1", false, 0, -1);
      toggle("mask: a fill non-anchor becomes data, S + 1", false, 1, 1);
      // Anchors carry symbols either way: valid, fill overwrites it.
      toggle("mask: an anchor becomes fill", true, 0, 0);
      toggle("mask: a fill anchor becomes data", true, 1, 0);
      if (HasFatalFailure()) return;
    }
  }
  std::printf("%d decodes rejected, %d accepted; %d frames with outliers edited, %d mask edits\n",
              verdicts.rejected, verdicts.accepted, outlier_edits, mask_edits);
  EXPECT_GT(outlier_edits, 2);
  EXPECT_GT(mask_edits, 10);
  EXPECT_GT(verdicts.accepted, 10);
  EXPECT_GT(verdicts.rejected, 50);
}

// A tile whose closed box the GPU cannot hold in shared memory (1-D, 32768
// doubles): UNIMPLEMENTED, which sends the work to the CPU codec.
TEST(GpuV2Decode, TilesTooLargeForTheGpuAreUnimplemented) {
  SKIP_WITHOUT_DECODER();
  if (CpuStandIn()) GTEST_SKIP() << "planning needs the device";
  CompressOptions o;
  o.predictor = Predictor::kInterp;
  o.mode = BoundMode::kRel;
  o.bound = 1e-3;
  const ArraySpec spec{DType::kFloat64, {40000}};
  auto a = Compress(spec, MakeField<double>(spec.shape, 3, false, std::nullopt), o);
  ASSERT_TRUE(a.ok()) << a.status();
  ArchiveParts p = Split(*a);
  ASSERT_EQ(p.frames.size(), 1u);
  ASSERT_EQ(p.frames[0].header.predictor, format::kPredictorInterp);
  p.frames[0].header.block[0] = 32768;
  const Bytes edited = Join(std::move(p));
  auto info = ReadArchiveInfo(edited);
  ASSERT_TRUE(info.ok()) << info.status();
  DecompressTask task;
  task.info = &*info;
  EXPECT_EQ(DecompressWorkspaceSize({&task, 1}, DecoderKind::kAuto).status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(GpuDecode(edited, DecoderKind::kAuto).status().code(),
            absl::StatusCode::kUnimplemented);
}

// A batch in which one archive is corrupt fails as a whole, naming the
// corrupt frame's place in the batch.
TEST(GpuV2Decode, ACorruptArchiveFailsItsBatch) {
  SKIP_WITHOUT_DECODER();
  if (CpuStandIn()) GTEST_SKIP() << "batches need the device";
  Coverage coverage;
  std::vector<Bytes> archives = MixedArchives(DType::kFloat32, &coverage);
  ASSERT_FALSE(archives.empty());
  // Archive 1 (one interpolation frame, batch frame 1): its first outlier
  // index beyond the frame, CRCs rewritten.
  ArchiveParts p = Split(archives[1]);
  ASSERT_EQ(p.frames.size(), 1u);
  ASSERT_GT(p.frames[0].header.outlier_count, 0u);
  StoreLE<uint32_t>(p.frames[0].sections[format::kOutliers].data(),
                    static_cast<uint32_t>(p.frames[0].header.num_elements()));
  archives[1] = Join(std::move(p));
  ASSERT_FALSE(Decompress(archives[1]).ok());
  std::vector<Bytes> outputs;
  const absl::Status s = DecodeBatch(archives, DecoderKind::kAuto, &outputs);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("(batch frame 1)"), std::string::npos) << s;
}

}  // namespace
}  // namespace ebzip::gpu
