// The per-element rule of dual quantization with a strict bound (docs/design.md §3,
// FORMAT.md §Reconstruction). Shared by the CPU codec and the CUDA kernels.
#ifndef EBZIP_CODEC_QUANTIZE_POINT_H_
#define EBZIP_CODEC_QUANTIZE_POINT_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#include "codec/host_device.h"

namespace ebzip {

// |x / step| must stay below this, so |q| <= 2^26 and four Lorenzo
// differences (4-D) still fit an int32: |delta| <= 16 * 2^26 = 2^30.
inline constexpr double kQuantLimit = 67108864.0;  // 2^26

enum class PointKind : uint8_t { kQuantized = 0, kVerbatim = 1, kFill = 2 };

template <typename T>
struct FloatTraits;
template <>
struct FloatTraits<float> {
  using Bits = uint32_t;
  static constexpr Bits kExponent = 0x7F800000u;
};
template <>
struct FloatTraits<double> {
  using Bits = uint64_t;
  static constexpr Bits kExponent = 0x7FF0000000000000ull;
};

template <typename T>
EBZIP_HD inline typename FloatTraits<T>::Bits ToBits(T x) {
  typename FloatTraits<T>::Bits b;
  std::memcpy(&b, &x, sizeof(T));
  return b;
}

// Narrows with IEEE round-to-nearest, spelled out for values beyond
// FLT_MAX, where a plain cast would be undefined behaviour in C++.
template <typename T>
EBZIP_HD inline T Narrow(double v) {
  if constexpr (sizeof(T) == sizeof(double)) {
    return v;
  } else {
#ifdef __CUDA_ARCH__
    return __double2float_rn(v);  // IEEE on the device, beyond FLT_MAX too
#else
    constexpr double kMax = 3.4028234663852886e38;       // FLT_MAX
    constexpr double kOverflow = 3.4028235677973366e38;  // FLT_MAX + ulp/2
    const double a = std::fabs(v);
    if (a > kMax) {
      const float big = a < kOverflow ? 3.4028234663852886e38f : HUGE_VALF;
      return v < 0 ? -big : big;
    }
    return static_cast<float>(v);
#endif
  }
}

// The value the decoder reconstructs from quantized value q.
template <typename T>
EBZIP_HD inline T Dequantize(int32_t q, double step) {
  return Narrow<T>(static_cast<double>(q) * step);
}

// What version 2's interpolation writers compute a quotient by the
// quantization step as: a product with this, rounded once per frame
// (FORMAT.md §15.8). On the GPU an f64 division is a dependent sequence for
// every element, a product one instruction; the check against the bound
// makes either correct. (QuantizePoint still divides: in the Lorenzo
// kernels the product let the compiler keep more values live, and their
// spills cost more than the division.)
EBZIP_HD inline double InverseStep(double step) {
  return std::fmin(1.0 / step, 1.7976931348623157e308);  // DBL_MAX
}

struct QuantRule {
  double abs_bound;  // every quantized value reconstructs within this
  double step;       // quantization step, normally 2 * abs_bound
  bool has_fill;
  uint64_t fill_bits;  // bit pattern of the fill value as T
};

// Classifies x and sets *q (0 unless kQuantized). Non-finite values, -0.0 and
// subnormals are kept verbatim so they round-trip bit for bit; so is any value
// whose reconstruction would miss the bound or whose q would be too large.
// Every test is computed and the verdict selected at the end: on the GPU,
// early returns cost a divergent branch each per element.
template <typename T>
EBZIP_HD inline PointKind QuantizePoint(T x, const QuantRule& rule, int32_t* q) {
  using Bits = typename FloatTraits<T>::Bits;
  const Bits bits = ToBits(x);
  const Bits exponent = bits & FloatTraits<T>::kExponent;
  const bool fill = rule.has_fill && bits == static_cast<Bits>(rule.fill_bits);
  const bool special = exponent == FloatTraits<T>::kExponent || (exponent == 0 && bits != 0);
  const double r = static_cast<double>(x) / rule.step;
  const double rounded = std::rint(r);  // ties to even, on host and device alike
  const T y = Narrow<T>(rounded * rule.step);
  const bool ok = !fill && !special && std::fabs(r) < kQuantLimit &&
                  std::fabs(static_cast<double>(y) - static_cast<double>(x)) <= rule.abs_bound;
  *q = ok ? static_cast<int32_t>(rounded) : 0;
  return fill ? PointKind::kFill : ok ? PointKind::kQuantized : PointKind::kVerbatim;
}

}  // namespace ebzip

#endif  // EBZIP_CODEC_QUANTIZE_POINT_H_
