// The GPU compressor writing format version 2 (FORMAT.md §15): every archive
// byte-identical to the CPU codec's (the same predictor chosen per frame on
// the same sample, the same stage, the same fill mask), within the bound as
// the independent checker sees it. Skips where no CUDA device is visible.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "codec/archive.h"
#include "codec/byte_io.h"
#include "codec/format.h"
#include "gpu/gpu_codec.h"
#include "gtest/gtest.h"
#include "tests/gpu/gpu_test_fields.h"
#include "tests/real_fields.h"

namespace ebzip::gpu {
namespace {

using testing_fields::ExpectSameAsCpu;
using testing_fields::MakeAnyField;

// The option sets a user can give: the per-frame choice, and each predictor
// and stage forced.
std::vector<CompressOptions> OptionSets() {
  std::vector<CompressOptions> sets;
  CompressOptions o;  // auto, auto
  sets.push_back(o);
  o.predictor = Predictor::kInterp;
  o.lossless = Lossless::kZeroRuns;
  sets.push_back(o);
  o.lossless = Lossless::kRunValues;
  sets.push_back(o);
  o.lossless = Lossless::kHuffman;
  o.interp_order = 1;
  sets.push_back(o);
  o = CompressOptions();
  o.predictor = Predictor::kLorenzo;
  o.lossless = Lossless::kZeroRuns;
  sets.push_back(o);
  o.lossless = Lossless::kRunValues;
  sets.push_back(o);
  o.lossless = Lossless::kAuto;
  sets.push_back(o);
  return sets;
}

TEST(GpuV2Compress, SmallCasesEveryPredictorAndStage) {
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
      {{200, 300}, DType::kFloat64, BoundMode::kRel, 1e-2},
      {{9, 10, 11}, DType::kFloat64, BoundMode::kRel, 1e-5},
      {{20, 40, 50}, DType::kFloat32, BoundMode::kRel, 1e-3},
      {{3, 9, 10, 11}, DType::kFloat32, BoundMode::kRel, 1e-3},
      {{5000}, DType::kFloat32, BoundMode::kAbs, 1e-12},   // nearly all outliers
      {{64, 64}, DType::kFloat32, BoundMode::kAbs, 1e30},  // one symbol: all runs
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    const ArraySpec spec{c.dtype, c.shape};
    for (CompressOptions options : OptionSets()) {
      options.mode = c.mode;
      options.bound = c.bound;
      ExpectSameAsCpu(spec, MakeAnyField(c.dtype, spec.num_elements(), seed++, true, std::nullopt),
                      options);
      options.fill_value = -1e34;
      ExpectSameAsCpu(spec, MakeAnyField(c.dtype, spec.num_elements(), seed++, true, -1e34),
                      options);
      if (HasFatalFailure()) return;
    }
  }
}

// Frames over 2^20 elements choose on stripes of rows (FORMAT.md §15.9),
// copied to the host from the device: 1-D, 2-D and 3-D, with fill.
TEST(GpuV2Compress, FramesOverTheSampleLimitChooseOnStripes) {
  SKIP_WITHOUT_GPU();
  const std::vector<ArraySpec> specs = {{DType::kFloat64, {3000000}},
                                        {DType::kFloat32, {2048, 1024}},
                                        {DType::kFloat32, {40, 200, 200}}};
  uint32_t seed = 50;
  for (const ArraySpec& spec : specs) {
    CompressOptions options;
    options.mode = BoundMode::kRel;
    options.bound = 1e-3;
    ExpectSameAsCpu(spec, MakeAnyField(spec.dtype, spec.num_elements(), seed++, true, std::nullopt),
                    options);
    options.fill_value = 9.96921e36;
    ExpectSameAsCpu(spec, MakeAnyField(spec.dtype, spec.num_elements(), seed++, true, 9.96921e36),
                    options);
    if (HasFatalFailure()) return;
  }
}

// Many frames in one array, each choosing for itself.
TEST(GpuV2Compress, ManyFramesChooseEachForItself) {
  SKIP_WITHOUT_GPU();
  const ArraySpec spec{DType::kFloat32, {100, 50, 40}};
  for (std::optional<double> fill : {std::optional<double>(), std::optional<double>(-999.0)}) {
    CompressOptions options;
    options.mode = BoundMode::kRel;
    options.bound = 1e-4;
    options.fill_value = fill;
    options.frame_elements = 20000;
    ExpectSameAsCpu(spec, MakeAnyField(spec.dtype, spec.num_elements(), 77, true, fill), options);
  }
}

// Fill in whole rows, whole tiles and a whole frame: interpolation frames
// whose symbols are mostly anchors' (S far below n), and one that is all
// fill.
TEST(GpuV2Compress, FillInRowsTilesAndWholeFrames) {
  SKIP_WITHOUT_GPU();
  const uint64_t rows = 96, cols = 80;
  auto data = MakeAnyField(DType::kFloat32, rows * cols, 9, false, std::nullopt);
  float* v = reinterpret_cast<float*>(data.data());
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t c = 0; c < cols; ++c) {
      const bool row_fill = r % 5 == 0;
      const bool tile_fill = r >= 32 && r < 64 && c < 32;
      const bool frame_fill = r >= 64;  // with frames of 32 rows: frame 2 is all fill
      if (row_fill || tile_fill || frame_fill) v[r * cols + c] = -1.0f;
    }
  }
  for (CompressOptions options : OptionSets()) {
    options.mode = BoundMode::kAbs;
    options.bound = 1e-3;
    options.fill_value = -1.0;
    options.frame_elements = 32 * cols;
    ExpectSameAsCpu({DType::kFloat32, {rows, cols}}, data, options);
  }
}

