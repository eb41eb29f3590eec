// Compression's element-wise work: the value range for relative bounds, and
// the fused prediction pass (dual quantization, placeholders, Lorenzo
// residuals, symbols, histogram, special-element masks) that reads every
// element once and keeps each Lorenzo block in shared memory.
#include <type_traits>

#include <cub/block/block_reduce.cuh>

#include "codec/quantize_point.h"
#include "codec/resolve_bound.h"
#include "gpu/block_group.cuh"
#include "gpu/device_util.cuh"
#include "gpu/kernels.h"

namespace ebzip::gpu {
namespace {

// Shared-memory histogram window around the radius: residuals near zero take
// nearly every symbol; the rare others go straight to global memory.
constexpr uint32_t kWindow = 4096;

// The range is a pure read of the input, so it should run at the memory's
// speed: 16-byte loads, four in flight per thread, and min/max in T (exact:
// T converts to double without rounding). One element at a time, in double,
// it ran at half the copy bandwidth (0.54 ms for 1 GiB on the H200).
template <typename T>
__global__ void RangeKernel(const Segment* segments, uint32_t num_segments, Item* items) {
  using Reduce = cub::BlockReduce<T, kThreads>;
  using Vec = std::conditional_t<sizeof(T) == 4, float4, double2>;
  constexpr uint32_t kLanes = 16 / sizeof(T);
  constexpr uint32_t kUnroll = 4;
  __shared__ typename Reduce::TempStorage temp;
  const uint32_t s = SegmentOfTile(segments, num_segments, blockIdx.x);
  const Segment& seg = segments[s];
  Item& item = items[seg.item];
  if (item.relative != 1) return;  // uniform across the block
  const T* x = static_cast<const T*>(seg.input);
  // The segment's tiles split its elements evenly in index order here.
  const uint64_t per_tile = (seg.geo.n + seg.tiles - 1) / seg.tiles;
  const uint64_t begin = (blockIdx.x - seg.tile_base) * per_tile;
  const uint64_t end = min(seg.geo.n, begin + per_tile);
  using Bits = typename FloatTraits<T>::Bits;
  const bool has_fill = item.has_fill;
  const Bits fill_bits = static_cast<Bits>(item.fill_bits);
  T lo = INFINITY, hi = -INFINITY;
  auto take = [&](T v) {
    if (!isfinite(v) || (has_fill && ToBits(v) == fill_bits)) return;
    lo = min(lo, v);
    hi = max(hi, v);
  };
  // Elements before the first 16-byte boundary, the vectors, the rest.
  const uint64_t misaligned = reinterpret_cast<uintptr_t>(x + begin) % 16 / sizeof(T);
  const uint64_t body = min(end, begin + (kLanes - misaligned) % kLanes);
  const uint64_t vectors = (end - body) / kLanes;
  const uint64_t tail = body + vectors * kLanes;
  for (uint64_t i = begin + threadIdx.x; i < body; i += kThreads) take(x[i]);
  const Vec* v = reinterpret_cast<const Vec*>(x + body);
  for (uint64_t j = threadIdx.x; j < vectors; j += kUnroll * kThreads) {
    Vec loaded[kUnroll];
#pragma unroll
    for (uint32_t u = 0; u < kUnroll; ++u) {
      if (j + u * kThreads < vectors) loaded[u] = v[j + u * kThreads];
    }
#pragma unroll
    for (uint32_t u = 0; u < kUnroll; ++u) {
      if (j + u * kThreads >= vectors) break;
      const T* lanes = reinterpret_cast<const T*>(&loaded[u]);
#pragma unroll
      for (uint32_t k = 0; k < kLanes; ++k) take(lanes[k]);
    }
  }
  for (uint64_t i = tail + threadIdx.x; i < end; i += kThreads) take(x[i]);
  lo = Reduce(temp).Reduce(lo, [](T a, T b) { return min(a, b); });
  __syncthreads();
  hi = Reduce(temp).Reduce(hi, [](T a, T b) { return max(a, b); });
  // Tens of thousands of blocks meet at one item: only those that move it
  // take the atomic (a stale read costs one atomic too many, never a wrong
  // range).
  if (threadIdx.x == 0 && lo <= hi) {
    const unsigned long long lo_key = OrderedKey(static_cast<double>(lo));
    const unsigned long long hi_key = OrderedKey(static_cast<double>(hi));
    if (lo_key < *static_cast<volatile unsigned long long*>(&item.min_key)) {
      atomicMin(&item.min_key, lo_key);
    }
    if (hi_key > *static_cast<volatile unsigned long long*>(&item.max_key)) {
      atomicMax(&item.max_key, hi_key);
    }
  }
}

__global__ void ResolveBoundsKernel(Item* items, uint32_t num_items) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= num_items) return;
  Item& item = items[i];
  const bool any = item.relative && item.min_key <= item.max_key;
  const double lo = any ? FromOrderedKey(item.min_key) : 0;
  const double hi = any ? FromOrderedKey(item.max_key) : 0;
  const ResolvedBound b =
      ResolveBoundFor(item.relative ? BoundMode::kRel : BoundMode::kAbs, item.bound, any, lo, hi,
                      item.narrowing);
  item.abs_bound = b.abs_bound;
  item.quant_step = b.quant_step;
}

