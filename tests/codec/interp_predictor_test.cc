// The interpolation predictor (FORMAT.md §15.5, §15.8) checked against
// FORMAT.md itself: a deliberately naive reference written in this file from
// the spec text alone (per element, coordinates as vectors, nothing shared
// with codec/interp_predictor.cc), symbol orders derived by hand, round trips
// judged by the independent bound checker, and corrupt inputs.
#include "codec/interp_predictor.h"

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "tests/bound_checker.h"

namespace ebzip {
namespace {

using ::ebzip::testing::CheckBound;
using ::ebzip::testing::SameBits;

template <typename T>
constexpr DType DTypeOf() {
  return sizeof(T) == 4 ? DType::kFloat32 : DType::kFloat64;
}

std::string ShapeName(const std::vector<uint64_t>& shape) {
  std::string s;
  for (uint64_t d : shape) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

// ---------------------------------------------------------------------------
// The reference: FORMAT.md §15.5 and §15.8 transcribed literally.

uint64_t Product(const std::vector<uint64_t>& v) {
  uint64_t n = 1;
  for (uint64_t x : v) n *= x;
  return n;
}

std::vector<uint64_t> CoordsOf(uint64_t i, const std::vector<uint64_t>& dims) {
  std::vector<uint64_t> c(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    c[d] = i % dims[d];
    i /= dims[d];
  }
  return c;
}

uint64_t IndexOf(const std::vector<uint64_t>& c, const std::vector<uint64_t>& dims) {
  uint64_t i = 0;
  for (size_t d = 0; d < dims.size(); ++d) i = i * dims[d] + c[d];
  return i;
}

// Advances c through the box [lo, hi) in C order; false after the last.
bool Next(std::vector<uint64_t>& c, const std::vector<uint64_t>& lo,
          const std::vector<uint64_t>& hi) {
  for (size_t d = c.size(); d-- > 0;) {
    if (++c[d] < hi[d]) return true;
    c[d] = lo[d];
  }
  return false;
}

// §8.4's narrow_T, written out from the text.
template <typename T>
T RefNarrow(double v) {
  if constexpr (sizeof(T) == 8) {
    return v;
  } else {
    const double a = std::fabs(v);
    if (a >= 3.4028235677973366e38) return v < 0 ? -INFINITY : INFINITY;
    if (a > 3.4028234663852886e38) return v < 0 ? -FLT_MAX : FLT_MAX;
    return static_cast<float>(v);
  }
}

template <typename T>
bool RefSpecial(T x) {
  // NaN, ±Inf, -0.0, subnormals.
  return !std::isfinite(x) || std::fpclassify(x) == FP_SUBNORMAL || (x == 0 && std::signbit(x));
}

struct Ref {
  explicit Ref(const InterpParams& params)
      : p(params), dims(params.shape), n(Product(params.shape)) {
    for (size_t d = 0; d < dims.size(); ++d) {
      if (p.tile[d] > 1) {
        interp.push_back(d);
        tile = p.tile[d];
      }
    }
    for (size_t d = 0; d < dims.size(); ++d) {
      grid.push_back(IsInterp(d) ? (dims[d] + tile - 1) / tile : dims[d]);
    }
  }
  bool IsInterp(size_t d) const { return p.tile[d] > 1; }
  bool IsAnchor(const std::vector<uint64_t>& c) const {
    for (size_t d : interp) {
      if (c[d] % tile != 0) return false;
    }
    return true;
  }
  // §15.5.2's membership of pass (h, d).
  bool InPass(const std::vector<uint64_t>& c, uint64_t h, size_t d) const {
    if (c[d] % (2 * h) != h) return false;
    for (size_t e : interp) {
      if (e < d && c[e] % h != 0) return false;
      if (e > d && c[e] % (2 * h) != 0) return false;
    }
    return true;
  }
  std::vector<uint64_t> Levels() const {
    std::vector<uint64_t> h;
    for (uint64_t x = tile / 2; x >= 1; x /= 2) h.push_back(x);
    return h;
  }
  // The element of anchor-grid position a.
  std::vector<uint64_t> AnchorElement(const std::vector<uint64_t>& a) const {
    std::vector<uint64_t> c = a;
    for (size_t d : interp) c[d] *= tile;
    return c;
  }

  // The prediction table of §15.5.2, with the window rule.
  template <typename V>
  double Predict(const std::vector<V>& w, const std::vector<uint64_t>& c, uint64_t h,
                 size_t d) const {
    const int64_t lo = static_cast<int64_t>(c[d] / tile * tile);
    const int64_t hi = std::min<int64_t>(lo + tile, static_cast<int64_t>(dims[d]) - 1);
    auto at = [&](int64_t offset, bool* available) {
      const int64_t x = static_cast<int64_t>(c[d]) + offset * static_cast<int64_t>(h);
      *available = x >= lo && x <= hi;
      if (!*available) return 0.0;
      std::vector<uint64_t> q = c;
      q[d] = static_cast<uint64_t>(x);
      return static_cast<double>(w[IndexOf(q, dims)]);
    };
    bool has_a, has_b, has_c, has_e;
    const double a = at(-3, &has_a);
    const double b = at(-1, &has_b);
    const double cc = at(1, &has_c);
    const double e = at(3, &has_e);
    EXPECT_TRUE(has_b);
    const bool cubic = p.order == InterpOrder::kCubic;
    double pred;
    if (cubic && has_a && has_c && has_e) {
      pred = (9 * (b + cc) - (a + e)) * 0.0625;
    } else if (cubic && has_a && has_c) {
      pred = ((6 * b + 3 * cc) - a) * 0.125;
    } else if (cubic && has_c && has_e) {
      pred = ((3 * b + 6 * cc) - e) * 0.125;
    } else if (has_c) {
      pred = (b + cc) * 0.5;
    } else if (has_a) {
      pred = (3 * b - a) * 0.5;
    } else {
      pred = b;
    }
    if (!std::isfinite(pred)) pred = 0;
    return pred;
  }

  // §15.5.3: element indices in symbol order.
  std::vector<uint64_t> SymbolOrder(const uint8_t* fill) const {
    std::vector<uint64_t> order;
    std::vector<uint64_t> k(dims.size(), 0), zero(dims.size(), 0);
    do {
      std::vector<uint64_t> lo(dims.size()), hi(dims.size());
      for (size_t d = 0; d < dims.size(); ++d) {
        lo[d] = IsInterp(d) ? k[d] * tile : k[d];
        hi[d] = IsInterp(d) ? std::min(lo[d] + tile, dims[d]) : lo[d] + 1;
      }
      order.push_back(IndexOf(lo, dims));
      for (uint64_t h : Levels()) {
        for (size_t d : interp) {
          std::vector<uint64_t> c = lo;
          do {
            const uint64_t i = IndexOf(c, dims);
            if (InPass(c, h, d) && !(fill != nullptr && fill[i])) order.push_back(i);
          } while (Next(c, lo, hi));
        }
      }
    } while (Next(k, zero, grid));
    return order;
  }

  // The Lorenzo residual (§10.3) of anchor-grid position a from the grid's q:
  // the sum over subsets of dimensions of ±q at a minus the subset, a term
  // counting 0 when it leaves a's block of 8.
  int64_t LorenzoResidual(const std::vector<int64_t>& q, const std::vector<uint64_t>& a) const {
    int64_t sum = 0;
    const size_t r = a.size();
    for (unsigned s = 0; s < (1u << r); ++s) {
      std::vector<uint64_t> b = a;
      bool inside = true;
      int sign = 1;
      for (size_t d = 0; d < r; ++d) {
        if (!((s >> d) & 1)) continue;
        if (a[d] % 8 == 0) inside = false;
        b[d] = a[d] - 1;
        sign = -sign;
      }
      if (inside) sum += sign * q[IndexOf(b, grid)];
    }
    return sum;
  }

  // §8.3 on the anchor grid: q is the sum of the residuals over the box
  // from the block's first corner to the element.
  int64_t LorenzoSum(const std::vector<int64_t>& r, const std::vector<uint64_t>& a) const {
    std::vector<uint64_t> lo = a, hi = a;
    for (size_t d = 0; d < a.size(); ++d) {
      lo[d] = a[d] / 8 * 8;
      hi[d] = a[d] + 1;
    }
    int64_t sum = 0;
    std::vector<uint64_t> c = lo;
    do {
      sum += r[IndexOf(c, grid)];
    } while (Next(c, lo, hi));
    return sum;
  }

  const InterpParams& p;
  std::vector<uint64_t> dims;
  uint64_t n;
  std::vector<size_t> interp;
  uint64_t tile = 0;
  std::vector<uint64_t> grid;  // the anchor grid's extents
};

template <typename T>
struct RefEncoded {
  std::vector<int64_t> sym;  // per element; -1: no symbol
  std::vector<uint32_t> verbatim;
  std::vector<uint32_t> outlier_index;
  std::vector<int32_t> outlier_residual;
  std::vector<T> w;  // working values: what the decoder computes
};

// §15.8, element by element.
template <typename T>
RefEncoded<T> RefEncode(const InterpParams& p, const std::vector<T>& x, const uint8_t* fill) {
  const Ref ref(p);
  const double step = p.quant_step;
  const double inv_step = std::fmin(1.0 / step, DBL_MAX);  // §15.8, for non-anchors
  const int64_t radius = p.radius;
  RefEncoded<T> out;
  out.sym.assign(ref.n, -1);
  out.w.assign(ref.n, T(0));
  std::vector<bool> verbatim(ref.n, false);

  // Anchors: §10.2's steps, the placeholders, §10.3's residuals.
  const uint64_t anchors = Product(ref.grid);
  std::vector<int64_t> q(anchors, 0);
  std::vector<int> kind(anchors);  // 0 quantized, 1 verbatim, 2 fill
  for (uint64_t t = 0; t < anchors; ++t) {
    const uint64_t i = IndexOf(ref.AnchorElement(CoordsOf(t, ref.grid)), ref.dims);
    const T v = x[i];
    if (fill != nullptr && fill[i]) {
      kind[t] = 2;
      continue;
    }
    kind[t] = 1;
    if (RefSpecial(v)) continue;
    const double r = static_cast<double>(v) / step;
    if (!(std::fabs(r) < 67108864.0)) continue;
    const double rho = std::rint(r);
    const T y = RefNarrow<T>(rho * step);
    if (!(std::fabs(static_cast<double>(y) - static_cast<double>(v)) <= p.abs_bound)) continue;
    kind[t] = 0;
    q[t] = static_cast<int64_t>(rho);
  }
  std::map<std::vector<uint64_t>, int64_t> first;  // block -> its first quantized q
  for (uint64_t t = 0; t < anchors; ++t) {
    std::vector<uint64_t> block = CoordsOf(t, ref.grid);
    for (uint64_t& b : block) b /= 8;
    if (kind[t] == 0) first.emplace(block, q[t]);  // C order: the block's row-major first
  }
  for (uint64_t t = 0; t < anchors; ++t) {
    if (kind[t] == 0) continue;
    std::vector<uint64_t> block = CoordsOf(t, ref.grid);
    for (uint64_t& b : block) b /= 8;
    auto it = first.find(block);
    q[t] = it == first.end() ? 0 : it->second;
  }
  for (uint64_t t = 0; t < anchors; ++t) {
    const std::vector<uint64_t> a = CoordsOf(t, ref.grid);
    const uint64_t i = IndexOf(ref.AnchorElement(a), ref.dims);
    verbatim[i] = kind[t] == 1;
    out.w[i] = RefNarrow<T>(static_cast<double>(q[t]) * step);
    const int64_t delta = ref.LorenzoResidual(q, a);
    if (-radius < delta && delta < radius) {
      out.sym[i] = delta + radius;
    } else {
      out.sym[i] = 0;
      out.outlier_index.push_back(static_cast<uint32_t>(i));
      out.outlier_residual.push_back(static_cast<int32_t>(delta));
    }
  }

  // The passes.
  for (uint64_t h : ref.Levels()) {
    for (size_t d : ref.interp) {
      for (uint64_t i = 0; i < ref.n; ++i) {
        const std::vector<uint64_t> c = CoordsOf(i, ref.dims);
        if (!ref.InPass(c, h, d)) continue;
        const double pred = ref.Predict(out.w, c, h, d);
        if (fill != nullptr && fill[i]) {
          out.w[i] = RefNarrow<T>(pred + static_cast<double>(int64_t{0}) * step);
          continue;
        }
        const T v = x[i];
        int64_t rho = 0;
        bool keep = RefSpecial(v);
        if (!keep) {
          const double r = (static_cast<double>(v) - pred) * inv_step;
          keep = !(std::fabs(r) <= static_cast<double>(radius - 1));
          if (!keep) {
            rho = static_cast<int64_t>(std::rint(r));
            const T y = RefNarrow<T>(pred + static_cast<double>(rho) * step);
            keep = !(std::fabs(static_cast<double>(y) - static_cast<double>(v)) <= p.abs_bound);
          }
        }
        if (keep) rho = 0;
        verbatim[i] = keep;
        out.sym[i] = rho + radius;
        out.w[i] = RefNarrow<T>(pred + static_cast<double>(rho) * step);
      }
    }
  }
  for (uint64_t i = 0; i < ref.n; ++i) {
    if (verbatim[i]) out.verbatim.push_back(static_cast<uint32_t>(i));
  }
  return out;
}

// §15.7 step 3 from element-indexed symbols (-1 where none) and outliers.
template <typename T>
std::vector<T> RefDecode(const InterpParams& p, const std::vector<int64_t>& sym,
                         const std::map<uint64_t, int32_t>& outliers, const uint8_t* fill) {
  const Ref ref(p);
  const double step = p.quant_step;
  const int64_t radius = p.radius;
  std::vector<T> w(ref.n, T(0));
  const uint64_t anchors = Product(ref.grid);
  std::vector<int64_t> r(anchors);
  for (uint64_t t = 0; t < anchors; ++t) {
    const uint64_t i = IndexOf(ref.AnchorElement(CoordsOf(t, ref.grid)), ref.dims);
    r[t] = sym[i] == 0 ? outliers.at(i) : sym[i] - radius;
  }
  for (uint64_t t = 0; t < anchors; ++t) {
    const std::vector<uint64_t> a = CoordsOf(t, ref.grid);
    // i32 wrap-around, as §8.3 says.
    const int32_t q = static_cast<int32_t>(static_cast<uint32_t>(ref.LorenzoSum(r, a)));
    w[IndexOf(ref.AnchorElement(a), ref.dims)] = RefNarrow<T>(static_cast<double>(q) * step);
  }
  for (uint64_t h : ref.Levels()) {
    for (size_t d : ref.interp) {
      for (uint64_t i = 0; i < ref.n; ++i) {
        const std::vector<uint64_t> c = CoordsOf(i, ref.dims);
        if (!ref.InPass(c, h, d)) continue;
        const double pred = ref.Predict(w, c, h, d);
        const int64_t rho = fill != nullptr && fill[i] ? 0 : sym[i] - radius;
        w[i] = RefNarrow<T>(pred + static_cast<double>(rho) * step);
      }
    }
  }
  return w;
}

// ---------------------------------------------------------------------------
// Test data.

template <typename T>
const uint8_t* Bytes(const std::vector<T>& v) {
  return reinterpret_cast<const uint8_t*>(v.data());
}

// A smooth field of amplitude ~1, plus uniform noise of `noise`.
template <typename T>
std::vector<T> Field(const std::vector<uint64_t>& shape, double noise, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const uint64_t n = Product(shape);
  std::vector<T> v(n);
  for (uint64_t i = 0; i < n; ++i) {
    const std::vector<uint64_t> c = CoordsOf(i, shape);
    double s = 0.3;
    for (size_t d = 0; d < c.size(); ++d) {
      s += std::sin(0.07 * static_cast<double>(c[d]) * static_cast<double>(d + 1) + 0.5 * d);
    }
    v[i] = static_cast<T>(s / static_cast<double>(c.size()) + noise * u(rng));
  }
  return v;
}

// Overwrites blobs covering about `fraction` of the field with `fill`, and
// returns the mask (1 where the element equals the fill value bit for bit).
template <typename T>
std::vector<uint8_t> AddFill(std::vector<T>& v, const std::vector<uint64_t>& shape, double fraction,
                             double fill, uint32_t seed) {
  std::mt19937 rng(seed);
  const uint64_t n = v.size();
  std::vector<uint8_t> mask(n, 0);
  uint64_t filled = 0;
  while (static_cast<double>(filled) < fraction * static_cast<double>(n)) {
    const std::vector<uint64_t> centre = CoordsOf(rng() % n, shape);
    const double radius = 1.0 + static_cast<double>(rng() % 6);
    for (uint64_t i = 0; i < n; ++i) {
      const std::vector<uint64_t> c = CoordsOf(i, shape);
      double dist = 0;
      for (size_t d = 0; d < c.size(); ++d) {
        const double x = static_cast<double>(c[d]) - static_cast<double>(centre[d]);
        dist += x * x;
      }
      if (dist <= radius * radius && !mask[i]) {
        mask[i] = 1;
        ++filled;
      }
    }
  }
  for (uint64_t i = 0; i < n; ++i) {
    if (mask[i]) v[i] = static_cast<T>(fill);
  }
  return mask;
}

// NaN, ±Inf, -0.0, subnormals and huge spikes at random places (every
// 40th element or so), some on anchors.
template <typename T>
void AddSpecials(std::vector<T>& v, uint32_t seed) {
  std::mt19937 rng(seed);
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(),
                        std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(),
                        T(-0.0),
                        std::numeric_limits<T>::denorm_min(),
                        -std::numeric_limits<T>::denorm_min() * 3,
                        std::numeric_limits<T>::max(),
                        T(1e30),
                        T(-3e20),
                        std::numeric_limits<T>::lowest()};
  for (uint64_t k = 0; k < v.size() / 40 + 1; ++k) {
    v[rng() % v.size()] = specials[rng() % (sizeof(specials) / sizeof(specials[0]))];
  }
  v[0] = std::numeric_limits<T>::quiet_NaN();  // an anchor
}

InterpParams Params(DType dtype, std::vector<uint64_t> shape, std::vector<uint16_t> tile,
                    InterpOrder order, double abs_bound) {
  InterpParams p;
  p.dtype = dtype;
  p.shape = std::move(shape);
  for (size_t d = 0; d < tile.size(); ++d) p.tile[d] = tile[d];
  p.order = order;
  p.abs_bound = abs_bound;
  p.quant_step = 2 * abs_bound;
  return p;
}

template <typename T>
std::vector<T> Decode(const InterpParams& p, const InterpEncoded& e, const uint8_t* fill,
                      absl::Status* status = nullptr) {
  std::vector<T> out(Product(p.shape));
  absl::Status s = InterpDecode(p, e.symbols, e.outlier_index, e.outlier_residual, fill,
                                reinterpret_cast<uint8_t*>(out.data()));
  if (status != nullptr) {
    *status = s;
  } else {
    EXPECT_TRUE(s.ok()) << s;
  }
  return out;
}

template <typename T>
void ExpectBitEqual(const std::vector<T>& got, const std::vector<T>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  uint64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!SameBits(got[i], want[i])) {
      if (bad++ < 5) {
        ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", want " << want[i];
      }
    }
  }
  EXPECT_EQ(bad, 0u) << what;
}

