// From the user's bound to the absolute bound and quantization step every
// frame uses (FORMAT.md §10.1). Shared by the CPU codec and the CUDA kernels,
// which resolve a relative bound on the device once the range is reduced.
#ifndef EBZIP_CODEC_RESOLVE_BOUND_H_
#define EBZIP_CODEC_RESOLVE_BOUND_H_

#include <cfloat>
#include <cmath>

#include "codec/host_device.h"
#include "codec/types.h"

namespace ebzip {

// The bound every value will honour and the quantization step. ABS: the bound
// as given. REL: bound times the range; when the range is 0 the bound is 0
// (reconstruction must be exact) and the step is the one value's magnitude.
struct ResolvedBound {
  double abs_bound = 0;
  double quant_step = 1;
};

// What a reconstruction is rounded to before it is checked against the
// bound: kNone keeps the step at twice the bound (version 1's writer).
enum class Narrowing { kNone, kFloat32, kFloat64 };

// An upper bound on how far a reconstruction y = narrow_T(pred + q * step)
// can land from the exact pred + q * step when the values (and so
// reconstructions) are below `magnitude` < 2^k in absolute value. float32:
// the narrowing's half unit in the last place there, 2^(k-25), and 2^(k-48)
// for the f64 roundings before it (under 2^(k-50) each: a cubic prediction
// is at most 1.25 times the values, so q * step stays below 4 * magnitude).
// float64, where nothing narrows: those two roundings alone, 2^(k-50).
EBZIP_HD inline double RoundingMargin(Narrowing narrowing, double magnitude) {
  int k = 0;
  frexp(magnitude, &k);  // magnitude < 2^k
  const double f64_roundings = ldexp(1.0, k - (narrowing == Narrowing::kFloat32 ? 48 : 50));
  return narrowing == Narrowing::kFloat32 ? ldexp(1.0, k - 25) + f64_roundings : f64_roundings;
}

// `any` says whether the array has a finite non-fill value; `min` and `max`
// are their extremes (REL only).
//
// With a narrowing and a REL range, the step leaves room for the rounding:
// with a step of exactly twice the bound, a value whose quantization error
// came within RoundingMargin of the bound failed the check after the
// rounding and was stored verbatim, 64 bits instead of a few: 0.25 % of the
// values of a float32 field near 300 at REL 1e-4, a tenth of its archive.
// A step of 2 (abs_bound - margin) keeps the rounded value inside the bound;
// it costs log2(abs_bound / (abs_bound - margin)) bits a value, far less.
// Where the margin would exceed half the bound (bounds at the type's
// precision) the step stays twice the bound. With an absolute bound no
// range is known (none is computed) and the step stays twice the bound too.
EBZIP_HD inline ResolvedBound ResolveBoundFor(BoundMode mode, double bound, bool any, double min,
                                              double max, Narrowing narrowing) {
  ResolvedBound b;
  if (mode == BoundMode::kAbs) {
    b.abs_bound = bound;
  } else if (any) {
    const double span = max - min;
    // A range beyond DBL_MAX (values near both extremes) still has a finite
    // fraction when scaled first.
    b.abs_bound = std::isfinite(span) ? bound * span : bound * max - bound * min;
    if (!std::isfinite(b.abs_bound)) b.abs_bound = DBL_MAX;
  }
  if (b.abs_bound > 0) {
    const double twice = 2 * b.abs_bound;
    b.quant_step = twice < DBL_MAX ? twice : DBL_MAX;
    const double magnitude = fmax(fabs(min), fabs(max)) + b.abs_bound;
    if (narrowing != Narrowing::kNone && mode == BoundMode::kRel && std::isfinite(magnitude)) {
      const double margin = RoundingMargin(narrowing, magnitude);
      // (Below DBL_MAX as twice the bound is: a bound past DBL_MAX / 2 from
      // a huge REL would otherwise make the step infinite.)
      if (margin < b.abs_bound / 2) b.quant_step = fmin(2 * (b.abs_bound - margin), DBL_MAX);
    }
  } else if (any && min != 0) {
    b.quant_step = std::fabs(min);  // one value: q = +-1 rebuilds it exactly
  }
  return b;
}

}  // namespace ebzip

#endif  // EBZIP_CODEC_RESOLVE_BOUND_H_
