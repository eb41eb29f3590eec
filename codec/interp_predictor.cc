#include "codec/interp_predictor.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>

#include <cfloat>
#endif

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "codec/cancel.h"
#include "codec/format.h"
#include "codec/lorenzo.h"
#include "codec/parallel.h"
#include "codec/quantize_point.h"

namespace ebzip {
namespace {

constexpr uint64_t kRange = 1 << 16;  // elements per parallel task
constexpr uint16_t kAnchorBlock = 8;  // the anchor grid's Lorenzo block (§15.5.1)
constexpr uint64_t kMaxTile = 32768;
constexpr absl::string_view kEncoding = "interpolation encoding";
constexpr absl::string_view kDecoding = "interpolation decoding";

using Coords = std::array<uint64_t, kMaxDims>;

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Frees a vector's storage (assigning {} would keep it).
template <typename V>
void Release(V& v) {
  V().swap(v);
}

// The frame seen as 4-D: ranks below 4 get leading batch dimensions of
// extent 1, which changes neither the tiles, the passes nor the C order.
struct Geometry {
  Coords dims{1, 1, 1, 1};
  Coords stride{};
  std::array<bool, kMaxDims> interp{};
  uint64_t tile = 0;         // T
  Coords tiles{1, 1, 1, 1};  // tile ranges per dimension = the anchor grid's extents
  std::array<uint16_t, kMaxDims> anchor_block{1, 1, 1, 1};
  uint64_t n = 1;
  uint64_t num_tiles = 1;

