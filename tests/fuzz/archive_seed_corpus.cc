// Writes a handful of small, valid archives into a directory: the seed corpus
// of archive_reader_fuzzer. Between them they cover every rank, both dtypes,
// both bound modes, several frames, gap arrays on and off, and non-empty
// outlier, verbatim and fill-run sections, so that mutations start from
// inputs that already reach the frame decoders.
// Usage: archive_seed_corpus DIR
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "codec/archive.h"

namespace {

using ebzip::BoundMode;
using ebzip::CompressOptions;
using ebzip::DType;

// Smooth values with a spike, NaN, Inf, a subnormal and fill values mixed in
// when the array is large enough to hold them.
std::vector<double> Field(uint64_t n) {
  std::vector<double> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = 10 * std::sin(0.05 * i) + 3 * std::cos(0.11 * i);
  if (n >= 64) {
    v[n / 5] = 500;
    v[n / 3] = NAN;
    v[n / 2] = INFINITY;
    v[7] = 1e-40;
    for (uint64_t k = 0; k < 4; ++k) v[n / 4 + k] = -9999;
  }
  return v;
}

template <typename T>
std::vector<uint8_t> AsBytes(const std::vector<double>& values) {
  std::vector<T> typed(values.begin(), values.end());
  const auto* p = reinterpret_cast<const uint8_t*>(typed.data());
  return std::vector<uint8_t>(p, p + typed.size() * sizeof(T));
}

// Parameters small enough that a few hundred elements still make several
// chunks, groups and subsequences.
CompressOptions Small(BoundMode mode, double bound) {
  CompressOptions o;
  o.mode = mode;
  o.bound = bound;
  o.radius = 16;
  o.chunk_symbols = 64;
  o.subsequence_bits = 32;
  o.chunk_group = 2;
  return o;
}

struct Seed {
  const char* name;
  DType dtype;
  std::vector<uint64_t> shape;
  CompressOptions options;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::vector<Seed> seeds;
  {
    CompressOptions o = Small(BoundMode::kAbs, 0.01);
    o.fill_value = -9999;
    o.frame_elements = 256;
    seeds.push_back({"f32-1d-frames-gap", DType::kFloat32, {600}, o});
    o.gap_array = false;
    seeds.push_back({"f32-1d-frames-nogap", DType::kFloat32, {600}, o});
  }
  {
    CompressOptions o = Small(BoundMode::kRel, 1e-3);
    o.fill_value = -9999;
    o.frame_elements = 16 * 20;
    seeds.push_back({"f64-2d-rel-fill", DType::kFloat64, {32, 20}, o});
  }
  seeds.push_back({"f32-3d", DType::kFloat32, {8, 8, 8}, Small(BoundMode::kAbs, 0.05)});
  {
    CompressOptions o = Small(BoundMode::kAbs, 0.01);
    o.gap_array = false;
    o.radius = 4;  // most residuals become outliers
    seeds.push_back({"f64-4d-outliers-nogap", DType::kFloat64, {2, 2, 6, 6}, o});
  }
  {
    CompressOptions o;  // the defaults, as the CLI writes them
    o.bound = 0.1;
    seeds.push_back({"f32-one-element", DType::kFloat32, {1}, o});
    o.mode = BoundMode::kRel;
    o.bound = 1e-3;
    seeds.push_back({"f32-constant", DType::kFloat32, {50}, o});
  }

  int failures = 0;
  for (const Seed& seed : seeds) {
    const ebzip::ArraySpec spec{seed.dtype, seed.shape};
    std::vector<double> values = Field(spec.num_elements());
    if (std::string(seed.name).find("constant") != std::string::npos) {
      values.assign(values.size(), 3.25);
    }
    const std::vector<uint8_t> data =
        seed.dtype == DType::kFloat32 ? AsBytes<float>(values) : AsBytes<double>(values);
    auto archive = ebzip::Compress(spec, data, seed.options);
    if (!archive.ok()) {
      std::fprintf(stderr, "%s: %s\n", seed.name, archive.status().ToString().c_str());
      ++failures;
      continue;
    }
    const std::string path = std::string(argv[1]) + "/seed-" + seed.name;
    std::FILE* f = std::fopen(path.c_str(), "wb");
    bool written = f != nullptr;
    if (f != nullptr) {
      written = std::fwrite(archive->data(), 1, archive->size(), f) == archive->size();
      written = std::fclose(f) == 0 && written;
    }
    if (!written) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}
