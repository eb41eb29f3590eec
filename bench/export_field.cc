// ebzip_export_field: writes one variable of a NetCDF/HDF5 file as a raw
// little-endian array (the input zfp's command line takes) and prints what a
// script needs to know about it as one line of key=value pairs:
//
//   dtype=f32 shape=2161,4320 zfp_dims=4320,2161 elements=9335520
//   fill=-9.999999790214768e+33 fill_count=0 nonfinite=0 min=-10376 max=7833
//   range=18209 mean=-1893.8
//
// shape is C order (slowest first), zfp_dims the same reversed (zfp's NX is
// the fastest dimension). fill ("none" when the variable has none) is
// printed with 17 significant digits so that parsing it back and narrowing
// to the dtype gives the stored bits. min, max, range and mean are over the
// finite values that are not the fill value: range is exactly what
// `ebzip compress --rel` is relative to.
//
// With a third argument, also writes a copy in which every fill value is
// replaced by the mean of the other finite values: input for compressors
// that have no notion of fill values (zfp), so that the land mask does not
// become a -1e34 cliff. Restoring the fills afterwards is the user's job
// (a run-length mask, not counted by the benchmarks).
//
// Usage: ebzip_export_field FILE.nc:VAR OUT.raw [OUT_FILLED.raw]
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "client/io/array_file.h"
#include "client/io/loaded_array.h"
#include "codec/archive.h"
#include "codec/types.h"

namespace ebzip {
namespace {

struct Counts {
  uint64_t fill = 0;
  uint64_t nonfinite = 0;
};

template <typename T>
Counts CountSpecial(const uint8_t* bytes, uint64_t n, std::optional<double> fill) {
  Counts c;
  const T fill_t = static_cast<T>(fill.value_or(0));
  for (uint64_t i = 0; i < n; ++i) {
    T x;
    std::memcpy(&x, bytes + i * sizeof(T), sizeof(T));
    if (fill && std::memcmp(&x, &fill_t, sizeof(T)) == 0) {
      ++c.fill;
    } else if (!std::isfinite(x)) {
      ++c.nonfinite;
    }
  }
  return c;
}

// Mean of the finite values that are not the fill value (0 when none).
template <typename T>
double FiniteMean(const uint8_t* bytes, uint64_t n, std::optional<double> fill) {
  const T fill_t = static_cast<T>(fill.value_or(0));
  double sum = 0;
  uint64_t count = 0;
  for (uint64_t i = 0; i < n; ++i) {
    T x;
    std::memcpy(&x, bytes + i * sizeof(T), sizeof(T));
    if ((fill && std::memcmp(&x, &fill_t, sizeof(T)) == 0) || !std::isfinite(x)) continue;
    sum += static_cast<double>(x);
    ++count;
  }
  return count ? sum / static_cast<double>(count) : 0.0;
}

// Copy of `bytes` with each fill value replaced by `replacement`.
template <typename T>
std::vector<uint8_t> ReplaceFill(const std::vector<uint8_t>& bytes, double fill,
                                 double replacement) {
  std::vector<uint8_t> out = bytes;
  const T fill_t = static_cast<T>(fill);
  const T with = static_cast<T>(replacement);
  for (size_t off = 0; off + sizeof(T) <= out.size(); off += sizeof(T)) {
    if (std::memcmp(out.data() + off, &fill_t, sizeof(T)) == 0) {
      std::memcpy(out.data() + off, &with, sizeof(T));
    }
  }
  return out;
}

bool WriteFile(const char* path, const std::vector<uint8_t>& bytes) {
  std::FILE* out = std::fopen(path, "wb");
  if (out == nullptr) {
    std::perror(path);
    return false;
  }
  const size_t written = std::fwrite(bytes.data(), 1, bytes.size(), out);
  if (std::fclose(out) != 0 || written != bytes.size()) {
    std::fprintf(stderr, "%s: write failed\n", path);
    return false;
  }
  return true;
}

std::string JoinDims(const std::vector<uint64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(dims[i]);
  }
  return s;
}

int Run(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: %s FILE.nc:VAR OUT.raw [OUT_FILLED.raw]\n", argv[0]);
    return 2;
  }
  auto loaded = LoadArraySource(argv[1]);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s: %s\n", argv[1], std::string(loaded.status().message()).c_str());
    return 1;
  }
  const ArraySpec& spec = loaded->spec;
  const uint64_t n = spec.num_elements();

  if (!WriteFile(argv[2], loaded->data)) return 1;

  const std::optional<double> fill = loaded->fill_value;
  const bool f32 = spec.dtype == DType::kFloat32;
  const double mean = f32 ? FiniteMean<float>(loaded->data.data(), n, fill)
                          : FiniteMean<double>(loaded->data.data(), n, fill);
  if (argc == 4) {
    const std::vector<uint8_t> filled =
        !fill ? loaded->data
        : f32 ? ReplaceFill<float>(loaded->data, *fill, mean)
              : ReplaceFill<double>(loaded->data, *fill, mean);
    if (!WriteFile(argv[3], filled)) return 1;
  }
  const Counts counts = f32
                            ? CountSpecial<float>(loaded->data.data(), n, fill)
                            : CountSpecial<double>(loaded->data.data(), n, fill);
  const ValueRange range = FiniteRange(spec, loaded->data, fill);
  std::vector<uint64_t> reversed(spec.shape.rbegin(), spec.shape.rend());
  char fill_text[64] = "none";
  if (fill) std::snprintf(fill_text, sizeof(fill_text), "%.17g", *fill);

  std::printf(
      "dtype=%s shape=%s zfp_dims=%s elements=%llu fill=%s fill_count=%llu nonfinite=%llu "
      "min=%.17g max=%.17g range=%.17g mean=%.17g\n",
      f32 ? "f32" : "f64", JoinDims(spec.shape).c_str(),
      JoinDims(reversed).c_str(), static_cast<unsigned long long>(n), fill_text,
      static_cast<unsigned long long>(counts.fill),
      static_cast<unsigned long long>(counts.nonfinite), range.any ? range.min : 0.0,
      range.any ? range.max : 0.0, range.any ? range.max - range.min : 0.0, mean);
  return 0;
}

}  // namespace
}  // namespace ebzip

int main(int argc, char** argv) { return ebzip::Run(argc, argv); }