// The group path's unit: a row of 8 consecutive elements along the last
// dimension of a Lorenzo block of a default shape. A thread takes two rows
// of a group: it loads each 16 bytes at a time, keeps it in registers, and
// reads from shared memory only the rows behind it (three in a 3-D block,
// one in a 2-D block, none in a 1-D block; 16 bytes at a time) and, where the
// row starts inside a line of the block, the element before it; the
// difference along the row is taken in registers.
template <class Shape>
struct RowLayout {
  static constexpr uint32_t kLen = 8;
  static constexpr uint32_t kPerLine = Shape::kE3 / kLen;
  static constexpr uint32_t kPerBlock = Shape::kVolume / kLen;
  static constexpr uint32_t kPerThread = kGroupElements / kLen / kThreads;
  // A warp's rows lie in one block, so whether a row is in the group is the
  // same across a warp and the full-warp collectives (__match_any_sync,
  // __reduce_min_sync: sm_80 and later) always see 32 lanes; and a thread's
  // rows sit at the same place of their blocks.
  static_assert(Shape::kE3 % kLen == 0 && kPerBlock % 32 == 0 && kThreads % kPerBlock == 0);
  // Rows that start inside a line (1-D and 2-D blocks) take the element before
  // them from the lines behind along dimension 2 only.
  static_assert(kPerLine == 1 || Shape::kE1 == 1);

  // In-block coordinates of row s's first element.
  __device__ static uint32_t X(uint32_t s) { return s % kPerLine * kLen; }
  __device__ static uint32_t C2(uint32_t s) { return s / kPerLine % Shape::kE2; }
  __device__ static uint32_t C1(uint32_t s) { return s / kPerLine / Shape::kE2; }

  // Shared-memory word of element e of the group's row g. The row's two
  // 16-byte halves swap places every four rows, so that the 8 lanes of a
  // quarter warp reading 8 consecutive rows' same half hit distinct banks.
  __device__ static uint32_t Word(uint32_t g, uint32_t e) {
    return g * kLen + ((e / 4) ^ (g >> 2 & 1)) * 4 + e % 4;
  }
  __device__ static void Store(int32_t* q, uint32_t g, const int32_t v[kLen]) {
    int4* row = reinterpret_cast<int4*>(q + g * kLen);
    const uint32_t swap = g >> 2 & 1;
    row[swap] = make_int4(v[0], v[1], v[2], v[3]);
    row[swap ^ 1] = make_int4(v[4], v[5], v[6], v[7]);
  }
  // r += weight * row g (weight -1, 0 or 1).
  __device__ static void AddRow(const int32_t* q, uint32_t g, int32_t weight, int32_t r[kLen]) {
    const int4* row = reinterpret_cast<const int4*>(q + g * kLen);
    const uint32_t swap = g >> 2 & 1;
    const int4 a = row[swap], b = row[swap ^ 1];
    r[0] += weight * a.x, r[1] += weight * a.y, r[2] += weight * a.z, r[3] += weight * a.w;
    r[4] += weight * b.x, r[5] += weight * b.y, r[6] += weight * b.z, r[7] += weight * b.w;
  }
};

// Shared memory of PredictTile::Blocks: the blocks it takes at once, where
// each one's elements start in q and kind (offset[count] ends the last), and
// each one's first quantized element.
struct MultiBlock {
  BlockView view[32];
  uint32_t offset[33];
  uint32_t first[32];
  uint32_t count;
};

