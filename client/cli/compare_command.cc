// ebzip compare: how far apart two raw arrays are, and whether a bound
// holds. Non-finite values, -0.0 and the fill value must match bit for bit;
// everything else is compared in double precision. One of the two may be
// "-", standard input, read up to the other's size.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "client/cli/commands.h"
#include "client/cli/input_file.h"
#include "client/cli/json_output.h"
#include "client/cli/options.h"

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

}  // namespace

absl::Status CompareCommand(const ParsedArgs& args) {
  const std::vector<std::string>& paths = args.positional();
  if (paths.size() != 2) {
    return absl::InvalidArgumentError("usage: ebzip compare --type f32 A.raw B.raw [--abs E]");
  }
  if (paths[0] == "-" && paths[1] == "-") {
    return absl::InvalidArgumentError("only one of A and B can be standard input ('-')");
  }
  auto dtype = DTypeFromFlags(args);
  if (!dtype.ok()) return dtype.status();
  auto fill = ExplicitFillFromFlags(args);
  if (!fill.ok()) return fill.status();
  auto bound_or = AbsBoundFromFlags(args);
  if (!bound_or.ok()) return bound_or.status();
  const std::optional<double> bound = *bound_or;
  if (bound && !(*bound >= 0)) return absl::InvalidArgumentError("--abs must be >= 0");
  // The file first: its size bounds what standard input may bring.
  const int file_index = paths[0] == "-" ? 1 : 0;
  auto file = InputFile::Open(paths[file_index]);
  if (!file.ok()) return file.status();
  auto other = InputFile::OpenOrRead(paths[1 - file_index], file->bytes().size(),
                                     absl::StrCat("the size of ", paths[file_index]));
  if (!other.ok()) {
    return other.status().code() == absl::StatusCode::kResourceExhausted
               ? absl::InvalidArgumentError(other.status().message())
               : other.status();
  }
  const InputFile& a = file_index == 0 ? *file : *other;
  const InputFile& b = file_index == 0 ? *other : *file;
  const size_t size = *dtype == DType::kFloat32 ? 4 : 8;
  if (a.bytes().size() != b.bytes().size() || a.bytes().size() % size != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sizes differ or are not whole values: ", a.bytes().size(), " vs ",
                     b.bytes().size(), " bytes"));
  }
  const uint64_t n = a.bytes().size() / size;
  Stats s = *dtype == DType::kFloat32
                ? Compare(reinterpret_cast<const float*>(a.bytes().data()),
                          reinterpret_cast<const float*>(b.bytes().data()), n, bound, *fill)
                : Compare(reinterpret_cast<const double*>(a.bytes().data()),
                          reinterpret_cast<const double*>(b.bytes().data()), n, bound, *fill);
  const double rmse = s.compared ? std::sqrt(s.sum_sq / static_cast<double>(s.compared)) : 0;
  const double range = s.compared ? s.max - s.min : 0;
  const double psnr = rmse > 0 ? 20 * std::log10(range / rmse) : INFINITY;
  const bool ok = s.violations == 0 && s.special_mismatches == 0;
  if (args.Switch("json")) {
    // JSON has no infinity: an infinite max_error (a value became
    // infinite) and the PSNR of identical arrays print as null.
    PrintJson({
        {"a", a.name()},
        {"b", b.name()},
        {"dtype", DTypeName(*dtype)},
        {"values", s.n},
        {"compared", s.compared},
        {"max_error", s.max_error},
        {"rmse", rmse},
        {"psnr", psnr},
        {"range", range},
        {"special_mismatches", s.special_mismatches},
        {"bound", bound ? Json(*bound) : Json()},
        {"violations", bound ? Json(s.violations) : Json()},
        {"ok", ok},
    });
  } else {
    std::printf("values %llu, compared %llu, max error %.9g, rmse %.6g, psnr %.2f dB, range %.9g\n",
                static_cast<unsigned long long>(s.n), static_cast<unsigned long long>(s.compared),
                s.max_error, rmse, psnr, range);
    std::printf("special values (NaN, Inf, -0, fill) not bit-identical: %llu\n",
                static_cast<unsigned long long>(s.special_mismatches));
    if (bound) {
      std::printf("bound %.9g: %llu violations\n", *bound,
                  static_cast<unsigned long long>(s.violations));
    }
  }
  if (!ok) {
    return absl::FailedPreconditionError(absl::StrCat(s.violations, " values exceed the bound and ",
                                                      s.special_mismatches,
                                                      " special values differ"));
  }
  return absl::OkStatus();
}

}  // namespace ebzip::cli
