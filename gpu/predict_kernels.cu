// Compression's element-wise work: the value range for relative bounds, and
// the fused prediction pass (dual quantization, placeholders, Lorenzo
// residuals, symbols, histogram, special-element masks) that reads every
// element once and keeps each Lorenzo block in shared memory.
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

template <typename T>
__global__ void RangeKernel(const Segment* segments, uint32_t num_segments, Item* items) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  const uint32_t s = SegmentOfTile(segments, num_segments, blockIdx.x);
  const Segment& seg = segments[s];
  Item& item = items[seg.item];
  if (!item.relative) return;  // uniform across the block
  const T* x = static_cast<const T*>(seg.input);
  // The segment's tiles split its elements evenly in index order here.
  const uint64_t per_tile = (seg.geo.n + seg.tiles - 1) / seg.tiles;
  const uint64_t begin = (blockIdx.x - seg.tile_base) * per_tile;
  const uint64_t end = min(seg.geo.n, begin + per_tile);
  using Bits = typename FloatTraits<T>::Bits;
  double lo = INFINITY, hi = -INFINITY;
  for (uint64_t i = begin + threadIdx.x; i < end; i += kThreads) {
    const T v = x[i];
    if (!isfinite(v) || (item.has_fill && ToBits(v) == static_cast<Bits>(item.fill_bits))) continue;
    lo = fmin(lo, static_cast<double>(v));
    hi = fmax(hi, static_cast<double>(v));
  }
  lo = Reduce(temp).Reduce(lo, [](double a, double b) { return fmin(a, b); });
  __syncthreads();
  hi = Reduce(temp).Reduce(hi, [](double a, double b) { return fmax(a, b); });
  if (threadIdx.x == 0 && lo <= hi) {
    atomicMin(&item.min_key, OrderedKey(lo));
    atomicMax(&item.max_key, OrderedKey(hi));
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
      ResolveBoundFor(item.relative ? BoundMode::kRel : BoundMode::kAbs, item.bound, any, lo, hi);
  item.abs_bound = b.abs_bound;
  item.quant_step = b.quant_step;
}

// What every Lorenzo block of one prediction tile shares: the tile's segment,
// its quantization rule, and the shared-memory histogram window.
struct PredictTile {
  const Segment& seg;
  QuantRule rule;
  int32_t radius;
  uint32_t window_lo;
  uint64_t hist_base;
  uint32_t* hist;
  PredictOutputs out;

  // Symbol, outlier and histogram of the element at index i of the frame.
  __device__ void Emit(bool valid, uint64_t i, int32_t delta) const {
    uint32_t sym = 0xFFFFFFFFu;
    if (valid) {
      if (delta > -radius && delta < radius) {
        sym = static_cast<uint32_t>(delta + radius);
      } else {
        sym = 0;
        out.deltas[seg.symbol_base + i] = delta;
        atomicOr(&out.outlier_mask[seg.mask_base + i / 32], 1u << (i % 32));
      }
      out.symbols[seg.symbol_base + i] = static_cast<uint16_t>(sym);
    }
    // Warp-aggregated histogram: smooth data gives most lanes one symbol.
    const unsigned peers = __match_any_sync(0xFFFFFFFFu, sym);
    if (valid && threadIdx.x % 32 == static_cast<unsigned>(__ffs(peers) - 1)) {
      const uint32_t count = __popc(peers);
      if (sym >= window_lo && sym - window_lo < kWindow) {
        atomicAdd(&hist[sym - window_lo], count);
      } else {
        atomicAdd(&out.histogram[hist_base + sym], count);
      }
    }
  }

  __device__ void MarkSpecial(PointKind k, uint64_t i) const {
    uint32_t* mask = k == PointKind::kFill ? out.fill_mask : out.verbatim_mask;
    atomicOr(&mask[seg.mask_base + i / 32], 1u << (i % 32));
  }

