// The independent checker of the correctness contract (docs/design.md §3). It shares
// no code with the codec: the error is computed here in double precision,
// and the special values are checked bit for bit.
#ifndef EBZIP_TESTS_BOUND_CHECKER_H_
#define EBZIP_TESTS_BOUND_CHECKER_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace ebzip::testing {

struct CheckResult {
  uint64_t checked = 0;
  uint64_t violations = 0;        // finite values off by more than the bound
  uint64_t special_mismatch = 0;  // NaN/Inf/-0/subnormal/fill not bit-exact
  uint64_t first_bad = UINT64_MAX;
  double max_error = 0;
  std::string Describe() const {
    return "checked " + std::to_string(checked) + ", violations " + std::to_string(violations) +
           ", special mismatches " + std::to_string(special_mismatch) + ", first bad index " +
           (first_bad == UINT64_MAX ? std::string("none") : std::to_string(first_bad)) +
           ", max error " + std::to_string(max_error);
  }
  bool ok() const { return violations == 0 && special_mismatch == 0; }
};

template <typename T>
bool SameBits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// A value the contract says must round-trip bit for bit.
template <typename T>
bool MustBeExact(T x, std::optional<double> fill) {
  if (!std::isfinite(x) || std::fpclassify(x) == FP_SUBNORMAL) return true;
  if (x == 0 && std::signbit(x)) return true;
  return fill && SameBits(x, static_cast<T>(*fill));
}

template <typename T>
CheckResult CheckBound(const T* original, const T* decoded, uint64_t n, double abs_bound,
                       std::optional<double> fill = std::nullopt) {
  CheckResult r;
  r.checked = n;
  for (uint64_t i = 0; i < n; ++i) {
    const T x = original[i];
    const T y = decoded[i];
    bool bad;
    if (MustBeExact(x, fill)) {
      bad = !SameBits(x, y);
      r.special_mismatch += bad;
    } else {
      const double err = std::fabs(static_cast<double>(x) - static_cast<double>(y));
      bad = !(err <= abs_bound);  // NaN or Inf in y counts as a violation
      if (std::isfinite(err)) r.max_error = std::fmax(r.max_error, err);
      r.violations += bad;
    }
    if (bad && r.first_bad == UINT64_MAX) r.first_bad = i;
  }
  return r;
}

}  // namespace ebzip::testing

#endif  // EBZIP_TESTS_BOUND_CHECKER_H_
