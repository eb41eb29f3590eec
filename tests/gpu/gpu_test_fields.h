// Test fields and checks shared by the GPU codec's tests.
#ifndef EBZIP_TESTS_GPU_GPU_TEST_FIELDS_H_
#define EBZIP_TESTS_GPU_GPU_TEST_FIELDS_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "codec/types.h"
#include "gpu/gpu_codec.h"
#include "tests/bound_checker.h"

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

}  // namespace ebzip::gpu::testing_fields

#endif  // EBZIP_TESTS_GPU_GPU_TEST_FIELDS_H_