// Fields made for the choice of predictor (FORMAT.md §15.9): each candidate
// winning somewhere, candidates estimated nearly alike (a constant, a ramp,
// a multilinear product), fill, 1-D to 4-D, frames under and over the
// 2^20-element sample (the whole frame, or stripes).
enum class Kind { kSmooth, kNoisy, kCliffs, kConstant, kRamp, kProduct, kRipple };

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kSmooth: return "smooth";
    case Kind::kNoisy: return "noisy";
    case Kind::kCliffs: return "cliffs";
    case Kind::kConstant: return "constant";
    case Kind::kRamp: return "ramp";
    case Kind::kProduct: return "product";
    case Kind::kRipple: return "ripple";
  }
  return "?";
}

template <typename T>
std::vector<uint8_t> ChoiceFieldT(const std::vector<uint64_t>& shape, Kind kind, uint32_t seed,
                                  std::optional<double> fill) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 1);
  std::uniform_real_distribution<double> level(-50, 50);
  std::vector<double> levels(64);
  for (double& l : levels) l = level(rng);
  std::vector<T> v(n);
  uint64_t c[4] = {0, 0, 0, 0};
  const int nd = static_cast<int>(shape.size());
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t rest = i;
    for (int d = nd - 1; d >= 0; --d) {
      c[d] = rest % shape[d];
      rest /= shape[d];
    }
    double x = 0;
    switch (kind) {
      case Kind::kSmooth:
      case Kind::kNoisy: {
        double prod = 1;
        for (int d = 0; d < nd; ++d) {
          x += 30 * std::sin(0.013 * (d + 1) * c[d] + d);
          prod *= std::cos(0.007 * c[d]);
        }
        x += 40 * prod;
        if (kind == Kind::kNoisy) x += 3 * noise(rng);
        break;
      }
      case Kind::kCliffs: {
        uint64_t cell = 0;
        for (int d = 0; d < nd; ++d) cell = cell * 7 + c[d] / (5 + 3 * d);
        x = levels[cell % levels.size()];
        break;
      }
      case Kind::kConstant:
        x = 3.25;
        break;
      case Kind::kRamp:
        for (int d = 0; d < nd; ++d) x += 0.25 * (d + 1) * c[d];
        break;
      case Kind::kProduct:
        x = 1;
        for (int d = 0; d < nd; ++d) x *= 1 + 0.01 * c[d];
        break;
      case Kind::kRipple: {
        uint64_t parity = 0;
        for (int d = 0; d < nd; ++d) parity += c[d];
        x = 20 * std::sin(0.01 * i) + (parity % 2 ? 4.0 : -4.0) + 0.5 * noise(rng);
        break;
      }
    }
    v[i] = static_cast<T>(x);
  }
  if (fill) {
    for (uint64_t i = n / 4; i < n / 4 + n / 6; ++i) v[i] = static_cast<T>(*fill);
    for (uint64_t i = 11; i < n; i += 89) v[i] = static_cast<T>(*fill);
  }
  std::vector<uint8_t> bytes(n * sizeof(T));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