// The module's output against the reference's, all of it.
template <typename T>
void ExpectMatchesReference(const InterpParams& p, const std::vector<T>& x, const uint8_t* fill) {
  SCOPED_TRACE(::testing::Message()
               << ShapeName(p.shape) << " T=" << p.tile[p.shape.size() - 1] << " order "
               << static_cast<int>(p.order) << " f" << 8 * sizeof(T));
  InterpEncoded e;
  ASSERT_TRUE(InterpEncode(p, Bytes(x), fill, &e).ok());
  const RefEncoded<T> want = RefEncode(p, x, fill);
  const std::vector<uint64_t> order = Ref(p).SymbolOrder(fill);
  ASSERT_EQ(e.symbols.size(), order.size());
  uint64_t mismatched = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    if (e.symbols[k] != want.sym[order[k]] && mismatched++ < 5) {
      ADD_FAILURE() << "position " << k << " (element " << order[k] << "): symbol " << e.symbols[k]
                    << ", want " << want.sym[order[k]];
    }
  }
  EXPECT_EQ(mismatched, 0u);
  EXPECT_EQ(e.verbatim_index, want.verbatim);
  EXPECT_EQ(e.outlier_index, want.outlier_index);
  EXPECT_EQ(e.outlier_residual, want.outlier_residual);
  ExpectBitEqual(Decode<T>(p, e, fill), want.w, "decoded working values");
  // The reference's decoder agrees with its encoder (checks the reference).
  std::map<uint64_t, int32_t> outliers;
  for (size_t k = 0; k < want.outlier_index.size(); ++k) {
    outliers[want.outlier_index[k]] = want.outlier_residual[k];
  }
  ExpectBitEqual(RefDecode<T>(p, want.sym, outliers, fill), want.w, "reference decoder");
}

