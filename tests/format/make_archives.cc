// Writes small .ebz archives that exercise every part of FORMAT.md, each with
// the C++ decoder's output next to it, for tests/format/read_by_spec.py to
// decode independently and compare byte for byte.
//
//   make_archives OUTDIR
//
// writes OUTDIR/NAME.ebz, OUTDIR/NAME.cpp.raw for every case and
// OUTDIR/cases.txt listing the case names, one per line. Cases named v2_*
// are format version 2 (FORMAT.md §15); the others are version 1.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "codec/archive.h"

namespace {

using ebzip::ArraySpec;
using ebzip::BoundMode;
using ebzip::CompressOptions;
using ebzip::DType;
using ebzip::Lossless;
using ebzip::Predictor;

template <typename T>
constexpr DType DTypeOf() {
  return sizeof(T) == 4 ? DType::kFloat32 : DType::kFloat64;
}

bool WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(f);
}

// Lorenzo with plain Huffman and no metadata: a version-1 archive (FORMAT.md
// §15). The version-2 cases choose their predictor and lossless stage.
CompressOptions Options(BoundMode mode, double bound) {
  CompressOptions o;
  o.mode = mode;
  o.bound = bound;
  o.predictor = Predictor::kLorenzo;
  o.lossless = Lossless::kHuffman;
  return o;
}

uint64_t Count(const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

// A smooth field over the C-order index with a little noise.
template <typename T>
std::vector<T> Smooth(const std::vector<uint64_t>& shape, uint64_t seed, double amplitude = 100) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 0.05);
  const uint64_t n = Count(shape);
  std::vector<T> v(n);
  for (uint64_t i = 0; i < n; ++i) {
    v[i] = static_cast<T>(amplitude * std::sin(static_cast<double>(i) * 0.01) +
                          0.3 * amplitude * std::cos(static_cast<double>(i) * 0.0007) + noise(rng));
  }
  return v;
}

// NaN, infinities, -0.0, a subnormal and +0.0 at a few spread-out places;
// with `huge`, also finite values too large to quantize (which would make
// a relative bound meaninglessly large, so REL cases leave them out).
template <typename T>
void AddSpecials(std::vector<T>* v, uint64_t seed, bool huge) {
  using L = std::numeric_limits<T>;
  const T specials[] = {L::quiet_NaN(),       L::infinity(),   -L::infinity(),
                        static_cast<T>(-0.0), L::denorm_min(), static_cast<T>(0.0),
                        static_cast<T>(1e30), -L::max()};
  const int kinds = huge ? 8 : 6;
  std::mt19937_64 rng(seed);
  for (int k = 0; k < 4 * kinds; ++k) {
    (*v)[rng() % v->size()] = specials[k % kinds];
  }
}

// Runs of the fill value, one of them long enough to cross chunk and frame
// boundaries in the cases that use it.
template <typename T>
void AddFill(std::vector<T>* v, double fill, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const uint64_t n = v->size();
  for (int k = 0; k < 6; ++k) {
    const uint64_t start = rng() % n;
    const uint64_t len = 1 + rng() % (k == 0 ? 700 : 20);
    for (uint64_t i = start; i < n && i < start + len; ++i) (*v)[i] = static_cast<T>(fill);
  }
}

struct Writer {
  std::string dir;
  std::vector<std::string> names;
  int failures = 0;

  template <typename T>
  void Case(const std::string& name, const std::vector<uint64_t>& shape, const std::vector<T>& data,
            const CompressOptions& options) {
    const ArraySpec spec{DTypeOf<T>(), shape};
    const absl::Span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(data.data()),
                                          data.size() * sizeof(T));
    auto archive = ebzip::Compress(spec, bytes, options);
    if (!archive.ok()) {
      std::fprintf(stderr, "%s: compress: %s\n", name.c_str(), archive.status().ToString().c_str());
      ++failures;
      return;
    }
    auto decoded = ebzip::Decompress(*archive);
    if (!decoded.ok()) {
      std::fprintf(stderr, "%s: decompress: %s\n", name.c_str(),
                   decoded.status().ToString().c_str());
      ++failures;
      return;
    }
    if (!WriteFile(dir + "/" + name + ".ebz", *archive) ||
        !WriteFile(dir + "/" + name + ".cpp.raw", decoded->data)) {
      std::fprintf(stderr, "%s: cannot write to %s\n", name.c_str(), dir.c_str());
      ++failures;
      return;
    }
    names.push_back(name);
  }
};