// What every Lorenzo block of one prediction tile shares: the tile's segment
// (and, in registers, what the hot loops read of it), its quantization rule,
// and the shared-memory histogram window.
struct PredictTile {
  const Segment& seg;
  const void* input;
  uint64_t symbol_base;
  uint64_t mask_base;
  QuantRule rule;
  int32_t radius;
  uint32_t window_lo;
  uint64_t hist_base;
  uint32_t* hist;
  PredictOutputs out;

  // What an idle lane gives Count: no symbol is this.
  static constexpr uint32_t kNoSymbol = 0xFFFFFFFFu;

  // Symbol, outlier and histogram of the element at index i of the frame.
  __device__ void Emit(bool valid, uint64_t i, int32_t delta) const {
    uint32_t sym = kNoSymbol;
    if (valid) {
      if (delta > -radius && delta < radius) {
        sym = static_cast<uint32_t>(delta + radius);
      } else {
        sym = 0;
        out.deltas[symbol_base + i] = delta;
        atomicOr(&out.outlier_mask[mask_base + i / 32], 1u << (i % 32));
      }
      out.symbols[symbol_base + i] = static_cast<uint16_t>(sym);
    }
    Count(sym, LanesBelow(), valid);
  }

  __device__ void MarkSpecial(PointKind k, uint64_t i) const {
    uint32_t* mask = k == PointKind::kFill ? out.fill_mask : out.verbatim_mask;
    atomicOr(&mask[mask_base + i / 32], 1u << (i % 32));
  }

  // Lorenzo blocks of any shape, several at a time: ids(0), ids(1), ... of
  // the `available` given (at most 32), as many as fit the kernel's shared
  // block (kMaxBlockVolume elements, which one block never exceeds), laid one
  // after another in q and kind; each coded exactly as it would be alone.
  // Returns how many it took (at least one), the same in every thread.
  template <typename T, class Ids>
  __device__ uint32_t Blocks(Ids ids, uint32_t available, int32_t* q, uint8_t* kind,
                             MultiBlock& mb) const {
    const T* x = static_cast<const T*>(seg.input);
    __syncthreads();  // the previous blocks' readers of q, kind and mb are done
    if (threadIdx.x < 32) {
      const uint32_t k = threadIdx.x;
      uint32_t v = 0;
      if (k < available) {
        mb.view[k].Init(seg.geo, ids(k));
        v = mb.view[k].volume;
      }
      uint32_t end = v;  // inclusive sum of the volumes
#pragma unroll
      for (uint32_t d = 1; d < 32; d <<= 1) {
        const uint32_t up = __shfl_up_sync(0xFFFFFFFFu, end, d);
        if (k >= d) end += up;
      }
      // The sums ascend, so the blocks that fit are a prefix.
      const bool fits = k < available && end <= kMaxBlockVolume;
      const uint32_t n = __popc(__ballot_sync(0xFFFFFFFFu, fits));
      if (fits) {
        mb.offset[k] = end - v;
        mb.first[k] = v;
        if (k == n - 1) mb.offset[n] = end;
      }
      if (k == 0) mb.count = n;
    }
    __syncthreads();
    const uint32_t n = mb.count;
    const uint32_t total = mb.offset[n];
    // The block holding shared element j: the last whose offset is <= j.
    auto block_of = [&](uint32_t j) {
      uint32_t lo = 0, hi = n;
      while (hi - lo > 1) {
        const uint32_t mid = (lo + hi) / 2;
        if (mb.offset[mid] <= j) {
          lo = mid;
        } else {
          hi = mid;
        }
      }
      return lo;
    };

    bool special = false;
    for (uint32_t j = threadIdx.x; j < total; j += kThreads) {
      const uint32_t k = block_of(j);
      const uint32_t jj = j - mb.offset[k];
      uint32_t c[kDims];
      mb.view[k].Coords(jj, c);
      const uint64_t i = mb.view[k].Index(c);
      int32_t qi;
      const PointKind pk = QuantizePoint<T>(x[i], rule, &qi);
      q[j] = qi;
      kind[j] = static_cast<uint8_t>(pk);
      if (pk == PointKind::kQuantized) {
        atomicMin(&mb.first[k], jj);
      } else {
        special = true;
        MarkSpecial(pk, i);
      }
    }
    // Placeholders (FORMAT.md §10.2): each block's first quantized value
    // (an element this loop never writes).
    if (__syncthreads_or(special)) {
      for (uint32_t j = threadIdx.x; j < total; j += kThreads) {
        if (kind[j] == static_cast<uint8_t>(PointKind::kQuantized)) continue;
        const uint32_t k = block_of(j);
        const uint32_t first = mb.first[k];
        q[j] = first < mb.view[k].volume ? q[mb.offset[k] + first] : 0;
      }
      __syncthreads();
    }

    // Residual: the N-D Lorenzo difference over in-block neighbours, as the
    // alternating sum over the corners of the unit cube behind the element.
    for (uint32_t base = 0; base < total; base += kThreads) {
      const uint32_t j = base + threadIdx.x;
      const bool valid = j < total;
      int32_t delta = 0;
      uint64_t i = 0;
      if (valid) {
        const uint32_t k = block_of(j);
        const BlockView& view = mb.view[k];
        const uint32_t jj = j - mb.offset[k];
        uint32_t c[kDims];
        view.Coords(jj, c);
        uint32_t inner[kDims];
        for (int d = 0; d < kDims; ++d) inner[d] = view.InnerStride(d);
        uint32_t active = 0;
        for (int d = 0; d < kDims; ++d) active |= (c[d] > 0 ? 1u : 0u) << d;
        for (uint32_t m = 0; m < 16; ++m) {
          if (m & ~active) continue;
          uint32_t off = 0;
          for (int d = 0; d < kDims; ++d) off += (m >> d & 1) ? inner[d] : 0;
          delta += (__popc(m) & 1) ? -q[j - off] : q[j - off];
        }
        i = view.Index(c);
      }
      Emit(valid, i, delta);
    }
    return n;
  }

