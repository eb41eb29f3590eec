// Test fields and checks shared by the GPU codec's tests.
#ifndef EBZIP_TESTS_GPU_GPU_TEST_FIELDS_H_
#define EBZIP_TESTS_GPU_GPU_TEST_FIELDS_H_

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codec/archive.h"
#include "codec/byte_io.h"
#include "codec/format.h"
#include "codec/types.h"
#include "gpu/gpu_codec.h"
#include "gtest/gtest.h"
#include "tests/bound_checker.h"
#include "tests/real_fields.h"

// Skips the current test where no CUDA device is visible (CI has none).
#define SKIP_WITHOUT_GPU()                                                                    \
  do {                                                                                        \
    if (absl::Status s = ::ebzip::gpu::DeviceAvailable(); !s.ok()) GTEST_SKIP() << s.message(); \
  } while (0)

namespace ebzip::gpu::testing_fields {

// A smooth field with noise, and (optionally) the values that must survive
// bit for bit: NaN, +-Inf, -0.0, a subnormal, an outlier, and runs of a fill
// value.
template <typename T>
std::vector<uint8_t> MakeField(uint64_t n, uint32_t seed, bool specials,
                               std::optional<double> fill) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 0.05);
  std::vector<T> v(n);
  for (uint64_t i = 0; i < n; ++i) {
    v[i] = static_cast<T>(100 * std::sin(i * 0.001) + 20 * std::cos(i * 0.037) + noise(rng));
  }
  if (specials && n > 16) {
    std::uniform_int_distribution<uint64_t> at(0, n - 1);
    v[at(rng)] = std::numeric_limits<T>::quiet_NaN();
    v[at(rng)] = std::numeric_limits<T>::infinity();
    v[at(rng)] = -std::numeric_limits<T>::infinity();
    v[at(rng)] = static_cast<T>(-0.0);
    v[at(rng)] = std::numeric_limits<T>::denorm_min();
    v[at(rng)] = static_cast<T>(1e30);  // far outside the range: an outlier
  }
  if (fill) {
    for (uint64_t i = n / 3; i < n / 3 + n / 5; ++i) v[i] = static_cast<T>(*fill);
    for (uint64_t i = 7; i < n; i += 97) v[i] = static_cast<T>(*fill);
  }
  std::vector<uint8_t> bytes(n * sizeof(T));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

inline std::vector<uint8_t> MakeAnyField(DType dtype, uint64_t n, uint32_t seed, bool specials,
                                         std::optional<double> fill) {
  return dtype == DType::kFloat32 ? MakeField<float>(n, seed, specials, fill)
                                  : MakeField<double>(n, seed, specials, fill);
}

inline ::ebzip::testing::CheckResult Check(const ArraySpec& spec,
                                           const std::vector<uint8_t>& original,
                                           const std::vector<uint8_t>& decoded, double abs_bound,
                                           std::optional<double> fill) {
  const uint64_t n = spec.num_elements();
  if (spec.dtype == DType::kFloat32) {
    return ::ebzip::testing::CheckBound(reinterpret_cast<const float*>(original.data()),
                                        reinterpret_cast<const float*>(decoded.data()), n,
                                        abs_bound, fill);
  }
  return ::ebzip::testing::CheckBound(reinterpret_cast<const double*>(original.data()),
                                      reinterpret_cast<const double*>(decoded.data()), n,
                                      abs_bound, fill);
}

// The options a test case ran with, for its trace.
inline std::string Describe(const CompressOptions& o) {
  return std::string(BoundModeName(o.mode)) + " " + std::to_string(o.bound) +
         " predictor " + std::to_string(static_cast<int>(o.predictor)) + " lossless " +
         std::to_string(static_cast<int>(o.lossless)) + " order " +
         std::to_string(o.interp_order) + (o.fill_value ? " fill" : "");
}

