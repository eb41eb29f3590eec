#include "client/cli/safety.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_format.h"

namespace ebzip::cli {
namespace {

double ElementAt(const ArraySpec& spec, const uint8_t* data, uint64_t i) {
  if (spec.dtype == DType::kFloat32) {
    float v;
    std::memcpy(&v, data + i * sizeof(float), sizeof(float));
    return v;
  }
  double v;
  std::memcpy(&v, data + i * sizeof(double), sizeof(double));
  return v;
}

// Up to kSafetySampleSize finite, non-fill elements, sorted.
std::vector<double> Sample(const ArraySpec& spec, absl::Span<const uint8_t> data,
                           std::optional<double> fill_value) {
  // The fill as the array's elements hold it, compared as the codec does
  // after widening to double.
  std::optional<double> fill;
  if (fill_value) {
    fill = spec.dtype == DType::kFloat32 ? static_cast<double>(static_cast<float>(*fill_value))
                                         : *fill_value;
  }
  std::vector<double> s;
  for (uint64_t i : SampleIndices(spec.num_elements())) {
    const double v = ElementAt(spec, data.data(), i);
    if (std::isfinite(v) && !(fill && v == *fill)) s.push_back(v);
  }
  std::sort(s.begin(), s.end());
  return s;
}

// max - min of sorted values, or the largest magnitude when they are all
// equal; 0 for none.
double Spread(const double* begin, const double* end) {
  if (begin == end) return 0;
  const double lo = *begin;
  const double hi = *(end - 1);
  return hi > lo ? hi - lo : std::fabs(hi);
}

}  // namespace

std::vector<uint64_t> SampleIndices(uint64_t n) {
  std::vector<uint64_t> indices;
  if (n <= kSafetySampleSize) {
    indices.resize(n);
    for (uint64_t i = 0; i < n; ++i) indices[i] = i;
    return indices;
  }
  indices.reserve(kSafetySampleSize);
  uint64_t state = 0;
  for (uint64_t i = 0; i < kSafetySampleSize; ++i) {
    state += 0x9E3779B97F4A7C15ULL;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    indices.push_back(z % n);
  }
  return indices;
}

std::optional<std::string> DominatedRange(const ArraySpec& spec, absl::Span<const uint8_t> data,
                                          std::optional<double> fill_value, double full_range) {
  if (!(full_range > 0) || !std::isfinite(full_range)) return std::nullopt;
  const std::vector<double> s = Sample(spec, data, fill_value);
  if (s.size() < 2) return std::nullopt;
  const double* begin = s.data();
  const double* end = s.data() + s.size();
  for (const bool low : {true, false}) {
    const double value = low ? s.front() : s.back();
    const auto [first, last] = std::equal_range(begin, end, value);
    const size_t count = static_cast<size_t>(last - first);
    if (count < 2) continue;
    const double spread = low ? Spread(last, end) : Spread(begin, first);
    if (spread > 0 && full_range > kRepeatedRatio * spread) {
      const double share = 100.0 * static_cast<double>(count) / static_cast<double>(s.size());
      return absl::StrFormat(
          "the value %.7g (%.3g %% of a sample) lies far off the rest, which spread over %.4g of "
          "the range %.4g the relative bound is taken of; if it marks missing data, pass "
          "--fill %.9g",
          value, share, spread, full_range, value);
    }
  }
  const size_t cut = static_cast<size_t>(static_cast<double>(s.size()) * kTailFraction);
  const double spread = Spread(begin + cut, end - cut);
  if (spread > 0 && full_range > kTailRatio * spread) {
    return absl::StrFormat(
        "99.8 %% of a sample spreads over %.4g, but the range the relative bound is taken of is "
        "%.4g: a few values far off the rest set the bound; give them as --fill, or use --abs",
        spread, full_range);
  }
  return std::nullopt;
}

std::optional<std::string> LargerArchive(uint64_t archive_bytes, const ArraySpec& spec,
                                         absl::Span<const uint8_t> data) {
  if (archive_bytes <= data.size()) return std::nullopt;
  std::string hint = "the data may be noise at this bound, or the bound far below its precision";
  if (data.size() < kSmallInputBytes) {
    hint = "an archive carries some 400 bytes of headers and index, so compress larger arrays";
  } else {
    const uint64_t n = spec.num_elements();
    uint64_t nonfinite = 0;
    for (uint64_t i = 0; i < n; ++i) nonfinite += !std::isfinite(ElementAt(spec, data.data(), i));
    if (nonfinite * 100 >= n) {
      hint = absl::StrFormat(
          "%d of its %d values are NaN or Inf, each stored verbatim; mark missing data with a "
          "finite fill value and pass it as --fill instead",
          nonfinite, n);
    }
  }
  return absl::StrFormat("the archive (%d bytes) is larger than the array (%d bytes): %s",
                         archive_bytes, data.size(), hint);
}

}  // namespace ebzip::cli