  uint64_t Index(const Coords& c) const {
    return c[0] * stride[0] + c[1] * stride[1] + c[2] * stride[2] + c[3];
  }
  // The element index of the anchor of the tile at tile coordinates k.
  uint64_t AnchorIndex(const Coords& k) const {
    uint64_t i = 0;
    for (int d = 0; d < kMaxDims; ++d) i += (interp[d] ? k[d] * tile : k[d]) * stride[d];
    return i;
  }
};

Geometry MakeGeometry(const InterpParams& p) {
  Geometry g;
  const int rank = static_cast<int>(p.shape.size());
  const int pad = kMaxDims - rank;
  for (int i = 0; i < rank; ++i) {
    g.dims[pad + i] = p.shape[i];
    g.anchor_block[pad + i] = kAnchorBlock;
    if (p.tile[i] > 1) {
      g.interp[pad + i] = true;
      g.tile = p.tile[i];
    }
  }
  g.stride[kMaxDims - 1] = 1;
  for (int d = kMaxDims - 2; d >= 0; --d) g.stride[d] = g.stride[d + 1] * g.dims[d + 1];
  for (int d = 0; d < kMaxDims; ++d) {
    g.tiles[d] = g.interp[d] ? CeilDiv(g.dims[d], g.tile) : g.dims[d];
    g.n *= g.dims[d];
    g.num_tiles *= g.tiles[d];
  }
  return g;
}

// The anchor grid with its Lorenzo blocks, for lorenzo.h.
BlockGrid AnchorGrid(const Geometry& g) {
  BlockGrid grid;
  for (int d = 0; d < kMaxDims; ++d) {
    grid.dims[d] = g.tiles[d];
    grid.block[d] = g.anchor_block[d];
  }
  return grid;
}

// Calls fn(t, k) for the tiles t in [begin, end) in order, k being tile t's
// coordinates (row-major over the tile ranges, which is also the anchor
// grid's C order). One division per dimension per call, not per tile.
template <typename Fn>
void ForEachTile(const Geometry& g, uint64_t begin, uint64_t end, Fn fn) {
  if (begin >= end) return;
  Coords k;
  uint64_t rest = begin;
  for (int d = kMaxDims - 1; d >= 0; --d) {
    k[d] = rest % g.tiles[d];
    rest /= g.tiles[d];
  }
  for (uint64_t t = begin; t < end; ++t) {
    fn(t, k);
    for (int d = kMaxDims - 1; d >= 0; --d) {
      if (++k[d] < g.tiles[d]) break;
      k[d] = 0;
    }
  }
}

// The elements of pass (h, d) (§15.5.2) within the box [0, extent) from a
// tile's origin or the frame's: along each dimension an arithmetic
// progression, because tiles start at multiples of T and every congruence
// of the pass is modulo a divisor of T.
struct Lattice {
  Coords first, step, count;
};

Lattice PassLattice(const Geometry& g, const Coords& extent, uint64_t h, int d) {
  Lattice l;
  for (int e = 0; e < kMaxDims; ++e) {
    uint64_t first = 0, step = 1;  // batch: every index
    if (g.interp[e]) {
      if (e == d) {
        first = h;
        step = 2 * h;
      } else {
        step = e < d ? h : 2 * h;
      }
    }
    l.first[e] = first;
    l.step[e] = step;
    l.count[e] = extent[e] > first ? CeilDiv(extent[e] - first, step) : 0;
  }
  return l;
}

// Calls fn(h, d) for every pass, in the order of §15.5.2.
template <typename Fn>
void ForEachPass(const Geometry& g, Fn fn) {
  for (uint64_t h = g.tile / 2; h >= 1; h /= 2) {
    for (int d = 0; d < kMaxDims; ++d) {
      if (g.interp[d]) fn(h, d);
    }
  }
}

// Gives every fill or verbatim anchor its placeholder q (§10.2 over the
// anchor grid, §15.8): the q of the first quantized anchor of its own
// Lorenzo block in row-major order, or 0 when the block has none. The
// decoder reconstructs whatever q was chosen and overwrites the element's
// output, so any q would be valid; this one is what ebzip's writers choose.
// Being near the data, it keeps both the anchors' Lorenzo residuals and the
// interpolation from this anchor's working value free of a cliff.
// QuantizePoint left their q at 0.
void ApplyAnchorPlaceholders(const BlockGrid& grid, const std::vector<uint8_t>& quantized,
                             int32_t* q, const std::atomic<bool>* cancel) {
  Coords blocks;
  uint64_t count = 1, volume = 1;
  for (int d = 0; d < kMaxDims; ++d) {
    blocks[d] = CeilDiv(grid.dims[d], grid.block[d]);
    count *= blocks[d];
    volume *= grid.block[d];
  }
  const uint64_t per_task = std::max<uint64_t>(1, kRange / volume);
  ParallelFor(CeilDiv(count, per_task), [&](uint64_t task) {
    if (Cancelled(cancel)) return;
    const uint64_t end = std::min(count, (task + 1) * per_task);
    for (uint64_t b = task * per_task; b < end; ++b) {
      Coords lo, hi;
      uint64_t rest = b;
      for (int d = kMaxDims - 1; d >= 0; --d) {
        lo[d] = rest % blocks[d] * grid.block[d];
        hi[d] = std::min(grid.dims[d], lo[d] + grid.block[d]);
        rest /= blocks[d];
      }
      // Visits the block in row-major order until fn returns false.
      auto visit = [&](auto fn) {
        for (uint64_t x0 = lo[0]; x0 < hi[0]; ++x0) {
          for (uint64_t x1 = lo[1]; x1 < hi[1]; ++x1) {
            for (uint64_t x2 = lo[2]; x2 < hi[2]; ++x2) {
              for (uint64_t x3 = lo[3]; x3 < hi[3]; ++x3) {
                if (!fn(((x0 * grid.dims[1] + x1) * grid.dims[2] + x2) * grid.dims[3] + x3)) {
                  return;
                }
              }
            }
          }
        }
      };
      int32_t placeholder = 0;
      bool found = false;
      visit([&](uint64_t i) {
        found = quantized[i] != 0;
        if (found) placeholder = q[i];
        return !found;
      });
      if (!found || placeholder == 0) continue;
      visit([&](uint64_t i) {
        if (!quantized[i]) q[i] = placeholder;
        return true;
      });
    }
  });
}

// The x of §15.8 that is kept verbatim whatever the prediction: NaN, ±Inf,
// -0.0 and subnormals (exponent all ones, or zero with a non-zero pattern).
template <typename T>
bool IsSpecial(T x) {
  using Bits = typename FloatTraits<T>::Bits;
  const Bits bits = ToBits(x);
  const Bits exponent = bits & FloatTraits<T>::kExponent;
  return exponent == FloatTraits<T>::kExponent || (exponent == 0 && bits != 0);
}

// Which of the neighbours a (p_d - 3h), c (p_d + h) and e (p_d + 3h) lie in
// the window [lo, hi] of an element at index pd along d (b, p_d - h, always
// does).
struct Neighbours {
  bool a, c, e;
};

Neighbours Available(uint64_t pd, uint64_t h, uint64_t tile, uint64_t extent) {
  const uint64_t lo = pd & ~(tile - 1);  // T is a power of two
  const uint64_t hi = std::min(lo + tile, extent - 1);
  return {pd >= lo + 3 * h, pd + h <= hi, pd + 3 * h <= hi};
}

// Along the dimension of pass (h, d), a tile's elements j = 0, 1, ... sit at
// h + 2hj in a window of `extent` indices from the tile's first (the box's,
// see Box): a (at -3h) is in it from j = 1 on, z (+3h) up to j = e_end and c
// (+h) up to j = c_end, exclusive. The first j' > j, below `end`, where an
// element's formula may differ from j's.
uint64_t NextFormulaChange(uint64_t j, uint64_t end, uint64_t h, uint64_t extent) {
  const uint64_t half_windows = (extent - 1) / (2 * h);
  const uint64_t c_end = half_windows;
  const uint64_t e_end = half_windows >= 2 ? half_windows - 1 : 0;
  uint64_t next = end;
  for (uint64_t change : {uint64_t{1}, e_end, c_end}) {
    if (change > j && change < next) next = change;
  }
  return next;
}

// The row of §15.5.2's table that applies to an element.
enum class Formula { kCubic, kCubicLeft, kCubicRight, kLinear, kExtrapolate, kCopy };

Formula FormulaOf(Neighbours nb, bool cubic) {
  if (cubic && nb.a && nb.c && nb.e) return Formula::kCubic;
  if (cubic && nb.a && nb.c) return Formula::kCubicLeft;
  if (cubic && nb.c && nb.e) return Formula::kCubicRight;
  if (nb.c) return Formula::kLinear;
  if (nb.a) return Formula::kExtrapolate;
  return Formula::kCopy;
}

// §15.5.2's prediction of element i from its neighbours s elements apart in
// memory, by row kF of the table. Each operation is one binary64 operation
// in the order the table writes it; nothing may be contracted or
// reassociated. Inlined into the loops over a pass's elements, which pick
// kF once per run of elements that share it.
template <Formula kF, typename T>
[[gnu::always_inline]] inline double PredictWith(const T* w, uint64_t i, uint64_t s) {
  const double b = static_cast<double>(w[i - s]);
  double pred;
  if constexpr (kF == Formula::kCubic) {
    const double a = static_cast<double>(w[i - 3 * s]);
    const double c = static_cast<double>(w[i + s]);
    const double e = static_cast<double>(w[i + 3 * s]);
    pred = (9.0 * (b + c) - (a + e)) * 0.0625;
  } else if constexpr (kF == Formula::kCubicLeft) {
    const double a = static_cast<double>(w[i - 3 * s]);
    const double c = static_cast<double>(w[i + s]);
    pred = ((6.0 * b + 3.0 * c) - a) * 0.125;
  } else if constexpr (kF == Formula::kCubicRight) {
    const double c = static_cast<double>(w[i + s]);
    const double e = static_cast<double>(w[i + 3 * s]);
    pred = ((3.0 * b + 6.0 * c) - e) * 0.125;
  } else if constexpr (kF == Formula::kLinear) {
    pred = (b + static_cast<double>(w[i + s])) * 0.5;
  } else if constexpr (kF == Formula::kExtrapolate) {
    pred = (3.0 * b - static_cast<double>(w[i - 3 * s])) * 0.5;
  } else {
    pred = b;
  }
  return std::isfinite(pred) ? pred : 0.0;
}

// w = narrow_T(pred + f64(ρ) × quant_step). ρ is converted from an integer,
// so a zero residual adds +0.0 on both sides: rint(-0.3) would be -0.0, and
// -0.0 + -0.0 keeps the sign that the decoder's -0.0 + +0.0 loses.
template <typename T>
[[gnu::always_inline]] inline T Reconstruct(double pred, int32_t rho, double step) {
  return Narrow<T>(pred + static_cast<double>(rho) * step);
}

// Lists, in increasing order, f(i) for the i < count with keep(i): each
// range of kRange counts its own, then writes them at its offset.
template <typename Out, typename Keep, typename Value>
void CollectInOrder(uint64_t count, Keep keep, Value value, std::vector<Out>* out) {
  const uint64_t ranges = CeilDiv(count, kRange);
  std::vector<uint64_t> offset(ranges + 1, 0);
  ParallelFor(ranges, [&](uint64_t r) {
    const uint64_t end = std::min(count, (r + 1) * kRange);
    uint64_t k = 0;
    for (uint64_t i = r * kRange; i < end; ++i) k += keep(i);
    offset[r + 1] = k;
  });
  for (uint64_t r = 0; r < ranges; ++r) offset[r + 1] += offset[r];
  out->resize(offset[ranges]);
  ParallelFor(ranges, [&](uint64_t r) {
    const uint64_t end = std::min(count, (r + 1) * kRange);
    uint64_t k = offset[r];
    for (uint64_t i = r * kRange; i < end && k < offset[r + 1]; ++i) {
      if (keep(i)) (*out)[k++] = value(i);
    }
  });
}

// The anchors (§15.5.1, §15.8): quantized as version 1 quantizes elements,
// placeholders over the anchor grid's blocks, Lorenzo residuals on that grid.
// Gives each anchor, by tile (the anchor grid's C order), its working value
// and its symbol, lists the outliers, and lists the verbatim anchors'
// elements in *verbatim.
template <typename T>
absl::Status EncodeAnchors(const Geometry& g, const InterpParams& p, const T* x,
                           const uint8_t* fill, std::vector<T>* anchor_w,
                           std::vector<uint16_t>* anchor_sym, std::vector<uint32_t>* verbatim,
                           InterpEncoded* out, const std::atomic<bool>* cancel) {
  const uint64_t count = g.num_tiles;
  const uint64_t ranges = CeilDiv(count, kRange);
  std::vector<int32_t> q(count);
  std::vector<uint8_t> kind(count);  // PointKind
  std::vector<uint32_t> element(count);  // each anchor's element index
  // The fill test is the caller's mask, so the rule has no fill value.
  const QuantRule rule{p.abs_bound, p.quant_step, false, 0};
  std::atomic<bool> any_other{false};
  ParallelFor(ranges, [&](uint64_t r) {
    if (Cancelled(cancel)) return;
    bool other = false;
    ForEachTile(g, r * kRange, std::min(count, (r + 1) * kRange), [&](uint64_t t, const Coords& k) {
      const uint64_t i = g.AnchorIndex(k);
      element[t] = static_cast<uint32_t>(i);
      PointKind point = PointKind::kFill;
      q[t] = 0;
      if (fill == nullptr || !fill[i]) point = QuantizePoint(x[i], rule, &q[t]);
      kind[t] = static_cast<uint8_t>(point);
      other |= point != PointKind::kQuantized;
    });
    if (other) any_other.store(true, std::memory_order_relaxed);
  });
  if (Cancelled(cancel)) return CancelledStatus(kEncoding);

  const BlockGrid grid = AnchorGrid(g);
  if (any_other.load()) {
    std::vector<uint8_t> quantized(count);
    for (uint64_t t = 0; t < count; ++t) {
      quantized[t] = kind[t] == static_cast<uint8_t>(PointKind::kQuantized);
    }
    ApplyAnchorPlaceholders(grid, quantized, q.data(), cancel);
    CollectInOrder(
        count, [&](uint64_t t) { return kind[t] == static_cast<uint8_t>(PointKind::kVerbatim); },
        [&](uint64_t t) { return element[t]; }, verbatim);
  }
  const double step = p.quant_step;
  anchor_w->resize(count);
  for (uint64_t t = 0; t < count; ++t) (*anchor_w)[t] = Dequantize<T>(q[t], step);
  LorenzoForward(grid, q.data(), cancel);
  if (Cancelled(cancel)) return CancelledStatus(kEncoding);

  // |q| <= 2^26 (QuantizePoint), so residuals fit an i32 (lorenzo.h).
  const int64_t radius = p.radius;
  auto is_outlier = [&](uint64_t t) { return q[t] <= -radius || q[t] >= radius; };
  anchor_sym->resize(count);
  for (uint64_t t = 0; t < count; ++t) {
    (*anchor_sym)[t] = is_outlier(t) ? 0 : static_cast<uint16_t>(q[t] + radius);
  }
  // The anchor grid's C order is increasing element index.
  CollectInOrder(
      count, is_outlier, [&](uint64_t t) { return element[t]; }, &out->outlier_index);
  CollectInOrder(
      count, is_outlier, [&](uint64_t t) { return q[t]; }, &out->outlier_residual);
  return absl::OkStatus();
}

// A tile's closed box: its own elements and its window's far faces (the
// first index of the next tile along each interpolated dimension, where the
// frame has one). Predicting an element of the box reads only elements of
// the box (§15.5.2's windows), and every element of the box is an anchor or
// belongs to one pass, so a tile is encoded on its own, in a buffer that
// stays in the L1 cache, straight in symbol order: the far faces are
// computed once more by the tiles they belong to, to the same values, at a
// cost of (1 + 1/T) per interpolated dimension.
struct Box {
  Coords own;     // the tile's own extent per dimension
  Coords extent;  // the box's: own + 1 along dimensions with a far face
  Coords stride;  // of the box in a local buffer, C order
  uint64_t volume = 1;
  uint64_t anchor = 0;  // element index of the tile's anchor
};

Box TileBox(const Geometry& g, const Coords& k) {
  Box b;
  b.anchor = g.AnchorIndex(k);
  for (int d = 0; d < kMaxDims; ++d) {
    b.own[d] = b.extent[d] = 1;
    if (g.interp[d]) {
      const uint64_t lo = k[d] * g.tile;
      b.own[d] = std::min(g.tile, g.dims[d] - lo);
      b.extent[d] = std::min(g.tile, g.dims[d] - 1 - lo) + 1;
    }
    b.volume *= b.extent[d];
  }
  b.stride[kMaxDims - 1] = 1;
  for (int d = kMaxDims - 2; d >= 0; --d) b.stride[d] = b.stride[d + 1] * b.extent[d + 1];
  return b;
}

// The largest box of the frame: the local buffer's size.
uint64_t MaxBoxVolume(const Geometry& g) {
  uint64_t v = 1;
  for (int d = 0; d < kMaxDims; ++d) v *= g.interp[d] ? std::min(g.tile, g.dims[d] - 1) + 1 : 1;
  return v;
}

// A tile's passes as a flat list of its elements, which depends only on the
// tile's shape: per element its index in the box and its offset from the
// tile's anchor in the frame, in runs that share a formula and a pass. A
// tile then costs no loop bookkeeping per line (the lines of a 16^3 tile's
// last level hold 8 or 9 elements), only a pass over the list. Within a
// pass the elements do not depend on each other, so the tile's own elements
// come first, in symbol order, and the box's far faces after them.
struct TilePlan {
  struct Run {
    Formula formula;
    bool own;  // the tile's own elements (emitted), or far-face ones
    uint32_t begin, end;  // elements [begin, end) of the lists below
    uint32_t box_distance;    // the neighbours' distance in the box
    uint64_t frame_distance;  // and in the frame
  };
  std::vector<Run> runs;
  std::vector<uint32_t> box;    // per element, its index in the box
  std::vector<uint32_t> frame;  // per element, its offset from the anchor
  // Every offset in the box fits an int32, as the AVX2 loops index with.
  bool int32_offsets = false;
};

// Plans are for boxes up to this many elements (every tiling ebzip's writer
// chooses: 17^3, 65^2, 257); larger tiles run pass by pass, line by line.
constexpr uint64_t kMaxPlanVolume = uint64_t{1} << 16;

// The plan of tiles shaped like box `b`; with `faces`, the box's far faces
// too (the encoder's), else the tile's own elements only (the decoder's).
TilePlan MakeTilePlan(const Geometry& g, const Box& b, bool cubic, bool faces) {
  TilePlan plan;
  uint64_t far_corner = 0;
  for (int d = 0; d < kMaxDims; ++d) far_corner += (b.extent[d] - 1) * g.stride[d];
  plan.int32_offsets = far_corner < (uint64_t{1} << 31);
  const Coords& extent = faces ? b.extent : b.own;
  std::vector<uint32_t> face_box, face_frame;
  std::vector<Formula> own_formula, face_formula;
  ForEachPass(g, [&](uint64_t h, int d) {
    const Lattice l = PassLattice(g, extent, h, d);
    own_formula.clear();
    face_formula.clear();
    face_box.clear();
    face_frame.clear();
    const uint32_t own_begin = static_cast<uint32_t>(plan.box.size());
    for (uint64_t i0 = 0; i0 < l.count[0]; ++i0) {
      for (uint64_t i1 = 0; i1 < l.count[1]; ++i1) {
        for (uint64_t i2 = 0; i2 < l.count[2]; ++i2) {
          for (uint64_t i3 = 0; i3 < l.count[3]; ++i3) {
            const Coords p{l.first[0] + i0 * l.step[0], l.first[1] + i1 * l.step[1],
                           l.first[2] + i2 * l.step[2], l.first[3] + i3 * l.step[3]};
            uint64_t box = 0, frame = 0;
            bool own = true;
            for (int e = 0; e < kMaxDims; ++e) {
              box += p[e] * b.stride[e];
              frame += p[e] * g.stride[e];
              own = own && p[e] < b.own[e];
            }
            const Formula f = FormulaOf(Available(p[d], h, g.tile, b.extent[d]), cubic);
            if (own) {
              plan.box.push_back(static_cast<uint32_t>(box));
              plan.frame.push_back(static_cast<uint32_t>(frame));
              own_formula.push_back(f);
            } else {
              face_box.push_back(static_cast<uint32_t>(box));
              face_frame.push_back(static_cast<uint32_t>(frame));
              face_formula.push_back(f);
            }
          }
        }
      }
    }
    plan.box.insert(plan.box.end(), face_box.begin(), face_box.end());
    plan.frame.insert(plan.frame.end(), face_frame.begin(), face_frame.end());
    // Runs of one formula, own elements then faces.
    auto add_runs = [&](const std::vector<Formula>& formula, uint32_t begin, bool own) {
      for (uint32_t i = 0; i < formula.size();) {
        uint32_t end = i + 1;
        while (end < formula.size() && formula[end] == formula[i]) ++end;
        plan.runs.push_back({formula[i], own, begin + i, begin + end,
                             static_cast<uint32_t>(h * b.stride[d]), h * g.stride[d]});
        i = end;
      }
    };
    add_runs(own_formula, own_begin, true);
    add_runs(face_formula, own_begin + static_cast<uint32_t>(own_formula.size()), false);
  });
  return plan;
}

// The plans of a frame's tiles by shape: a tile's shape along each
// interpolated dimension is the last tile's or every other's (TileBox), so
// bit d of its key says whether it is the last along d.
class TilePlans {
 public:
  // Builds every plan the frame needs, or none when its boxes are too large.
  TilePlans(const Geometry& g, bool cubic, bool faces) {
    if (MaxBoxVolume(g) > kMaxPlanVolume) return;
    for (unsigned key = 0; key < plans_.size(); ++key) {
      Coords k{};
      bool exists = true;
      for (int d = 0; d < kMaxDims; ++d) {
        const bool last = (key >> d) & 1;
        if (!g.interp[d]) {
          exists = exists && !last;
        } else if (last) {
          k[d] = g.tiles[d] - 1;
        } else {
          exists = exists && g.tiles[d] > 1;
        }
      }
      if (exists) plans_[key] = MakeTilePlan(g, TileBox(g, k), cubic, faces);
    }
    ready_ = true;
  }

