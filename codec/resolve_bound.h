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

// `any` says whether the array has a finite non-fill value; `min` and `max`
// are their extremes (REL only).
EBZIP_HD inline ResolvedBound ResolveBoundFor(BoundMode mode, double bound, bool any, double min,
                                              double max) {
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
  } else if (any && min != 0) {
    b.quant_step = std::fabs(min);  // one value: q = +-1 rebuilds it exactly
  }
  return b;
}

}  // namespace ebzip

#endif  // EBZIP_CODEC_RESOLVE_BOUND_H_