  // Lorenzo block b, of any shape, alone.
  template <typename T>
  __device__ void Block(uint64_t b, int32_t* q, uint8_t* kind, uint32_t& first_quantized) const {
    const T* x = static_cast<const T*>(seg.input);
    BlockView view;
    view.Init(seg.geo, b);
    const uint32_t v = view.volume;
    if (threadIdx.x == 0) first_quantized = v;
    __syncthreads();  // also orders the previous block's reads before these writes

    bool special = false;
    for (uint32_t j = threadIdx.x; j < v; j += kThreads) {
      uint32_t c[kDims];
      view.Coords(j, c);
      const uint64_t i = view.Index(c);
      int32_t qi;
      const PointKind k = QuantizePoint<T>(x[i], rule, &qi);
      q[j] = qi;
      kind[j] = static_cast<uint8_t>(k);
      if (k == PointKind::kQuantized) {
        atomicMin(&first_quantized, j);
      } else {
        special = true;
        MarkSpecial(k, i);
      }
    }
    // Placeholders (FORMAT.md §10.2): the block's first quantized value.
    if (__syncthreads_or(special)) {
      const int32_t placeholder = first_quantized < v ? q[first_quantized] : 0;
      __syncthreads();
      for (uint32_t j = threadIdx.x; j < v; j += kThreads) {
        if (kind[j] != static_cast<uint8_t>(PointKind::kQuantized)) q[j] = placeholder;
      }
      __syncthreads();
    }

    // Residual: the N-D Lorenzo difference over in-block neighbours, as the
    // alternating sum over the corners of the unit cube behind the element.
    uint32_t inner[kDims];
    for (int d = 0; d < kDims; ++d) inner[d] = view.InnerStride(d);
    for (uint32_t base = 0; base < v; base += kThreads) {
      const uint32_t j = base + threadIdx.x;
      const bool valid = j < v;
      int32_t delta = 0;
      uint64_t i = 0;
      if (valid) {
        uint32_t c[kDims];
        view.Coords(j, c);
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
  }

  // The n whole blocks of a group (StartGroup), all at once: the same
  // arithmetic as Block with the extents fixed at compile time.
  template <typename T, class Shape>
  __device__ void Group(uint32_t n, GroupState& st, const uint64_t* offsets, int32_t* q) const {
    constexpr uint32_t P = Shape::kPositions;
    const T* x = static_cast<const T*>(seg.input);
    T value[Shape::kPerThread];
#pragma unroll
    for (uint32_t r = 0; r < Shape::kPerThread; ++r) {
      if (r / P < n) value[r] = x[st.origin[r / P] + offsets[r % P]];
    }
    uint32_t special = 0;  // bit r: element r is not quantized
#pragma unroll
    for (uint32_t r = 0; r < Shape::kPerThread; ++r) {
      if (r / P >= n) continue;
      const uint32_t jj = threadIdx.x + r % P * kThreads;
      int32_t qi;
      const PointKind k = QuantizePoint<T>(value[r], rule, &qi);
      q[Shape::Word(r / P, jj)] = qi;
      if (k != PointKind::kQuantized) {
        special |= 1u << r;
        MarkSpecial(k, st.origin[r / P] + offsets[r % P]);
      }
    }
    // Placeholders, as in Block: first each block's first quantized element
    // (one ballot per warp: a warp's 32 elements lie in one block).
    if (__syncthreads_or(special != 0)) {
#pragma unroll
      for (uint32_t r = 0; r < Shape::kPerThread; ++r) {
        if (r / P >= n) continue;
        const unsigned quantized = __ballot_sync(0xFFFFFFFFu, !(special >> r & 1));
        if (threadIdx.x % 32 == 0 && quantized != 0) {
          atomicMin(&st.first[r / P], threadIdx.x + r % P * kThreads + __ffs(quantized) - 1);
        }
      }
      __syncthreads();
#pragma unroll
      for (uint32_t r = 0; r < Shape::kPerThread; ++r) {
        if (!(special >> r & 1)) continue;
        const uint32_t blk = r / P;
        const uint32_t first = st.first[blk];
        // A first quantized element is never a placeholder: no race.
        q[Shape::Word(blk, threadIdx.x + r % P * kThreads)] =
            first < Shape::kVolume ? q[Shape::Word(blk, first)] : 0;
      }
      __syncthreads();
    }
#pragma unroll
    for (uint32_t r = 0; r < Shape::kPerThread; ++r) {
      if (r / P >= n) continue;  // uniform across the block
      const uint32_t blk = r / P;
      const uint32_t jj = threadIdx.x + r % P * kThreads;
      const bool has[3] = {Shape::C3(jj) > 0, Shape::C2(jj) > 0, Shape::C1(jj) > 0};
      constexpr uint32_t back[3] = {1, Shape::kE3, Shape::kE2 * Shape::kE3};
      int32_t delta = 0;
#pragma unroll
      for (uint32_t m = 0; m < 8; ++m) {
        if ((m & 1 && !has[0]) || (m & 2 && !has[1]) || (m & 4 && !has[2])) continue;
        const uint32_t off = (m & 1 ? back[0] : 0) + (m & 2 ? back[1] : 0) + (m & 4 ? back[2] : 0);
        const int32_t t = q[Shape::Word(blk, jj - off)];
        delta += (__popc(m) & 1) ? -t : t;
      }
      Emit(true, st.origin[blk] + offsets[r % P], delta);
    }
  }

  // Every block of the tile: whole blocks of a default shape in groups, the
  // rest one at a time.
  template <typename T, class Shape>
  __device__ void Run(uint64_t b_begin, uint64_t b_end, int32_t* q, uint8_t* kind,
                      GroupState& st) const {
    uint64_t offsets[Shape::kPositions];
    PositionOffsets<Shape>(seg.geo, offsets);
    for (uint64_t b = b_begin; b < b_end;) {
      const uint32_t n = StartGroup<Shape>(seg.geo, b, b_end, st);
      if (n > 0) {
        Group<T, Shape>(n, st, offsets, q);
        b += n;
      } else {
        Block<T>(b, q, kind, st.first[0]);
        ++b;
      }
    }
  }
};

// One block of kThreads per tile.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    PredictKernel(const Segment* segments, uint32_t num_segments, const Item* items,
                  PredictOutputs out) {
  __shared__ int32_t q[kGroupWords > kMaxBlockVolume ? kGroupWords : kMaxBlockVolume];
  __shared__ uint8_t kind[kMaxBlockVolume];
  __shared__ uint32_t hist[kWindow];
  __shared__ GroupState st;

  const uint32_t s = SegmentOfTile(segments, num_segments, blockIdx.x);
  const Segment& seg = segments[s];
  const Item& item = items[seg.item];
  const PredictTile tile{seg,
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
  switch (ShapeOf(seg.geo)) {
    case BlockShape::k3D:
      tile.Run<T, Block3D>(b_begin, b_end, q, kind, st);
      break;
    case BlockShape::k2D:
      tile.Run<T, Block2D>(b_begin, b_end, q, kind, st);
      break;
    case BlockShape::k1D:
      tile.Run<T, Block1D>(b_begin, b_end, q, kind, st);
      break;
    case BlockShape::kOther:
      for (uint64_t b = b_begin; b < b_end; ++b) tile.Block<T>(b, q, kind, st.first[0]);
      break;
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

cudaError_t LaunchPredict(int elem_size, const Segment* segments, uint32_t num_segments,
                          const Item* items, uint64_t num_tiles, PredictOutputs out,
                          cudaStream_t stream) {
  if (elem_size == 4) {
    PredictKernel<float><<<num_tiles, kThreads, 0, stream>>>(segments, num_segments, items, out);
  } else {
    PredictKernel<double><<<num_tiles, kThreads, 0, stream>>>(segments, num_segments, items, out);
  }
  return cudaGetLastError();
}

}  // namespace ebzip::gpu