std::vector<uint8_t> ChoiceField(const ArraySpec& spec, Kind kind, uint32_t seed,
                                 std::optional<double> fill) {
  return spec.dtype == DType::kFloat32 ? ChoiceFieldT<float>(spec.shape, kind, seed, fill)
                                       : ChoiceFieldT<double>(spec.shape, kind, seed, fill);
}

struct ChoiceCase {
  ArraySpec spec;
  Kind kind;
  CompressOptions options;
};

std::string Describe(const ChoiceCase& c) {
  return ShapeToString(c.spec.shape) + " " + DTypeName(c.spec.dtype) + " " + KindName(c.kind) +
         " bound " + std::to_string(c.options.bound) + testing_fields::Describe(c.options);
}

std::vector<ChoiceCase> ChoiceCases() {
  const std::vector<ArraySpec> shapes = {
      {DType::kFloat32, {300000}},
      {DType::kFloat64, {1500000}},
      {DType::kFloat32, {700, 900}},
      {DType::kFloat32, {1500, 1000}},
      {DType::kFloat32, {40, 60, 70}},
      {DType::kFloat64, {64, 128, 160}},
      {DType::kFloat32, {6, 20, 30, 40}},
      {DType::kFloat32, {10, 40, 50, 60}},
      // Samples of two and four rows (§15.9's m for rows of 2^19 and 2^18
      // elements), whose Lorenzo blocks the device stacks.
      {DType::kFloat32, {6, 512, 1024}},
      {DType::kFloat32, {9, 512, 512}}};
  std::vector<ChoiceCase> cases;
  int k = 0;
  for (const ArraySpec& spec : shapes) {
    for (Kind kind : {Kind::kSmooth, Kind::kNoisy, Kind::kCliffs, Kind::kConstant, Kind::kRamp,
                      Kind::kProduct, Kind::kRipple}) {
      ChoiceCase c{spec, kind, {}};
      c.options.mode = BoundMode::kRel;
      c.options.bound = (k % 3 == 0) ? 1e-4 : (k % 3 == 1 ? 1e-3 : 1e-2);
      if (k % 4 == 1) c.options.fill_value = -9999.0;
      if (k % 5 == 2) c.options.predictor = Predictor::kInterp;  // both orders, both tilings
      ++k;
      cases.push_back(c);
    }
  }
  return cases;
}

// Which predictor each frame of an archive took: "lorenzo", "interp3 16x16x16" ...
std::string WinnerOf(const format::FrameHeader& h) {
  if (h.predictor == format::kPredictorLorenzo) return "lorenzo";
  std::string s = "interp" + std::to_string(h.order);
  for (int d = 0; d < h.ndim; ++d) s += (d == 0 ? " " : "x") + std::to_string(h.block[d]);
  return s;
}

