// Arrays the service tests send: smooth fields of any shape and dtype, with
// the special values docs/design.md §3 names sprinkled in on request.
#ifndef EBZIP_TESTS_SERVER_TEST_ARRAYS_H_
#define EBZIP_TESTS_SERVER_TEST_ARRAYS_H_

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "codec/types.h"

namespace ebzip::testing {

struct TestArray {
  ArraySpec spec;
  std::vector<uint8_t> bytes;
};

template <typename T>
void Put(std::vector<uint8_t>& bytes, uint64_t i, T v) {
  std::memcpy(bytes.data() + i * sizeof(T), &v, sizeof(T));
}

// A smooth field plus noise; `specials` puts NaN, +-Inf, -0.0 and a fill
// value of -1e34 at scattered places.
inline TestArray SmoothArray(ArraySpec spec, uint64_t seed, bool specials = false) {
  TestArray a{std::move(spec), {}};
  const uint64_t n = a.spec.num_elements();
  a.bytes.resize(a.spec.num_bytes());
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 0.01);
  for (uint64_t i = 0; i < n; ++i) {
    double v = std::sin(0.001 * static_cast<double>(i)) * 100 +
               std::cos(0.0173 * static_cast<double>(i % 997)) * 10 + noise(rng);
    if (specials) {
      switch (rng() % 101) {
        case 0: v = std::numeric_limits<double>::quiet_NaN(); break;
        case 1: v = std::numeric_limits<double>::infinity(); break;
        case 2: v = -std::numeric_limits<double>::infinity(); break;
        case 3: v = -0.0; break;
        case 4: case 5: v = -1e34; break;
        default: break;
      }
    }
    if (a.spec.dtype == DType::kFloat32) {
      Put(a.bytes, i, static_cast<float>(v));
    } else {
      Put(a.bytes, i, v);
    }
  }
  return a;
}

}  // namespace ebzip::testing

#endif  // EBZIP_TESTS_SERVER_TEST_ARRAYS_H_
