// The interpolation predictor (FORMAT.md §15.5, §15.8) cut into the pieces
// the GPU kernels run: host-and-device functions over one tile, one anchor
// or one table entry, so that gpu/interp_kernels.cu and a host emulation
// (tests/gpu/interp_kernels_test.cc, which runs without a GPU) execute the
// same code. Every floating-point operation is the one codec/
// interp_predictor.cc performs, in binary64, in the same order, each one
// rounded (__dadd_rn and friends on the device: never contracted).
//
// A tile is worked in a *box*: its closed window [lo, lo + E] along every
// interpolated dimension (cut at the frame's edge), so the far faces, which
// belong to the next tiles, are computed again here, exactly as their own
// tile computes them (§15.5.2's last paragraph). The box sits in shared
// memory with fixed pitches P_e = min(E + 1, N_d) per interpolated dimension,
// whatever the tile's extents, so a box offset depends only on in-box
// coordinates. Tiles come in at most 16 shapes (last along an interpolated
// dimension or not: a *key*); per key, a table lists each pass's elements as
// box offsets, the tile's own elements first in C order (their symbol-order
// rank follows from their place), then the far-face elements.
#ifndef EBZIP_GPU_INTERP_TILE_H_
#define EBZIP_GPU_INTERP_TILE_H_

#include <cmath>
#include <cstdint>

#include "codec/host_device.h"
#include "codec/quantize_point.h"