// ---------------------------------------------------------------------------
// Parameters.

TEST(InterpParams, AcceptsWhatFormatAllows) {
  EXPECT_TRUE(
      ValidateInterpParams(Params(DType::kFloat32, {10}, {2}, InterpOrder::kLinear, 1)).ok());
  EXPECT_TRUE(ValidateInterpParams(Params(DType::kFloat64, {3, 4, 5, 6}, {1, 32768, 1, 32768},
                                          InterpOrder::kCubic, 1))
                  .ok());
  EXPECT_TRUE(
      ValidateInterpParams(Params(DType::kFloat32, {7, 9, 9}, {1, 16, 16}, InterpOrder::kCubic, 1))
          .ok());
}

TEST(InterpParams, RejectsWhatFormatForbids) {
  auto code = [](InterpParams p) { return ValidateInterpParams(p).code(); };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  const InterpParams good = Params(DType::kFloat32, {8, 8}, {4, 4}, InterpOrder::kCubic, 1);
  ASSERT_EQ(code(good), absl::StatusCode::kOk);
  InterpParams p = good;
  p.tile = {4, 8, 0, 0};  // two different T
  EXPECT_EQ(code(p), kInvalid);
  p.tile = {1, 1, 0, 0};  // nothing interpolated
  EXPECT_EQ(code(p), kInvalid);
  p.tile = {6, 6, 0, 0};  // not a power of two
  EXPECT_EQ(code(p), kInvalid);
  p.tile = {0, 4, 0, 0};
  EXPECT_EQ(code(p), kInvalid);
  p = good;
  p.tile = {4, 4, 4, 0};  // beyond the rank
  EXPECT_EQ(code(p), kInvalid);
  p = Params(DType::kFloat32, {8}, {65535}, InterpOrder::kCubic, 1);
  EXPECT_EQ(code(p), kInvalid);
  p = good;
  p.order = static_cast<InterpOrder>(2);
  EXPECT_EQ(code(p), kInvalid);
  p = good;
  p.radius = 0;
  EXPECT_EQ(code(p), kInvalid);
  p.radius = 32769;
  EXPECT_EQ(code(p), kInvalid);
  p = good;
  p.quant_step = 0;
  EXPECT_EQ(code(p), kInvalid);
  p.quant_step = INFINITY;
  EXPECT_EQ(code(p), kInvalid);
  p = good;
  p.shape = {};
  EXPECT_EQ(code(p), kInvalid);
  p.shape = {2, 2, 2, 2, 2};
  EXPECT_EQ(code(p), kInvalid);
  p = good;
  p.shape = {8, 0};
  EXPECT_EQ(code(p), kInvalid);
  p.shape = {1 << 16, 1 << 16};  // 2^32 elements
  EXPECT_EQ(code(p), kInvalid);
  p = good;
  p.dtype = static_cast<DType>(3);
  EXPECT_EQ(code(p), kInvalid);
  // The entry points check them too.
  InterpEncoded e;
  std::vector<float> x(64);
  p = good;
  p.tile = {3, 3, 0, 0};
  EXPECT_EQ(InterpEncode(p, Bytes(x), nullptr, &e).code(), kInvalid);
}