// Residuals whose counts are the Fibonacci numbers 1, 1, 2, ..., 17711 (22
// symbols, 46367 elements, all inside one Lorenzo block): the unconstrained
// Huffman tree is 21 deep, so the 20-bit length limit engages.
std::vector<double> FibonacciWalk(uint64_t seed) {
  std::vector<int> deltas;
  uint64_t a = 1, b = 1;
  for (int k = 0; k < 22; ++k) {
    const int delta = k % 2 == 0 ? k / 2 : -(k / 2 + 1);  // 0, -1, 1, -2, 2, ...
    for (uint64_t i = 0; i < a; ++i) deltas.push_back(delta);
    const uint64_t c = a + b;
    a = b;
    b = c;
  }
  std::mt19937_64 rng(seed);
  std::shuffle(deltas.begin(), deltas.end(), rng);
  std::vector<double> v(deltas.size());
  double x = 0;
  for (size_t i = 0; i < deltas.size(); ++i) v[i] = x += deltas[i];
  return v;
}

// Residuals for run-value tokens (FORMAT.md §15.4.1, §15.8), `n` of them in
// C order, cut into chunks of `chunk`: a run-value token of every class
// 0..12 and value index j (v_j = -2, -1, +1, +2; e = 0, 2^c - 1 and between),
// runs of 8192 and more split (class-12 tokens of 8191) before their
// run-value token, one run-value token of the largest size (8191 zeros and a
// value), lone zeros then +-1 (class 0), runs then +-3 and +4 (no run-value
// token), runs cut by chunk ends (a run ending a chunk and a value starting
// the next stay two tokens; a run-value token ending exactly at a chunk's
// end; a lone zero ending a chunk; a run across a chunk end), and a run at the
// frame's end. Every other feature lies within one chunk: filler of +-3 and
// +-5 pads to the next chunk.
std::vector<int> RunValueResiduals(uint64_t chunk, uint64_t n) {
  std::vector<int> r;
  int sign = 1;
  auto filler = [&](uint64_t k) {
    for (uint64_t i = 0; i < k; ++i) {
      sign = -sign;
      r.push_back(sign * (r.size() % 3 != 0 ? 3 : 5));
    }
  };
  // Appends `seg` within one chunk; with `to_end`, ending at the chunk's end.
  auto put = [&](const std::vector<int>& seg, bool to_end) {
    uint64_t room = chunk - r.size() % chunk;
    if (seg.size() > room) {
      filler(room);
      room = chunk;
    }
    if (to_end) filler(room - seg.size());
    r.insert(r.end(), seg.begin(), seg.end());
  };
  auto run_then = [](uint64_t zeros, std::vector<int> after) {
    std::vector<int> seg(zeros, 0);
    seg.insert(seg.end(), after.begin(), after.end());
    return seg;
  };
  const int values[4] = {-2, -1, 1, 2};
  filler(3);
  for (int c = 0; c <= 12; ++c) {
    const uint64_t p = uint64_t{1} << c;
    const uint64_t e[4] = {0, p - 1, (p - 1) / 3, p / 2};
    for (int j = 0; j < 4; ++j) put(run_then(p + e[j], {values[j]}), false);
    filler(1);
  }
  put({0, 1, 0, -1, 5, 0, 3, 0, -3}, false);  // lone zeros then +-1, then +-3
  put(run_then(5, {3}), false);               // runs then +-3, +4: run tokens
  put(run_then(9, {-3}), false);
  put(run_then(300, {4}), false);
  put(run_then(8192, {1}), false);         // class 12 (8191), then class 0 and +1
  put(run_then(8191 + 300, {-2}), false);  // class 12, then class 8 (e = 44) and -2
  put(run_then(8191, {2}), false);         // one token of 8192 positions
  put(run_then(6, {}), true);              // a run at a chunk's end ...
  r.push_back(1);                          // ... and +1 in the next chunk
  filler(2);
  put(run_then(5, {-1}), true);  // a run-value token ending at a chunk's end
  put({0}, true);                // a lone zero at a chunk's end ...
  r.push_back(-2);               // ... and -2 in the next chunk
  filler(1);
  put(run_then(10, {}), true);  // a run across a chunk end: 10 zeros, then
  r.insert(r.end(), 7, 0);      // 7 and +2 in the next chunk (class 2, e = 3)
  r.push_back(2);
  if (r.size() + 40 > n) return {};  // n too small: the caller fails
  filler(n - r.size() - 40);
  r.insert(r.end(), 40, 0);  // a run at the frame's end: a run token, no value
  return r;
}