  // The n blocks of a group (StartGroup), all at once, in rows of 8
  // (RowLayout): the same arithmetic as Block with the extents fixed but the
  // depth (st.depth), whose missing planes' rows stay idle; or, with kPack >
  // 1, n blocks of depth Shape::kE1 / kPack stacked kPack to a group block,
  // so that no row is idle (the survey's two-row samples, FORMAT.md §15.9).
  template <typename T, class Shape, uint32_t kPack>
  __device__ void Rows(uint32_t n, GroupState& st, uint64_t row_offset, int32_t* q) const {
    using L = RowLayout<Shape>;
    constexpr uint32_t K = L::kPerThread;
    constexpr uint32_t kDepth = Shape::kE1 / kPack;
    constexpr uint32_t kRowsPerBlock = L::kPerBlock / kPack;  // of one stacked block
    const uint32_t s = threadIdx.x % L::kPerBlock;            // the same group-block row in each
    const uint32_t sub = L::C1(s) / kDepth;                   // which stacked block (0 unpacked)
    const bool in_depth = kPack > 1 || L::C1(s) < st.depth;
    // A warp's rows lie in one group block, so `grouped` is uniform across a
    // warp and the warp's collectives run where it is set; `active` (the row
    // is in a block) is not, in a group of cut blocks or a partial stack.
    bool grouped[K], active[K];
    uint32_t blk[K], g[K], rb[K];  // group block, group row, block
    T v[K][L::kLen];
#pragma unroll
    for (uint32_t k = 0; k < K; ++k) {
      g[k] = threadIdx.x + k * kThreads;
      blk[k] = g[k] / L::kPerBlock;
      rb[k] = blk[k] * kPack + sub;
      grouped[k] = blk[k] * kPack < n;
      active[k] = rb[k] < n && in_depth;
      if (active[k]) LoadRow(static_cast<const T*>(input) + st.origin[rb[k]] + row_offset, v[k]);
    }
    int32_t qv[K][L::kLen];
    uint32_t special[K];  // bit e: element e of the row is not quantized
#pragma unroll
    for (uint32_t k = 0; k < K; ++k) {
      special[k] = 0;
      if (!active[k]) continue;
#pragma unroll
      for (uint32_t e = 0; e < L::kLen; ++e) {
        const PointKind kind = QuantizePoint<T>(v[k][e], rule, &qv[k][e]);
        if (kind != PointKind::kQuantized) special[k] |= 1u << e;
      }
      if (special[k] != 0) {
#pragma unroll
        for (uint32_t e = 0; e < L::kLen; ++e) {
          // Rare: asking again which kind (fill or verbatim) costs less than
          // keeping a second mask per row in registers.
          int32_t ignored;
          if (special[k] >> e & 1) {
            MarkSpecial(QuantizePoint<T>(v[k][e], rule, &ignored),
                        st.origin[rb[k]] + row_offset + e);
          }
        }
      }
      L::Store(q, g[k], qv[k]);
    }
    // Placeholders, as in Block: each block's first quantized element (a
    // warp's minimum, then the block's).
    uint32_t any_special = 0;
#pragma unroll
    for (uint32_t k = 0; k < K; ++k) any_special |= special[k];
    if (__syncthreads_or(any_special != 0)) {
      // The lanes of one block: the warp, or (stacks of blocks of 16 rows)
      // each half of it.
      constexpr uint32_t kLanes = kRowsPerBlock < 32 ? kRowsPerBlock : 32;
#pragma unroll
      for (uint32_t k = 0; k < K; ++k) {
        if (!grouped[k]) continue;
        const uint32_t quantized = active[k] ? ~special[k] & 0xFFu : 0;
        const uint32_t mine =
            quantized != 0 ? s % kRowsPerBlock * L::kLen + __ffs(quantized) - 1 : Shape::kVolume;
        uint32_t first;
        if constexpr (kLanes == 32) {
          first = __reduce_min_sync(0xFFFFFFFFu, mine);
        } else {
          first = mine;
#pragma unroll
          for (uint32_t d = kLanes / 2; d > 0; d /= 2) {
            first = min(first, __shfl_xor_sync(0xFFFFFFFFu, first, d));
          }
        }
        if (threadIdx.x % kLanes == 0 && first < Shape::kVolume) atomicMin(&st.first[rb[k]], first);
      }
      __syncthreads();
#pragma unroll
      for (uint32_t k = 0; k < K; ++k) {
        if (!active[k] || special[k] == 0) continue;
        const uint32_t first = st.first[rb[k]];
        const uint32_t row = blk[k] * L::kPerBlock + sub * kRowsPerBlock + first / L::kLen;
        const int32_t placeholder = first < Shape::kVolume ? q[L::Word(row, first % L::kLen)] : 0;
        // Only the placeholders' words: a first quantized element, which
        // other threads read here, is never one of them.
#pragma unroll
        for (uint32_t e = 0; e < L::kLen; ++e) {
          if (special[k] >> e & 1) {
            qv[k][e] = placeholder;
            q[L::Word(g[k], e)] = placeholder;
          }
        }
      }
      __syncthreads();
    }
    // Residuals: the rows behind this one (inclusion-exclusion over the
    // in-block neighbours along dimensions 1 and 2), then the difference
    // along the row. A missing neighbour row reads this row, masked to zero.
    const bool up = L::C2(s) > 0, back = L::C1(s) % kDepth > 0, left = L::X(s) > 0;
    constexpr uint32_t kUp = L::kPerLine, kBack = L::kPerLine * Shape::kE2;
#pragma unroll
    for (uint32_t k = 0; k < K; ++k) {
      if (!grouped[k]) continue;
      int32_t r[L::kLen];
#pragma unroll
      for (uint32_t e = 0; e < L::kLen; ++e) r[e] = active[k] ? qv[k][e] : 0;
      int32_t before = left ? q[L::Word(g[k] - 1, L::kLen - 1)] : 0;
      if (Shape::kE2 > 1) {
        L::AddRow(q, up ? g[k] - kUp : g[k], up ? -1 : 0, r);
        if (left && up) before -= q[L::Word(g[k] - kUp - 1, L::kLen - 1)];
      }
      if (Shape::kE1 > 1) {
        L::AddRow(q, back ? g[k] - kBack : g[k], back ? -1 : 0, r);
        const bool both = up && back;
        L::AddRow(q, both ? g[k] - kBack - kUp : g[k], both ? 1 : 0, r);
      }
      int32_t delta[L::kLen];
#pragma unroll
      for (uint32_t e = 0; e < L::kLen; ++e) delta[e] = r[e] - (e > 0 ? r[e - 1] : before);
      EmitRow(active[k], st.origin[rb[k]] + row_offset, delta);
    }
  }