// ---------------------------------------------------------------------------
// Symbol order, derived by hand from §15.5.3 (the derivation is in the
// comments; nothing here was produced by running code).

// Observes the module's symbol order through both directions: decoding a
// stream laid out by `hand` must give what the reference decoder gives from
// the same element-indexed symbols, and encoding must emit, at position k,
// the reference's symbol of element hand[k].
void ExpectSymbolOrder(const InterpParams& p, const std::vector<uint64_t>& hand,
                       const uint8_t* fill) {
  const uint64_t n = Product(p.shape);
  // The reference's own order agrees with the hand derivation.
  EXPECT_EQ(Ref(p).SymbolOrder(fill), hand);

  std::mt19937 rng(7);
  std::vector<int64_t> sym(n, -1);
  std::vector<uint16_t> stream;
  for (uint64_t i : hand) {
    sym[i] = static_cast<int64_t>(p.radius) - 1000 + static_cast<int64_t>(rng() % 2001);
    stream.push_back(static_cast<uint16_t>(sym[i]));
  }
  std::vector<double> out(n);
  ASSERT_TRUE(InterpDecode(p, stream, {}, {}, fill, reinterpret_cast<uint8_t*>(out.data())).ok());
  ExpectBitEqual(out, RefDecode<double>(p, sym, {}, fill), "decoded from a hand-ordered stream");

  std::vector<double> x = Field<double>(p.shape, 30, 3);  // noise: every symbol differs
  InterpEncoded e;
  ASSERT_TRUE(InterpEncode(p, Bytes(x), fill, &e).ok());
  const RefEncoded<double> want = RefEncode(p, x, fill);
  ASSERT_EQ(e.symbols.size(), hand.size());
  for (size_t k = 0; k < hand.size(); ++k) {
    EXPECT_EQ(e.symbols[k], want.sym[hand[k]]) << "position " << k;
  }
}