// Needs no device: the CPU codec's choices on these fields cover every kind
// of candidate, so the device test below compares every kind of winner.
TEST(GpuV2Compress, ChoiceCasesCoverEveryCandidate) {
  std::map<std::string, int> wins;
  uint32_t seed = 500;
  for (const ChoiceCase& c : ChoiceCases()) {
    auto cpu = Compress(c.spec, ChoiceField(c.spec, c.kind, seed++, c.options.fill_value),
                        c.options);
    ASSERT_TRUE(cpu.ok()) << Describe(c) << ": " << cpu.status();
    auto info = ReadArchiveInfo(*cpu);
    ASSERT_TRUE(info.ok()) << info.status();
    std::string took;
    for (const format::FrameHeader& h : info->frame_headers) {
      ++wins[WinnerOf(h)];
      took += " " + WinnerOf(h);
    }
    std::printf("%-60s%s\n", Describe(c).c_str(), took.c_str());
  }
  for (const char* kind : {"lorenzo", "interp1", "interp3"}) {
    int any = 0;
    for (const auto& [winner, count] : wins) {
      if (winner.rfind(kind, 0) == 0) any += count;
    }
    EXPECT_GT(any, 0) << kind << " wins nowhere";
  }
}

// Needs no device either: with the default Lossless::kAuto, the CPU codec
// picks each lossless stage (FORMAT.md §15.9) somewhere on these fields, so
// the device test below compares every stage's choice, run-value tokens
// (lossless 2) included.
TEST(GpuV2Compress, ChoiceCasesCoverEveryStage) {
  int stages[3] = {0, 0, 0};
  uint32_t seed = 500;
  for (const ChoiceCase& c : ChoiceCases()) {
    ASSERT_EQ(c.options.lossless, Lossless::kAuto);
    auto cpu =
        Compress(c.spec, ChoiceField(c.spec, c.kind, seed++, c.options.fill_value), c.options);
    ASSERT_TRUE(cpu.ok()) << Describe(c) << ": " << cpu.status();
    auto info = ReadArchiveInfo(*cpu);
    ASSERT_TRUE(info.ok()) << info.status();
    for (const format::FrameHeader& h : info->frame_headers) {
      ASSERT_LE(h.lossless, format::kLosslessRunValues);
      ++stages[h.lossless];
    }
  }
  std::printf("frames by lossless stage: %d plain, %d zero-run tokens, %d run-value tokens\n",
              stages[0], stages[1], stages[2]);
  for (int id = 0; id < 3; ++id) EXPECT_GT(stages[id], 0) << "lossless " << id << " never chosen";
}

TEST(GpuV2Compress, ChoiceCasesAreByteIdentical) {
  SKIP_WITHOUT_GPU();
  uint32_t seed = 500;
  for (const ChoiceCase& c : ChoiceCases()) {
    SCOPED_TRACE(Describe(c));
    ExpectSameAsCpu(c.spec, ChoiceField(c.spec, c.kind, seed++, c.options.fill_value), c.options);
    if (HasFatalFailure()) return;
  }
}