  // Loads the 8 elements of a row at p, 16 bytes at a time where aligned.
  template <typename T>
  __device__ static void LoadRow(const T* p, T v[8]) {
    if (reinterpret_cast<uintptr_t>(p) % 16 == 0) {
      if constexpr (sizeof(T) == 4) {
        const float4 a = reinterpret_cast<const float4*>(p)[0];
        const float4 b = reinterpret_cast<const float4*>(p)[1];
        v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
        v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
      } else {
#pragma unroll
        for (int h = 0; h < 4; ++h) {
          const double2 a = reinterpret_cast<const double2*>(p)[h];
          v[2 * h] = a.x, v[2 * h + 1] = a.y;
        }
      }
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) v[e] = p[e];
    }
  }

  // Symbols, outliers and histogram of the 8 residuals of the row starting
  // at frame index i0. Every lane of the warp calls it; those with `valid`
  // false (an idle row) write and count nothing.
  __device__ void EmitRow(bool valid, uint64_t i0, const int32_t delta[8]) const {
    uint32_t sym[8];
    uint32_t outliers = 0;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const uint32_t u = static_cast<uint32_t>(delta[e] + radius);
      const bool inside = u - 1 < static_cast<uint32_t>(2 * radius - 1);  // |delta| < radius
      sym[e] = inside ? u : 0;
      outliers |= (inside ? 0u : 1u) << e;
    }
    const unsigned lower = LanesBelow();
    if (!valid) {
      // A symbol no valid lane has, so that no valid lane counts this one.
#pragma unroll
      for (int e = 0; e < 8; ++e) Count(kNoSymbol, lower, false);
      return;
    }
    uint16_t* symbols = out.symbols + symbol_base + i0;
    if (reinterpret_cast<uintptr_t>(symbols) % 16 == 0) {
      *reinterpret_cast<uint4*>(symbols) = make_uint4(sym[0] | sym[1] << 16, sym[2] | sym[3] << 16,
                                                      sym[4] | sym[5] << 16, sym[6] | sym[7] << 16);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) symbols[e] = static_cast<uint16_t>(sym[e]);
    }
    if (outliers != 0) {
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        if (!(outliers >> e & 1)) continue;
        const uint64_t i = i0 + e;
        out.deltas[symbol_base + i] = delta[e];
        atomicOr(&out.outlier_mask[mask_base + i / 32], 1u << (i % 32));
      }
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) Count(sym[e], lower);
  }

  __device__ static unsigned LanesBelow() {
    unsigned lower;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lower));
    return lower;
  }

  // Adds a warp's symbols to the histogram: one add per distinct symbol
  // (smooth data gives most lanes the same few). Every lane of the warp
  // calls it; those with `valid` false count nothing and must pass
  // kNoSymbol, or the lanes that share their symbol would count them.
  __device__ void Count(uint32_t sym, unsigned lower, bool valid = true) const {
    const unsigned peers = __match_any_sync(0xFFFFFFFFu, sym);
    if (valid && (peers & lower) == 0) {
      const uint32_t count = __popc(peers);
      if (sym - window_lo < kWindow) {  // unsigned: false below window_lo too
        atomicAdd(&hist[sym - window_lo], count);
      } else {
        atomicAdd(&out.histogram[hist_base + sym], count);
      }
    }
  }

  // The tile's blocks of a default shape that are whole, or cut along
  // dimension 1 alone (Groupable), in groups; with kPack > 1 blocks all cut
  // to Shape::kE1 / kPack (Rows).
  template <typename T, class Shape, uint32_t kPack = 1>
  __device__ void RunGroups(uint64_t b_begin, uint64_t b_end, int32_t* q, GroupState& st) const {
    using L = RowLayout<Shape>;
    const uint32_t s = threadIdx.x % L::kPerBlock;
    const uint64_t row_offset =
        L::C1(s) % (Shape::kE1 / kPack) * seg.geo.dims[2] * seg.geo.dims[3] +
        L::C2(s) * seg.geo.dims[3] + L::X(s);
    for (uint64_t b = b_begin; b < b_end;) {
      const uint32_t n = StartGroup<Shape, true, kPack>(seg.geo, b, b_end, st);
      if (n > 0) Rows<T, Shape, kPack>(n, st, row_offset, q);
      b += n > 0 ? n : 1;
    }
  }

  // The tile's blocks RunGroups leaves (edge blocks other than those cut
  // along dimension 1 alone), found by all threads at once, then taken
  // several at a time.
  template <typename T, class Shape>
  __device__ void RunEdges(uint64_t b_begin, uint64_t b_end, int32_t* q, uint8_t* kind,
                           uint32_t* list, uint32_t& count, MultiBlock& mb) const {
    for (uint64_t base = b_begin; base < b_end; base += kThreads) {
      if (threadIdx.x == 0) count = 0;
      __syncthreads();
      const uint64_t b = base + threadIdx.x;
      if (b < b_end) {
        BlockView view;
        view.Init(seg.geo, b);
        if (!Groupable<Shape, true>(view)) list[atomicAdd(&count, 1)] = threadIdx.x;
      }
      __syncthreads();
      const uint32_t n = count;
      for (uint32_t i = 0; i < n;) {
        i += Blocks<T>([&](uint32_t k) { return base + list[i + k]; }, min(n - i, 32u), q, kind,
                       mb);
      }
      __syncthreads();
    }
  }
};