TEST(InterpSymbolOrder, TwoDimensions5x6Tile4) {
  // Element (r, c) is 6r + c. Tiles (row-major over ranges): rows [0,4)|[4,5)
  // x cols [0,4)|[4,6). Passes (2,0), (2,1), (1,0), (1,1); pass (h,0) takes
  // r = h mod 2h and c = 0 mod 2h, pass (h,1) c = h mod 2h and r = 0 mod h.
  const std::vector<uint64_t> hand = {
      // tile (0,0): anchor (0,0); (2,0); (0,2) (2,2); (1,0) (1,2) (3,0) (3,2);
      // (0,1) (0,3) (1,1) (1,3) (2,1) (2,3) (3,1) (3,3)
      0, 12, 2, 14, 6, 8, 18, 20, 1, 3, 7, 9, 13, 15, 19, 21,
      // tile (0,1): anchor (0,4); (2,4); none (c = 6 is outside); (1,4) (3,4);
      // (0,5) (1,5) (2,5) (3,5)
      4, 16, 10, 22, 5, 11, 17, 23,
      // tile (1,0): anchor (4,0); pass (2,1): (4,2); pass (1,1): (4,1) (4,3)
      24, 26, 25, 27,
      // tile (1,1): anchor (4,4); pass (1,1): (4,5)
      28, 29};
  for (InterpOrder order : {InterpOrder::kLinear, InterpOrder::kCubic}) {
    InterpParams p = Params(DType::kFloat64, {5, 6}, {4, 4}, order, 0.5);
    ExpectSymbolOrder(p, hand, nullptr);
  }
  // With a fill mask, fill elements other than anchors have no position:
  // element 0 (an anchor) keeps its, 1, 12 and 29 lose theirs.
  std::vector<uint8_t> fill(30, 0);
  for (int i : {0, 1, 12, 29}) fill[i] = 1;
  std::vector<uint64_t> without;
  for (uint64_t i : hand) {
    if (i != 1 && i != 12 && i != 29) without.push_back(i);
  }
  ASSERT_EQ(without.size(), 27u);
  ExpectSymbolOrder(Params(DType::kFloat64, {5, 6}, {4, 4}, InterpOrder::kCubic, 0.5), without,
                    fill.data());
}

TEST(InterpSymbolOrder, ThreeDimensionsWithBatchDimension) {
  // Shape 2x5x3, tile 1x2x2: dimension 0 is batch. Element (a,b,c) is
  // 15a + 3b + c. Ranges: {0}|{1} x [0,2)|[2,4)|[4,5) x [0,2)|[2,3). One level
  // h = 1: pass (1,1) takes b odd, c even; pass (1,2) c odd, any b.
  const std::vector<uint64_t> hand = {
      // a = 0: tile b[0,2) c[0,2): anchor 0; (0,1,0)=3; (0,0,1)=1 (0,1,1)=4
      0, 3, 1, 4,
      // b[0,2) c[2,3): anchor 2; (0,1,2)=5; no odd c
      2, 5,
      // b[2,4) c[0,2): anchor 6; (0,3,0)=9; (0,2,1)=7 (0,3,1)=10
      6, 9, 7, 10,
      // b[2,4) c[2,3): anchor 8; (0,3,2)=11
      8, 11,
      // b[4,5) c[0,2): anchor 12; no odd b; (0,4,1)=13
      12, 13,
      // b[4,5) c[2,3): anchor 14 alone
      14,
      // a = 1: the same, plus 15
      15, 18, 16, 19, 17, 20, 21, 24, 22, 25, 23, 26, 27, 28, 29};
  for (InterpOrder order : {InterpOrder::kLinear, InterpOrder::kCubic}) {
    ExpectSymbolOrder(Params(DType::kFloat64, {2, 5, 3}, {1, 2, 2}, order, 0.5), hand, nullptr);
  }
}

// ---------------------------------------------------------------------------
// Bit-for-bit agreement with the naive reference.

template <typename T>
void ReferenceCases(const std::vector<uint64_t>& shape, const std::vector<uint16_t>& tile,
                    double bound) {
  for (InterpOrder order : {InterpOrder::kLinear, InterpOrder::kCubic}) {
    const InterpParams p = Params(DTypeOf<T>(), shape, tile, order, bound);
    // Smooth, noisy, with specials, with fill and specials, small radius.
    ExpectMatchesReference(p, Field<T>(shape, 0, 1), nullptr);
    std::vector<T> x = Field<T>(shape, 40 * bound, 2);
    ExpectMatchesReference(p, x, nullptr);
    AddSpecials(x, 3);
    ExpectMatchesReference(p, x, nullptr);
    const std::vector<uint8_t> fill = AddFill(x, shape, 0.25, -999.0, 4);
    ExpectMatchesReference(p, x, fill.data());
    InterpParams small = p;
    small.radius = 4;  // many anchor outliers and bound failures
    ExpectMatchesReference(small, x, fill.data());
  }
}

TEST(InterpReference, TwoDimensionsMatchBitForBit) {
  ReferenceCases<float>({37, 29}, {8, 8}, 1e-3);
  ReferenceCases<double>({37, 29}, {8, 8}, 1e-3);
  ReferenceCases<float>({13, 70}, {1, 16}, 1e-2);  // batch rows, T beyond a dimension
}