  // The plan of the tile at tile coordinates k, or null.
  const TilePlan* For(const Geometry& g, const Coords& k) const {
    if (!ready_) return nullptr;
    unsigned key = 0;
    for (int d = 0; d < kMaxDims; ++d) {
      if (g.interp[d] && k[d] + 1 == g.tiles[d]) key |= 1u << d;
    }
    return &plans_[key];
  }

 private:
  bool ready_ = false;
  std::array<TilePlan, 1u << kMaxDims> plans_;
};

// The runs of a plan four elements at a time with AVX2, for float frames on
// processors that have it (checked at run time; the build targets the
// x86-64 baseline). Every lane computes exactly what the scalar loops do:
// IEEE operations are the same one at a time or four at a time, double to
// float conversion rounds as Narrow does (to nearest, overflowing to
// infinity), and double to int32 conversion rounds as rint does, to the
// nearest even, under the default rounding mode both rely on.
#if defined(__x86_64__)
#define EBZIP_INTERP_AVX2 1

// Runs shorter than this stay scalar: the AVX2 loop's setup costs more than
// it saves on a couple of groups (measured on 16^3 tiles).
constexpr uint32_t kMinSimd = 8;

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

// Lane masks of 32 bits by the 4-bit masks _mm256_movemask_pd gives.
alignas(16) constexpr int32_t kLaneMasks[16][4] = {
    {0, 0, 0, 0},   {-1, 0, 0, 0},   {0, -1, 0, 0},   {-1, -1, 0, 0},
    {0, 0, -1, 0},  {-1, 0, -1, 0},  {0, -1, -1, 0},  {-1, -1, -1, 0},
    {0, 0, 0, -1},  {-1, 0, 0, -1},  {0, -1, 0, -1},  {-1, -1, 0, -1},
    {0, 0, -1, -1}, {-1, 0, -1, -1}, {0, -1, -1, -1}, {-1, -1, -1, -1}};

// pshufb controls moving the 16-bit lanes kept by a 4-bit mask to the
// front, in order (the rest zero), and back out to their lanes.
struct LaneShuffles {
  alignas(16) uint8_t compact[16][16];
  alignas(16) uint8_t expand[16][16];
};

constexpr LaneShuffles MakeLaneShuffles() {
  LaneShuffles t{};
  for (int m = 0; m < 16; ++m) {
    for (int b = 0; b < 16; ++b) t.compact[m][b] = t.expand[m][b] = 0x80;
    int k = 0;
    for (int lane = 0; lane < 4; ++lane) {
      if (!((m >> lane) & 1)) continue;
      t.compact[m][2 * k] = static_cast<uint8_t>(2 * lane);
      t.compact[m][2 * k + 1] = static_cast<uint8_t>(2 * lane + 1);
      t.expand[m][2 * lane] = static_cast<uint8_t>(2 * k);
      t.expand[m][2 * lane + 1] = static_cast<uint8_t>(2 * k + 1);
      ++k;
    }
  }
  return t;
}

constexpr LaneShuffles kLaneShuffles = MakeLaneShuffles();

// The lanes a 4-bit mask keeps (no popcnt instruction in the x86-64 baseline).
constexpr uint8_t kLaneCount[16] = {0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4};

// Bit i set when the element at w's index lane i of `at` is not fill.
[[gnu::target("avx2"), gnu::always_inline]] inline int NotFillLanes(const uint8_t* fill,
                                                                     __m128i at) {
  return (fill[_mm_extract_epi32(at, 0)] == 0) | (fill[_mm_extract_epi32(at, 1)] == 0) << 1 |
         (fill[_mm_extract_epi32(at, 2)] == 0) << 2 | (fill[_mm_extract_epi32(at, 3)] == 0) << 3;
}

// Four floats from w at the indices of i. Four loads: the gather
// instruction is slower than them on the processors measured (AMD Zen 5).
[[gnu::target("avx2"), gnu::always_inline]] inline __m128 LoadAvx2(const float* w, __m128i i) {
  return _mm_setr_ps(w[_mm_extract_epi32(i, 0)], w[_mm_extract_epi32(i, 1)],
                     w[_mm_extract_epi32(i, 2)], w[_mm_extract_epi32(i, 3)]);
}

// The same, widened to doubles.
[[gnu::target("avx2"), gnu::always_inline]] inline __m256d LoadDoublesAvx2(const float* w,
                                                                           __m128i i) {
  return _mm256_cvtps_pd(LoadAvx2(w, i));
}

// The prediction of kF for four elements whose neighbour b is loaded
// from w at `at` - s, and so on: the table's operations in its order, then
// non-finite predictions replaced by +0.0.
template <Formula kF>
[[gnu::target("avx2"), gnu::always_inline]] inline __m256d PredictAvx2(const float* w, __m128i at,
                                                                        int32_t s) {
  const __m128i step = _mm_set1_epi32(s);
  const __m256d b = LoadDoublesAvx2(w, _mm_sub_epi32(at, step));
  __m256d pred;
  if constexpr (kF == Formula::kCubic) {
    const __m256d a = LoadDoublesAvx2(w, _mm_sub_epi32(at, _mm_mullo_epi32(step, _mm_set1_epi32(3))));
    const __m256d c = LoadDoublesAvx2(w, _mm_add_epi32(at, step));
    const __m256d e = LoadDoublesAvx2(w, _mm_add_epi32(at, _mm_mullo_epi32(step, _mm_set1_epi32(3))));
    pred = _mm256_mul_pd(_mm256_sub_pd(_mm256_mul_pd(_mm256_set1_pd(9.0), _mm256_add_pd(b, c)),
                                       _mm256_add_pd(a, e)),
                         _mm256_set1_pd(0.0625));
  } else if constexpr (kF == Formula::kCubicLeft) {
    const __m256d a = LoadDoublesAvx2(w, _mm_sub_epi32(at, _mm_mullo_epi32(step, _mm_set1_epi32(3))));
    const __m256d c = LoadDoublesAvx2(w, _mm_add_epi32(at, step));
    pred = _mm256_mul_pd(_mm256_sub_pd(_mm256_add_pd(_mm256_mul_pd(_mm256_set1_pd(6.0), b),
                                                     _mm256_mul_pd(_mm256_set1_pd(3.0), c)),
                                       a),
                         _mm256_set1_pd(0.125));
  } else if constexpr (kF == Formula::kCubicRight) {
    const __m256d c = LoadDoublesAvx2(w, _mm_add_epi32(at, step));
    const __m256d e = LoadDoublesAvx2(w, _mm_add_epi32(at, _mm_mullo_epi32(step, _mm_set1_epi32(3))));
    pred = _mm256_mul_pd(_mm256_sub_pd(_mm256_add_pd(_mm256_mul_pd(_mm256_set1_pd(3.0), b),
                                                     _mm256_mul_pd(_mm256_set1_pd(6.0), c)),
                                       e),
                         _mm256_set1_pd(0.125));
  } else if constexpr (kF == Formula::kLinear) {
    const __m256d c = LoadDoublesAvx2(w, _mm_add_epi32(at, step));
    pred = _mm256_mul_pd(_mm256_add_pd(b, c), _mm256_set1_pd(0.5));
  } else if constexpr (kF == Formula::kExtrapolate) {
    const __m256d a = LoadDoublesAvx2(w, _mm_sub_epi32(at, _mm_mullo_epi32(step, _mm_set1_epi32(3))));
    pred = _mm256_mul_pd(_mm256_sub_pd(_mm256_mul_pd(_mm256_set1_pd(3.0), b), a),
                         _mm256_set1_pd(0.5));
  } else {
    pred = b;
  }
  const __m256d magnitude = _mm256_and_pd(pred, _mm256_castsi256_pd(_mm256_set1_epi64x(
                                                    0x7FFFFFFFFFFFFFFFll)));
  const __m256d finite = _mm256_cmp_pd(magnitude, _mm256_set1_pd(DBL_MAX), _CMP_LE_OQ);
  return _mm256_and_pd(pred, finite);
}

// Stores the four floats of v at w + the four indices of `at`.
[[gnu::target("avx2"), gnu::always_inline]] inline void ScatterAvx2(float* w, __m128i at,
                                                                     __m128 v) {
  alignas(16) uint32_t i[4];
  alignas(16) float f[4];
  _mm_store_si128(reinterpret_cast<__m128i*>(i), at);
  _mm_store_ps(f, v);
  w[i[0]] = f[0];
  w[i[1]] = f[1];
  w[i[2]] = f[2];
  w[i[3]] = f[3];
}

// TileEncoder's run loop for elements [run.begin, run.begin + 4 * groups).
// Returns the symbols' end and appends verbatim elements to *verbatim.
// kFill: the tile's box has fill elements (`fill`, the frame's mask), which
// get no symbol; their lanes' symbols are squeezed out, and the 8-byte
// stores may then write up to 3 symbols beyond the end.
template <Formula kF, bool kOwn, bool kFill>
[[gnu::target("avx2")]] uint16_t* EncodeRunAvx2(const TilePlan& plan, const TilePlan::Run& run,
                                                uint32_t groups, float* w, const float* x,
                                                const uint8_t* fill, uint64_t anchor,
                                                double quant_step, double inv_step,
                                                double abs_bound, int32_t radius, uint16_t* o,
                                                std::vector<uint32_t>* verbatim) {
  const __m256d step = _mm256_set1_pd(quant_step);
  const __m256d inv = _mm256_set1_pd(inv_step);
  const __m256d bound = _mm256_set1_pd(abs_bound);
  const __m256d max_r = _mm256_set1_pd(static_cast<double>(radius - 1));
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  const __m128i exponent = _mm_set1_epi32(0x7F800000);
  const __m128i zero = _mm_setzero_si128();
  const __m128i radius4 = _mm_set1_epi32(radius);
  const int32_t s = static_cast<int32_t>(run.box_distance);
  for (uint32_t g = 0; g < groups; ++g) {
    const uint32_t e = run.begin + 4 * g;
    const __m128i li = _mm_loadu_si128(reinterpret_cast<const __m128i*>(plan.box.data() + e));
    const __m128i gi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(plan.frame.data() + e));
    const __m256d pred = PredictAvx2<kF>(w, li, s);
    const int not_fill = kFill ? NotFillLanes(fill + anchor, gi) : 0xF;
    if (kFill && not_fill == 0) {
      // Four fill elements: the working values for ρ = 0, no symbols.
      const __m256d zero_rho = _mm256_mul_pd(_mm256_setzero_pd(), step);
      ScatterAvx2(w, li, _mm256_cvtpd_ps(_mm256_add_pd(pred, zero_rho)));
      continue;
    }
    const __m128 xv = LoadAvx2(x + anchor, gi);
    const __m256d xd = _mm256_cvtps_pd(xv);
    const __m256d r = _mm256_mul_pd(_mm256_sub_pd(xd, pred), inv);
    // Verbatim whatever the prediction: exponent all ones, or zero with a
    // non-zero pattern (IsSpecial).
    const __m128i bits = _mm_castps_si128(xv);
    const __m128i exp = _mm_and_si128(bits, exponent);
    const __m128i special =
        _mm_or_si128(_mm_cmpeq_epi32(exp, exponent),
                     _mm_andnot_si128(_mm_cmpeq_epi32(bits, zero), _mm_cmpeq_epi32(exp, zero)));
    const __m256d in_range = _mm256_cmp_pd(_mm256_and_pd(r, abs_mask), max_r, _CMP_LE_OQ);
    const __m256d quantized =
        _mm256_andnot_pd(_mm256_castsi256_pd(_mm256_cvtepi32_epi64(special)), in_range);
    // ρ (0 where not quantized, converted from an integer: +0.0).
    const __m256d rho = _mm256_and_pd(_mm256_cvtepi32_pd(_mm256_cvtpd_epi32(r)), quantized);
    __m128 y = _mm256_cvtpd_ps(_mm256_add_pd(pred, _mm256_mul_pd(rho, step)));
    const __m256d error = _mm256_and_pd(_mm256_sub_pd(_mm256_cvtps_pd(y), xd), abs_mask);
    const __m256d ok = _mm256_and_pd(quantized, _mm256_cmp_pd(error, bound, _CMP_LE_OQ));
    __m128i rho_i = _mm256_cvttpd_epi32(rho);
    const int ok_lanes = _mm256_movemask_pd(ok) & not_fill;
    if (ok_lanes != 0xF) {
      // Fill and verbatim lanes: the working value for ρ = 0; verbatim
      // ones also ρ = 0.
      const __m128i keep = _mm_load_si128(reinterpret_cast<const __m128i*>(kLaneMasks[ok_lanes]));
      const __m128 y0 =
          _mm256_cvtpd_ps(_mm256_add_pd(pred, _mm256_mul_pd(_mm256_setzero_pd(), step)));
      y = _mm_blendv_ps(y0, y, _mm_castsi128_ps(keep));
      rho_i = _mm_and_si128(rho_i, keep);
      const int verbatim_lanes = not_fill & ~ok_lanes;
      if (kOwn && verbatim_lanes != 0) {
        alignas(16) uint32_t idx[4];
        _mm_store_si128(reinterpret_cast<__m128i*>(idx), gi);
        for (int lane = 0; lane < 4; ++lane) {
          if ((verbatim_lanes >> lane) & 1) {
            verbatim->push_back(static_cast<uint32_t>(anchor + idx[lane]));
          }
        }
      }
    }
    ScatterAvx2(w, li, y);
    if (kOwn) {
      __m128i sym = _mm_packus_epi32(_mm_add_epi32(rho_i, radius4), zero);
      if (kFill && not_fill != 0xF) {
        sym = _mm_shuffle_epi8(
            sym, _mm_load_si128(reinterpret_cast<const __m128i*>(kLaneShuffles.compact[not_fill])));
      }
      _mm_storel_epi64(reinterpret_cast<__m128i*>(o), sym);
      o += kFill ? kLaneCount[not_fill] : 4;
    }
  }
  return o;
}

// TileDecoder's run loop for elements from run.begin on, up to 4 * groups
// of them; returns how many it decoded. ORs symbol 0 into *zero and symbols
// at or beyond the alphabet into *beyond. kFill: `fill` (the frame's mask)
// says which elements have no symbol; a group's four symbols are read at
// once, so it stops where fewer than four are left before `sym_end`.
template <Formula kF, bool kFill>
[[gnu::target("avx2")]] uint32_t DecodeRunAvx2(const TilePlan& plan, const TilePlan::Run& run,
                                               uint32_t groups, float* w, const uint8_t* fill,
                                               const uint16_t** symbols,
                                               const uint16_t* sym_end, double quant_step,
                                               int32_t radius, uint32_t alphabet, bool* zero,
                                               bool* beyond) {
  const uint16_t* sym = *symbols;
  const __m256d step = _mm256_set1_pd(quant_step);
  const __m128i radius4 = _mm_set1_epi32(radius);
  const __m128i last4 = _mm_set1_epi32(static_cast<int32_t>(alphabet) - 1);
  __m128i zeros = _mm_setzero_si128(), beyonds = _mm_setzero_si128();
  const int32_t s = static_cast<int32_t>(run.frame_distance);
  uint32_t g = 0;
  for (; g < groups && sym_end - sym >= 4; ++g) {
    const uint32_t e = run.begin + 4 * g;
    const __m128i at = _mm_loadu_si128(reinterpret_cast<const __m128i*>(plan.frame.data() + e));
    const __m256d pred = PredictAvx2<kF>(w, at, s);
    __m128i v16 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sym));
    __m128i v;
    if (kFill) {
      // Fill lanes have no symbol: the others' spread out to their lanes,
      // and fill lanes take radius (ρ = 0).
      const int not_fill = NotFillLanes(fill, at);
      v16 = _mm_shuffle_epi8(
          v16, _mm_load_si128(reinterpret_cast<const __m128i*>(kLaneShuffles.expand[not_fill])));
      const __m128i keep = _mm_load_si128(reinterpret_cast<const __m128i*>(kLaneMasks[not_fill]));
      v = _mm_blendv_epi8(radius4, _mm_cvtepu16_epi32(v16), keep);
      sym += kLaneCount[not_fill];
    } else {
      v = _mm_cvtepu16_epi32(v16);
      sym += 4;
    }
    zeros = _mm_or_si128(zeros, _mm_cmpeq_epi32(v, _mm_setzero_si128()));
    beyonds = _mm_or_si128(beyonds, _mm_cmpgt_epi32(v, last4));
    const __m256d rho = _mm256_cvtepi32_pd(_mm_sub_epi32(v, radius4));
    ScatterAvx2(w, at, _mm256_cvtpd_ps(_mm256_add_pd(pred, _mm256_mul_pd(rho, step))));
  }
  *zero |= _mm_movemask_epi8(zeros) != 0;
  *beyond |= _mm_movemask_epi8(beyonds) != 0;
  *symbols = sym;
  return 4 * g;
}

