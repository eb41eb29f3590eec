// The GPU compressor writing format version 2 (FORMAT.md §15): every archive
// byte-identical to the CPU codec's (the same predictor chosen per frame on
// the same sample, the same stage, the same fill mask), within the bound as
// the independent checker sees it. Skips where no CUDA device is visible.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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

using testing_fields::Check;
using testing_fields::MakeAnyField;

std::string Describe(const CompressOptions& o) {
  return std::string(" predictor ") + std::to_string(static_cast<int>(o.predictor)) +
         " lossless " + std::to_string(static_cast<int>(o.lossless)) + " order " +
         std::to_string(o.interp_order) + (o.fill_value ? " fill" : "");
}

// Where two archives of the same size first differ: the byte, and for the
// first frame whose sections differ, each differing section's first byte.
std::string WhereTheyDiffer(const std::vector<uint8_t>& cpu, const std::vector<uint8_t>& gpu) {
  uint64_t first = 0;
  while (gpu[first] == cpu[first]) ++first;
  std::string out = "archives differ first at byte " + std::to_string(first) + " of " +
                    std::to_string(cpu.size());
  auto info = ReadArchiveInfo(cpu);
  if (!info.ok()) return out;
  for (uint64_t f = 0; f < info->frames.size(); ++f) {
    const format::FrameHeader& h = info->frame_headers[f];
    uint64_t at = info->frames[f].offset + format::kFrameHeaderSize;
    std::string sections;
    for (int k = 0; k < format::kSectionCount; ++k) {
      for (uint64_t i = 0; i < h.sections[k].length; ++i) {
        if (cpu[at + i] != gpu[at + i]) {
          sections += " section " + std::to_string(k) + " at " + std::to_string(i) + " of " +
                      std::to_string(h.sections[k].length) + " (cpu " +
                      std::to_string(cpu[at + i]) + ", gpu " + std::to_string(gpu[at + i]) + ")";
          break;
        }
      }
      at += AlignUp(h.sections[k].length, format::kAlignment);
    }
    if (!sections.empty()) {
      return out + "; frame " + std::to_string(f) + " (predictor " +
             std::to_string(h.predictor) + ", lossless " + std::to_string(h.lossless) +
             ", fill coding " + std::to_string(h.fill_coding) + ", S " +
             std::to_string(h.positions) + "):" + sections;
    }
  }
  return out;
}

// The GPU archive is the CPU archive; it decodes within the bound, and the
// GPU decoder gives the CPU decoder's bytes.
void ExpectSameAsCpu(const ArraySpec& spec, const std::vector<uint8_t>& data,
                     const CompressOptions& options) {
  SCOPED_TRACE(ShapeToString(spec.shape) + " " + DTypeName(spec.dtype) + " " +
               BoundModeName(options.mode) + " " + std::to_string(options.bound) +
               Describe(options));
  auto cpu = Compress(spec, data, options);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  auto gpu = CompressHost(spec, data, options);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  ASSERT_EQ(gpu->size(), cpu->size());
  if (*gpu != *cpu) FAIL() << WhereTheyDiffer(*cpu, *gpu);
  auto reference = Decompress(*cpu);
  ASSERT_TRUE(reference.ok()) << reference.status();
  const auto check = Check(spec, data, reference->data, reference->abs_bound, options.fill_value);
  EXPECT_TRUE(check.ok()) << check.Describe();
  auto decoded = DecompressHost(*cpu);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_TRUE(decoded->data == reference->data) << "the GPU decoder differs from the CPU's";
}

// The option sets a user can give: the per-frame choice, and each predictor
// and stage forced.
std::vector<CompressOptions> OptionSets() {
  std::vector<CompressOptions> sets;
  CompressOptions o;  // auto, auto
  sets.push_back(o);
  o.predictor = Predictor::kInterp;
  o.lossless = Lossless::kZeroRuns;
  sets.push_back(o);
  o.lossless = Lossless::kHuffman;
  o.interp_order = 1;
  sets.push_back(o);
  o = CompressOptions();
  o.predictor = Predictor::kLorenzo;
  o.lossless = Lossless::kZeroRuns;
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

// One batch of arrays with version-1 and version-2 options, the codes built
// either way: each archive is the CPU's.
void ExpectMixedBatchMatchesOneByOne(CodeBuilder builder) {
  const std::vector<ArraySpec> specs = {{DType::kFloat32, {1000}},
                                        {DType::kFloat32, {31, 47}},
                                        {DType::kFloat32, {5, 6, 7}},
                                        {DType::kFloat32, {123456}},
                                        {DType::kFloat32, {1}}};
  std::vector<CompressOptions> options(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    options[i].mode = BoundMode::kRel;
    options[i].bound = 1e-4;
    if (i % 2 == 1) {  // version 1
      options[i].predictor = Predictor::kLorenzo;
      options[i].lossless = Lossless::kHuffman;
    }
    if (i == 2) options[i].fill_value = -5.0;
  }
  std::vector<std::vector<uint8_t>> expected;
  std::vector<void*> inputs, archives;
  std::vector<CompressTask> tasks;
  uint64_t* sizes = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&sizes), specs.size() * 8), cudaSuccess);
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto data = MakeAnyField(DType::kFloat32, specs[i].num_elements(), 100 + i, true,
                                   options[i].fill_value);
    auto cpu = Compress(specs[i], data, options[i]);
    ASSERT_TRUE(cpu.ok());
    expected.push_back(*cpu);
    void* in = nullptr;
    void* out = nullptr;
    const uint64_t capacity = MaxArchiveBytes(specs[i], options[i]);
    ASSERT_EQ(cudaMalloc(&in, data.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out, capacity), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(in, data.data(), data.size(), cudaMemcpyHostToDevice), cudaSuccess);
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
    EXPECT_TRUE(archive == expected[i]) << "array " << i;
    cudaFree(inputs[i]);
    cudaFree(archives[i]);
  }
  cudaFree(sizes);
  cudaFree(ws.device);
  cudaFreeHost(ws.host);
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