TEST(InterpReference, ThreeDimensionsMatchBitForBit) {
  ReferenceCases<float>({11, 18, 21}, {4, 4, 4}, 1e-3);
  ReferenceCases<double>({6, 17, 19}, {1, 8, 8}, 1e-4);
}

// ---------------------------------------------------------------------------
// Round trips.

struct RoundTripCase {
  std::vector<uint64_t> shape;
  std::vector<uint16_t> tile;
  double noise;  // relative to the bound
  double fill;   // fraction of fill, 0 for none
  bool specials;
  uint32_t radius = 32768;
};

// Encodes, decodes, overwrites verbatim and fill elements as the frame codec
// will, and checks the bound independently. The verbatim set must be exactly
// the specials plus the elements whose quantized value would miss the bound,
// which the reference decides element by element.
template <typename T>
void RoundTrip(const RoundTripCase& c, InterpOrder order, double bound, uint32_t seed) {
  SCOPED_TRACE(::testing::Message()
               << ShapeName(c.shape) << " order " << static_cast<int>(order) << " f"
               << 8 * sizeof(T) << " fill " << c.fill << (c.specials ? " specials" : ""));
  InterpParams p = Params(DTypeOf<T>(), c.shape, c.tile, order, bound);
  p.radius = c.radius;
  std::vector<T> x = Field<T>(c.shape, c.noise * bound, seed);
  if (c.specials) AddSpecials(x, seed + 1);
  std::vector<uint8_t> mask;
  std::optional<double> fill_value;
  if (c.fill > 0) {
    fill_value = -9999.0;
    mask = AddFill(x, c.shape, c.fill, *fill_value, seed + 2);
  }
  const uint8_t* fill = mask.empty() ? nullptr : mask.data();

  InterpEncoded e;
  ASSERT_TRUE(InterpEncode(p, Bytes(x), fill, &e).ok());
  std::vector<T> y = Decode<T>(p, e, fill);
  for (uint32_t i : e.verbatim_index) y[i] = x[i];
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask[i]) y[i] = static_cast<T>(*fill_value);
  }
  const auto result = CheckBound(x.data(), y.data(), x.size(), bound, fill_value);
  EXPECT_TRUE(result.ok()) << result.Describe();

  const std::set<uint32_t> verbatim(e.verbatim_index.begin(), e.verbatim_index.end());
  EXPECT_EQ(verbatim.size(), e.verbatim_index.size());
  EXPECT_TRUE(std::is_sorted(e.verbatim_index.begin(), e.verbatim_index.end()));
  for (size_t i = 0; i < x.size(); ++i) {
    const bool is_fill = fill != nullptr && fill[i];
    if (is_fill) {
      EXPECT_EQ(verbatim.count(static_cast<uint32_t>(i)), 0u) << "fill element " << i;
    } else if (RefSpecial(x[i])) {
      EXPECT_EQ(verbatim.count(static_cast<uint32_t>(i)), 1u) << "special element " << i;
    }
  }
  EXPECT_EQ(e.verbatim_index, RefEncode(p, x, fill).verbatim);
  // Where the radius spans far more than the field's amplitude (~2) and the
  // bound far more than T's resolution, nothing needs to be verbatim.
  if (!c.specials && p.quant_step * (p.radius - 1.0) > 10) {
    EXPECT_TRUE(e.verbatim_index.empty()) << e.verbatim_index.size() << " verbatim";
  }
}

TEST(InterpRoundTrip, EveryRankBothOrdersBothTypes) {
  const std::vector<RoundTripCase> cases = {
      {{1000}, {64}, 0, 0, false},
      {{777}, {256}, 20, 0.3, true},
      {{5}, {32768}, 3, 0, false},  // T far beyond the frame: one tile
      {{1}, {2}, 0, 0, false},      // one element, the anchor
      {{96, 80}, {32, 32}, 0, 0, false},
      {{97, 83}, {32, 32}, 10, 0, false},
      {{61, 45}, {16, 16}, 5, 0.2, true},
      {{9, 7}, {16, 16}, 2, 0, true},  // smaller than a tile
      {{40, 33}, {1, 8}, 4, 0.1, false},
      {{30, 17}, {2, 1}, 4, 0, true},
      {{17, 33, 31}, {1, 16, 16}, 3, 0, false},
      {{18, 19, 21}, {16, 16, 16}, 3, 0.4, true},
      {{12, 35, 10}, {4, 4, 1}, 1, 0.15, false},
      {{5, 9, 10, 11}, {1, 4, 4, 4}, 2, 0.1, true},
      {{6, 7, 8, 9}, {2, 2, 2, 2}, 2, 0, false},
      {{3, 10, 1, 20}, {8, 8, 8, 8}, 2, 0.3, true},
      // Tiles too large to plan (257^2 elements a box): line by line.
      {{300, 270}, {256, 256}, 3, 0.2, true},
  };
  uint32_t seed = 10;
  for (const RoundTripCase& c : cases) {
    for (InterpOrder order : {InterpOrder::kLinear, InterpOrder::kCubic}) {
      RoundTrip<float>(c, order, 1e-3, seed++);
      RoundTrip<double>(c, order, 1e-5, seed++);
    }
  }
}

TEST(InterpRoundTrip, NoisyFieldAtATightBound) {
  // Noise of 300 bounds (150 steps) overflows radius 64 often: many
  // elements are verbatim and many anchors outliers.
  const RoundTripCase c{{70, 90}, {16, 16}, 300, 0.1, true, 64};
  RoundTrip<float>(c, InterpOrder::kCubic, 1e-4, 100);
  RoundTrip<double>(c, InterpOrder::kLinear, 1e-4, 101);
}

TEST(InterpRoundTrip, FloatBoundBelowFloatResolution) {
  // abs_bound far below the float spacing of values ~1: the quantized value
  // narrows to a float that may miss the bound, so many elements go verbatim,
  // and every one of them is a genuine failure (checked by the reference).
  RoundTrip<float>({{40, 50}, {8, 8}, 0, 0, false}, InterpOrder::kCubic, 1e-9, 200);
  RoundTrip<float>({{40, 50}, {8, 8}, 0, 0, false}, InterpOrder::kLinear, 3e-8, 201);
}