// Which blocks a launch takes: blocks of a default shape, whole or cut along
// dimension 1 alone, in groups (nearly all of them), or the rest one at a
// time (other edge blocks; every block of another shape); a frame of 2 or 4
// rows along dimension 1 with 3-D blocks (all cut to them: the survey's
// samples of large 3-D frames) in groups of such blocks stacked (Rows).
// Kernels rather than paths of one, so that neither the per-block path's
// registers nor the stacked path's limit the group path's occupancy or add
// to its spills.
enum class Pass { kGroups, kEdges, kStacked };

// Blocks of kThreads an SM should hold at once (the register cap follows):
// the group pass is latency-bound, and on the H100 float32 ran fastest with
// 4 (64 registers, a few spills; 2 blocks, 128 registers without spills, was
// 1.3x slower). float64 holds twice the bytes per element and takes 3 (80
// registers).
template <Pass kPass, typename T>
inline constexpr int kPredictBlocksPerSm = kPass == Pass::kEdges ? 1 : (sizeof(T) == 4 ? 4 : 3);

// The stacking factor of a frame's 3-D blocks (Pass::kStacked), 1 for none.
EBZIP_HD inline uint32_t StackOf(const Geometry& g) {
  return g.block[1] == 2 ? 4 : g.block[1] == 4 ? 2 : 1;
}