#endif  // __x86_64__

// Whether the AVX2 loops run (float frames only; the loops say so).
bool UseAvx2() {
#ifdef EBZIP_INTERP_AVX2
  return HasAvx2();
#else
  return false;
#endif
}

// What every tile's encoding reads.
template <typename T>
struct TileInputs {
  const Geometry* g = nullptr;
  const T* x = nullptr;           // the frame's values
  const uint8_t* fill = nullptr;  // null without a fill value
  const T* anchor_w = nullptr;    // by tile
  const uint16_t* anchor_sym = nullptr;
  double step = 0;
  double inv_step = 0;  // InverseStep(step)
  double abs_bound = 0;
  int32_t radius = 0;
};

// Encodes one tile at a time in a box-sized buffer (see Box).
template <typename T>
class TileEncoder {
 public:
  TileEncoder(const TileInputs<T>& in, const TilePlans& plans, bool cubic,
              std::vector<uint32_t>* verbatim)
      : in_(in), plans_(plans), cubic_(cubic), w_(MaxBoxVolume(*in.g)), verbatim_(verbatim) {}

  // Encodes tile t (tile coordinates k): writes its symbols, in symbol
  // order, from `out` on, and appends its verbatim elements to *verbatim.
  // Returns the number of symbols. In a frame with fill elements, up to 3
  // symbols' room beyond the tile's may be written over (EncodeRunAvx2).
  uint64_t Encode(uint64_t t, const Coords& k, uint16_t* out) {
    const Geometry& g = *in_.g;
    const Box b = TileBox(g, k);
    PlaceAnchors(t, b);
    const TilePlan* plan = plans_.For(g, k);
    const BoxFill box_fill = plan != nullptr && in_.fill != nullptr ? FillOf(b) : BoxFill::kNone;
    box_fill_ = box_fill != BoxFill::kNone;
    o_ = out;
    *o_++ = in_.anchor_sym[t];
    if (box_fill == BoxFill::kAll) {
      // Nothing but fill in the box: no symbol but the anchor's, and the
      // working values are read by no other tile (each computes its own
      // box), so there is nothing to compute.
    } else if (plan != nullptr) {
      for (const TilePlan::Run& run : plan->runs) PlanRun(*plan, run, b.anchor);
    } else {
      ForEachPass(g, [&](uint64_t h, int d) { Pass(b, h, d); });
    }
    return static_cast<uint64_t>(o_ - out);
  }

 private:
  void PlanRun(const TilePlan& plan, const TilePlan::Run& run, uint64_t anchor) {
    switch (run.formula) {
      case Formula::kCubic:
        return PlanRunWith<Formula::kCubic>(plan, run, anchor);
      case Formula::kCubicLeft:
        return PlanRunWith<Formula::kCubicLeft>(plan, run, anchor);
      case Formula::kCubicRight:
        return PlanRunWith<Formula::kCubicRight>(plan, run, anchor);
      case Formula::kLinear:
        return PlanRunWith<Formula::kLinear>(plan, run, anchor);
      case Formula::kExtrapolate:
        return PlanRunWith<Formula::kExtrapolate>(plan, run, anchor);
      case Formula::kCopy:
        return PlanRunWith<Formula::kCopy>(plan, run, anchor);
    }
  }

  // Whether box b has fill elements, and whether nothing else (the mask's
  // rows of the box).
  enum class BoxFill { kNone, kSome, kAll };
  BoxFill FillOf(const Box& b) const {
    const Geometry& g = *in_.g;
    bool fill = false, other = false;
    for (uint64_t i0 = 0; i0 < b.extent[0]; ++i0) {
      for (uint64_t i1 = 0; i1 < b.extent[1]; ++i1) {
        for (uint64_t i2 = 0; i2 < b.extent[2]; ++i2) {
          const uint8_t* row =
              in_.fill + b.anchor + i0 * g.stride[0] + i1 * g.stride[1] + i2 * g.stride[2];
          fill = fill || std::memchr(row, 1, b.extent[3]) != nullptr;
          other = other || std::memchr(row, 0, b.extent[3]) != nullptr;
          if (fill && other) return BoxFill::kSome;
        }
      }
    }
    return fill ? BoxFill::kAll : BoxFill::kNone;
  }

  template <Formula kF>
  void PlanRunWith(const TilePlan& plan, const TilePlan::Run& run, uint64_t anchor) {
    const bool fill = box_fill_;
    if (run.own) {
      fill ? PlanRunWith<kF, true, true>(plan, run, anchor)
           : PlanRunWith<kF, true, false>(plan, run, anchor);
    } else {
      fill ? PlanRunWith<kF, false, true>(plan, run, anchor)
           : PlanRunWith<kF, false, false>(plan, run, anchor);
    }
  }

  // The elements of one run of a plan. kOwn: they are the tile's and get
  // their symbols; kFill: the frame has fill elements.
  template <Formula kF, bool kOwn, bool kFill>
  void PlanRunWith(const TilePlan& plan, const TilePlan::Run& run, uint64_t anchor) {
    T* const w = w_.data();
    const T* const x = in_.x + anchor;
    const uint8_t* const fill = in_.fill + (kFill ? anchor : 0);
    const uint32_t* const box = plan.box.data();
    const uint32_t* const frame = plan.frame.data();
    const uint64_t s = run.box_distance;
    const double quant_step = in_.step;
    const double inv_step = in_.inv_step;
    const double abs_bound = in_.abs_bound;
    const int32_t radius = in_.radius;
    const double max_r = static_cast<double>(radius - 1);
    uint16_t* o = o_;
    uint32_t begin = run.begin;
#ifdef EBZIP_INTERP_AVX2
    if constexpr (std::is_same_v<T, float>) {
      if (plan.int32_offsets && avx2_ && run.end - run.begin >= kMinSimd) {
        const uint32_t groups = (run.end - run.begin) / 4;
        o = EncodeRunAvx2<kF, kOwn, kFill>(plan, run, groups, w, in_.x, in_.fill, anchor,
                                           quant_step, inv_step, abs_bound, radius, o,
                                           verbatim_);
        begin += 4 * groups;
      }
    }
#endif
    for (uint32_t e = begin; e < run.end; ++e) {
      const uint64_t li = box[e];
      const uint64_t gi = frame[e];
      const double pred = PredictWith<kF>(w, li, s);
      if (kFill && fill[gi]) {
        // No symbol; the working value the decoder computes for ρ = 0.
        w[li] = Reconstruct<T>(pred, 0, quant_step);
        continue;
      }
      const T xv = x[gi];
      const double xd = static_cast<double>(xv);
      const double r = (xd - pred) * inv_step;
      int32_t rho = 0;
      T y{};
      bool ok = !IsSpecial(xv) && std::fabs(r) <= max_r;
      if (ok) {
        rho = static_cast<int32_t>(std::rint(r));
        y = Reconstruct<T>(pred, rho, quant_step);
        ok = std::fabs(static_cast<double>(y) - xd) <= abs_bound;
      }
      if (!ok) {
        rho = 0;
        y = Reconstruct<T>(pred, 0, quant_step);
      }
      w[li] = y;
      if (kOwn) {
        *o++ = static_cast<uint16_t>(rho + radius);
        if (!ok) verbatim_->push_back(static_cast<uint32_t>(anchor + gi));
      }
    }
    o_ = o;
  }

