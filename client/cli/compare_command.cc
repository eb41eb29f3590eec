// ebzip compare: how far apart two raw arrays are, and whether a bound
// holds. Non-finite values, -0.0 and the fill value must match bit for bit;
// everything else is compared in double precision.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "client/cli/commands.h"
#include "client/cli/flags.h"
#include "client/cli/mapped_file.h"

namespace ebzip::cli {
namespace {

struct Stats {
  uint64_t n = 0, compared = 0, violations = 0, special_mismatches = 0;
  double max_error = 0, sum_sq = 0, min = INFINITY, max = -INFINITY;
};

template <typename T>
Stats Compare(const T* a, const T* b, uint64_t n, std::optional<double> bound,
              std::optional<double> fill) {
  Stats s;
  s.n = n;
  const T fill_t = static_cast<T>(fill.value_or(0));
  for (uint64_t i = 0; i < n; ++i) {
    const T x = a[i], y = b[i];
    const bool is_fill = fill && std::memcmp(&x, &fill_t, sizeof(T)) == 0;
    if (!std::isfinite(x) || is_fill || (x == 0 && std::signbit(x))) {
      s.special_mismatches += std::memcmp(&x, &y, sizeof(T)) != 0;
      continue;
    }
    const double err = std::fabs(static_cast<double>(x) - static_cast<double>(y));
    ++s.compared;
    s.min = std::fmin(s.min, x);
    s.max = std::fmax(s.max, x);
    if (!std::isfinite(err)) {
      s.max_error = INFINITY;
    } else {
      s.max_error = std::fmax(s.max_error, err);
      s.sum_sq += err * err;
    }
    if (bound && !(err <= *bound)) ++s.violations;
  }
  return s;
}

absl::Status Run(const Args& args) {
  if (args.size() != 2) {
    return absl::InvalidArgumentError("usage: ebzip compare --type f32 A.raw B.raw [--abs E]");
  }
  auto dtype = DTypeFromFlag();
  if (!dtype.ok()) return dtype.status();
  auto fill = ExplicitFillFromFlag();
  if (!fill.ok()) return fill.status();
  auto bound_or = AbsBoundFromFlag();
  if (!bound_or.ok()) return bound_or.status();
  const std::optional<double> bound = *bound_or;
  if (bound && !(*bound >= 0)) return absl::InvalidArgumentError("--abs must be >= 0");
  auto a = MappedFile::Open(args[0]);
  if (!a.ok()) return a.status();
  auto b = MappedFile::Open(args[1]);
  if (!b.ok()) return b.status();
  const size_t size = *dtype == DType::kFloat32 ? 4 : 8;
  if (a->bytes().size() != b->bytes().size() || a->bytes().size() % size != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sizes differ or are not whole values: ", a->bytes().size(), " vs ",
                     b->bytes().size(), " bytes"));
  }
  const uint64_t n = a->bytes().size() / size;
  Stats s = *dtype == DType::kFloat32
                ? Compare(reinterpret_cast<const float*>(a->bytes().data()),
                          reinterpret_cast<const float*>(b->bytes().data()), n, bound, *fill)
                : Compare(reinterpret_cast<const double*>(a->bytes().data()),
                          reinterpret_cast<const double*>(b->bytes().data()), n, bound, *fill);
  const double rmse = s.compared ? std::sqrt(s.sum_sq / static_cast<double>(s.compared)) : 0;
  const double range = s.compared ? s.max - s.min : 0;
  const double psnr = rmse > 0 ? 20 * std::log10(range / rmse) : INFINITY;
  std::printf("values %llu, compared %llu, max error %.9g, rmse %.6g, psnr %.2f dB, range %.9g\n",
              static_cast<unsigned long long>(s.n), static_cast<unsigned long long>(s.compared),
              s.max_error, rmse, psnr, range);
  std::printf("special values (NaN, Inf, -0, fill) not bit-identical: %llu\n",
              static_cast<unsigned long long>(s.special_mismatches));
  if (bound) {
    std::printf("bound %.9g: %llu violations\n", *bound,
                static_cast<unsigned long long>(s.violations));
  }
  if (s.violations || s.special_mismatches) {
    return absl::FailedPreconditionError(absl::StrCat(s.violations, " values exceed the bound and ",
                                                      s.special_mismatches,
                                                      " special values differ"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CompareCommand(const Args& args) { return Run(args); }

}  // namespace ebzip::cli
