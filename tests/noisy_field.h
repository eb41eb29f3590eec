// A test field for the codec's round trips: a smooth wave with noise, NaN
// and -Inf at fixed strides, and (optionally) runs of a fill value, in
// either dtype.
#ifndef EBZIP_TESTS_NOISY_FIELD_H_
#define EBZIP_TESTS_NOISY_FIELD_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include "codec/types.h"

namespace ebzip::testing {

inline std::vector<uint8_t> NoisyField(const ArraySpec& spec, std::optional<double> fill,
                                       uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 0.3);
  std::vector<uint8_t> bytes(spec.num_bytes());
  for (uint64_t i = 0; i < spec.num_elements(); ++i) {
    double v = std::sin(0.002 * static_cast<double>(i)) * 40 + noise(rng);
    if (i % 1009 == 0) v = NAN;
    if (i % 4099 == 0) v = -INFINITY;
    if (fill && i % 13 < 3) v = *fill;
    if (spec.dtype == DType::kFloat32) {
      const float f = static_cast<float>(v);
      std::memcpy(bytes.data() + 4 * i, &f, 4);
    } else {
      std::memcpy(bytes.data() + 8 * i, &v, 8);
    }
  }
  return bytes;
}

}  // namespace ebzip::testing

#endif  // EBZIP_TESTS_NOISY_FIELD_H_