  // The anchors of the box: the tile's own and those on its far faces,
  // which are the next tiles' anchors.
  void PlaceAnchors(uint64_t t, const Box& b) {
    const Geometry& g = *in_.g;
    int faces[kMaxDims];
    int face_count = 0;
    for (int d = 0; d < kMaxDims; ++d) {
      if (b.extent[d] > b.own[d]) faces[face_count++] = d;
    }
    Coords tile_stride;
    tile_stride[kMaxDims - 1] = 1;
    for (int d = kMaxDims - 2; d >= 0; --d) tile_stride[d] = tile_stride[d + 1] * g.tiles[d + 1];
    for (unsigned corner = 0; corner < (1u << face_count); ++corner) {
      uint64_t tn = t, local = 0;
      for (int f = 0; f < face_count; ++f) {
        if ((corner >> f) & 1) {
          tn += tile_stride[faces[f]];
          local += g.tile * b.stride[faces[f]];
        }
      }
      w_[local] = in_.anchor_w[tn];
    }
  }

  // Pass (h, d) over the box, in C order: lines along the last dimension.
  void Pass(const Box& b, uint64_t h, int d) {
    const Geometry& g = *in_.g;
    const Lattice l = PassLattice(g, b.extent, h, d);
    if (l.count[0] * l.count[1] * l.count[2] * l.count[3] == 0) return;
    const uint64_t s = h * b.stride[d];  // neighbour distance in the box
    // Elements of a line from own_count on lie on the far face along the
    // last dimension: computed, not emitted.
    const uint64_t own_count =
        b.own[3] > l.first[3] ? CeilDiv(b.own[3] - l.first[3], l.step[3]) : 0;
    for (uint64_t i0 = 0; i0 < l.count[0]; ++i0) {
      for (uint64_t i1 = 0; i1 < l.count[1]; ++i1) {
        for (uint64_t i2 = 0; i2 < l.count[2]; ++i2) {
          const Coords p{l.first[0] + i0 * l.step[0], l.first[1] + i1 * l.step[1],
                         l.first[2] + i2 * l.step[2], l.first[3]};
          const bool line_own = p[0] < b.own[0] && p[1] < b.own[1] && p[2] < b.own[2];
          const uint64_t emit = line_own ? own_count : 0;
          const uint64_t local = p[0] * b.stride[0] + p[1] * b.stride[1] + p[2] * b.stride[2] + p[3];
          const uint64_t global =
              b.anchor + p[0] * g.stride[0] + p[1] * g.stride[1] + p[2] * g.stride[2] + p[3];
          if (d != kMaxDims - 1) {
            // Along another dimension the window is the same for the line.
            const Formula f = FormulaOf(Available(p[d], h, g.tile, b.extent[d]), cubic_);
            Line(f, local, global, l.step[3], s, 0, l.count[3], emit);
            continue;
          }
          // Along the last dimension the formula changes only near the
          // window's ends: runs of one formula.
          for (uint64_t j = 0; j < l.count[3];) {
            const Formula f =
                FormulaOf(Available(p[3] + j * l.step[3], h, g.tile, b.extent[3]), cubic_);
            const uint64_t end = NextFormulaChange(j, l.count[3], h, b.extent[3]);
            Line(f, local, global, l.step[3], s, j, end, emit);
            j = end;
          }
        }
      }
    }
  }

  void Line(Formula f, uint64_t local, uint64_t global, uint64_t step, uint64_t s, uint64_t begin,
            uint64_t end, uint64_t emit) {
    switch (f) {
      case Formula::kCubic:
        return LineWith<Formula::kCubic>(local, global, step, s, begin, end, emit);
      case Formula::kCubicLeft:
        return LineWith<Formula::kCubicLeft>(local, global, step, s, begin, end, emit);
      case Formula::kCubicRight:
        return LineWith<Formula::kCubicRight>(local, global, step, s, begin, end, emit);
      case Formula::kLinear:
        return LineWith<Formula::kLinear>(local, global, step, s, begin, end, emit);
      case Formula::kExtrapolate:
        return LineWith<Formula::kExtrapolate>(local, global, step, s, begin, end, emit);
      case Formula::kCopy:
        return LineWith<Formula::kCopy>(local, global, step, s, begin, end, emit);
    }
  }

  // Elements j in [begin, end) of a line (box index local + j * step,
  // element index global + j * step), those below `emit` the tile's own.
  // Everything the loop reads is a local, so that the stores to w and to
  // the symbols need not reload it.
  template <Formula kF>
  void LineWith(uint64_t local, uint64_t global, uint64_t step, uint64_t s, uint64_t begin,
                uint64_t end, uint64_t emit) {
    if (in_.fill != nullptr) {
      LineWith<kF, true>(local, global, step, s, begin, end, emit);
    } else {
      LineWith<kF, false>(local, global, step, s, begin, end, emit);
    }
  }

  template <Formula kF, bool kFill>
  void LineWith(uint64_t local, uint64_t global, uint64_t step, uint64_t s, uint64_t begin,
                uint64_t end, uint64_t emit) {
    T* const w = w_.data();
    const T* const x = in_.x;
    const uint8_t* const fill = in_.fill;
    const double quant_step = in_.step;
    const double inv_step = in_.inv_step;
    const double abs_bound = in_.abs_bound;
    const int32_t radius = in_.radius;
    const double max_r = static_cast<double>(radius - 1);
    uint16_t* o = o_;
    for (uint64_t j = begin; j < end; ++j) {
      const uint64_t li = local + j * step;
      const uint64_t gi = global + j * step;
      const double pred = PredictWith<kF>(w, li, s);
      if (kFill && fill[gi]) {
        // No symbol; the working value the decoder computes for ρ = 0.
        w[li] = Reconstruct<T>(pred, 0, quant_step);
        continue;
      }
      const T xv = x[gi];
      const double xd = static_cast<double>(xv);
      const double r = (xd - pred) * inv_step;
      int32_t rho = 0;
      T y{};
      bool ok = !IsSpecial(xv) && std::fabs(r) <= max_r;
      if (ok) {
        rho = static_cast<int32_t>(std::rint(r));
        y = Reconstruct<T>(pred, rho, quant_step);
        ok = std::fabs(static_cast<double>(y) - xd) <= abs_bound;
      }
      if (!ok) {
        rho = 0;
        y = Reconstruct<T>(pred, 0, quant_step);
      }
      w[li] = y;
      if (j < emit) {
        *o++ = static_cast<uint16_t>(rho + radius);
        if (!ok) verbatim_->push_back(static_cast<uint32_t>(gi));
      }
    }
    o_ = o;
  }

  const TileInputs<T>& in_;
  const TilePlans& plans_;
  const bool cubic_;
  std::vector<T> w_;
  std::vector<uint32_t>* verbatim_;
  uint16_t* o_ = nullptr;
  bool box_fill_ = false;  // the tile's box has fill elements
  const bool avx2_ = UseAvx2();
};

// Each tile's first symbol position (§15.3), then S: a tile has a position
// for its anchor and for each of its own elements that is not fill.
std::vector<uint32_t> TileStarts(const Geometry& g, const uint8_t* fill,
                                 const std::atomic<bool>* cancel) {
  std::vector<uint32_t> start(g.num_tiles + 1, 0);
  const uint64_t tile_volume = std::max<uint64_t>(1, MaxBoxVolume(g));
  const uint64_t per_task = std::max<uint64_t>(1, kRange / tile_volume);
  ParallelFor(CeilDiv(g.num_tiles, per_task), [&](uint64_t task) {
    if (Cancelled(cancel)) return;
    ForEachTile(g, task * per_task, std::min(g.num_tiles, (task + 1) * per_task),
                [&](uint64_t t, const Coords& k) {
                  const Box b = TileBox(g, k);
                  uint64_t count = b.own[0] * b.own[1] * b.own[2] * b.own[3];
                  if (fill != nullptr) {
                    // Fill elements other than the anchor have no symbol.
                    for (uint64_t a = 0; a < b.own[0]; ++a) {
                      for (uint64_t c = 0; c < b.own[1]; ++c) {
                        for (uint64_t e = 0; e < b.own[2]; ++e) {
                          const uint8_t* row =
                              fill + b.anchor + a * g.stride[0] + c * g.stride[1] + e * g.stride[2];
                          uint64_t fills = 0;
                          for (uint64_t z = 0; z < b.own[3]; ++z) fills += row[z];
                          count -= fills;
                        }
                      }
                    }
                    count += fill[b.anchor];
                  }
                  start[t] = static_cast<uint32_t>(count);
                });
  });
  uint32_t total = 0;
  for (uint64_t t = 0; t <= g.num_tiles; ++t) {
    const uint32_t count = start[t];
    start[t] = total;
    total += count;
  }
  return start;
}

template <typename T>
absl::Status EncodeT(const InterpParams& p, const T* data, const uint8_t* fill, InterpEncoded* out,
                     const std::atomic<bool>* cancel) {
  const Geometry g = MakeGeometry(p);
  *out = InterpEncoded{};
  std::vector<T> anchor_w;
  std::vector<uint16_t> anchor_sym;
  std::vector<uint32_t> verbatim;
  if (absl::Status s =
          EncodeAnchors(g, p, data, fill, &anchor_w, &anchor_sym, &verbatim, out, cancel);
      !s.ok()) {
    return s;
  }
  TileInputs<T> in;
  in.g = &g;
  in.x = data;
  in.fill = fill;
  in.anchor_w = anchor_w.data();
  in.anchor_sym = anchor_sym.data();
  in.step = p.quant_step;
  in.inv_step = InverseStep(p.quant_step);
  in.abs_bound = p.abs_bound;
  in.radius = static_cast<int32_t>(p.radius);
  const bool cubic = p.order == InterpOrder::kCubic;
  const uint64_t per_task = std::max<uint64_t>(1, kRange / MaxBoxVolume(g));
  const uint64_t tasks = CeilDiv(g.num_tiles, per_task);
  std::vector<std::vector<uint32_t>> task_verbatim(tasks);
  const TilePlans plans(g, cubic, /*faces=*/true);
  if (fill == nullptr) {
    // Every tile has a symbol per element: each knows where its go.
    const std::vector<uint32_t> start = TileStarts(g, nullptr, cancel);
    out->symbols.resize(start.back());
    uint16_t* symbols = out->symbols.data();
    ParallelFor(tasks, [&](uint64_t task) {
      if (Cancelled(cancel)) return;
      TileEncoder<T> encoder(in, plans, cubic, &task_verbatim[task]);
      ForEachTile(g, task * per_task, std::min(g.num_tiles, (task + 1) * per_task),
                  [&](uint64_t t, const Coords& k) { encoder.Encode(t, k, symbols + start[t]); });
    });
  } else {
    // How many symbols a tile has depends on its fill: each task's tiles
    // write to a buffer of the task's (with room for Encode's overrun), put
    // together in order at the end.
    std::vector<std::unique_ptr<uint16_t[]>> task_symbols(tasks);
    std::vector<uint64_t> task_start(tasks + 1, 0);
    ParallelFor(tasks, [&](uint64_t task) {
      if (Cancelled(cancel)) return;
      const uint64_t first = task * per_task;
      const uint64_t end = std::min(g.num_tiles, (task + 1) * per_task);
      task_symbols[task].reset(new uint16_t[(end - first) * MaxBoxVolume(g) + 4]);
      uint16_t* at = task_symbols[task].get();
      TileEncoder<T> encoder(in, plans, cubic, &task_verbatim[task]);
      ForEachTile(g, first, end, [&](uint64_t t, const Coords& k) { at += encoder.Encode(t, k, at); });
      task_start[task + 1] = static_cast<uint64_t>(at - task_symbols[task].get());
    });
    if (Cancelled(cancel)) return CancelledStatus(kEncoding);
    for (uint64_t task = 0; task < tasks; ++task) task_start[task + 1] += task_start[task];
    out->symbols.resize(task_start[tasks]);
    ParallelFor(tasks, [&](uint64_t task) {
      std::memcpy(out->symbols.data() + task_start[task], task_symbols[task].get(),
                  sizeof(uint16_t) * (task_start[task + 1] - task_start[task]));
      task_symbols[task].reset();
    });
  }
  if (Cancelled(cancel)) return CancelledStatus(kEncoding);

  // Verbatim elements in increasing element order; they are rare, so one
  // sort of all of them costs less than keeping a flag per element.
  uint64_t total = verbatim.size();
  for (const auto& v : task_verbatim) total += v.size();
  verbatim.reserve(total);
  for (auto& v : task_verbatim) {
    verbatim.insert(verbatim.end(), v.begin(), v.end());
    Release(v);
  }
  std::sort(verbatim.begin(), verbatim.end());
  out->verbatim_index = std::move(verbatim);
  return absl::OkStatus();
}