TEST(GpuV2Compress, RealFieldsAreByteIdentical) {
  SKIP_WITHOUT_GPU();
  for (const char* name : {"etopo5", "temp", "uwnd", "salt"}) {
    auto loaded = testing_fields::GpuHostField(name);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    if (!loaded->has_value()) continue;
    const LoadedArray& field = **loaded;
    for (double rel : {1e-2, 1e-3, 1e-4, 1e-5}) {
      CompressOptions options;
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

// One batch of these arrays, the codes built by `builder`: each archive is
// the CPU's.
void ExpectBatchMatchesOneByOne(const std::vector<ArraySpec>& specs,
                                const std::vector<CompressOptions>& options,
                                const std::vector<std::vector<uint8_t>>& data,
                                CodeBuilder builder) {
  std::vector<std::vector<uint8_t>> expected;
  std::vector<void*> inputs, archives;
  std::vector<CompressTask> tasks;
  uint64_t* sizes = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&sizes), specs.size() * 8), cudaSuccess);
  for (size_t i = 0; i < specs.size(); ++i) {
    auto cpu = Compress(specs[i], data[i], options[i]);
    ASSERT_TRUE(cpu.ok());
    expected.push_back(*cpu);
    void* in = nullptr;
    void* out = nullptr;
    const uint64_t capacity = MaxArchiveBytes(specs[i], options[i]);
    ASSERT_EQ(cudaMalloc(&in, data[i].size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out, capacity), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(in, data[i].data(), data[i].size(), cudaMemcpyHostToDevice), cudaSuccess);
    inputs.push_back(in);
    archives.push_back(out);
    tasks.push_back({specs[i], options[i], in, static_cast<uint8_t*>(out), capacity, sizes + i});
  }
  auto need = CompressWorkspaceSize(tasks, builder);
  ASSERT_TRUE(need.ok()) << need.status();
  Workspace ws{nullptr, need->device_bytes, nullptr, need->host_bytes};
  ASSERT_EQ(cudaMalloc(&ws.device, ws.device_bytes), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&ws.host, std::max<size_t>(ws.host_bytes, 1)), cudaSuccess);
  const absl::Status run = CompressBatch(tasks, ws, nullptr, nullptr, builder);
  ASSERT_TRUE(run.ok()) << run;
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<uint64_t> got(specs.size());
  ASSERT_EQ(cudaMemcpy(got.data(), sizes, got.size() * 8, cudaMemcpyDeviceToHost), cudaSuccess);
  for (size_t i = 0; i < specs.size(); ++i) {
    ASSERT_EQ(got[i], expected[i].size()) << "array " << i;
    std::vector<uint8_t> archive(got[i]);
    ASSERT_EQ(cudaMemcpy(archive.data(), archives[i], got[i], cudaMemcpyDeviceToHost), cudaSuccess);
    if (archive != expected[i]) ADD_FAILURE() << "array " << i << ": " << testing_fields::WhereTheyDiffer(expected[i], archive);
    cudaFree(inputs[i]);
    cudaFree(archives[i]);
  }
  cudaFree(sizes);
  cudaFree(ws.device);
  cudaFreeHost(ws.host);
}

// One batch of arrays with version-1 and version-2 options, the codes built
// either way: each archive is the CPU's.
void ExpectMixedBatchMatchesOneByOne(CodeBuilder builder) {
  const std::vector<ArraySpec> specs = {{DType::kFloat32, {1000}},
                                        {DType::kFloat32, {31, 47}},
                                        {DType::kFloat32, {5, 6, 7}},
                                        {DType::kFloat32, {123456}},
                                        {DType::kFloat32, {1}}};
  std::vector<CompressOptions> options(specs.size());
  std::vector<std::vector<uint8_t>> data;
  for (size_t i = 0; i < specs.size(); ++i) {
    options[i].mode = BoundMode::kRel;
    options[i].bound = 1e-4;
    if (i % 2 == 1) {  // version 1
      options[i].predictor = Predictor::kLorenzo;
      options[i].lossless = Lossless::kHuffman;
    }
    if (i == 2) options[i].fill_value = -5.0;
    data.push_back(MakeAnyField(DType::kFloat32, specs[i].num_elements(), 100 + i, true,
                                options[i].fill_value));
  }
  ExpectBatchMatchesOneByOne(specs, options, data, builder);
}

// Several arrays of several frames each in one batch: the survey runs each
// candidate over consecutive frames of one shape together (and the
// interpolation frames are encoded so), frames of different arrays each
// with its own bound and input, never frames of another shape (the last of
// an array). The third array's frames exceed the sample: their stripes are
// gathered.
TEST(GpuV2Compress, SurveyBatchesAcrossFramesAndArrays) {
  SKIP_WITHOUT_GPU();
  const std::vector<ArraySpec> specs = {{DType::kFloat32, {50, 64, 64}},
                                        {DType::kFloat32, {45, 64, 64}},
                                        {DType::kFloat32, {3000, 700}},
                                        {DType::kFloat32, {2000}}};
  std::vector<CompressOptions> options(specs.size());
  std::vector<std::vector<uint8_t>> data;
  for (size_t i = 0; i < specs.size(); ++i) {
    options[i].mode = BoundMode::kRel;
    options[i].bound = i == 1 ? 1e-2 : 1e-4;
    options[i].frame_elements = i == 2 ? 700 * 1600 : (i == 3 ? 500 : 10 * 64 * 64);
    if (i == 1) options[i].fill_value = -9999.0;
    data.push_back(ChoiceField(specs[i], i == 2 ? Kind::kNoisy : Kind::kSmooth,
                               static_cast<uint32_t>(900 + i), options[i].fill_value));
  }
  ExpectBatchMatchesOneByOne(specs, options, data, CodeBuilder::kDevice);
}