// The passes with work in a segment (bit 1 << kPass): the kernels leave the
// others at once, and LaunchPredict launches no pass without work.
EBZIP_HD inline uint32_t PassesOf(const Segment& seg) {
  if (seg.predictor != format::kPredictorLorenzo) return 0;  // gpu/interp_kernels.h codes it
  const BlockShape shape = ShapeOf<true>(seg.geo);
  const bool stacked = shape == BlockShape::k3D && StackOf(seg.geo) > 1;
  uint32_t passes = 0;
  if (shape != BlockShape::kOther) {
    passes |= 1u << static_cast<int>(stacked ? Pass::kStacked : Pass::kGroups);
  }
  if (shape == BlockShape::kOther || HasEdgeBlocks(seg.geo)) {
    passes |= 1u << static_cast<int>(Pass::kEdges);
  }
  return passes;
}

// One block of kThreads per tile.
template <Pass kPass, typename T>
__global__ void __launch_bounds__(kThreads, kPredictBlocksPerSm<kPass, T>)
    PredictKernel(const Segment* segments, uint32_t num_segments, const Item* items,
                  PredictOutputs out) {
  constexpr uint32_t kQWords = kPass == Pass::kEdges ? kMaxBlockVolume : kGroupElements;
  __shared__ __align__(16) int32_t q[kQWords];
  __shared__ uint32_t hist[kWindow];
  __shared__ GroupState st;

  const uint32_t s = SegmentOfTile(segments, num_segments, blockIdx.x);
  const Segment& seg = segments[s];
  if ((PassesOf(seg) >> static_cast<int>(kPass) & 1) == 0) return;  // uniform across the block
  const BlockShape shape = ShapeOf<true>(seg.geo);
  const Item& item = items[seg.item];
  const PredictTile tile{seg,
                         seg.input,
                         seg.symbol_base,
                         seg.mask_base,
                         {item.abs_bound, item.quant_step, item.has_fill != 0, item.fill_bits},
                         static_cast<int32_t>(seg.radius),
                         seg.radius > kWindow / 2 ? seg.radius - kWindow / 2 : 0,
                         uint64_t{s} << 16,
                         hist,
                         out};
  for (uint32_t i = threadIdx.x; i < kWindow; i += kThreads) hist[i] = 0;

  const uint64_t t = blockIdx.x - seg.tile_base;
  const uint64_t b_begin = t * seg.blocks_per_tile;
  const uint64_t b_end = min(seg.geo.num_blocks, b_begin + seg.blocks_per_tile);
  if constexpr (kPass == Pass::kGroups) {
    switch (shape) {
      case BlockShape::k3D:
        tile.RunGroups<T, Block3D>(b_begin, b_end, q, st);
        break;
      case BlockShape::k2D:
        tile.RunGroups<T, Block2D>(b_begin, b_end, q, st);
        break;
      case BlockShape::k1D:
        tile.RunGroups<T, Block1D>(b_begin, b_end, q, st);
        break;
      case BlockShape::kOther:
        break;
    }
  } else if constexpr (kPass == Pass::kStacked) {
    if (StackOf(seg.geo) == 4) {
      tile.RunGroups<T, Block3D, 4>(b_begin, b_end, q, st);
    } else {
      tile.RunGroups<T, Block3D, 2>(b_begin, b_end, q, st);
    }
  } else {
    __shared__ uint8_t kind[kMaxBlockVolume];
    __shared__ uint32_t list[kThreads];
    __shared__ uint32_t count;
    __shared__ MultiBlock mb;
    switch (shape) {
      case BlockShape::k3D:
        tile.RunEdges<T, Block3D>(b_begin, b_end, q, kind, list, count, mb);
        break;
      case BlockShape::k2D:
        tile.RunEdges<T, Block2D>(b_begin, b_end, q, kind, list, count, mb);
        break;
      case BlockShape::k1D:
        tile.RunEdges<T, Block1D>(b_begin, b_end, q, kind, list, count, mb);
        break;
      case BlockShape::kOther:
        for (uint64_t b = b_begin; b < b_end;) {
          b += tile.Blocks<T>([&](uint32_t k) { return b + k; },
                              static_cast<uint32_t>(min(b_end - b, uint64_t{32})), q, kind, mb);
        }
        break;
    }
  }
  __syncthreads();
  const uint32_t alphabet = 2 * seg.radius;
  for (uint32_t i = threadIdx.x; i < kWindow; i += kThreads) {
    if (hist[i] != 0 && tile.window_lo + i < alphabet) {
      atomicAdd(&out.histogram[tile.hist_base + tile.window_lo + i], hist[i]);
    }
  }
}

}  // namespace