absl::Status Corrupt(absl::string_view what) {
  return format::CorruptArchive(absl::StrCat("interpolation: ", what));
}

// The anchors' residuals (the first symbol of each tile; outliers' from the
// outlier section) -> inverse Lorenzo on the anchor grid -> their working
// values in `out`. Checks every anchor symbol and outlier entry.
template <typename T>
absl::Status DecodeAnchors(const Geometry& g, const InterpParams& p,
                           absl::Span<const uint16_t> symbols, const std::vector<uint32_t>& start,
                           absl::Span<const uint32_t> outlier_index,
                           absl::Span<const int32_t> outlier_residual, T* out,
                           const std::atomic<bool>* cancel) {
  const uint64_t count = g.num_tiles;
  const int32_t radius = static_cast<int32_t>(p.radius);
  const uint32_t alphabet = 2 * p.radius;
  std::vector<int32_t> q(count);
  uint64_t zeros = 0;
  bool bad_symbol = false;
  for (uint64_t t = 0; t < count; ++t) {
    const uint16_t s = symbols[start[t]];
    q[t] = static_cast<int32_t>(s) - radius;
    zeros += s == 0;
    bad_symbol |= s >= alphabet;
  }
  if (bad_symbol) return Corrupt("symbol beyond the alphabet");
  if (zeros != outlier_index.size()) return Corrupt("outlier count disagrees with the symbols");
  for (size_t j = 0; j < outlier_index.size(); ++j) {
    if (j % kRange == 0 && Cancelled(cancel)) return CancelledStatus(kDecoding);
    const uint64_t i = outlier_index[j];
    if (i >= g.n) return Corrupt("outlier index beyond the frame");
    uint64_t t = 0;
    for (int d = 0; d < kMaxDims; ++d) {
      uint64_t x = i / g.stride[d] % g.dims[d];
      if (g.interp[d]) {
        if (x % g.tile != 0) return Corrupt("outlier at an element that is not an anchor");
        x /= g.tile;
      }
      t = t * g.tiles[d] + x;
    }
    if (symbols[start[t]] != 0) return Corrupt("outlier at an anchor whose symbol is not 0");
    q[t] = outlier_residual[j];
  }
  LorenzoInverse(AnchorGrid(g), q.data(), cancel);
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);
  ForEachTile(g, 0, count, [&](uint64_t t, const Coords& k) {
    out[g.AnchorIndex(k)] = Dequantize<T>(q[t], p.quant_step);
  });
  return absl::OkStatus();
}

// Which of a tile's own elements a TileDecoder call decodes: all of them,
// only those on its lower face along the band dimension (index 0 within the
// tile), or all the others. See DecodeT.
enum class Part { kAll, kLowerFace, kAboveLowerFace };

// Decodes one tile at a time, in place in the frame's output: a tile's
// elements, in symbol order, read its window's far faces, which belong to
// later tiles (Box), so the tiles of a band are decoded last to first and
// each element is computed once. The tile's symbols are read in order from
// its first position on, with no symbol array in element order.
template <typename T>
class TileDecoder {
 public:
  TileDecoder(const Geometry& g, const InterpParams& p, const TilePlans& plans,
              absl::Span<const uint16_t> symbols, const std::vector<uint32_t>& start,
              const uint8_t* fill, T* out, int band_dim)
      : g_(g),
        plans_(plans),
        symbols_(symbols.data()),
        symbols_end_(symbols.data() + symbols.size()),
        start_(start),
        fill_(fill),
        out_(out),
        band_dim_(band_dim),
        step_(p.quant_step),
        radius_(static_cast<int32_t>(p.radius)),
        alphabet_(2 * p.radius),
        cubic_(p.order == InterpOrder::kCubic) {}

  void Decode(uint64_t t, const Coords& k, Part part) {
    const Box b = TileBox(g_, k);
    // A tile without fill elements (but the anchor) has a symbol for each.
    tile_fill_ = fill_ != nullptr && start_[t + 1] - start_[t] != b.own[0] * b.own[1] * b.own[2] * b.own[3];
    pos_ = start_[t] + 1;  // after the anchor's
    part_ = part;
    const TilePlan* plan = part == Part::kAll ? plans_.For(g_, k) : nullptr;
    if (plan != nullptr) {
      for (const TilePlan::Run& run : plan->runs) PlanRun(*plan, run, b.anchor);
    } else {
      ForEachPass(g_, [&](uint64_t h, int d) { Pass(b, h, d); });
    }
  }

  // Symbol 0 or one beyond the alphabet at an element that is not an anchor.
  bool bad_zero() const { return bad_zero_; }
  bool bad_symbol() const { return bad_symbol_; }

 private:
  void Pass(const Box& b, uint64_t h, int d) {
    const Lattice l = PassLattice(g_, b.own, h, d);
    if (l.count[0] * l.count[1] * l.count[2] * l.count[3] == 0) return;
    const uint64_t s = h * g_.stride[d];  // neighbour distance in the frame
    for (uint64_t i0 = 0; i0 < l.count[0]; ++i0) {
      for (uint64_t i1 = 0; i1 < l.count[1]; ++i1) {
        for (uint64_t i2 = 0; i2 < l.count[2]; ++i2) {
          const Coords p{l.first[0] + i0 * l.step[0], l.first[1] + i1 * l.step[1],
                         l.first[2] + i2 * l.step[2], l.first[3]};
          const uint64_t row =
              b.anchor + p[0] * g_.stride[0] + p[1] * g_.stride[1] + p[2] * g_.stride[2] + p[3];
          // The part of the line to decode: [begin, end); the elements
          // before and after it only have their symbols passed over.
          uint64_t begin = 0, end = l.count[3];
          if (part_ != Part::kAll) {
            // Elements j < face_end of the line are on the lower face.
            uint64_t face_end;
            if (band_dim_ < kMaxDims - 1) {
              face_end = p[band_dim_] == 0 ? l.count[3] : 0;
            } else {
              face_end = p[3] == 0 ? 1 : 0;
            }
            if (part_ == Part::kLowerFace) {
              end = face_end;
            } else {
              begin = face_end;
            }
          }
          pos_ += SymbolsIn(row, l.step[3], 0, begin);
          if (d != kMaxDims - 1) {
            // Along another dimension the window is the same for the line.
            const Formula f = FormulaOf(Available(p[d], h, g_.tile, b.extent[d]), cubic_);
            if (begin < end) Line(f, row, l.step[3], s, begin, end);
          } else {
            for (uint64_t j = begin; j < end;) {
              const Formula f =
                  FormulaOf(Available(p[3] + j * l.step[3], h, g_.tile, b.extent[3]), cubic_);
              const uint64_t run_end = NextFormulaChange(j, end, h, b.extent[3]);
              Line(f, row, l.step[3], s, j, run_end);
              j = run_end;
            }
          }
          pos_ += SymbolsIn(row, l.step[3], end, l.count[3]);
        }
      }
    }
  }

  void PlanRun(const TilePlan& plan, const TilePlan::Run& run, uint64_t anchor) {
    switch (run.formula) {
      case Formula::kCubic:
        return PlanRunWith<Formula::kCubic>(plan, run, anchor);
      case Formula::kCubicLeft:
        return PlanRunWith<Formula::kCubicLeft>(plan, run, anchor);
      case Formula::kCubicRight:
        return PlanRunWith<Formula::kCubicRight>(plan, run, anchor);
      case Formula::kLinear:
        return PlanRunWith<Formula::kLinear>(plan, run, anchor);
      case Formula::kExtrapolate:
        return PlanRunWith<Formula::kExtrapolate>(plan, run, anchor);
      case Formula::kCopy:
        return PlanRunWith<Formula::kCopy>(plan, run, anchor);
    }
  }

  template <Formula kF>
  void PlanRunWith(const TilePlan& plan, const TilePlan::Run& run, uint64_t anchor) {
    tile_fill_ ? PlanRunWith<kF, true>(plan, run, anchor)
               : PlanRunWith<kF, false>(plan, run, anchor);
  }

  // One run of the tile's plan (own elements only, in symbol order).
  template <Formula kF, bool kFill>
  void PlanRunWith(const TilePlan& plan, const TilePlan::Run& run, uint64_t anchor) {
    T* const w = out_ + anchor;
    const uint8_t* const fill = fill_ + (kFill ? anchor : 0);
    const uint32_t* const frame = plan.frame.data();
    const uint64_t s = run.frame_distance;
    const uint16_t* sym = symbols_ + pos_;
    const double quant_step = step_;
    const int32_t radius = radius_;
    const uint32_t alphabet = alphabet_;
    bool zero = false, beyond = false;
    uint32_t begin = run.begin;
#ifdef EBZIP_INTERP_AVX2
    if constexpr (std::is_same_v<T, float>) {
      if (plan.int32_offsets && avx2_ && run.end - run.begin >= kMinSimd) {
        const uint32_t groups = (run.end - run.begin) / 4;
        begin += DecodeRunAvx2<kF, kFill>(plan, run, groups, w, fill, &sym, symbols_end_,
                                          quant_step, radius, alphabet, &zero, &beyond);
      }
    }
#endif
    for (uint32_t e = begin; e < run.end; ++e) {
      const uint64_t i = frame[e];
      const double pred = PredictWith<kF>(w, i, s);
      int32_t rho = 0;  // a fill element's, which has no symbol
      if (!kFill || !fill[i]) {
        const uint16_t v = *sym++;
        zero |= v == 0;
        beyond |= v >= alphabet;
        rho = static_cast<int32_t>(v) - radius;
      }
      w[i] = Reconstruct<T>(pred, rho, quant_step);
    }
    pos_ = static_cast<uint64_t>(sym - symbols_);
    bad_zero_ |= zero;
    bad_symbol_ |= beyond;
  }