namespace ebzip::gpu::interp {

inline constexpr int kIDims = 4;            // frames seen as 4-D
inline constexpr uint32_t kMaxKeys = 16;    // tile shapes
inline constexpr uint32_t kMaxPasses = 60;  // 15 levels x 4 interpolated dimensions
// Box offsets and in-box coordinates are 16-bit in the tables.
inline constexpr uint32_t kMaxBoxVolume = 65536;
inline constexpr uint32_t kAnchorBlock = 8;  // the anchor grid's Lorenzo block (§15.5.1)

// Loops over the 4 dimensions unrolled on the device, so that small
// coordinate arrays stay in registers.
#if defined(__CUDA_ARCH__)
#define EBZIP_UNROLL _Pragma("unroll")
#else
#define EBZIP_UNROLL
#endif

// Error bits the decoder reports (the CPU decoder's DATA_LOSS cases).
enum DecodeError : uint32_t {
  kErrSymbolCount = 1,      // symbols given != the S the frame (and mask) implies
  kErrAlphabet = 2,         // a symbol >= 2 radius
  kErrZeroAtNonAnchor = 4,  // symbol 0 where only an anchor may have it
  kErrOutlier = 8,          // outlier beyond the frame, not an anchor, or at a non-0 symbol
  kErrOutlierCount = 16,    // outliers != anchors with symbol 0
};

// n / d for n < 2^16 and 1 <= d <= 2^16, by one multiplication: with
// m = ceil(2^32 / d) the error of n * m / 2^32 is below n / 2^32 < 1 / d.
struct FastDiv {
  uint32_t d;
  uint64_t m;
  EBZIP_HD void Init(uint32_t divisor) {
    d = divisor;
    m = ((uint64_t{1} << 32) + divisor - 1) / divisor;
  }
  EBZIP_HD uint32_t Div(uint32_t n) const { return static_cast<uint32_t>((n * m) >> 32); }
};

// One frame, fixed on the host (MakeGeometry in gpu/interp_kernels.h). The
// frame is 4-D (leading batch dimensions of extent 1); "position" e < k
// numbers the interpolated dimensions in increasing order.
struct Geometry {
  uint64_t dims[kIDims];
  uint64_t stride[kIDims];   // element strides
  uint64_t tiles[kIDims];    // tile ranges per dimension = the anchor grid's extents
  uint64_t astride[kIDims];  // anchor-grid strides
  uint64_t ablocks[kIDims];  // anchor Lorenzo blocks per dimension
  uint32_t ablock[kIDims];   // 8 along the frame's dimensions, 1 along padding
  uint64_t n;
  uint64_t num_tiles;
  uint64_t num_anchor_blocks;
  uint32_t E;
  uint32_t log2E;
  uint32_t k;                // interpolated dimensions
  uint32_t num_passes;       // log2(E) * k
  uint32_t idim[kIDims];     // dimension of position e
  uint32_t pitch[kIDims];    // P_e = min(E + 1, dims[idim[e]])
  uint32_t bstride[kIDims];  // box stride of position e: prod of P beyond it
  FastDiv pitch_div[kIDims];
  FastDiv bstride_div[kIDims];
  uint32_t box_volume;  // prod P_e
  uint32_t own_max;     // prod min(E, dims): the largest tile
  int32_t radius;
  uint32_t cubic;
  double abs_bound;
  double step;
  // Launch policy: threads per tile and tiles per thread block, of every
  // tile kernel but the encoder's, which has its own (MakeInterpGeometry).
  uint32_t tile_threads;
  uint32_t tiles_per_block;
  uint32_t encode_tile_threads;
  uint32_t encode_tiles_per_block;
};

// Per tile shape: extents and pass layout of its table.
struct KeyHeader {
  uint32_t exists;
  uint32_t own_volume;     // the tile's elements = its symbol positions without fill
  uint32_t box_count;      // elements of its box
  uint32_t entries_begin;  // its table's first entry
  uint32_t boxes_begin;    // its box table's first entry (BoxEntry)
  uint32_t own_rows;       // rows of own elements along the last position
  uint32_t rows_begin;     // their table (OwnRowEntry), in the box tables' array
  uint32_t own[kIDims];    // own extents per position (1 beyond k)
  uint32_t box[kIDims];    // box extents per position (1 beyond k)
  FastDiv own_div[kIDims];
  FastDiv box_div[kIDims];
  uint32_t pass_entry[kMaxPasses + 1];  // table entries of pass p: [pass_entry[p], pass_entry[p+1])
  uint32_t pass_own[kMaxPasses];        // how many of them are the tile's own (they come first)
  uint32_t pass_rank[kMaxPasses];       // symbol-order rank of the pass's first own element
};

// ---------------------------------------------------------------------------
// Arithmetic, each operation one IEEE binary64 operation rounded to nearest.

EBZIP_HD inline double Add(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
EBZIP_HD inline double Sub(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
EBZIP_HD inline double Mul(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
EBZIP_HD inline bool IsFinite(double v) {
  return (ToBits(v) & FloatTraits<double>::kExponent) != FloatTraits<double>::kExponent;
}
// NaN, ±Inf, -0.0 and subnormals: kept verbatim whatever the prediction.
template <typename T>
EBZIP_HD inline bool IsSpecial(T x) {
  using Bits = typename FloatTraits<T>::Bits;
  const Bits bits = ToBits(x);
  const Bits exponent = bits & FloatTraits<T>::kExponent;
  return exponent == FloatTraits<T>::kExponent || (exponent == 0 && bits != 0);
}

// Which of §15.5.2's neighbours along the pass's position e an element has
// inside its window [0, bx - 1] (bx the box's extent along e), from its
// in-box coordinate pd there and the pass's h: fixed per table entry.
inline constexpr uint32_t kHasA = 1;  // at pd - 3h
inline constexpr uint32_t kHasC = 2;  // at pd + h
inline constexpr uint32_t kHasZ = 4;  // at pd + 3h
EBZIP_HD inline uint32_t Neighbours(uint32_t pd, uint32_t h, uint32_t bx) {
  return (pd >= 3 * h ? kHasA : 0) | (pd + h + 1 <= bx ? kHasC : 0) |
         (pd + 3 * h + 1 <= bx ? kHasZ : 0);
}

// §15.5.2's prediction of the element at box offset o, pass (h, position e):
// s = h * bstride[e], `has` its Neighbours.
template <typename T>
EBZIP_HD inline double Predict(const T* box, uint32_t o, uint32_t s, uint32_t has, bool cubic) {
  const bool a_ok = (has & kHasA) != 0;
  const bool c_ok = (has & kHasC) != 0;
  const bool z_ok = (has & kHasZ) != 0;
  const double b = static_cast<double>(box[o - s]);
  double pred;
  if (cubic && a_ok && c_ok && z_ok) {
    const double a = static_cast<double>(box[o - 3 * s]);
    const double c = static_cast<double>(box[o + s]);
    const double z = static_cast<double>(box[o + 3 * s]);
    pred = Mul(Sub(Mul(9.0, Add(b, c)), Add(a, z)), 0.0625);
  } else if (cubic && a_ok && c_ok) {
    const double a = static_cast<double>(box[o - 3 * s]);
    const double c = static_cast<double>(box[o + s]);
    pred = Mul(Sub(Add(Mul(6.0, b), Mul(3.0, c)), a), 0.125);
  } else if (cubic && c_ok && z_ok) {
    const double c = static_cast<double>(box[o + s]);
    const double z = static_cast<double>(box[o + 3 * s]);
    pred = Mul(Sub(Add(Mul(3.0, b), Mul(6.0, c)), z), 0.125);
  } else if (c_ok) {
    pred = Mul(Add(b, static_cast<double>(box[o + s])), 0.5);
  } else if (a_ok) {
    pred = Mul(Sub(Mul(3.0, b), static_cast<double>(box[o - 3 * s])), 0.5);
  } else {
    pred = b;
  }
  return IsFinite(pred) ? pred : 0.0;
}

// w = narrow_T(pred + f64(ρ) × quant_step).
template <typename T>
EBZIP_HD inline T Reconstruct(double pred, int32_t rho, double step) {
  return Narrow<T>(Add(pred, Mul(static_cast<double>(rho), step)));
}

// §15.8's decision for an element that is not an anchor and not fill.
template <typename T>
struct Decision {
  T y;  // its working value
  uint16_t symbol;
  bool verbatim;
};

template <typename T>
EBZIP_HD inline Decision<T> Encode(T x, double pred, double step, double inv_step,
                                   double abs_bound, int32_t radius) {
  const double xd = static_cast<double>(x);
  const double r = Mul(Sub(xd, pred), inv_step);
  int32_t rho = 0;
  T y{};
  bool ok = !IsSpecial(x) && std::fabs(r) <= static_cast<double>(radius - 1);
  if (ok) {
    rho = static_cast<int32_t>(std::rint(r));
    y = Reconstruct<T>(pred, rho, step);
    ok = std::fabs(Sub(static_cast<double>(y), xd)) <= abs_bound;
  }
  if (!ok) {
    rho = 0;
    y = Reconstruct<T>(pred, 0, step);
  }
  return {y, static_cast<uint16_t>(rho + radius), !ok};
}

// ---------------------------------------------------------------------------
// Tables.

EBZIP_HD inline uint32_t LatticeCount(uint32_t extent, uint32_t first, uint32_t step) {
  return extent > first ? (extent - first + step - 1) / step : 0;
}

// Pass p = (level, position i): h = E / 2^(level+1); along position i the
// indices h, 3h, ...; along earlier positions multiples of h, along later
// ones multiples of 2h (§15.5.2, tiles starting at multiples of E).
struct Pass {
  uint32_t h;
  uint32_t pos;
  uint32_t first[kIDims];
  uint32_t step[kIDims];
};
EBZIP_HD inline Pass MakePass(const Geometry& g, uint32_t p) {
  Pass q;
  const uint32_t level = p / g.k;
  q.pos = p % g.k;
  q.h = g.E >> (level + 1);
  for (uint32_t e = 0; e < static_cast<uint32_t>(kIDims); ++e) {
    q.first[e] = e == q.pos ? q.h : 0;
    q.step[e] = e == q.pos ? 2 * q.h : e < q.pos ? q.h : 2 * q.h;
  }
  return q;
}

// Fills the 16 key headers; returns the pass tables' total entries and, in
// `box_entries`, the box and own-row tables' (each key's rows after its
// box). Key bit e: the tile is the last along position e (its own extent is
// what remains of the dimension, and its box has no far face there).
EBZIP_HD inline uint64_t ComputeHeaders(const Geometry& g, KeyHeader* headers,
                                        uint64_t* box_entries = nullptr) {
  uint64_t total = 0, boxes = 0;
  for (uint32_t key = 0; key < kMaxKeys; ++key) {
    KeyHeader& h = headers[key];
    h.exists = key < (1u << g.k) ? 1 : 0;
    for (uint32_t e = 0; e < static_cast<uint32_t>(kIDims); ++e) {
      uint32_t own = 1, box = 1;
      if (e < g.k) {
        const uint32_t d = g.idim[e];
        const bool last = (key >> e) & 1;
        if (!last && g.tiles[d] < 2) h.exists = 0;
        own = last ? static_cast<uint32_t>(g.dims[d] - (g.tiles[d] - 1) * g.E) : g.E;
        box = last ? own : g.E + 1;
      }
      h.own[e] = own;
      h.box[e] = box;
      h.own_div[e].Init(own);
      h.box_div[e].Init(box);
    }
    h.own_volume = 0;
    h.box_count = 0;
    h.own_rows = 0;
    h.entries_begin = static_cast<uint32_t>(total);
    h.boxes_begin = static_cast<uint32_t>(boxes);
    h.rows_begin = static_cast<uint32_t>(boxes);
    for (uint32_t p = 0; p <= kMaxPasses; ++p) h.pass_entry[p] = 0;
    for (uint32_t p = 0; p < kMaxPasses; ++p) h.pass_own[p] = h.pass_rank[p] = 0;
    if (!h.exists) continue;
    h.own_volume = h.own[0] * h.own[1] * h.own[2] * h.own[3];
    h.box_count = h.box[0] * h.box[1] * h.box[2] * h.box[3];
    h.own_rows = h.own_volume / h.own[g.k - 1];
    h.rows_begin = h.boxes_begin + h.box_count;
    uint32_t entry = 0, rank = 1;  // rank 0 is the anchor
    for (uint32_t p = 0; p < g.num_passes; ++p) {
      const Pass q = MakePass(g, p);
      uint32_t in_box = 1, own = 1;
      for (uint32_t e = 0; e < g.k; ++e) {
        in_box *= LatticeCount(h.box[e], q.first[e], q.step[e]);
        own *= LatticeCount(h.own[e], q.first[e], q.step[e]);
      }
      h.pass_entry[p] = entry;
      h.pass_own[p] = own;
      h.pass_rank[p] = rank;
      entry += in_box;
      rank += own;
    }
    h.pass_entry[g.num_passes] = entry;
    total += entry;
    boxes += h.box_count + h.own_rows;
  }
  if (box_entries != nullptr) *box_entries = boxes;
  return total;
}

// Entry j of key h's pass p, in the box lattice's C order: where it goes in
// the table (own elements by their C-order index, far-face ones after them
// in C order) and what it says: box offset | its Neighbours << 16.
EBZIP_HD inline void TableEntry(const Geometry& g, const KeyHeader& h, uint32_t p, uint32_t j,
                                uint32_t* slot, uint32_t* value) {
  const Pass q = MakePass(g, p);
  uint32_t box_count[kIDims], own_count[kIDims], idx[kIDims];
  for (uint32_t e = 0; e < g.k; ++e) {
    box_count[e] = LatticeCount(h.box[e], q.first[e], q.step[e]);
    own_count[e] = LatticeCount(h.own[e], q.first[e], q.step[e]);
  }
  uint32_t rest = j;
  for (uint32_t e = g.k; e-- > 0;) {
    idx[e] = rest % box_count[e];
    rest /= box_count[e];
  }
  uint32_t offset = 0;
  bool own = true;
  for (uint32_t e = 0; e < g.k; ++e) {
    offset += (q.first[e] + idx[e] * q.step[e]) * g.bstride[e];
    own = own && idx[e] < own_count[e];
  }
  *value = offset | Neighbours(q.first[q.pos] + idx[q.pos] * q.step[q.pos], q.h, h.box[q.pos])
                        << 16;
  uint32_t own_total = 1;
  for (uint32_t e = 0; e < g.k; ++e) own_total *= own_count[e];
  // Own elements before this one in C order (all of them, when it is own).
  uint32_t before = 0;
  for (uint32_t e = 0; e < g.k; ++e) {
    uint32_t suffix = 1;
    for (uint32_t f = e + 1; f < g.k; ++f) suffix *= own_count[f];
    before += (idx[e] < own_count[e] ? idx[e] : own_count[e]) * suffix;
    if (idx[e] >= own_count[e]) break;
  }
  *slot = own ? before : own_total + (j - before);
}

// ---------------------------------------------------------------------------
// Tiles.

struct TileView {
  uint64_t anchor;  // element index of the tile's first element
  uint32_t key;
};
EBZIP_HD inline TileView MakeTile(const Geometry& g, uint64_t t) {
  // A frame has fewer than 2^32 elements, so tiles and their counts fit 32
  // bits: 32-bit divisions, once per tile by every thread of the tile.
  TileView v{0, 0};
  uint32_t rest = static_cast<uint32_t>(t);
  uint32_t e = g.k;
  EBZIP_UNROLL
  for (int d = kIDims - 1; d >= 0; --d) {
    const uint32_t extent = static_cast<uint32_t>(g.tiles[d]);
    const uint32_t kd = rest % extent;
    rest /= extent;
    const bool interp = e > 0 && g.idim[e - 1] == static_cast<uint32_t>(d);
    if (interp) {
      --e;
      if (kd + 1 == extent) v.key |= 1u << e;
    }
    v.anchor += (interp ? uint64_t{kd} * g.E : kd) * g.stride[d];
  }
  return v;
}

// Whether dimension d of the 4-D frame is interpolated (one of idim).
EBZIP_HD inline bool IsInterpolated(const Geometry& g, int d) {
  for (uint32_t e = 0; e < g.k; ++e) {
    if (g.idim[e] == static_cast<uint32_t>(d)) return true;
  }
  return false;
}

// The tiles a decode writes: a box of the tile grid, every tile by default.
// A box of elements needs only the tiles it meets, since a tile's values
// come from its own symbols, its far faces' and the anchors, never from
// another tile's values (§15.5.2). Counts fit 32 bits: num_tiles < n < 2^32.
struct TileSpan {
  uint32_t lo[kIDims];
  uint32_t count[kIDims];
  uint32_t total;
  bool whole;  // every tile, in order: tile i is i

  // The span's i-th tile (i < total), in C order of the box.
  EBZIP_HD uint64_t Tile(const Geometry& g, uint32_t i) const {
    if (whole) return i;
    uint64_t t = 0;
    EBZIP_UNROLL
    for (int d = kIDims - 1; d >= 0; --d) {
      const uint32_t c = i % count[d];
      i /= count[d];
      t += uint64_t{lo[d] + c} * g.astride[d];
    }
    return t;
  }
};

inline TileSpan AllTiles(const Geometry& g) {
  TileSpan s{};
  for (int d = 0; d < kIDims; ++d) s.count[d] = static_cast<uint32_t>(g.tiles[d]);
  s.total = static_cast<uint32_t>(g.num_tiles);
  s.whole = s.total == g.num_tiles;
  return s;
}

// The tiles that own an element of the box [lo[d], hi[d]) of the 4-D frame
// (lo[d] < hi[d] <= dims[d]): along an interpolated dimension tile j owns
// elements [j E, j E + E), along another, tile j is element j.
inline TileSpan TilesMeeting(const Geometry& g, const uint64_t* lo, const uint64_t* hi) {
  TileSpan s{};
  s.total = 1;
  for (int d = 0; d < kIDims; ++d) {
    const bool interp = IsInterpolated(g, d);
    const uint64_t first = interp ? lo[d] / g.E : lo[d];
    const uint64_t last = interp ? (hi[d] - 1) / g.E : hi[d] - 1;
    s.lo[d] = static_cast<uint32_t>(first);
    s.count[d] = static_cast<uint32_t>(last - first + 1);
    s.total *= s.count[d];
  }
  s.whole = s.total == g.num_tiles;
  return s;
}

// The first symbol position of tile t without a fill mask (t = num_tiles: n):
// the tiles before it in row-major order cover, for each dimension d, the
// slab [0, lo_d) along d times this tile's extents before d and the whole
// frame after it.
EBZIP_HD inline uint64_t TileStartWithoutFill(const Geometry& g, uint64_t t) {
  if (t >= g.num_tiles) return g.n;
  uint64_t k[kIDims];
  uint64_t rest = t;
  for (int d = kIDims - 1; d >= 0; --d) {
    k[d] = rest % g.tiles[d];
    rest /= g.tiles[d];
  }
  uint64_t start = 0, before = 1;  // before: prod of this tile's extents along dims < d
  for (int d = 0; d < kIDims; ++d) {
    bool interp = false;
    for (uint32_t e = 0; e < g.k; ++e) interp = interp || g.idim[e] == static_cast<uint32_t>(d);
    const uint64_t lo = interp ? k[d] * g.E : k[d];
    uint64_t after = 1;
    for (int f = d + 1; f < kIDims; ++f) after *= g.dims[f];
    start += lo * before * after;
    const uint64_t rem = g.dims[d] - lo;
    before *= interp ? (rem < g.E ? rem : g.E) : 1;
  }
  return start;
}

// In-box coordinates of index j of a box of extents div[].d (C order).
EBZIP_HD inline void Decompose(uint32_t j, const FastDiv* div, uint32_t k, uint32_t* c) {
  EBZIP_UNROLL
  for (int e = kIDims - 1; e >= 1; --e) {
    if (static_cast<uint32_t>(e) < k) {
      const uint32_t q = div[e].Div(j);
      c[e] = j - q * div[e].d;
      j = q;
    } else {
      c[e] = 0;
    }
  }
  c[0] = j;
}

// In-box coordinates of box offset o.
EBZIP_HD inline void BoxCoords(const Geometry& g, uint32_t o, uint32_t* c) {
  EBZIP_UNROLL
  for (int e = 0; e < kIDims; ++e) {
    const uint32_t q = g.bstride_div[e].Div(o);
    c[e] = static_cast<uint32_t>(e) >= g.k ? 0
           : e == 0                        ? q
                                           : q - g.pitch_div[e].Div(q) * g.pitch[e];
  }
}

// Coordinates beyond k are 0 here and in what follows.
EBZIP_HD inline uint32_t BoxOffset(const Geometry& g, const uint32_t* c) {
  uint32_t o = 0;
  EBZIP_UNROLL
  for (int e = 0; e < kIDims; ++e) o += c[e] * g.bstride[e];
  return o;
}

EBZIP_HD inline uint64_t ElementOf(const Geometry& g, const TileView& v, const uint32_t* c) {
  uint64_t i = v.anchor;
  EBZIP_UNROLL
  for (int e = 0; e < kIDims; ++e) {
    if (static_cast<uint32_t>(e) < g.k) i += c[e] * g.stride[g.idim[e]];
  }
  return i;
}

// When c is a corner of the box (every coordinate 0 or E), the tile whose
// anchor it is, as an offset from this tile; else false.
EBZIP_HD inline bool CornerTile(const Geometry& g, const uint32_t* c, uint64_t* offset) {
  uint64_t off = 0;
  bool corner = true;
  EBZIP_UNROLL
  for (int e = 0; e < kIDims; ++e) {
    if (static_cast<uint32_t>(e) < g.k) {
      corner = corner && (c[e] & (g.E - 1)) == 0;
      if (c[e] != 0) off += g.astride[g.idim[e]];
    }
  }
  *offset = off;
  return corner;
}

// Entry j of key h's box table: element j of the box in C order over its
// extents, fixed for every tile of the key. Bits 0-31: its element index
// less the tile's first element's; 32-47: its box offset; 48: the tile's
// own element (not a far face); 49: a corner of the box, whose value is an
// anchor's; 50-53: that corner (bit e: at E along position e). The tile
// kernels read it instead of dividing j into coordinates.
EBZIP_HD inline uint64_t BoxEntry(const Geometry& g, const KeyHeader& h, uint32_t j) {
  uint32_t c[kIDims];
  Decompose(j, h.box_div, g.k, c);
  uint64_t element = 0;
  bool own = true, corner = true;
  uint32_t mask = 0;
  for (uint32_t e = 0; e < g.k; ++e) {
    element += c[e] * g.stride[g.idim[e]];
    own = own && c[e] < h.own[e];
    corner = corner && (c[e] & (g.E - 1)) == 0;
    if (c[e] != 0) mask |= 1u << e;
  }
  return element | uint64_t{BoxOffset(g, c)} << 32 | uint64_t{own} << 48 | uint64_t{corner} << 49 |
         uint64_t{mask} << 50;
}
struct BoxSlot {
  uint32_t element;  // less the tile's first element's
  uint32_t offset;   // in the box
  bool own;
  bool corner;
  uint32_t corner_mask;
};
EBZIP_HD inline BoxSlot ReadBoxEntry(uint64_t entry) {
  return {static_cast<uint32_t>(entry), static_cast<uint32_t>(entry >> 32) & 0xFFFFu,
          ((entry >> 48) & 1) != 0, ((entry >> 49) & 1) != 0,
          static_cast<uint32_t>(entry >> 50) & 0xFu};
}

// Row r of key h's own elements along the last position (its coordinate
// there 0, the others in C order): its first element less the tile's first
// element's (bits 0-31) and its box offset (32-47). Along a row the element
// moves by the last position's stride and the box offset by 1.
EBZIP_HD inline uint64_t OwnRowEntry(const Geometry& g, const KeyHeader& h, uint32_t r) {
  uint32_t c[kIDims];
  Decompose(r * h.own[g.k - 1], h.own_div, g.k, c);
  uint64_t element = 0;
  for (uint32_t e = 0; e < g.k; ++e) element += c[e] * g.stride[g.idim[e]];
  return element | uint64_t{BoxOffset(g, c)} << 32;
}
// The tile whose anchor is corner `mask` of tile t's box.
EBZIP_HD inline uint64_t CornerAnchor(const Geometry& g, uint64_t t, uint32_t mask) {
  for (uint32_t e = 0; e < g.k; ++e) {
    if ((mask >> e) & 1) t += g.astride[g.idim[e]];
  }
  return t;
}

// What a tile driver is run by: `Exec` gives the lane (0 .. Threads()-1) of
// the calling thread among the threads that share the tile, a barrier among
// them, an exclusive sum over them (every one of them calls it), and atomics.
// gpu/interp_kernels.cu runs a sub-block of threads per tile; the host
// emulation runs one "thread" (lane 0 of 1), for which the same code is the
// sequential algorithm.

// The bound a frame is encoded under: the geometry's, or (a batch of
// several arrays' frames) the frame's own.
struct FrameBound {
  double abs_bound;
  double step;
};
EBZIP_HD inline FrameBound BoundOf(const Geometry& g) { return {g.abs_bound, g.step}; }

template <typename T>
struct EncodeTileArgs {
  FrameBound bound;
  const T* x;
  const uint8_t* fill;  // null: no fill mask
  const uint32_t* tile_start;
  const T* anchor_w;
  const uint16_t* anchor_sym;
  uint16_t* symbols;
  uint32_t* verbatim_mask;
};

// Shared memory of one tile (box_volume elements, or own_max for ranks).
template <typename T>
struct EncodeTileSmem {
  T* box;           // x, then the working value
  uint8_t* fbox;    // fill flags (with a fill mask)
  uint16_t* srank;  // symbols by rank (with a fill mask)
  uint8_t* keep;    // 1 where the rank has a position (with a fill mask)
};

template <typename T, bool kFill, class Exec>
EBZIP_HD void EncodeTile(Exec& ex, const Geometry& g, const KeyHeader* headers,
                         const uint32_t* entries, const uint64_t* boxes, uint64_t t,
                         const EncodeTileArgs<T>& a, const EncodeTileSmem<T>& sm) {
  const TileView v = MakeTile(g, t);
  const KeyHeader& h = headers[v.key];
  const uint32_t lane = ex.Lane(), threads = ex.Threads();
  const uint64_t start = a.tile_start[t];
  const uint64_t* box_table = boxes + h.boxes_begin;
  // Loads in groups of kLoads per thread, issued before any is stored, so
  // their latencies overlap.
  constexpr uint32_t kLoads = 4;
  for (uint32_t j0 = lane; j0 < h.box_count; j0 += kLoads * threads) {
    T value[kLoads];
    uint32_t offset[kLoads];
    uint8_t fill[kLoads];
    EBZIP_UNROLL
    for (uint32_t u = 0; u < kLoads; ++u) {
      const uint32_t j = j0 + u * threads;
      if (j >= h.box_count) break;
      const BoxSlot b = ReadBoxEntry(box_table[j]);
      offset[u] = b.offset;
      value[u] =
          b.corner ? a.anchor_w[CornerAnchor(g, t, b.corner_mask)] : a.x[v.anchor + b.element];
      if (kFill) fill[u] = a.fill[v.anchor + b.element];
    }
    EBZIP_UNROLL
    for (uint32_t u = 0; u < kLoads; ++u) {
      if (j0 + u * threads >= h.box_count) break;
      sm.box[offset[u]] = value[u];
      if (kFill) sm.fbox[offset[u]] = fill[u];
    }
  }
  ex.Sync();
  const bool cubic = g.cubic != 0;
  const double inv_step = InverseStep(a.bound.step);
  for (uint32_t p = 0, level = 0, pos = 0; p < g.num_passes; ++p) {
    const uint32_t hh = g.E >> (level + 1);
    const uint32_t s = hh * g.bstride[pos];
    const uint32_t* list = entries + h.entries_begin + h.pass_entry[p];
    const uint32_t count = h.pass_entry[p + 1] - h.pass_entry[p];
    const uint32_t own = h.pass_own[p];
    const uint32_t rank = h.pass_rank[p];
    for (uint32_t j = lane; j < count; j += threads) {
      const uint32_t entry = list[j];
      const uint32_t o = entry & 0xFFFFu;
      const double pred = Predict(sm.box, o, s, entry >> 16, cubic);
      if (kFill && sm.fbox[o]) {
        sm.box[o] = Reconstruct<T>(pred, 0, a.bound.step);
        if (j < own) sm.keep[rank + j] = 0;
        continue;
      }
      const Decision<T> dec =
          Encode<T>(sm.box[o], pred, a.bound.step, inv_step, a.bound.abs_bound, g.radius);
      sm.box[o] = dec.y;
      if (j >= own) continue;  // a far-face element: its own tile writes it
      if (dec.verbatim) {
        uint32_t c[kIDims];
        BoxCoords(g, o, c);
        const uint64_t i = ElementOf(g, v, c);
        ex.AtomicOr(&a.verbatim_mask[i / 32], 1u << (i % 32));
      }
      if (kFill) {
        sm.srank[rank + j] = dec.symbol;
        sm.keep[rank + j] = 1;
      } else {
        a.symbols[start + rank + j] = dec.symbol;
      }
    }
    ex.Sync();
    if (++pos == g.k) {
      pos = 0;
      ++level;
    }
  }
  if (!kFill) {
    if (lane == 0) a.symbols[start] = a.anchor_sym[t];
  } else {
    if (lane == 0) {
      sm.srank[0] = a.anchor_sym[t];
      sm.keep[0] = 1;
    }
    ex.Sync();
    // Fill elements other than the anchor have no position: compact.
    uint64_t base = start;
    for (uint32_t r0 = 0; r0 < h.own_volume; r0 += threads) {
      const uint32_t r = r0 + lane;
      const uint32_t keep = r < h.own_volume ? sm.keep[r] : 0;
      uint32_t total;
      const uint32_t at = ex.ExclusiveSum(keep, &total);
      if (keep) a.symbols[base + at] = sm.srank[r];
      base += total;
    }
  }
  ex.Sync();  // the next tile reuses the shared memory
}

// Symbol positions of tile t with a fill mask: its anchor and its elements
// that are not fill.
template <class Exec>
EBZIP_HD void CountTile(Exec& ex, const Geometry& g, const KeyHeader* headers, uint64_t t,
                        const uint8_t* fill, uint32_t* counts) {
  const TileView v = MakeTile(g, t);
  const KeyHeader& h = headers[v.key];
  const uint32_t lane = ex.Lane(), threads = ex.Threads();
  uint32_t kept = 0;
  for (uint32_t j0 = 0; j0 < h.own_volume; j0 += threads) {
    const uint32_t j = j0 + lane;
    uint32_t keep = 0;
    if (j < h.own_volume) {
      uint32_t c[kIDims];
      Decompose(j, h.own_div, g.k, c);
      keep = j == 0 || !fill[ElementOf(g, v, c)];
    }
    uint32_t total;
    ex.ExclusiveSum(keep, &total);
    kept += total;
  }
  if (lane == 0) counts[t] = kept;
}

// Decoding's first step: the symbols, in symbol order, to their elements
// (`sym_elem`, element-indexed; fill elements other than anchors get
// `radius`, residual 0), checked as InterpDecode checks them.
struct ScatterArgs {
  const uint16_t* symbols;
  uint64_t num_symbols;
  const uint8_t* fill;  // null: no fill mask
  const uint32_t* tile_start;
  uint16_t* sym_elem;
  uint32_t* error;
  uint32_t* anchor_zeros;  // counts anchors with symbol 0
};
struct ScatterSmem {
  uint16_t* sbox;  // symbols at their box offsets
  uint8_t* fbox;   // fill flags (with a fill mask)
};

template <bool kFill, class Exec>
EBZIP_HD void ScatterTile(Exec& ex, const Geometry& g, const KeyHeader* headers,
                          const uint32_t* entries, uint64_t t, const ScatterArgs& a,
                          const ScatterSmem& sm) {
  const TileView v = MakeTile(g, t);
  const KeyHeader& h = headers[v.key];
  const uint32_t lane = ex.Lane(), threads = ex.Threads();
  const uint32_t alphabet = 2 * static_cast<uint32_t>(g.radius);
  const uint16_t zero_residual = static_cast<uint16_t>(g.radius);
  const uint64_t start = a.tile_start[t];
  uint32_t error = 0;
  if (kFill) {
    for (uint32_t j = lane; j < h.own_volume; j += threads) {
      uint32_t c[kIDims];
      Decompose(j, h.own_div, g.k, c);
      sm.fbox[BoxOffset(g, c)] = a.fill[ElementOf(g, v, c)];
    }
    ex.Sync();
  }
  if (lane == 0) {
    uint16_t sym = zero_residual;
    if (start < a.num_symbols) {
      sym = a.symbols[start];
    } else {
      error |= kErrSymbolCount;
    }
    if (sym >= alphabet) error |= kErrAlphabet;
    if (sym == 0) ex.AtomicAdd(a.anchor_zeros, 1u);
    sm.sbox[0] = sym;
  }
  uint64_t base = start + 1;
  for (uint32_t p = 0; p < g.num_passes; ++p) {
    const uint32_t* list = entries + h.entries_begin + h.pass_entry[p];
    const uint32_t own = h.pass_own[p];
    if (!kFill) {
      const uint64_t first = start + h.pass_rank[p];
      for (uint32_t j = lane; j < own; j += threads) {
        const uint32_t o = list[j] & 0xFFFFu;
        uint16_t sym = zero_residual;
        if (first + j < a.num_symbols) {
          sym = a.symbols[first + j];
        } else {
          error |= kErrSymbolCount;
        }
        if (sym >= alphabet) error |= kErrAlphabet;
        if (sym == 0) error |= kErrZeroAtNonAnchor;
        sm.sbox[o] = sym;
      }
    } else {
      for (uint32_t j0 = 0; j0 < own; j0 += threads) {
        const uint32_t j = j0 + lane;
        uint32_t o = 0, keep = 0;
        if (j < own) {
          o = list[j] & 0xFFFFu;
          keep = !sm.fbox[o];
        }
        uint32_t total;
        const uint32_t at = ex.ExclusiveSum(keep, &total);
        if (j < own) {
          uint16_t sym = zero_residual;
          if (keep) {
            if (base + at < a.num_symbols) {
              sym = a.symbols[base + at];
            } else {
              error |= kErrSymbolCount;
            }
            if (sym >= alphabet) error |= kErrAlphabet;
            if (sym == 0) error |= kErrZeroAtNonAnchor;
          }
          sm.sbox[o] = sym;
        }
        base += total;
      }
    }
  }
  if (error != 0) ex.AtomicOr(a.error, error);
  ex.Sync();
  for (uint32_t j = lane; j < h.own_volume; j += threads) {
    uint32_t c[kIDims];
    Decompose(j, h.own_div, g.k, c);
    a.sym_elem[ElementOf(g, v, c)] = sm.sbox[BoxOffset(g, c)];
  }
  ex.Sync();
}

// The passes (FORMAT.md §15.5.2) over a tile's box, once every slot holds
// its element's residual and the corners their working values: each slot,
// in its pass, becomes its working value from the prediction. Block-wide.
// `table`: the key's pass table (entries + entries_begin), `pass_entry` its
// KeyHeader's, or a copy.
template <typename T, class Exec>
EBZIP_HD void RunPasses(Exec& ex, const Geometry& g, const uint32_t* table,
                        const uint32_t* pass_entry, T* box, double step) {
  const uint32_t lane = ex.Lane(), threads = ex.Threads();
  const bool cubic = g.cubic != 0;
  for (uint32_t p = 0, level = 0, pos = 0; p < g.num_passes; ++p) {
    const uint32_t hh = g.E >> (level + 1);
    const uint32_t s = hh * g.bstride[pos];
    const uint32_t* list = table + pass_entry[p];
    const uint32_t count = pass_entry[p + 1] - pass_entry[p];
    for (uint32_t j = lane; j < count; j += threads) {
      const uint32_t entry = list[j];
      const uint32_t o = entry & 0xFFFFu;
      const double pred = Predict(box, o, s, entry >> 16, cubic);
      box[o] = Reconstruct<T>(pred, static_cast<int32_t>(box[o]), step);
    }
    ex.Sync();
    if (++pos == g.k) {
      pos = 0;
      ++level;
    }
  }
}

// The tile's own working values from its box to `out` (its first element at
// `anchor`), row by row (`rows`: the key's OwnRowEntry table), then a
// barrier: the next tile reuses the box. A row table entry serves a row of
// threads, where the box table took a 64-bit entry for every box element.
template <typename T, class Exec>
EBZIP_HD void WriteOwn(Exec& ex, const Geometry& g, const KeyHeader& h, const uint64_t* rows,
                       uint64_t anchor, const T* box, T* out) {
  const uint32_t lane = ex.Lane(), threads = ex.Threads();
  const uint32_t last = g.k - 1;
  const uint64_t step = g.stride[g.idim[last]];
  for (uint32_t j = lane; j < h.own_volume; j += threads) {
    const uint32_t r = h.own_div[last].Div(j);
    const uint32_t i = j - r * h.own[last];
    const uint64_t row = rows[r];
    out[anchor + static_cast<uint32_t>(row) + i * step] = box[(row >> 32) + i];
  }
  ex.Sync();
}

// The passes of tile t from element-ordered symbols and the anchors'
// working values: writes the tile's working values to `out`.
template <typename T, class Exec>
EBZIP_HD void DecodeTile(Exec& ex, const Geometry& g, const KeyHeader* headers,
                         const uint32_t* entries, const uint64_t* boxes, uint64_t t,
                         const uint16_t* sym_elem, const T* anchor_w, T* out, T* box) {
  const TileView v = MakeTile(g, t);
  const KeyHeader& h = headers[v.key];
  const uint32_t lane = ex.Lane(), threads = ex.Threads();
  const uint64_t* box_table = boxes + h.boxes_begin;
  // Each slot holds the element's residual (exact in T) until its pass
  // replaces it by the working value; no pass reads a slot of its own pass.
  for (uint32_t j = lane; j < h.box_count; j += threads) {
    const BoxSlot b = ReadBoxEntry(box_table[j]);
    if (b.corner) {
      box[b.offset] = anchor_w[CornerAnchor(g, t, b.corner_mask)];
    } else {
      box[b.offset] =
          static_cast<T>(static_cast<int32_t>(sym_elem[v.anchor + b.element]) - g.radius);
    }
  }
  ex.Sync();
  RunPasses<T>(ex, g, entries + h.entries_begin, h.pass_entry, box, g.step);
  WriteOwn(ex, g, h, boxes + h.rows_begin, v.anchor, box, out);
}

// ---------------------------------------------------------------------------
// Decoding a frame without a fill mask straight from symbol order, with no
// scatter to element order in between (what codec/interp_predictor.cc does
// tile by tile). Tile t's own element j of pass p has position
// tile_start[t] + pass_rank[p] + j (its table slot is its C-order rank). A
// far-face element is the own element of the same pass of a neighbour tile
// (DecodeTileDirect says how it is found).

struct DirectArgs {
  const uint16_t* symbols;  // in symbol order
  uint64_t num_symbols;
  const uint32_t* tile_start;
  uint32_t* error;
  uint32_t* anchor_zeros;  // counts anchors with symbol 0
  double step;             // the frame's quantization step (g.step, or its own in a batch)
};

// The symbol at position `at`, or radius (residual 0) past the end.
EBZIP_HD inline uint16_t SymbolAt(const DirectArgs& a, uint64_t at, uint16_t zero_residual) {
  return at < a.num_symbols ? a.symbols[at] : zero_residual;
}

// A tile's far neighbours, per mask w in [1, 2^k) (bit e: the next tile
// along position e): first symbol position and key. Positions are 32-bit
// here: without a fill mask each of the frame's n < 2^32 elements has its
// own, below n.
struct Neighbors {
  uint32_t start[kMaxKeys];
  uint32_t key[kMaxKeys];
};

// Elements first, first + step, ... below extent, step = 2^shift.
EBZIP_HD inline uint32_t LatticeCountPow2(uint32_t extent, uint32_t first, uint32_t shift) {
  return extent > first ? (extent - first + (1u << shift) - 1) >> shift : 0;
}

// A far-face element at in-box coordinates c, E along the positions of w
// (a bit each), is the own element of the same pass (position pos, h =
// 2^log2h) of the neighbour tile along w, at coordinate 0 there (a
// multiple of 2h, as E is). Its symbol-order rank within that pass is its
// C-order index in the neighbour's own lattice of the pass, whose extents
// are `own` (the neighbour's own extents).
EBZIP_HD inline uint32_t FarRank(const Geometry& g, const uint32_t* c, uint32_t w,
                                 const uint32_t* own, uint32_t pos, uint32_t log2h) {
  uint32_t at = 0, stride = 1;
  EBZIP_UNROLL
  for (int e = kIDims - 1; e >= 0; --e) {
    const uint32_t u = static_cast<uint32_t>(e);
    if (u >= g.k) continue;
    // Lattice along e: first h at the pass's position, else 0; step h
    // before it, else 2h.
    const uint32_t first_e = u == pos ? 1u << log2h : 0;
    const uint32_t shift = u < pos ? log2h : log2h + 1;
    if (((w >> e) & 1) == 0) at += ((c[e] - first_e) >> shift) * stride;
    stride *= LatticeCountPow2(own[e], first_e, shift);
  }
  return at;
}

// Key h's far-face entry of pass p at box offset o, as the direct decoder
// reads it beside the pass table (the same index): w, and the rank FarRank
// gives when the neighbour is not the last along any position of w. Its
// own extents are then this tile's: E along w (this tile has a far face
// there, so it is not the last either), this tile's along every other
// position (it sits beside it). Ranks stay below 2^16, a tile's elements;
// w is never 0.
inline constexpr uint32_t kFarMask = 0xF;
inline constexpr uint32_t kFarRankShift = 4;
EBZIP_HD inline uint32_t FarEntry(const Geometry& g, const KeyHeader& h, uint32_t p, uint32_t o) {
  uint32_t c[kIDims];
  BoxCoords(g, o, c);
  uint32_t w = 0;
  for (uint32_t e = 0; e < g.k; ++e) {
    if (c[e] == g.E) w |= 1u << e;
  }
  const uint32_t level = p / g.k;
  return w | FarRank(g, c, w, h.own, p % g.k, g.log2E - level - 1) << kFarRankShift;
}

// A tile's pass layout (its KeyHeader's), copied to shared memory: both
// sweeps read it at every pass.
struct PassTable {
  uint32_t entry[kMaxPasses + 1];
  uint32_t own[kMaxPasses];
  uint32_t rank[kMaxPasses];
};

template <typename T>
struct DirectSmem {
  T* box;        // box_volume values: residuals, then working values
  Neighbors* nb;
  PassTable* passes;
};

// Tile t from symbol order and the anchors' working values, with the
// results of DecodeTile; its own symbols are checked as ScatterTile checks
// them (the anchor's by AnchorLoadDirect). First every symbol the box needs
// goes in, as its residual, to its slot (one sweep over the passes' entries
// with no barrier, so the global loads overlap), then the passes run on
// shared memory alone, as DecodeTile's. A far-face symbol's position is
// its neighbour's first position, the pass's rank there and its FarRank,
// read from `far` (FarEntry, beside each pass table entry) unless that
// neighbour is the last along w: computing it took ~170 instructions at a
// third of a warp's threads, 6 % of the kernel's (Nsight Compute, H100).
template <typename T, class Exec>
EBZIP_HD void DecodeTileDirect(Exec& ex, const Geometry& g, const KeyHeader* headers,
                               const uint32_t* entries, const uint32_t* far,
                               const uint64_t* boxes, uint64_t t,
                               const DirectArgs& a, const T* anchor_w, T* out,
                               const DirectSmem<T>& sm) {
  const TileView v = MakeTile(g, t);
  const KeyHeader& h = headers[v.key];
  const uint32_t lane = ex.Lane(), threads = ex.Threads();
  const uint32_t alphabet = 2 * static_cast<uint32_t>(g.radius);
  const uint16_t zero_residual = static_cast<uint16_t>(g.radius);
  const uint32_t masks = 1u << g.k;
  const uint32_t start = a.tile_start[t];
  // The box's corners are anchors; a far corner, or a far face, exists
  // only along positions where the tile is not the last.
  for (uint32_t m = lane; m < masks; m += threads) {
    if ((m & v.key) != 0) continue;
    uint32_t o = 0;
    uint64_t u = t;
    for (uint32_t e = 0; e < g.k; ++e) {
      if ((m >> e) & 1) {
        o += g.E * g.bstride[e];
        u += g.astride[g.idim[e]];
      }
    }
    sm.box[o] = anchor_w[u];
    sm.nb->start[m] = a.tile_start[u];
    sm.nb->key[m] = MakeTile(g, u).key;
  }
  for (uint32_t p = lane; p <= g.num_passes; p += threads) {
    sm.passes->entry[p] = h.pass_entry[p];
    if (p < g.num_passes) {
      sm.passes->own[p] = h.pass_own[p];
      sm.passes->rank[p] = h.pass_rank[p];
    }
  }
  ex.Sync();
  uint32_t error = 0;
  for (uint32_t p = 0, level = 0, pos = 0; p < g.num_passes; ++p) {
    const uint32_t log2h = g.log2E - level - 1;
    const PassTable& pt = *sm.passes;
    const uint32_t* list = entries + h.entries_begin + pt.entry[p];
    const uint32_t* far_list = far + h.entries_begin + pt.entry[p];
    const uint32_t count = pt.entry[p + 1] - pt.entry[p];
    const uint32_t own = pt.own[p];
    const uint32_t first = start + pt.rank[p];
    for (uint32_t j = lane; j < count; j += threads) {
      const uint32_t o = list[j] & 0xFFFFu;
      uint16_t sym;
      if (j < own) {
        const uint32_t at = first + j;
        sym = SymbolAt(a, at, zero_residual);
        if (at >= a.num_symbols) error |= kErrSymbolCount;
        if (sym >= alphabet) error |= kErrAlphabet;
        if (sym == 0) error |= kErrZeroAtNonAnchor;
      } else {  // a far face: the neighbour checks its symbol
        const uint32_t f = far_list[j];
        const uint32_t w = f & kFarMask;
        const uint32_t key = sm.nb->key[w];
        const KeyHeader& hn = headers[key];
        uint32_t rank = f >> kFarRankShift;
        if ((key & w) != 0) {  // a last neighbour: its own extents along w are its own
          uint32_t c[kIDims];
          BoxCoords(g, o, c);
          rank = FarRank(g, c, w, hn.own, pos, log2h);
        }
        const uint32_t at = sm.nb->start[w] + hn.pass_rank[p] + rank;
        sym = SymbolAt(a, at, zero_residual);
      }
      sm.box[o] = static_cast<T>(static_cast<int32_t>(sym) - g.radius);
    }
    if (++pos == g.k) {
      pos = 0;
      ++level;
    }
  }
  if (error != 0) ex.AtomicOr(a.error, error);
  ex.Sync();
  RunPasses<T>(ex, g, entries + h.entries_begin, sm.passes->entry, sm.box, a.step);
  WriteOwn(ex, g, h, boxes + h.rows_begin, v.anchor, sm.box, out);
}

// ---------------------------------------------------------------------------
// Anchors: the anchor grid, C order = increasing element index.

EBZIP_HD inline void AnchorCoords(const Geometry& g, uint64_t t, uint64_t* k) {
  for (int d = kIDims - 1; d >= 0; --d) {
    k[d] = t % g.tiles[d];
    t /= g.tiles[d];
  }
}
EBZIP_HD inline uint64_t AnchorElement(const Geometry& g, const uint64_t* k) {
  uint64_t i = 0;
  for (int d = 0; d < kIDims; ++d) i += (IsInterpolated(g, d) ? k[d] * g.E : k[d]) * g.stride[d];
  return i;
}
EBZIP_HD inline uint64_t AnchorBlockOf(const Geometry& g, const uint64_t* k) {
  uint64_t b = 0;
  for (int d = 0; d < kIDims; ++d) b = b * g.ablocks[d] + k[d] / g.ablock[d];
  return b;
}

// Encoding, step 1: §10.2 for anchor t (the fill test is the mask's).
template <typename T, class Exec>
EBZIP_HD void AnchorQuantize(Exec& ex, const Geometry& g, const FrameBound& bound, uint64_t t,
                             const T* x,
                             const uint8_t* fill, int32_t* q, uint8_t* quantized,
                             uint32_t* verbatim_mask) {
  uint64_t k[kIDims];
  AnchorCoords(g, t, k);
  const uint64_t i = AnchorElement(g, k);
  int32_t qi = 0;
  PointKind kind = PointKind::kFill;
  if (fill == nullptr || !fill[i]) {
    const QuantRule rule{bound.abs_bound, bound.step, false, 0};
    kind = QuantizePoint<T>(x[i], rule, &qi);
  }
  q[t] = qi;
  quantized[t] = kind == PointKind::kQuantized ? 1 : 0;
  if (kind == PointKind::kVerbatim) ex.AtomicOr(&verbatim_mask[i / 32], 1u << (i % 32));
}

// Step 2: anchor block b's placeholder, the q of its first quantized anchor
// in row-major order, 0 when it has none.
EBZIP_HD inline void AnchorPlaceholder(const Geometry& g, uint64_t b, const int32_t* q,
                                       const uint8_t* quantized, int32_t* placeholder) {
  uint64_t lo[kIDims], hi[kIDims];
  uint64_t rest = b;
  for (int d = kIDims - 1; d >= 0; --d) {
    lo[d] = rest % g.ablocks[d] * g.ablock[d];
    hi[d] = lo[d] + g.ablock[d] < g.tiles[d] ? lo[d] + g.ablock[d] : g.tiles[d];
    rest /= g.ablocks[d];
  }
  for (uint64_t a0 = lo[0]; a0 < hi[0]; ++a0) {
    for (uint64_t a1 = lo[1]; a1 < hi[1]; ++a1) {
      for (uint64_t a2 = lo[2]; a2 < hi[2]; ++a2) {
        for (uint64_t a3 = lo[3]; a3 < hi[3]; ++a3) {
          const uint64_t t =
              a0 * g.astride[0] + a1 * g.astride[1] + a2 * g.astride[2] + a3 * g.astride[3];
          if (quantized[t]) {
            placeholder[b] = q[t];
            return;
          }
        }
      }
    }
  }
  placeholder[b] = 0;
}

// Step 3: anchor t's working value, and its Lorenzo residual within its
// block of 8 (the alternating sum over the corners of the unit cube behind
// it), symbol, outlier flag.
template <typename T>
EBZIP_HD void AnchorResidual(const Geometry& g, const FrameBound& bound, uint64_t t,
                             const int32_t* q,
                             const uint8_t* quantized, const int32_t* placeholder, T* anchor_w,
                             uint16_t* anchor_sym, uint32_t* outlier_flag, int32_t* residual) {
  uint64_t k[kIDims];
  AnchorCoords(g, t, k);
  const int32_t ph = placeholder[AnchorBlockOf(g, k)];
  uint32_t active = 0;
  for (int d = 0; d < kIDims; ++d) active |= (k[d] % g.ablock[d] != 0 ? 1u : 0u) << d;
  uint32_t delta = 0;  // unsigned: sums of |q| <= 2^26 never wrap, and nothing is undefined
  for (uint32_t m = 0; m < 16; ++m) {
    if ((m & ~active) != 0) continue;
    uint64_t u = t;
    uint32_t parity = 0;
    for (int d = 0; d < kIDims; ++d) {
      if ((m >> d) & 1) {
        u -= g.astride[d];
        parity ^= 1;
      }
    }
    const uint32_t qu = static_cast<uint32_t>(quantized[u] ? q[u] : ph);
    delta = parity ? delta - qu : delta + qu;
  }
  const int32_t r = static_cast<int32_t>(delta);
  anchor_w[t] = Dequantize<T>(quantized[t] ? q[t] : ph, bound.step);
  const bool outlier = r <= -g.radius || r >= g.radius;
  anchor_sym[t] = outlier ? 0 : static_cast<uint16_t>(r + g.radius);
  outlier_flag[t] = outlier ? 1 : 0;
  residual[t] = r;
}

// Step 4 (after an exclusive sum of the flags): the outlier list.
EBZIP_HD inline void AnchorOutlier(const Geometry& g, uint64_t t, const uint32_t* flag,
                                   const uint32_t* at, const int32_t* residual,
                                   uint32_t* outlier_index, int32_t* outlier_residual) {
  if (!flag[t]) return;
  uint64_t k[kIDims];
  AnchorCoords(g, t, k);
  outlier_index[at[t]] = static_cast<uint32_t>(AnchorElement(g, k));
  outlier_residual[at[t]] = residual[t];
}

// Decoding, step 1: anchor t's residual from its symbol.
EBZIP_HD inline void AnchorLoad(const Geometry& g, uint64_t t, const uint16_t* sym_elem,
                                int32_t* q) {
  uint64_t k[kIDims];
  AnchorCoords(g, t, k);
  q[t] = static_cast<int32_t>(sym_elem[AnchorElement(g, k)]) - g.radius;
}

// Step 2: outlier j's residual, checked.
template <class Exec>
EBZIP_HD void AnchorApplyOutlier(Exec& ex, const Geometry& g, uint64_t j, const uint32_t* index,
                                 const int32_t* value, const uint16_t* sym_elem, int32_t* q,
                                 uint32_t* error) {
  const uint64_t i = index[j];
  if (i >= g.n) {
    ex.AtomicOr(error, kErrOutlier);
    return;
  }
  uint64_t t = 0;
  for (int d = 0; d < kIDims; ++d) {
    uint64_t x = i / g.stride[d] % g.dims[d];
    if (IsInterpolated(g, d)) {
      if (x % g.E != 0) {
        ex.AtomicOr(error, kErrOutlier);
        return;
      }
      x /= g.E;
    }
    t = t * g.tiles[d] + x;
  }
  if (sym_elem[i] != 0) {
    ex.AtomicOr(error, kErrOutlier);
    return;
  }
  q[t] = value[j];
}

// Steps 1 and 2 straight from symbol order (no fill mask: DecodeTileDirect):
// anchor t's symbol is its tile's first, checked as ScatterTile checks it.
template <class Exec>
EBZIP_HD void AnchorLoadDirect(Exec& ex, const Geometry& g, uint64_t t, const DirectArgs& a,
                               int32_t* q) {
  const uint64_t at = a.tile_start[t];
  const uint16_t sym = SymbolAt(a, at, static_cast<uint16_t>(g.radius));
  uint32_t error = at < a.num_symbols ? 0u : uint32_t{kErrSymbolCount};
  if (sym >= 2 * static_cast<uint32_t>(g.radius)) error |= kErrAlphabet;
  if (sym == 0) ex.AtomicAdd(a.anchor_zeros, 1u);
  if (error != 0) ex.AtomicOr(a.error, error);
  q[t] = static_cast<int32_t>(sym) - g.radius;
}
template <class Exec>
EBZIP_HD void AnchorApplyOutlierDirect(Exec& ex, const Geometry& g, uint64_t j,
                                       const uint32_t* index, const int32_t* value,
                                       const DirectArgs& a, int32_t* q) {
  const uint64_t i = index[j];
  if (i >= g.n) {
    ex.AtomicOr(a.error, kErrOutlier);
    return;
  }
  uint64_t t = 0;
  for (int d = 0; d < kIDims; ++d) {
    uint64_t x = i / g.stride[d] % g.dims[d];
    if (IsInterpolated(g, d)) {
      if (x % g.E != 0) {
        ex.AtomicOr(a.error, kErrOutlier);
        return;
      }
      x /= g.E;
    }
    t = t * g.tiles[d] + x;
  }
  if (SymbolAt(a, a.tile_start[t], static_cast<uint16_t>(g.radius)) != 0) {
    ex.AtomicOr(a.error, kErrOutlier);
    return;
  }
  q[t] = value[j];
}

// Step 3: the prefix sum along dimension d of the anchor-grid line that
// starts at anchor t (a block's first along d), wrapping as §8.3 says.
EBZIP_HD inline void AnchorPrefix(const Geometry& g, int d, uint64_t t, int32_t* q) {
  uint64_t k[kIDims];
  AnchorCoords(g, t, k);
  if (k[d] % g.ablock[d] != 0) return;
  uint32_t acc = static_cast<uint32_t>(q[t]);
  for (uint64_t m = 1; m < g.ablock[d] && k[d] + m < g.tiles[d]; ++m) {
    const uint64_t u = t + m * g.astride[d];
    acc += static_cast<uint32_t>(q[u]);
    q[u] = static_cast<int32_t>(acc);
  }
}

// Step 4: anchor t's working value.
// `step`: the frame's (g.step, or its own in a batch of frames of one
// geometry).
template <typename T>
EBZIP_HD void AnchorDequantize(double step, uint64_t t, const int32_t* q, T* anchor_w) {
  anchor_w[t] = Dequantize<T>(q[t], step);
}

}  // namespace ebzip::gpu::interp

#endif  // EBZIP_GPU_INTERP_TILE_H_