cudaError_t LaunchRange(int elem_size, const Segment* segments, uint32_t num_segments, Item* items,
                        uint64_t range_tiles, cudaStream_t stream) {
  if (elem_size == 4) {
    RangeKernel<float><<<range_tiles, kThreads, 0, stream>>>(segments, num_segments, items);
  } else {
    RangeKernel<double><<<range_tiles, kThreads, 0, stream>>>(segments, num_segments, items);
  }
  return cudaGetLastError();
}

cudaError_t LaunchResolveBounds(Item* items, uint32_t num_items, cudaStream_t stream) {
  ResolveBoundsKernel<<<(num_items + 127) / 128, 128, 0, stream>>>(items, num_items);
  return cudaGetLastError();
}

cudaError_t LaunchPredict(int elem_size, const Segment* segments, const Segment* host_segments,
                          uint32_t num_segments, const Item* items, uint64_t num_tiles,
                          PredictOutputs out, cudaStream_t stream) {
  uint32_t passes = 0;
  for (uint32_t s = 0; s < num_segments; ++s) passes |= PassesOf(host_segments[s]);
  auto launch = [&](auto kernel, Pass pass) {
    if (passes >> static_cast<int>(pass) & 1) {
      kernel<<<num_tiles, kThreads, 0, stream>>>(segments, num_segments, items, out);
    }
  };
  if (elem_size == 4) {
    launch(PredictKernel<Pass::kGroups, float>, Pass::kGroups);
    launch(PredictKernel<Pass::kStacked, float>, Pass::kStacked);
    launch(PredictKernel<Pass::kEdges, float>, Pass::kEdges);
  } else {
    launch(PredictKernel<Pass::kGroups, double>, Pass::kGroups);
    launch(PredictKernel<Pass::kStacked, double>, Pass::kStacked);
    launch(PredictKernel<Pass::kEdges, double>, Pass::kEdges);
  }
  return cudaGetLastError();
}

}  // namespace ebzip::gpu