// Where two archives of the same size first differ: the byte, and for the
// first frame whose sections differ, each differing section's first byte.
inline std::string WhereTheyDiffer(const std::vector<uint8_t>& cpu,
                                   const std::vector<uint8_t>& gpu) {
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

// The whole contract for one case: the GPU archive is the CPU archive, it
// decodes within the bound, and every GPU decoder gives the CPU decoder's
// bytes (a decoder's failure is reported without stopping the caller's
// later cases).
inline void ExpectSameAsCpu(const ArraySpec& spec, const std::vector<uint8_t>& data,
                            const CompressOptions& options) {
  SCOPED_TRACE(ShapeToString(spec.shape) + " " + DTypeName(spec.dtype) + " " + Describe(options));
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
  std::vector<DecoderKind> decoders = {DecoderKind::kChunkParallel, DecoderKind::kSelfSync};
  if (options.gap_array) decoders.push_back(DecoderKind::kGapArray);
  for (DecoderKind d : decoders) {
    auto out = DecompressHost(*cpu, d);
    if (!out.ok()) {
      ADD_FAILURE() << DecoderKindName(d) << ": " << out.status();
      continue;
    }
    EXPECT_TRUE(out->data == reference->data) << DecoderKindName(d) << " differs from the CPU";
  }
}

// A real field for a GPU test; nullopt (with a line saying so) where it is
// missing on a GPU host, which has no Debian packages (the device script
// carries what fits), unless EBZIP_GPU_REQUIRE_ALL_FIELDS is set.
inline absl::StatusOr<std::optional<LoadedArray>> GpuHostField(const char* name) {
  auto loaded = LoadRealField(name);
  if (!loaded.ok() && loaded.status().code() == absl::StatusCode::kNotFound &&
      std::getenv("EBZIP_GPU_REQUIRE_ALL_FIELDS") == nullptr) {
    std::printf("skipping %s: %s\n", name, std::string(loaded.status().message()).c_str());
    return std::optional<LoadedArray>();
  }
  if (!loaded.ok()) return loaded.status();
  return std::optional<LoadedArray>(*std::move(loaded));
}

// An archive too big for its buffer: CompressBatch says how big (the CPU
// archive's size) and writes nothing into the buffer.
inline void ExpectOverflowWritesNothing(const ArraySpec& spec, const std::vector<uint8_t>& data,
                                        const CompressOptions& options, uint64_t capacity) {
  void *in, *out;
  uint64_t* size;
  ASSERT_EQ(cudaMalloc(&in, data.size()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, capacity), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&size), 8), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(in, data.data(), data.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(out, 0xAB, capacity), cudaSuccess);
  CompressTask task{spec, options, in, static_cast<uint8_t*>(out), capacity, size};
  auto need = CompressWorkspaceSize({&task, 1});
  ASSERT_TRUE(need.ok()) << need.status();
  Workspace ws{nullptr, need->device_bytes, nullptr, need->host_bytes};
  ASSERT_EQ(cudaMalloc(&ws.device, ws.device_bytes), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&ws.host, ws.host_bytes), cudaSuccess);
  ASSERT_TRUE(CompressBatch({&task, 1}, ws, nullptr).ok());
  uint64_t got = 0;
  ASSERT_EQ(cudaMemcpy(&got, size, 8, cudaMemcpyDeviceToHost), cudaSuccess);
  auto cpu = Compress(spec, data, options);
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(got, cpu->size());
  EXPECT_GT(got, capacity);
  std::vector<uint8_t> back(capacity);
  ASSERT_EQ(cudaMemcpy(back.data(), out, capacity, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, std::vector<uint8_t>(capacity, 0xAB));
  cudaFree(in);
  cudaFree(out);
  cudaFree(size);
  cudaFree(ws.device);
  cudaFreeHost(ws.host);
}

}  // namespace ebzip::gpu::testing_fields

#endif  // EBZIP_TESTS_GPU_GPU_TEST_FIELDS_H_