  // The symbols of elements j in [begin, end) of a line.
  uint64_t SymbolsIn(uint64_t row, uint64_t step, uint64_t begin, uint64_t end) const {
    uint64_t n = end > begin ? end - begin : 0;
    if (tile_fill_) {
      for (uint64_t j = begin; j < end; ++j) n -= fill_[row + j * step];
    }
    return n;
  }
  void Line(Formula f, uint64_t row, uint64_t step, uint64_t s, uint64_t begin, uint64_t end) {
    switch (f) {
      case Formula::kCubic:
        return LineWith<Formula::kCubic>(row, step, s, begin, end);
      case Formula::kCubicLeft:
        return LineWith<Formula::kCubicLeft>(row, step, s, begin, end);
      case Formula::kCubicRight:
        return LineWith<Formula::kCubicRight>(row, step, s, begin, end);
      case Formula::kLinear:
        return LineWith<Formula::kLinear>(row, step, s, begin, end);
      case Formula::kExtrapolate:
        return LineWith<Formula::kExtrapolate>(row, step, s, begin, end);
      case Formula::kCopy:
        return LineWith<Formula::kCopy>(row, step, s, begin, end);
    }
  }

  template <Formula kF>
  void LineWith(uint64_t row, uint64_t step, uint64_t s, uint64_t begin, uint64_t end) {
    if (tile_fill_) {
      LineWith<kF, true>(row, step, s, begin, end);
    } else {
      LineWith<kF, false>(row, step, s, begin, end);
    }
  }

  // Elements j in [begin, end) of a line starting at element `row`.
  template <Formula kF, bool kFill>
  void LineWith(uint64_t row, uint64_t step, uint64_t s, uint64_t begin, uint64_t end) {
    T* const w = out_;
    const uint8_t* const fill = fill_;
    const uint16_t* sym = symbols_ + pos_;
    const double quant_step = step_;
    const int32_t radius = radius_;
    const uint32_t alphabet = alphabet_;
    bool zero = false, beyond = false;
    for (uint64_t j = begin; j < end; ++j) {
      const uint64_t i = row + j * step;
      const double pred = PredictWith<kF>(w, i, s);
      int32_t rho = 0;  // a fill element's, which has no symbol
      if (!kFill || !fill[i]) {
        const uint16_t v = *sym++;
        zero |= v == 0;
        beyond |= v >= alphabet;
        rho = static_cast<int32_t>(v) - radius;
      }
      w[i] = Reconstruct<T>(pred, rho, quant_step);
    }
    pos_ = static_cast<uint64_t>(sym - symbols_);
    bad_zero_ |= zero;
    bad_symbol_ |= beyond;
  }

  const Geometry& g_;
  const TilePlans& plans_;
  const uint16_t* const symbols_;
  const uint16_t* const symbols_end_;
  const std::vector<uint32_t>& start_;
  const uint8_t* const fill_;
  T* const out_;
  const int band_dim_;
  const double step_;
  const int32_t radius_;
  const uint32_t alphabet_;
  const bool cubic_;
  const bool avx2_ = UseAvx2();
  bool tile_fill_ = false;
  Part part_ = Part::kAll;
  uint64_t pos_ = 0;
  bool bad_zero_ = false;
  bool bad_symbol_ = false;
};

// Calls fn(t, k) for the tiles t in [begin, end) from last to first.
template <typename Fn>
void ForEachTileBackwards(const Geometry& g, uint64_t begin, uint64_t end, Fn fn) {
  if (begin >= end) return;
  Coords k;
  uint64_t rest = end - 1;
  for (int d = kMaxDims - 1; d >= 0; --d) {
    k[d] = rest % g.tiles[d];
    rest /= g.tiles[d];
  }
  for (uint64_t t = end; t-- > begin;) {
    fn(t, k);
    for (int d = kMaxDims - 1; d >= 0; --d) {
      if (k[d]-- > 0) break;
      k[d] = g.tiles[d] - 1;
    }
  }
}

template <typename T>
absl::Status DecodeT(const InterpParams& p, absl::Span<const uint16_t> symbols,
                     absl::Span<const uint32_t> outlier_index,
                     absl::Span<const int32_t> outlier_residual, const uint8_t* fill, T* out,
                     const std::atomic<bool>* cancel) {
  const Geometry g = MakeGeometry(p);
  const std::vector<uint32_t> start = TileStarts(g, fill, cancel);
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);
  if (symbols.size() != start.back()) {
    return Corrupt(absl::StrCat(symbols.size(), " symbols where the frame has ", start.back(),
                                " symbol positions"));
  }
  if (outlier_index.size() != outlier_residual.size()) {
    return Corrupt("outlier indices and residuals differ in number");
  }
  if (absl::Status s =
          DecodeAnchors(g, p, symbols, start, outlier_index, outlier_residual, out, cancel);
      !s.ok()) {
    return s;
  }

  // Bands of tile rows along the slowest dimension with more than one tile
  // run in parallel, each last tile first. Along a batch dimension bands are
  // independent. Along an interpolated one, a band's last row reads the
  // lower face of the next band's first row (its elements at index 0 along
  // that dimension, which only depend on each other): those faces are
  // decoded first, and their tiles then decode everything else.
  int band_dim = 0;
  while (band_dim < kMaxDims - 1 && g.tiles[band_dim] == 1) ++band_dim;
  const uint64_t rows = g.tiles[band_dim];
  const uint64_t per_row = g.num_tiles / rows;
  const uint64_t threads = static_cast<uint64_t>(DefaultThreadCount());
  const uint64_t bands = threads <= 1 ? 1 : std::min<uint64_t>(rows, 4 * threads);
  auto first_row = [&](uint64_t b) { return b * rows / bands; };
  const bool faces = g.interp[band_dim] && bands > 1;
  std::atomic<bool> bad_zero{false}, bad_symbol{false};
  const TilePlans plans(g, p.order == InterpOrder::kCubic, /*faces=*/false);
  auto decode_rows = [&](uint64_t from, uint64_t to, Part first_row_part) {
    TileDecoder<T> decoder(g, p, plans, symbols, start, fill, out, band_dim);
    const uint64_t split = (from + 1) * per_row;  // tiles of the first row below this
    ForEachTileBackwards(g, from * per_row, to * per_row, [&](uint64_t t, const Coords& k) {
      if (Cancelled(cancel)) return;
      decoder.Decode(t, k, t < split ? first_row_part : Part::kAll);
    });
    if (decoder.bad_zero()) bad_zero.store(true, std::memory_order_relaxed);
    if (decoder.bad_symbol()) bad_symbol.store(true, std::memory_order_relaxed);
  };
  if (faces) {
    ParallelFor(bands - 1, [&](uint64_t b) {
      const uint64_t row = first_row(b + 1);
      decode_rows(row, row + 1, Part::kLowerFace);
    });
  }
  ParallelFor(bands, [&](uint64_t b) {
    decode_rows(first_row(b), first_row(b + 1),
                faces && b > 0 ? Part::kAboveLowerFace : Part::kAll);
  });
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);
  if (bad_symbol.load()) return Corrupt("symbol beyond the alphabet");
  if (bad_zero.load()) return Corrupt("symbol 0 (an outlier) at an element that is not an anchor");
  return absl::OkStatus();
}

// Calls fn(t, k) for the tiles of the box [lo, hi] of tile coordinates
// (inclusive), from last to first in row-major order.
template <typename Fn>
void ForEachTileInBoxBackwards(const Geometry& g, const Coords& lo, const Coords& hi, Fn fn) {
  Coords k = hi;
  for (;;) {
    uint64_t t = 0;
    for (int d = 0; d < kMaxDims; ++d) t = t * g.tiles[d] + k[d];
    fn(t, k);
    int d = kMaxDims - 1;
    for (; d >= 0; --d) {
      if (k[d] > lo[d]) {
        --k[d];
        break;
      }
      k[d] = hi[d];
    }
    if (d < 0) return;
  }
}

// The tile coordinates of a region's box of elements: the tiles it meets,
// then along each interpolated dimension the next tile (the ring), whose
// lower face holds the far faces of the last tiles' windows.
InterpRegion RegionTiles(const Geometry& g, absl::Span<const uint64_t> lo,
                         absl::Span<const uint64_t> hi) {
  InterpRegion r;
  const int pad = kMaxDims - static_cast<int>(lo.size());
  for (int d = 0; d < kMaxDims; ++d) {
    const uint64_t l = d < pad ? 0 : lo[d - pad];
    const uint64_t h = d < pad ? 1 : hi[d - pad];
    if (g.interp[d]) {
      const uint64_t last = (h - 1) / g.tile;
      r.tile_lo[d] = l / g.tile;
      r.ring[d] = last + 1;
      r.tile_hi[d] = std::min(last + 1, g.tiles[d] - 1);
    } else {
      r.tile_lo[d] = l;
      r.ring[d] = h;  // no ring along a batch dimension
      r.tile_hi[d] = h - 1;
    }
    r.anchor_lo[d] = r.tile_lo[d] / g.anchor_block[d] * g.anchor_block[d];
  }
  return r;
}

// The local index of anchor k in the region's anchor box.
uint64_t AnchorSlot(const InterpRegion& r, const Coords& k) {
  uint64_t slot = 0;
  for (int d = 0; d < kMaxDims; ++d) {
    slot = slot * (r.tile_hi[d] - r.anchor_lo[d] + 1) + (k[d] - r.anchor_lo[d]);
  }
  return slot;
}

bool InBox(const Coords& k, const Coords& lo, const Coords& hi) {
  for (int d = 0; d < kMaxDims; ++d) {
    if (k[d] < lo[d] || k[d] > hi[d]) return false;
  }
  return true;
}

// DecodeAnchors for the anchors of a region's anchor box; writes the
// working values of those of its tiles.
template <typename T>
absl::Status DecodeRegionAnchors(const Geometry& g, const InterpParams& p, const InterpRegion& r,
                                 absl::Span<const uint16_t> symbols,
                                 absl::Span<const uint32_t> outlier_index,
                                 absl::Span<const int32_t> outlier_residual, T* out,
                                 const std::atomic<bool>* cancel) {
  const int32_t radius = static_cast<int32_t>(p.radius);
  const uint32_t alphabet = 2 * p.radius;
  BlockGrid grid;
  for (int d = 0; d < kMaxDims; ++d) {
    grid.dims[d] = r.tile_hi[d] - r.anchor_lo[d] + 1;
    grid.block[d] = g.anchor_block[d];
  }
  std::vector<int32_t> q(grid.size());
  uint64_t zeros = 0;
  bool bad_symbol = false;
  ForEachTileInBoxBackwards(g, r.anchor_lo, r.tile_hi, [&](uint64_t t, const Coords& k) {
    const uint16_t s = symbols[r.tile_start[t]];
    q[AnchorSlot(r, k)] = static_cast<int32_t>(s) - radius;
    zeros += s == 0;
    bad_symbol |= s >= alphabet;
  });
  if (bad_symbol) return Corrupt("symbol beyond the alphabet");
  uint64_t matched = 0;
  for (size_t j = 0; j < outlier_index.size(); ++j) {
    if (j % kRange == 0 && Cancelled(cancel)) return CancelledStatus(kDecoding);
    const uint64_t i = outlier_index[j];
    if (i >= g.n) return Corrupt("outlier index beyond the frame");
    Coords k;
    uint64_t t = 0;
    for (int d = 0; d < kMaxDims; ++d) {
      uint64_t x = i / g.stride[d] % g.dims[d];
      if (g.interp[d]) {
        if (x % g.tile != 0) return Corrupt("outlier at an element that is not an anchor");
        x /= g.tile;
      }
      k[d] = x;
      t = t * g.tiles[d] + x;
    }
    if (!InBox(k, r.anchor_lo, r.tile_hi)) continue;
    if (symbols[r.tile_start[t]] != 0) return Corrupt("outlier at an anchor whose symbol is not 0");
    q[AnchorSlot(r, k)] = outlier_residual[j];
    ++matched;
  }
  if (matched != zeros) return Corrupt("outlier count disagrees with the symbols");
  LorenzoInverse(grid, q.data(), cancel);
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);
  ForEachTileInBoxBackwards(g, r.tile_lo, r.tile_hi, [&](uint64_t, const Coords& k) {
    out[g.AnchorIndex(k)] = Dequantize<T>(q[AnchorSlot(r, k)], p.quant_step);
  });
  return absl::OkStatus();
}