TEST(InterpSymbols, ResidualsAtTheRadius) {
  // Derived by hand from §15.5.2 and §15.8: 1-D, T = 2, radius 4, step 1.
  // Anchors 0, 2, 4, 6 hold 0, 3, 7, 7: Lorenzo residuals 0, 3, 4, 0, so
  // anchor 4's (= radius) is an outlier and anchor 2's (radius - 1) is not.
  // Element 1: pred (0 + 3) / 2 = 1.5, x = 4.5, r = 3 = radius - 1: symbol 7.
  // Element 3: pred (3 + 7) / 2 = 5, x = 2, r = -3: symbol 1.
  // Element 5: pred (7 + 7) / 2 = 7, x = 11, r = 4: verbatim, symbol 4.
  // Every window is one tile plus the next anchor, so both orders agree.
  const std::vector<double> x = {0, 4.5, 3, 2, 7, 11, 7};
  for (InterpOrder order : {InterpOrder::kLinear, InterpOrder::kCubic}) {
    InterpParams p = Params(DType::kFloat64, {7}, {2}, order, 0.5);
    p.radius = 4;
    InterpEncoded e;
    ASSERT_TRUE(InterpEncode(p, Bytes(x), nullptr, &e).ok());
    EXPECT_EQ(e.symbols, (std::vector<uint16_t>{4, 7, 7, 1, 0, 4, 4}));
    EXPECT_EQ(e.outlier_index, std::vector<uint32_t>{4});
    EXPECT_EQ(e.outlier_residual, std::vector<int32_t>{4});
    EXPECT_EQ(e.verbatim_index, std::vector<uint32_t>{5});
    const std::vector<double> w = Decode<double>(p, e, nullptr);
    EXPECT_EQ(w, (std::vector<double>{0, 4.5, 3, 2, 7, 7, 7}));
  }
}

TEST(InterpSymbols, QuotientIsTheProductWithTheReciprocal) {
  // §15.8: r = (x - pred) × inv_step, inv_step = 1 / quant_step rounded
  // once. 1-D f64, T = 8, ABS 0.1 (step 0.2, inv_step exactly 5): the
  // anchors 0 and 8 hold 0, so element 4's prediction is 0, and x = 0.3
  // (the double nearest it, just below 0.3) gives r = 1.5 by the product,
  // which rounds to even, 2, whose reconstruction 0.4 misses the bound by
  // an ulp: verbatim. The quotient 0.3 / 0.2 = 1.4999999999999998 would
  // have rounded to 1 (0.2, within the bound) and given symbol radius + 1.
  ASSERT_EQ(0.3 * (1.0 / 0.2), 1.5);
  ASSERT_LT(0.3 / 0.2, 1.5);
  const std::vector<double> x = {0, 0, 0, 0, 0.3, 0, 0, 0, 0};
  for (InterpOrder order : {InterpOrder::kLinear, InterpOrder::kCubic}) {
    const InterpParams p = Params(DType::kFloat64, {9}, {8}, order, 0.1);
    InterpEncoded e;
    ASSERT_TRUE(InterpEncode(p, Bytes(x), nullptr, &e).ok());
    EXPECT_EQ(e.verbatim_index, std::vector<uint32_t>{4});
    ExpectMatchesReference(p, x, nullptr);
    // Every element round-trips within the bound (element 4 exactly).
    std::vector<double> y = Decode<double>(p, e, nullptr);
    for (uint32_t i : e.verbatim_index) y[i] = x[i];
    for (size_t i = 0; i < x.size(); ++i) EXPECT_LE(std::fabs(y[i] - x[i]), 0.1) << i;
  }
}

TEST(InterpRoundTrip, WholeFrameFill) {
  // Every element fill: only the anchors carry symbols.
  const InterpParams p = Params(DType::kFloat32, {20, 20}, {8, 8}, InterpOrder::kCubic, 1e-3);
  std::vector<float> x(400, -1.0f);
  std::vector<uint8_t> fill(400, 1);
  InterpEncoded e;
  ASSERT_TRUE(InterpEncode(p, Bytes(x), fill.data(), &e).ok());
  EXPECT_EQ(e.symbols.size(), 9u);  // 3 x 3 anchors
  EXPECT_TRUE(e.verbatim_index.empty());
  for (uint16_t s : e.symbols) EXPECT_EQ(s, p.radius);  // placeholders 0
  Decode<float>(p, e, fill.data());
}

// ---------------------------------------------------------------------------
// Corrupt input: DATA_LOSS, never a crash.

struct Encoded2D {
  InterpParams p = Params(DType::kFloat32, {5, 6}, {4, 4}, InterpOrder::kCubic, 1e-3);
  std::vector<float> x = Field<float>({5, 6}, 0, 1);
  InterpEncoded e;
  Encoded2D() { EXPECT_TRUE(InterpEncode(p, Bytes(x), nullptr, &e).ok()); }
  absl::StatusCode DecodeCode() {
    absl::Status s;
    Decode<float>(p, e, nullptr, &s);
    if (s.code() == absl::StatusCode::kDataLoss) {
      EXPECT_EQ(s.message().rfind("corrupt archive: ", 0), 0u) << s;
    }
    return s.code();
  }
};

TEST(InterpCorrupt, WrongSymbolCount) {
  const auto kDataLoss = absl::StatusCode::kDataLoss;
  Encoded2D c;
  ASSERT_EQ(c.e.symbols.size(), 30u);
  ASSERT_TRUE(c.e.outlier_index.empty());
  ASSERT_EQ(c.DecodeCode(), absl::StatusCode::kOk);
  c.e.symbols.push_back(c.p.radius);
  EXPECT_EQ(c.DecodeCode(), kDataLoss);
  c.e.symbols.resize(29);
  EXPECT_EQ(c.DecodeCode(), kDataLoss);
  c.e.symbols.clear();
  EXPECT_EQ(c.DecodeCode(), kDataLoss);
  // With a mask, S counts the non-fill elements plus every anchor.
  Encoded2D f;
  std::vector<uint8_t> fill(30, 0);
  fill[7] = 1;
  absl::Status s;
  Decode<float>(f.p, f.e, fill.data(), &s);
  EXPECT_EQ(s.code(), kDataLoss);
  f.e.symbols.pop_back();
  Decode<float>(f.p, f.e, fill.data(), &s);
  EXPECT_TRUE(s.ok()) << s;
}