// Values whose quantized values (step 1) are the prefix sums of `r` along
// rows of `cols` elements: with a Lorenzo block of 1 x 65535 (each row a line
// of its own), their residuals are exactly `r`.
template <typename T>
std::vector<T> FromResiduals(const std::vector<int>& r, uint64_t cols) {
  std::vector<T> v(r.size());
  int64_t q = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    q = i % cols == 0 ? r[i] : q + r[i];
    v[i] = static_cast<T>(q);
  }
  return v;
}

// A plateau with steps of 1 to 3 quantization steps (bound 0.5, step 1) and
// a gentle slope in places: mostly zero residuals, runs that end on small
// ones, for the predictors' own residuals.
template <typename T>
std::vector<T> Plateaus(const std::vector<uint64_t>& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const uint64_t n = Count(shape);
  const uint64_t row = n / shape[0];
  std::vector<T> v(n);
  double level = 10;
  for (uint64_t i = 0; i < n; ++i) {
    if (rng() % 29 == 0) level += static_cast<double>(static_cast<int>(rng() % 7) - 3);
    const double slope = (i / row) % 5 == 2 ? 0.37 * static_cast<double>(i % row) : 0;
    v[i] = static_cast<T>(level + std::floor(slope));
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
    return 2;
  }
  Writer w{argv[1], {}, 0};

  {  // 1-D f32, five frames, small chunks and subsequences, specials, fill.
    std::vector<uint64_t> shape{5000};
    auto v = Smooth<float>(shape, 1);
    AddSpecials(&v, 2, true);
    AddFill(&v, -9999.0, 3);
    CompressOptions o = Options(BoundMode::kAbs, 1e-3);
    o.fill_value = -9999.0;
    o.frame_elements = 1024;
    o.chunk_symbols = 512;
    o.subsequence_bits = 64;
    o.chunk_group = 4;
    w.Case("d1_f32_abs_fill_gap", shape, v, o);
  }
  {  // 1-D f64, REL, no gap array, small radius: many outliers.
    std::vector<uint64_t> shape{3001};
    auto v = Smooth<double>(shape, 4, 1e4);
    AddSpecials(&v, 5, false);
    CompressOptions o = Options(BoundMode::kRel, 1e-5);
    o.radius = 64;
    o.gap_array = false;
    o.frame_elements = 1000;
    o.chunk_symbols = 300;
    o.chunk_group = 3;
    w.Case("d1_f64_rel_nogap_outliers", shape, v, o);
  }
  {  // 2-D f32, default 16x16 blocks, frames of 16 rows, fill = NaN-free -1e34.
    std::vector<uint64_t> shape{70, 45};
    auto v = Smooth<float>(shape, 6);
    AddSpecials(&v, 7, false);
    AddFill(&v, -1e34, 8);
    CompressOptions o = Options(BoundMode::kRel, 1e-3);
    o.fill_value = -1e34;
    o.frame_elements = 45 * 20;
    o.chunk_symbols = 256;
    o.subsequence_bits = 32;
    w.Case("d2_f32_rel_fill_gap", shape, v, o);
  }
  {  // 2-D f64, odd block, no gap array.
    std::vector<uint64_t> shape{33, 29};
    auto v = Smooth<double>(shape, 9);
    AddSpecials(&v, 10, true);
    CompressOptions o = Options(BoundMode::kAbs, 1e-5);
    o.radius = 2048;
    o.block = {4, 5};
    o.frame_elements = 29 * 9;
    o.gap_array = false;
    o.chunk_symbols = 100;
    o.chunk_group = 1;
    w.Case("d2_f64_abs_block4x5_nogap", shape, v, o);
  }
  {  // 3-D f32, REL with fill, gap array.
    std::vector<uint64_t> shape{20, 13, 11};
    auto v = Smooth<float>(shape, 11);
    AddSpecials(&v, 12, false);
    AddFill(&v, 1e20, 13);
    CompressOptions o = Options(BoundMode::kRel, 1e-4);
    o.fill_value = 1e20;
    o.frame_elements = 13 * 11 * 8;
    o.chunk_symbols = 200;
    o.subsequence_bits = 96;
    o.chunk_group = 2;
    w.Case("d3_f32_rel_fill_gap", shape, v, o);
  }
  {  // 3-D f64, tiny radius: most residuals are outliers.
    std::vector<uint64_t> shape{9, 17, 8};
    auto v = Smooth<double>(shape, 14);
    AddSpecials(&v, 15, true);
    CompressOptions o = Options(BoundMode::kAbs, 1e-4);
    o.radius = 8;
    o.chunk_symbols = 100;
    w.Case("d3_f64_abs_radius8", shape, v, o);
  }
  {  // 4-D f32, default 1x8x8x8 block, two rows per frame.
    std::vector<uint64_t> shape{5, 5, 9, 10};
    auto v = Smooth<float>(shape, 16);
    AddSpecials(&v, 17, true);
    AddFill(&v, 0.0, 18);
    CompressOptions o = Options(BoundMode::kAbs, 1e-2);
    o.fill_value = 0.0;
    o.frame_elements = 5 * 9 * 10 * 2;
    o.chunk_symbols = 128;
    o.subsequence_bits = 32;
    w.Case("d4_f32_abs_fill0_gap", shape, v, o);
  }
  {  // 4-D f64, custom block, no gap array, REL.
    std::vector<uint64_t> shape{7, 6, 7, 9};
    auto v = Smooth<double>(shape, 19);
    AddSpecials(&v, 20, false);
    CompressOptions o = Options(BoundMode::kRel, 1e-3);
    o.block = {2, 3, 4, 5};
    o.frame_elements = 6 * 7 * 9 * 3;
    o.gap_array = false;
    o.chunk_symbols = 1000;
    o.chunk_group = 16;
    w.Case("d4_f64_rel_block2345_nogap", shape, v, o);
  }
  {  // REL over a constant field: the bound is 0, the step is |value|.
    std::vector<uint64_t> shape{40, 30};
    std::vector<float> v(Count(shape), 2.5f);
    v[7] = std::numeric_limits<float>::quiet_NaN();
    w.Case("d2_f32_rel_constant", shape, v, Options(BoundMode::kRel, 1e-2));
  }
  {  // Every value is the fill value: one symbol, a 1-bit code.
    std::vector<uint64_t> shape{300};
    std::vector<double> v(Count(shape), -1.0);
    CompressOptions o = Options(BoundMode::kRel, 1e-2);
    o.fill_value = -1.0;
    w.Case("d1_f64_all_fill", shape, v, o);
  }
  {  // One element.
    std::vector<uint64_t> shape{1, 1, 1};
    std::vector<float> v{3.25f};
    w.Case("d3_f32_single", shape, v, Options(BoundMode::kAbs, 0.1));
  }
  {  // Length-limited Huffman code (Fibonacci histogram), one long block.
    auto v = FibonacciWalk(21);
    std::vector<uint64_t> shape{v.size()};
    CompressOptions o = Options(BoundMode::kAbs, 0.5);
    o.block = {65535};
    o.chunk_symbols = 4096;
    o.subsequence_bits = 32;
    w.Case("d1_f64_fibonacci_lengths", shape, v, o);
  }
  {  // Values near FLT_MAX whose reconstruction rounds down onto FLT_MAX.
    std::vector<uint64_t> shape{64};
    std::vector<float> v(Count(shape));
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = i % 3 == 0 ? FLT_MAX : (i % 3 == 1 ? -FLT_MAX : 1e37f * static_cast<float>(i));
    }
    CompressOptions o = Options(BoundMode::kAbs, static_cast<double>(FLT_MAX) * (1 + 1e-9) / 2);
    w.Case("d1_f32_near_flt_max", shape, v, o);
  }
  {  // REL whose range overflows a double: values near both ends.
    std::vector<uint64_t> shape{6, 50};
    auto v = Smooth<double>(shape, 23);
    v[3] = 1.7e308;
    v[250] = -1.6e308;
    AddSpecials(&v, 24, false);
    w.Case("d2_f64_rel_range_overflow", shape, v, Options(BoundMode::kRel, 1e-3));
  }
  {  // White noise: wide histogram, many distinct symbols and outliers.
    std::vector<uint64_t> shape{12, 40, 41};
    std::mt19937_64 rng(22);
    std::uniform_real_distribution<float> u(-3, 3);
    std::vector<float> v(Count(shape));
    for (float& x : v) x = u(rng);
    CompressOptions o = Options(BoundMode::kAbs, 0.01);
    o.radius = 512;
    o.frame_elements = 40 * 41 * 8;
    o.chunk_symbols = 1500;
    o.subsequence_bits = 128;
    o.chunk_group = 5;
    w.Case("d3_f32_noise", shape, v, o);
  }

  // ---- Format version 2 (FORMAT.md §15). Together: both orders, 1-D to 4-D,
  // batch dimensions, partial tiles in every dimension, several frames,
  // zero-run tokens of every class up to 12, runs cut by chunk ends, the gap
  // array with run tokens, the fill mask (row XOR, runs longer than 8190, more
  // than 4096 mask tokens, fill anchors, an all-fill frame, n = 1), metadata,
  // f32 overflow in predictions, f64 predictions that overflow (then 0), REL
  // with a zero bound, and the writer's own choices. Then run-value tokens
  // (lossless 2): every class and value, long runs split before one, runs
  // cut by chunk ends, both predictors, f32 and f64, with and without fill
  // and the gap array, radius 2 (values that are outliers).
  {  // Interpolation, cubic, 1-D f32, several frames (T = 256: a partial last
     // tile), zero-run tokens, fill mask, specials (verbatim elements and
     // anchors), gap array with small subsequences, metadata, default radius
     // (lowered to 32762 for zero-run tokens).
    std::vector<uint64_t> shape{5000};
    auto v = Smooth<float>(shape, 101);
    AddSpecials(&v, 102, true);
    AddFill(&v, -9999.0, 103);
    CompressOptions o = Options(BoundMode::kAbs, 1e-3);
    o.predictor = Predictor::kInterp;
    o.interp_order = 3;
    o.lossless = Lossless::kZeroRuns;
    o.fill_value = -9999.0;
    o.frame_elements = 1024;
    o.chunk_symbols = 512;
    o.subsequence_bits = 64;
    o.chunk_group = 4;
    o.metadata = R"({"variable": "t", "units": "K", "dims": ["x"]})";
    w.Case("v2_d1_f32_interp_cubic_fill_meta", shape, v, o);
  }
  {  // Interpolation, linear, 2-D f32 small (T = 32 over both dimensions,
     // partial tiles along both), plain Huffman, REL, a fill mask whose rows
     // differ (XOR with the previous row); small enough for the corruption
     // pass.
    std::vector<uint64_t> shape{40, 37};
    auto v = Smooth<float>(shape, 104);
    AddSpecials(&v, 105, false);
    AddFill(&v, -1e34, 106);
    CompressOptions o = Options(BoundMode::kRel, 1e-2);
    o.predictor = Predictor::kInterp;
    o.interp_order = 1;
    o.lossless = Lossless::kHuffman;
    o.fill_value = -1e34;
    o.chunk_symbols = 200;
    o.subsequence_bits = 32;
    w.Case("v2_d2_f32_interp_linear_small", shape, v, o);
  }
  {  // Interpolation, 3-D f64 (T = 16 over all three dimensions, partial
     // tiles), zero-run tokens over a constant block (long runs cut by chunk
     // ends), small radius (anchor outliers, verbatim non-anchors), no gap
     // array, several frames.
    std::vector<uint64_t> shape{20, 13, 11};
    auto v = Smooth<double>(shape, 107);
    for (uint64_t i = 0; i < 13 * 11 * 6; ++i) v[i] = 5.0;  // rows 0..5 constant
    AddSpecials(&v, 108, true);
    CompressOptions o = Options(BoundMode::kAbs, 1e-4);
    o.predictor = Predictor::kInterp;
    o.interp_order = 3;
    o.lossless = Lossless::kZeroRuns;
    o.radius = 64;
    o.gap_array = false;
    o.frame_elements = 13 * 11 * 8;
    o.chunk_symbols = 300;
    o.chunk_group = 2;
    w.Case("v2_d3_f64_interp_zeroruns_radius64", shape, v, o);
  }
  {  // Interpolation, 4-D f32 (dimension 0 a batch dimension), the writer's
     // own choice of tile, order and lossless stage, fill value 0.0 (also a
     // common data value), two rows per frame.
    std::vector<uint64_t> shape{5, 5, 9, 10};
    auto v = Smooth<float>(shape, 109);
    AddSpecials(&v, 110, true);
    AddFill(&v, 0.0, 111);
    CompressOptions o = Options(BoundMode::kAbs, 1e-2);
    o.predictor = Predictor::kInterp;
    o.lossless = Lossless::kAuto;
    o.fill_value = 0.0;
    o.frame_elements = 5 * 9 * 10 * 2;
    o.chunk_symbols = 128;
    o.subsequence_bits = 32;
    w.Case("v2_d4_f32_interp_auto_fill0", shape, v, o);
  }
  {  // Lorenzo with zero-run tokens (predictor 0, lossless 1) and fill runs
     // (fill coding 0): 1-D f64, mostly constant, one chunk long enough for
     // runs of more than 8191 positions (class-12 tokens, e = 4095), and runs
     // of every length 2..20 between bumps.
    std::vector<uint64_t> shape{40000};
    std::vector<double> v(Count(shape), 1.0);
    uint64_t at = 20000;
    for (int k = 2; k <= 20; ++k) {
      v[at] = 3.0;
      at += static_cast<uint64_t>(k) + 1;
    }
    for (uint64_t i = 30000; i < 30050; ++i) v[i] = -1.0;  // fill
    CompressOptions o = Options(BoundMode::kAbs, 1e-3);
    o.predictor = Predictor::kLorenzo;
    o.lossless = Lossless::kZeroRuns;
    o.fill_value = -1.0;
    o.radius = 1024;
    o.chunk_symbols = 20000;
    o.subsequence_bits = 128;
    w.Case("v2_d1_f64_lorenzo_zeroruns_long", shape, v, o);
  }
  {  // Version 2 only for its metadata: Lorenzo, plain Huffman, 2-D f64,
     // metadata with non-ASCII text, escapes, nesting and numbers.
    std::vector<uint64_t> shape{33, 29};
    auto v = Smooth<double>(shape, 112);
    CompressOptions o = Options(BoundMode::kAbs, 1e-5);
    o.metadata = "{\"name\": \"temp\\u00e9rature \\\"sea\\\"\", \"units\": \"\xc2\xb0" "C\","
                 " \"dims\": [\"lat\", \"lon\"], \"attrs\": {\"scale\": 1.5e-3, \"n\": null,"
                 " \"ok\": true, \"list\": [[], {}]}}";
    w.Case("v2_d2_f64_lorenzo_metadata", shape, v, o);
  }
  {  // Interpolation where every element is fill: only anchors carry
     // symbols, the mask is an empty run of 0s then one run of 1s.
    std::vector<uint64_t> shape{300};
    std::vector<float> v(Count(shape), -1.0f);
    CompressOptions o = Options(BoundMode::kRel, 1e-2);
    o.predictor = Predictor::kInterp;
    o.lossless = Lossless::kAuto;
    o.fill_value = -1.0;
    w.Case("v2_d1_f32_interp_all_fill", shape, v, o);
  }
  {  // One element, which is fill: its anchor keeps its symbol, and the mask
     // has n + 1 = 2 tokens (an empty run of 0s, then one 1).
    std::vector<uint64_t> shape{1};
    std::vector<float> v{-7.0f};
    CompressOptions o = Options(BoundMode::kAbs, 0.1);
    o.predictor = Predictor::kInterp;
    o.lossless = Lossless::kAuto;
    o.fill_value = -7.0;
    w.Case("v2_d1_f32_single_fill", shape, v, o);
  }
  {  // Fill mask stress, 1-D f32 (no row XOR in 1-D): a fill run longer than
     // 8190 (split into 8190, an empty run, the rest) and more than 4096 mask
     // tokens (alternating fill and data), so two or more mask chunks.
    std::vector<uint64_t> shape{30000};
    auto v = Smooth<float>(shape, 113);
    for (uint64_t i = 1000; i < 10000; ++i) v[i] = 1e20f;
    for (uint64_t i = 15000; i < 25000; i += 2) v[i] = 1e20f;
    CompressOptions o = Options(BoundMode::kAbs, 1e-2);
    o.predictor = Predictor::kInterp;
    o.interp_order = 3;
    o.lossless = Lossless::kZeroRuns;
    o.fill_value = 1e20;
    w.Case("v2_d1_f32_interp_mask_long_runs", shape, v, o);
  }
  {  // Fill mask with the row XOR doing work, 2-D f64 100x100: every odd row
     // is fill, so X is all 1s after the first rows (a run of 1s longer than
     // 8190, split), plus a column of fill (identical rows: long runs of 0s).
    std::vector<uint64_t> shape{100, 100};
    auto v = Smooth<double>(shape, 114);
    for (uint64_t r = 1; r < 100; r += 2) {
      for (uint64_t c = 0; c < 100; ++c) v[r * 100 + c] = -5.0;
    }
    for (uint64_t r = 0; r < 100; ++r) v[r * 100 + 37] = -5.0;
    CompressOptions o = Options(BoundMode::kAbs, 1e-3);
    o.predictor = Predictor::kInterp;
    o.interp_order = 1;
    o.lossless = Lossless::kAuto;
    o.fill_value = -5.0;
    w.Case("v2_d2_f64_interp_mask_xor_rows", shape, v, o);
  }
  {  // f32 overflow in interpolation (§8.4's narrow_T on pred + rho * step):
     // values near +-FLT_MAX with a bound of about FLT_MAX / 2, both orders.
    std::vector<uint64_t> shape{600};
    std::vector<float> v(Count(shape));
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = i % 3 == 0 ? FLT_MAX : (i % 3 == 1 ? -FLT_MAX : 1e36f * static_cast<float>(i % 97));
    }
    v[599] = std::numeric_limits<float>::quiet_NaN();  // verbatim where pred extrapolates
    CompressOptions o = Options(BoundMode::kAbs, static_cast<double>(FLT_MAX) * (1 + 1e-9) / 2);
    o.predictor = Predictor::kInterp;
    o.lossless = Lossless::kAuto;
    o.interp_order = 3;
    w.Case("v2_d1_f32_interp_near_flt_max_cubic", shape, v, o);
    o.interp_order = 1;
    o.bound = 5e37;  // step 1e38: extrapolated predictions beyond FLT_MAX
    w.Case("v2_d1_f32_interp_overflow_linear", shape, v, o);
  }
  {  // f64 REL whose range overflows (quant_step near DBL_MAX): 9*(b+c) and
     // b+c overflow, so predictions are infinite and become 0.
    std::vector<uint64_t> shape{6, 50};
    auto v = Smooth<double>(shape, 115);
    for (size_t i = 0; i < v.size(); i += 3) v[i] = i % 2 ? 1.7e308 : -1.6e308;
    CompressOptions o = Options(BoundMode::kRel, 1e-3);
    o.predictor = Predictor::kInterp;
    o.lossless = Lossless::kAuto;
    o.interp_order = 3;
    w.Case("v2_d2_f64_interp_range_overflow", shape, v, o);
  }
  {  // REL over a constant field (abs_bound 0, quant_step = |value|) with
     // interpolation and zero-run tokens: every residual is 0.
    std::vector<uint64_t> shape{40, 30};
    std::vector<float> v(Count(shape), 2.5f);
    v[7] = std::numeric_limits<float>::quiet_NaN();
    CompressOptions o = Options(BoundMode::kRel, 1e-2);
    o.predictor = Predictor::kInterp;
    o.lossless = Lossless::kZeroRuns;
    w.Case("v2_d2_f32_interp_rel_constant", shape, v, o);
  }
  {  // The writer's own choice (kAuto, the default) on white noise and on a
     // smooth field: whatever §15.9 picks must decode by the spec too.
    std::vector<uint64_t> shape{12, 40, 41};
    std::mt19937_64 rng(116);
    std::uniform_real_distribution<float> u(-3, 3);
    std::vector<float> v(Count(shape));
    for (float& x : v) x = u(rng);
    CompressOptions o = Options(BoundMode::kAbs, 0.01);
    o.predictor = Predictor::kAuto;
    o.lossless = Lossless::kAuto;
    o.radius = 512;
    o.frame_elements = 40 * 41 * 8;
    o.chunk_symbols = 1500;
    o.subsequence_bits = 128;
    w.Case("v2_d3_f32_auto_noise", shape, v, o);
    auto s = Smooth<float>(shape, 117);
    CompressOptions d = Options(BoundMode::kAbs, 1e-3);
    d.predictor = Predictor::kAuto;
    d.lossless = Lossless::kAuto;
    w.Case("v2_d3_f32_auto_smooth", shape, s, d);
  }

  // ---- Run-value tokens (lossless 2, FORMAT.md §15.4.1), each case forced
  // to them with Lossless::kRunValues (the radius lowered to 32736).
  {  // Lorenzo, f64 5 x 32768 with a block of 1 x 65535, so the residuals are
     // exactly RunValueResiduals: every run-value token class and value,
     // long runs split before one, runs cut by chunk ends (16384), +-3 after
     // runs; gap array with small subsequences; no fill.
    const uint64_t rows = 5, cols = 32768, chunk = 16384;
    const std::vector<int> r = RunValueResiduals(chunk, rows * cols);
    if (r.empty()) {
      std::fprintf(stderr, "RunValueResiduals: the frame is too small\n");
      return 1;
    }
    std::vector<uint64_t> shape{rows, cols};
    CompressOptions o = Options(BoundMode::kAbs, 0.5);  // step 1
    o.lossless = Lossless::kRunValues;
    o.block = {1, 65535};
    o.chunk_symbols = chunk;
    o.subsequence_bits = 64;
    o.chunk_group = 2;
    w.Case("v2_d2_f64_lorenzo_runvalues_classes", shape, FromResiduals<double>(r, cols), o);
    // The same residuals as f32, in frames of one row and chunks of 4096 (so
    // the class-12 features are cut by chunk ends too), fill runs, no gap array.
    std::vector<float> f = FromResiduals<float>(r, cols);
    for (uint64_t i = 3 * cols + 100; i < 3 * cols + 400; ++i) f[i] = 1e6f;
    for (uint64_t i = 0; i < f.size(); i += 997) f[i] = 1e6f;
    CompressOptions g = o;
    g.fill_value = 1e6;
    g.frame_elements = cols;
    g.chunk_symbols = 4096;
    g.gap_array = false;
    w.Case("v2_d2_f32_lorenzo_runvalues_fill_nogap", shape, f, g);
  }
  {  // Interpolation, cubic, 2-D f32 (T = 32 over both, partial tiles), a
     // fill mask, gap array, chunks of 300 (runs cut by chunk ends), plateau
     // data whose runs end on residuals of -3 .. +3; specials (verbatim).
    std::vector<uint64_t> shape{70, 90};
    auto v = Plateaus<float>(shape, 201);
    AddSpecials(&v, 202, false);
    AddFill(&v, -1e30, 203);
    CompressOptions o = Options(BoundMode::kAbs, 0.5);
    o.predictor = Predictor::kInterp;
    o.interp_order = 3;
    o.lossless = Lossless::kRunValues;
    o.fill_value = -1e30;
    o.frame_elements = 90 * 40;
    o.chunk_symbols = 300;
    o.subsequence_bits = 32;
    o.chunk_group = 3;
    w.Case("v2_d2_f32_interp_runvalues_fill_gap", shape, v, o);
  }
  {  // Interpolation, linear, 3-D f64 (T = 16 over all three), no fill, no
     // gap array, several frames, a small radius (outliers at anchors).
    std::vector<uint64_t> shape{24, 19, 21};
    auto v = Plateaus<double>(shape, 204);
    AddSpecials(&v, 205, true);
    CompressOptions o = Options(BoundMode::kAbs, 0.5);
    o.predictor = Predictor::kInterp;
    o.interp_order = 1;
    o.lossless = Lossless::kRunValues;
    o.radius = 40;
    o.gap_array = false;
    o.frame_elements = 19 * 21 * 9;
    o.chunk_symbols = 500;
    o.chunk_group = 2;
    w.Case("v2_d3_f64_interp_runvalues_nogap", shape, v, o);
  }
  {  // Radius 2: residuals -1, 0, +1 are symbols 1..3, the others outliers
     // (symbol 0 = radius - 2), so runs followed by an outlier end with a
     // run-value token of v_0 whose position is that outlier. Lorenzo, 1-D
     // f64, small chunks, gap array; small enough for the corruption pass.
    const int residuals[8] = {0, 0, 0, 0, 1, -1, 2, -5};  // 2, -5: outliers
    std::vector<double> v;
    std::mt19937_64 rng(206);
    double q = 0;
    for (int i = 0; i < 300; ++i) v.push_back(q += residuals[rng() % 8]);
    std::vector<uint64_t> shape{v.size()};
    CompressOptions o = Options(BoundMode::kAbs, 0.5);
    o.lossless = Lossless::kRunValues;
    o.radius = 2;
    o.block = {512};
    o.chunk_symbols = 64;
    o.subsequence_bits = 32;
    w.Case("v2_d1_f64_lorenzo_runvalues_radius2", shape, v, o);
  }
  {  // The writer's own choice of lossless stage (kAuto) on plateau data,
     // where run-value tokens should win (§15.9); whatever it picks must
     // decode by the spec.
    std::vector<uint64_t> shape{64, 64};
    auto v = Plateaus<float>(shape, 207);
    CompressOptions o = Options(BoundMode::kAbs, 0.5);
    o.predictor = Predictor::kLorenzo;
    o.lossless = Lossless::kAuto;
    o.metadata = R"({"case": "auto lossless on plateaus"})";
    w.Case("v2_d2_f32_lorenzo_auto_plateaus", shape, v, o);
  }

  std::ofstream list(w.dir + "/cases.txt", std::ios::trunc);
  for (const std::string& name : w.names) list << name << "\n";
  if (!list) {
    std::fprintf(stderr, "cannot write %s/cases.txt\n", w.dir.c_str());
    return 1;
  }
  std::printf("wrote %zu archives to %s\n", w.names.size(), w.dir.c_str());
  return w.failures == 0 ? 0 : 1;
}