template <typename T>
absl::Status DecodeRegionT(const InterpParams& p, const InterpRegion& r,
                           absl::Span<const uint16_t> symbols,
                           absl::Span<const uint32_t> outlier_index,
                           absl::Span<const int32_t> outlier_residual, const uint8_t* fill, T* out,
                           const std::atomic<bool>* cancel) {
  const Geometry g = MakeGeometry(p);
  if (r.tile_start.size() != g.num_tiles + 1 || symbols.size() != r.tile_start.back()) {
    return absl::InvalidArgumentError("interpolation: region plan of another frame");
  }
  if (outlier_index.size() != outlier_residual.size()) {
    return Corrupt("outlier indices and residuals differ in number");
  }
  if (absl::Status s =
          DecodeRegionAnchors(g, p, r, symbols, outlier_index, outlier_residual, out, cancel);
      !s.ok()) {
    return s;
  }
  // Tiles of different indices along a batch dimension share nothing: they
  // run in parallel along the slowest such dimension the region spans.
  // Without one, bands of tile rows along the slowest interpolated
  // dimension the region spans run in parallel as in DecodeT, the lower
  // faces of each band's first row first, since the band before reads them.
  // Ring tiles read only ring tiles (their far faces keep their index along
  // the ring's dimension), so then they all come before, on their own.
  int batch_dim = -1, band_dim = -1;
  for (int d = 0; d < kMaxDims; ++d) {
    if (r.tile_hi[d] == r.tile_lo[d]) continue;
    if (!g.interp[d] && batch_dim < 0) batch_dim = d;
    if (g.interp[d] && band_dim < 0) band_dim = d;
  }
  const int split_dim = batch_dim >= 0 ? batch_dim : band_dim;
  const uint64_t rows = split_dim < 0 ? 1 : r.tile_hi[split_dim] - r.tile_lo[split_dim] + 1;
  const uint64_t threads = static_cast<uint64_t>(DefaultThreadCount());
  // One band a thread: a band's first row runs line by line (its lower
  // faces apart), slower than the other rows' tile plans.
  const uint64_t bands = batch_dim >= 0 ? rows : std::min(rows, std::max<uint64_t>(threads, 1));
  auto first_row = [&](uint64_t b) {
    return split_dim < 0 ? b : r.tile_lo[split_dim] + b * rows / bands;
  };
  const bool faces = batch_dim < 0 && bands > 1;
  const TilePlans plans(g, p.order == InterpOrder::kCubic, /*faces=*/false);
  std::atomic<bool> bad_zero{false}, bad_symbol{false};
  // The first dimension along which tile k is in the ring, or -1.
  auto ring_dim = [&](const Coords& k) {
    for (int d = 0; d < kMaxDims; ++d) {
      if (g.interp[d] && k[d] >= r.ring[d]) return d;
    }
    return -1;
  };
  enum class Tiles { kAll, kRing, kNotRing };
  // Rows [from, to) of the split dimension (all of the box without one);
  // `first_part` is what the tiles of the first row compute. A ring tile
  // computes its lower face along a dimension where it is in the ring: the
  // far faces the tiles before it read lie there.
  auto decode_rows = [&](uint64_t from, uint64_t to, Part first_part, Tiles which) {
    Coords lo = r.tile_lo, hi = r.tile_hi;
    if (split_dim >= 0) {
      lo[split_dim] = from;
      hi[split_dim] = to - 1;
    }
    std::vector<TileDecoder<T>> decoders;
    decoders.reserve(kMaxDims);
    for (int d = 0; d < kMaxDims; ++d) {
      decoders.emplace_back(g, p, plans, symbols, r.tile_start, fill, out, d);
    }
    ForEachTileInBoxBackwards(g, lo, hi, [&](uint64_t t, const Coords& k) {
      if (Cancelled(cancel)) return;
      const int ring = ring_dim(k);
      if (ring >= 0) {
        if (which != Tiles::kNotRing) decoders[ring].Decode(t, k, Part::kLowerFace);
      } else if (which != Tiles::kRing) {
        const bool first = split_dim >= 0 && k[split_dim] == from;
        if (first && first_part != Part::kAll) {
          decoders[split_dim].Decode(t, k, first_part);
        } else {
          decoders[0].Decode(t, k, Part::kAll);
        }
      }
    });
    for (const TileDecoder<T>& decoder : decoders) {
      if (decoder.bad_zero()) bad_zero.store(true, std::memory_order_relaxed);
      if (decoder.bad_symbol()) bad_symbol.store(true, std::memory_order_relaxed);
    }
  };
  if (faces) {
    decode_rows(first_row(0), first_row(bands), Part::kAll, Tiles::kRing);
    ParallelFor(bands - 1, [&](uint64_t b) {
      const uint64_t row = first_row(b + 1);
      decode_rows(row, row + 1, Part::kLowerFace, Tiles::kNotRing);
    });
  }
  ParallelFor(bands, [&](uint64_t b) {
    const bool after_faces = faces && b > 0;
    decode_rows(first_row(b), first_row(b + 1), after_faces ? Part::kAboveLowerFace : Part::kAll,
                faces ? Tiles::kNotRing : Tiles::kAll);
  });
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);
  if (bad_symbol.load()) return Corrupt("symbol beyond the alphabet");
  if (bad_zero.load()) return Corrupt("symbol 0 (an outlier) at an element that is not an anchor");
  return absl::OkStatus();
}

bool IsPowerOfTwo(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

}  // namespace

absl::StatusOr<InterpRegion> PlanInterpRegion(const InterpParams& params, const uint8_t* fill_mask,
                                              uint64_t positions, absl::Span<const uint64_t> lo,
                                              absl::Span<const uint64_t> hi,
                                              const std::atomic<bool>* cancel) {
  if (absl::Status s = ValidateInterpParams(params); !s.ok()) return s;
  if (lo.size() != params.shape.size() || hi.size() != params.shape.size()) {
    return absl::InvalidArgumentError("interpolation: region box of another rank");
  }
  for (size_t d = 0; d < lo.size(); ++d) {
    if (!(lo[d] < hi[d] && hi[d] <= params.shape[d])) {
      return absl::InvalidArgumentError("interpolation: empty region box or one past the frame");
    }
  }
  const Geometry g = MakeGeometry(params);
  InterpRegion r = RegionTiles(g, lo, hi);
  r.tile_start = TileStarts(g, fill_mask, cancel);
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);
  if (r.tile_start.back() != positions) {
    return Corrupt(absl::StrCat(positions, " symbol positions where the frame has ",
                                r.tile_start.back()));
  }
  // Whole tiles of the tile box (ring included: its lower faces' symbols are
  // spread over the tile's), the first position of the others' anchors.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  ForEachTileInBoxBackwards(g, r.anchor_lo, r.tile_hi, [&](uint64_t t, const Coords& k) {
    const uint64_t first = r.tile_start[t];
    ranges.push_back({first, InBox(k, r.tile_lo, r.tile_hi) ? r.tile_start[t + 1] : first + 1});
  });
  std::sort(ranges.begin(), ranges.end());
  for (const auto& range : ranges) {
    if (!r.positions.empty() && range.first <= r.positions.back().second) {
      r.positions.back().second = std::max(r.positions.back().second, range.second);
    } else {
      r.positions.push_back(range);
    }
  }
  return r;
}

absl::Status InterpDecodeRegion(const InterpParams& params, const InterpRegion& region,
                                absl::Span<const uint16_t> symbols,
                                absl::Span<const uint32_t> outlier_index,
                                absl::Span<const int32_t> outlier_residual,
                                const uint8_t* fill_mask, uint8_t* out,
                                const std::atomic<bool>* cancel) {
  if (absl::Status s = ValidateInterpParams(params); !s.ok()) return s;
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);
  if (params.dtype == DType::kFloat32) {
    return DecodeRegionT(params, region, symbols, outlier_index, outlier_residual, fill_mask,
                         reinterpret_cast<float*>(out), cancel);
  }
  return DecodeRegionT(params, region, symbols, outlier_index, outlier_residual, fill_mask,
                       reinterpret_cast<double*>(out), cancel);
}

absl::Status ValidateInterpParams(const InterpParams& p) {
  auto invalid = [](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("interpolation: ", what));
  };
  if (p.dtype != DType::kFloat32 && p.dtype != DType::kFloat64) return invalid("bad dtype");
  const size_t rank = p.shape.size();
  if (rank < 1 || rank > kMaxDims) return invalid("rank must be 1 to 4");
  uint64_t n = 1;
  for (uint64_t extent : p.shape) {
    if (extent == 0) return invalid("a dimension has extent 0");
    if (extent > format::kMaxFrameElements || n > format::kMaxFrameElements / extent) {
      return invalid("more than 2^32 - 1 elements in a frame");
    }
    n *= extent;
  }
  uint64_t t = 0;
  for (size_t d = 0; d < kMaxDims; ++d) {
    const uint64_t b = p.tile[d];
    if (d >= rank) {
      if (b != 0) return invalid("tile extents beyond the rank must be 0");
      continue;
    }
    if (b == 1) continue;
    if (b < 2 || b > kMaxTile || !IsPowerOfTwo(b)) {
      return invalid("a tile extent must be 1 or a power of two from 2 to 32768");
    }
    if (t != 0 && b != t) return invalid("the interpolated dimensions must share one tile extent");
    t = b;
  }
  if (t == 0) return invalid("at least one dimension must be interpolated");
  if (p.order != InterpOrder::kLinear && p.order != InterpOrder::kCubic) {
    return invalid("order must be 1 (linear) or 3 (cubic)");
  }
  if (p.radius < 1 || p.radius > format::kMaxRadius) return invalid("radius must be 1 to 32768");
  if (!(std::isfinite(p.quant_step) && p.quant_step > 0)) {
    return invalid("quant_step must be finite and > 0");
  }
  if (!(std::isfinite(p.abs_bound) && p.abs_bound >= 0)) {
    return invalid("abs_bound must be finite and >= 0");
  }
  return absl::OkStatus();
}

absl::Status InterpEncode(const InterpParams& params, const uint8_t* data, const uint8_t* fill_mask,
                          InterpEncoded* out, const std::atomic<bool>* cancel) {
  if (absl::Status s = ValidateInterpParams(params); !s.ok()) return s;
  if (Cancelled(cancel)) return CancelledStatus(kEncoding);
  if (params.dtype == DType::kFloat32) {
    return EncodeT(params, reinterpret_cast<const float*>(data), fill_mask, out, cancel);
  }
  return EncodeT(params, reinterpret_cast<const double*>(data), fill_mask, out, cancel);
}

absl::Status InterpDecode(const InterpParams& params, absl::Span<const uint16_t> symbols,
                          absl::Span<const uint32_t> outlier_index,
                          absl::Span<const int32_t> outlier_residual, const uint8_t* fill_mask,
                          uint8_t* out, const std::atomic<bool>* cancel) {
  if (absl::Status s = ValidateInterpParams(params); !s.ok()) return s;
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);
  if (params.dtype == DType::kFloat32) {
    return DecodeT(params, symbols, outlier_index, outlier_residual, fill_mask,
                   reinterpret_cast<float*>(out), cancel);
  }
  return DecodeT(params, symbols, outlier_index, outlier_residual, fill_mask,
                 reinterpret_cast<double*>(out), cancel);
}

}  // namespace ebzip