// A batch of small requests: arrays of one shape, each its own allocation
// (inputs off any one stride), bounds of every kind (relative bounds of
// three sizes, absolute ones, so each array's bound differs), with and
// without a fill value, float32 and float64 apart: the survey and the
// encoder take the arrays of one shape and fill coding as one batch, each
// frame with its own input and bound, and every archive is the CPU's.
TEST(GpuV2Compress, SmallArraysOfOneShapeShareBatches) {
  SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    std::vector<ArraySpec> specs;
    std::vector<CompressOptions> options;
    std::vector<std::vector<uint8_t>> data;
    // Runs of one shape: ten arrays; the four frames of an array cut in
    // rows followed by an array of their shape; six with a fill value (a
    // fill mask each); six of another shape. A noisy array in the first run
    // may choose Lorenzo and split it.
    for (int i = 0; i < 24; ++i) {
      const ArraySpec spec = i >= 18   ? ArraySpec{dtype, {16, 24, 40}}
                             : i == 11 ? ArraySpec{dtype, {16, 1024}}
                                       : ArraySpec{dtype, {64, 1024}};
      CompressOptions o;
      o.mode = i % 4 == 3 ? BoundMode::kAbs : BoundMode::kRel;
      o.bound = o.mode == BoundMode::kAbs ? 0.001 * (i + 1)
                                          : (i % 3 == 0 ? 1e-2 : i % 3 == 1 ? 1e-3 : 1e-4);
      if ((i >= 12 && i < 18) || i == 20) o.fill_value = -9999.0;
      if (i == 10) o.frame_elements = 16 * 1024;  // 4 frames of 16 rows
      specs.push_back(spec);
      options.push_back(o);
      data.push_back(ChoiceField(spec, i == 4 || i == 21 ? Kind::kNoisy : Kind::kSmooth,
                                 static_cast<uint32_t>(300 + i), o.fill_value));
    }
    SCOPED_TRACE(DTypeName(dtype));
    ExpectBatchMatchesOneByOne(specs, options, data, CodeBuilder::kDevice);
    ExpectBatchMatchesOneByOne(specs, options, data, CodeBuilder::kHost);
  }
}

TEST(GpuV2Compress, MixedBatchMatchesOneByOne) {
  SKIP_WITHOUT_GPU();
  ExpectMixedBatchMatchesOneByOne(CodeBuilder::kDevice);
  ExpectMixedBatchMatchesOneByOne(CodeBuilder::kHost);
}

// An archive too big for its buffer: the size says how big, nothing is
// written (the fill mask included).
TEST(GpuV2Compress, OverflowWritesNothing) {
  SKIP_WITHOUT_GPU();
  const ArraySpec spec{DType::kFloat32, {64, 64}};
  CompressOptions options;
  options.predictor = Predictor::kInterp;
  options.bound = 1e-9;  // incompressible
  options.fill_value = -1e34;
  testing_fields::ExpectOverflowWritesNothing(
      spec, MakeAnyField(DType::kFloat32, 64 * 64, 5, true, -1e34), options, 1024);
}

// A metadata block is the CPU codec's for now: UNIMPLEMENTED sends the
// service's work there. Needs no device: planning happens on the host.
TEST(GpuV2Compress, MetadataIsUnimplemented) {
  CompressTask task;
  task.spec = {DType::kFloat32, {64, 64}};
  task.options.mode = BoundMode::kRel;
  task.options.bound = 1e-3;
  task.options.metadata = "{\"units\": \"K\"}";
  const auto status = CompressWorkspaceSize({&task, 1}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented) << status;
}

}  // namespace
}  // namespace ebzip::gpu