TEST(InterpCorrupt, OutlierSymbolAtANonAnchor) {
  Encoded2D c;
  c.e.symbols[1] = 0;  // position 1 is element 12, not an anchor
  EXPECT_EQ(c.DecodeCode(), absl::StatusCode::kDataLoss);
  // Even with an outlier entry to go with it.
  c.e.outlier_index = {12};
  c.e.outlier_residual = {5};
  EXPECT_EQ(c.DecodeCode(), absl::StatusCode::kDataLoss);
}

TEST(InterpCorrupt, OutliersThatDoNotMatchTheSymbols) {
  const auto kDataLoss = absl::StatusCode::kDataLoss;
  Encoded2D c;
  // Anchor 4 (position 16) becomes an outlier: valid with its entry.
  c.e.symbols[16] = 0;
  c.e.outlier_index = {4};
  c.e.outlier_residual = {123456};
  EXPECT_EQ(c.DecodeCode(), absl::StatusCode::kOk);
  c.e.outlier_index = {3};  // not an anchor
  EXPECT_EQ(c.DecodeCode(), kDataLoss);
  c.e.outlier_index = {24};  // an anchor, but its symbol is not 0
  EXPECT_EQ(c.DecodeCode(), kDataLoss);
  c.e.outlier_index = {30};  // beyond the frame
  EXPECT_EQ(c.DecodeCode(), kDataLoss);
  c.e.outlier_index = {};  // a symbol 0 without its outlier
  c.e.outlier_residual = {};
  EXPECT_EQ(c.DecodeCode(), kDataLoss);
  c.e.outlier_index = {4, 28};  // an outlier without its symbol 0
  c.e.outlier_residual = {1, 2};
  EXPECT_EQ(c.DecodeCode(), kDataLoss);
  c.e.outlier_index = {4};  // residuals and indices differ in number
  EXPECT_EQ(c.DecodeCode(), kDataLoss);
}

TEST(InterpCorrupt, OutlierAtAFillElement) {
  // Fill elements other than anchors have no symbol; an outlier index there
  // must not pass for an anchor's.
  Encoded2D c;
  std::vector<uint8_t> fill(30, 0);
  fill[3] = 1;  // position 9 of the hand-derived order; anchor 4 moves to 15
  c.e.symbols.assign(29, static_cast<uint16_t>(c.p.radius));
  c.e.symbols[15] = 0;
  c.e.outlier_index = {4};
  c.e.outlier_residual = {-7};
  absl::Status s;
  Decode<float>(c.p, c.e, fill.data(), &s);
  EXPECT_TRUE(s.ok()) << s;
  c.e.outlier_index = {3};
  Decode<float>(c.p, c.e, fill.data(), &s);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
}

TEST(InterpCorrupt, SymbolBeyondTheAlphabet) {
  Encoded2D c;
  c.p.radius = 100;
  c.e.symbols.assign(30, 100);
  ASSERT_EQ(c.DecodeCode(), absl::StatusCode::kOk);
  c.e.symbols[5] = 200;  // the alphabet is 0 .. 2 radius - 1
  EXPECT_EQ(c.DecodeCode(), absl::StatusCode::kDataLoss);
}

TEST(InterpCorrupt, ExtremeButWellFormedInputDecodes) {
  // Random symbols and outliers of any size: §8.3 wraps, non-finite
  // predictions become 0, and nothing traps.
  std::mt19937 rng(5);
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    InterpParams p = Params(dtype, {33, 47}, {8, 8}, InterpOrder::kCubic, 1e30);
    p.radius = 32768;
    const uint64_t n = 33 * 47;
    std::vector<uint16_t> symbols(n);
    for (auto& s : symbols) s = static_cast<uint16_t>(1 + rng() % 65535);
    // Anchors are at positions of tile starts; make every anchor an outlier.
    const std::vector<uint64_t> order = Ref(p).SymbolOrder(nullptr);
    std::vector<uint32_t> index;
    for (size_t k = 0; k < order.size(); ++k) {
      if ((order[k] / 47) % 8 == 0 && (order[k] % 47) % 8 == 0) {
        symbols[k] = 0;
        index.push_back(static_cast<uint32_t>(order[k]));
      }
    }
    std::sort(index.begin(), index.end());
    std::vector<int32_t> residual(index.size());
    for (auto& r : residual) r = static_cast<int32_t>(rng());
    std::vector<double> out(n);
    EXPECT_TRUE(
        InterpDecode(p, symbols, index, residual, nullptr, reinterpret_cast<uint8_t*>(out.data()))
            .ok());
  }
}

// ---------------------------------------------------------------------------
// Compressibility, cancellation.

TEST(InterpCompressibility, SmoothFieldIsMostlyZeroResiduals) {
  const std::vector<uint64_t> shape = {256, 256};
  const std::vector<float> x = Field<float>(shape, 0, 1);
  for (InterpOrder order : {InterpOrder::kLinear, InterpOrder::kCubic}) {
    const InterpParams p = Params(DType::kFloat32, shape, {32, 32}, order, 1e-2);
    InterpEncoded e;
    ASSERT_TRUE(InterpEncode(p, Bytes(x), nullptr, &e).ok());
    ASSERT_EQ(e.symbols.size(), x.size());
    const auto zeros = std::count(e.symbols.begin(), e.symbols.end(), p.radius);
    // The field's shortest wavelength is ~45 elements: cubic interpolation
    // sees ~95% zero residuals at this bound, linear ~85%.
    EXPECT_GT(static_cast<double>(zeros), 0.8 * static_cast<double>(x.size()))
        << "order " << static_cast<int>(order);
    EXPECT_TRUE(e.verbatim_index.empty());
    EXPECT_TRUE(e.outlier_index.empty());
  }
}

TEST(InterpCancel, StopsWhenTheFlagIsSet) {
  const InterpParams p = Params(DType::kFloat32, {64, 64}, {16, 16}, InterpOrder::kCubic, 1e-3);
  const std::vector<float> x = Field<float>(p.shape, 0, 1);
  std::atomic<bool> cancel{true};
  InterpEncoded e;
  EXPECT_EQ(InterpEncode(p, Bytes(x), nullptr, &e, &cancel).code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(InterpEncode(p, Bytes(x), nullptr, &e).ok());
  std::vector<float> out(x.size());
  EXPECT_EQ(InterpDecode(p, e.symbols, e.outlier_index, e.outlier_residual, nullptr,
                         reinterpret_cast<uint8_t*>(out.data()), &cancel)
                .code(),
            absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace ebzip
