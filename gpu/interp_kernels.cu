// The interpolation predictor's kernels (gpu/interp_kernels.h): thin
// wrappers that run gpu/interp_tile.h's per-tile, per-anchor and per-entry
// functions, a sub-block of threads per tile with its own named barrier.
#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>
#include <cub/device/device_scan.cuh>

#include "gpu/cuda_status.h"
#include "gpu/interp_kernels.h"
#include "gpu/segment.h"
#include "gpu/workspace_carver.h"

namespace ebzip::gpu {
namespace {

using interp::Geometry;
using interp::KeyHeader;

// Grid-stride loops cap grids here (a frame can have up to 2^32 - 1 tiles).
constexpr uint64_t kMaxGridBlocks = uint64_t{1} << 24;
constexpr uint32_t kSmallThreads = 256;  // the per-anchor and per-entry kernels
// Tile-kernel policy (tuned for the H100): about this many elements per
// thread in a tile's largest pass region, so small tiles (1-D 256) share a
// thread block with others and large ones (64x64, 16^3) get all 256 threads.
constexpr uint32_t kElementsPerThread = 8;
// The encoder's tile kernel takes 4 times as many: 16^3 and 64x64 tiles run
// 128 threads each, two a block. On the H100 that encoded 1 GiB fields' tiles
// 11-26 % faster (2-D and 3-D), where the decoder ran 3 % slower on it; at 64
// a thread 16^3 tiles encoded 1.7 times slower.
constexpr uint32_t kEncodeElementsPerThread = 32;
constexpr uint32_t kMinTileThreads = 32;  // a warp: the scans are warp-based

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

uint32_t GridFor(uint64_t threads, uint32_t per_block) {
  return static_cast<uint32_t>(
      std::clamp<uint64_t>(CeilDiv(threads, per_block), 1, kMaxGridBlocks));
}

// ---------------------------------------------------------------------------
// Shared memory of one tile in each tile kernel: 8 words for the scan's warp
// sums, then its arrays, each 16-byte aligned.

enum class TileKernel { kEncode, kDecode, kScatter, kCount, kDecodeDirect };

struct SubLayout {
  uint32_t box = 0, fbox = 0, srank = 0, keep = 0, nb = 0, passes = 0;  // byte offsets
  uint32_t bytes = 0;                               // per tile
};

__host__ __device__ inline uint32_t Align16(uint64_t x) {
  return static_cast<uint32_t>((x + 15) & ~uint64_t{15});
}

__host__ __device__ inline SubLayout LayoutFor(TileKernel kind, const Geometry& g, uint32_t elem,
                                               bool fill) {
  SubLayout l;
  uint32_t at = 32;  // warp sums
  switch (kind) {
    case TileKernel::kEncode:
      l.box = at;
      at = Align16(at + uint64_t{elem} * g.box_volume);
      if (fill) {
        l.fbox = at;
        at = Align16(at + uint64_t{g.box_volume});
        l.srank = at;
        at = Align16(at + 2 * uint64_t{g.own_max});
        l.keep = at;
        at = Align16(at + uint64_t{g.own_max});
      }
      break;
    case TileKernel::kDecode:
      l.box = at;
      at = Align16(at + uint64_t{elem} * g.box_volume);
      break;
    case TileKernel::kScatter:
      l.box = at;
      at = Align16(at + 2 * uint64_t{g.box_volume});
      if (fill) {
        l.fbox = at;
        at = Align16(at + uint64_t{g.box_volume});
      }
      break;
    case TileKernel::kCount:
      break;
    case TileKernel::kDecodeDirect:
      l.box = at;
      at = Align16(at + uint64_t{elem} * g.box_volume);
      l.nb = at;
      at = Align16(at + sizeof(interp::Neighbors));
      l.passes = at;
      at = Align16(at + sizeof(interp::PassTable));
      break;
  }
  l.bytes = at;
  return l;
}

// How a tile's barrier is named. kComputed passes the id in a register, and
// ptxas then reserves all 16 of a block's barriers, which allows 4 blocks an
// SM (Nsight Compute's "Block Limit Barriers"); kConstant picks id 1 to 4 by
// a switch (tiles of 64 threads or more, at most 4 a block; a one-warp tile
// syncs its warp), and 5 are reserved. Decoding kernels take kConstant: with
// 8 blocks an SM a 1 GiB decode's tiles ran 14 % faster on the H100. The
// encoding kernel measured 8 % slower with it (its 59 registers allow 4
// blocks either way) and keeps kComputed.
enum class BarrierIds { kComputed, kConstant };
static_assert(kInterpBlockThreads / 64 <= 4, "kConstant names a block's tiles barriers 1 to 4");

// A tile's threads: lane, barrier (named, one per tile of the block, so the
// tiles of a block never wait for each other), exclusive sum, atomics.
template <BarrierIds kIds = BarrierIds::kComputed>
struct SubBlock {
  uint32_t lane;
  uint32_t threads;
  uint32_t barrier;     // 1 + the tile's place in the block
  uint32_t* warp_sums;  // threads / 32 words of shared memory

  __host__ __device__ uint32_t Lane() const { return lane; }
  __host__ __device__ uint32_t Threads() const { return threads; }
  __host__ __device__ void Sync() const {
#ifdef __CUDA_ARCH__
    if constexpr (kIds == BarrierIds::kComputed) {
      __barrier_sync_count(barrier, threads);
    } else if (threads == 32) {
      __syncwarp();
    } else {
      switch (barrier) {
        case 1:
          __barrier_sync_count(1, threads);
          break;
        case 2:
          __barrier_sync_count(2, threads);
          break;
        case 3:
          __barrier_sync_count(3, threads);
          break;
        default:
          __barrier_sync_count(4, threads);
          break;
      }
    }
#endif
  }
  __host__ __device__ uint32_t ExclusiveSum(uint32_t v, uint32_t* total) const {
#ifdef __CUDA_ARCH__
    const uint32_t wl = lane & 31, w = lane >> 5, warps = threads >> 5;
    uint32_t inclusive = v;
#pragma unroll
    for (uint32_t d = 1; d < 32; d <<= 1) {
      const uint32_t up = __shfl_up_sync(0xFFFFFFFFu, inclusive, d);
      if (wl >= d) inclusive += up;
    }
    if (wl == 31) warp_sums[w] = inclusive;
    Sync();
    uint32_t before = 0, sum = 0;
    for (uint32_t u = 0; u < warps; ++u) {
      const uint32_t s = warp_sums[u];
      before += u < w ? s : 0;
      sum += s;
    }
    Sync();
    *total = sum;
    return before + inclusive - v;
#else
    *total = v;
    return 0;
#endif
  }
  __host__ __device__ void AtomicOr(uint32_t* p, uint32_t bits) const {
#ifdef __CUDA_ARCH__
    atomicOr(p, bits);
#else
    *p |= bits;
#endif
  }
  __host__ __device__ void AtomicAdd(uint32_t* p, uint32_t v) const {
#ifdef __CUDA_ARCH__
    atomicAdd(p, v);
#else
    *p += v;
#endif
  }
};

extern __shared__ __align__(16) unsigned char interp_smem[];

// This thread's tile slot in the block, its sub-block and its shared memory.
template <BarrierIds kIds = BarrierIds::kComputed>
__device__ inline SubBlock<kIds> MakeSubBlock(const Geometry& g, uint32_t bytes,
                                              unsigned char** base) {
  const uint32_t sub = threadIdx.x / g.tile_threads;
  *base = interp_smem + uint64_t{sub} * bytes;
  return SubBlock<kIds>{threadIdx.x % g.tile_threads, g.tile_threads, sub + 1,
                        reinterpret_cast<uint32_t*>(*base)};
}

// ---------------------------------------------------------------------------
// Tables.

// The key headers as the host computed them (ComputeHeaders on one thread of
// the device takes ~90 us on an H100), passed by value: 16 headers fit the
// 32 KB a kernel's parameters may take (CUDA 12.1 on, sm_70 on).
struct HeaderTable {
  KeyHeader h[interp::kMaxKeys];
};
static_assert(sizeof(HeaderTable) <= 32000);
__global__ void CopyHeadersKernel(const HeaderTable table, KeyHeader* headers) {
  const uint32_t* from = reinterpret_cast<const uint32_t*>(&table);
  uint32_t* to = reinterpret_cast<uint32_t*>(headers);
  for (uint32_t w = threadIdx.x; w < sizeof(HeaderTable) / 4; w += blockDim.x) to[w] = from[w];
}

// The pass tables and, beside each far-face entry, the direct decoder's
// FarEntry (own entries' places in `far` stay unwritten).
__global__ void EntriesKernel(Geometry g, const KeyHeader* headers, uint32_t* entries,
                              uint32_t* far) {
  const KeyHeader& h = headers[blockIdx.y];
  const uint32_t p = blockIdx.x;
  if (!h.exists || p >= g.num_passes) return;
  const uint32_t count = h.pass_entry[p + 1] - h.pass_entry[p];
  uint32_t* list = entries + h.entries_begin + h.pass_entry[p];
  for (uint32_t j = threadIdx.x; j < count; j += blockDim.x) {
    uint32_t slot, value;
    interp::TableEntry(g, h, p, j, &slot, &value);
    list[slot] = value;
    if (slot >= h.pass_own[p]) {
      far[h.entries_begin + h.pass_entry[p] + slot] = interp::FarEntry(g, h, p, value & 0xFFFFu);
    }
  }
}

__global__ void BoxesKernel(Geometry g, const KeyHeader* headers, uint64_t* boxes) {
  const KeyHeader& h = headers[blockIdx.y];
  if (!h.exists) return;
  for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < h.box_count + h.own_rows;
       j += gridDim.x * blockDim.x) {
    boxes[h.boxes_begin + j] = j < h.box_count ? interp::BoxEntry(g, h, j)
                                               : interp::OwnRowEntry(g, h, j - h.box_count);
  }
}

// ---------------------------------------------------------------------------
// Tile starts.

__global__ void StartsKernel(Geometry g, uint32_t* tile_start) {
  for (uint64_t t = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; t <= g.num_tiles;
       t += uint64_t{gridDim.x} * blockDim.x) {
    tile_start[t] = static_cast<uint32_t>(interp::TileStartWithoutFill(g, t));
  }
}

// Frame blockIdx.y of a batch: its mask at fill + y * fill_step, its counts
// at counts + y * counts_step.
__global__ void __launch_bounds__(kInterpBlockThreads)
    CountKernel(Geometry g, const KeyHeader* headers, const uint8_t* fill, uint32_t* counts,
                uint32_t bytes, uint64_t fill_step, uint64_t counts_step) {
  unsigned char* base;
  auto sb = MakeSubBlock(g, bytes, &base);
  fill += blockIdx.y * fill_step;
  counts += blockIdx.y * counts_step;
  if (blockIdx.x == 0 && threadIdx.x == 0) counts[g.num_tiles] = 0;
  const uint64_t stride = uint64_t{gridDim.x} * g.tiles_per_block;
  for (uint64_t t = uint64_t{blockIdx.x} * g.tiles_per_block + threadIdx.x / g.tile_threads;
       t < g.num_tiles; t += stride) {
    interp::CountTile(sb, g, headers, t, fill, counts);
  }
}

// Subtracts each frame's first entry from its entries (a batch's frames
// scanned as one array: each frame's scan then starts at 0 again; unsigned
// wrap-around leaves the differences exact).
__global__ void RebaseKernel(const uint32_t* raw, uint32_t* out, uint64_t per_frame) {
  const uint64_t first = blockIdx.y * per_frame;
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < per_frame;
       i += uint64_t{gridDim.x} * blockDim.x) {
    out[first + i] = raw[first + i] - raw[first];
  }
}

// ---------------------------------------------------------------------------
// Anchors. The encoding kernels take a batch of frames of one geometry, frame
// blockIdx.y's arrays at these steps from frame 0's (its per-anchor scratch
// at multiples of num_tiles, num_tiles + 1 and num_anchor_blocks).
struct BatchStep {
  uint64_t x = 0;           // elements
  uint64_t fill = 0;        // bytes
  uint64_t symbols = 0;     // elements
  uint64_t verbatim = 0;    // words
  uint64_t outliers = 0;    // entries
  uint64_t counts = 0;      // words
  uint64_t tile_start = 0;  // num_tiles + 1 with a fill mask; 0: one table for all
  // Set for frames of several arrays (InterpEncodeBatch::segments): the
  // input and the bound are each frame's own, `x` unused.
  const Segment* segments = nullptr;
  const Item* items = nullptr;
};

// Frame f's input and bound: its own where the batch gives each frame its
// own (kPerFrame), else the input at f steps from frame 0's and the plan's
// bound.
template <bool kPerFrame, typename T>
__device__ inline interp::FrameBound TakeFrame(const Geometry& g, const BatchStep& step,
                                               uint64_t f, const T** x) {
  if constexpr (kPerFrame) {
    const Segment& seg = step.segments[f];
    const Item& item = step.items[seg.item];
    *x = static_cast<const T*>(seg.input);
    return {item.abs_bound, item.quant_step};
  } else {
    *x += f * step.x;
    return interp::BoundOf(g);
  }
}

#define EBZIP_FOR_EACH(i, count)                                                  \
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < (count); \
       i += uint64_t{gridDim.x} * blockDim.x)

template <typename T, bool kPerFrame>
__global__ void AnchorQuantizeKernel(Geometry g, const T* x, const uint8_t* fill, int32_t* q,
                                     uint8_t* quantized, uint32_t* verbatim_mask, BatchStep step) {
  SubBlock<> sb{0, 1, 0, nullptr};
  const uint64_t f = blockIdx.y;
  const interp::FrameBound bound = TakeFrame<kPerFrame>(g, step, f, &x);
  if (fill != nullptr) fill += f * step.fill;
  q += f * g.num_tiles;
  quantized += f * g.num_tiles;
  verbatim_mask += f * step.verbatim;
  EBZIP_FOR_EACH(t, g.num_tiles) {
    interp::AnchorQuantize<T>(sb, g, bound, t, x, fill, q, quantized, verbatim_mask);
  }
}

__global__ void AnchorPlaceholderKernel(Geometry g, const int32_t* q, const uint8_t* quantized,
                                        int32_t* placeholder) {
  const uint64_t f = blockIdx.y;
  q += f * g.num_tiles;
  quantized += f * g.num_tiles;
  placeholder += f * g.num_anchor_blocks;
  EBZIP_FOR_EACH(b, g.num_anchor_blocks) {
    interp::AnchorPlaceholder(g, b, q, quantized, placeholder);
  }
}

template <typename T, bool kPerFrame>
__global__ void AnchorResidualKernel(Geometry g, const int32_t* q, const uint8_t* quantized,
                                     const int32_t* placeholder, T* anchor_w, uint16_t* anchor_sym,
                                     uint32_t* flag, int32_t* residual, BatchStep step) {
  const uint64_t f = blockIdx.y;
  const T* unused = nullptr;
  const interp::FrameBound bound = TakeFrame<kPerFrame>(g, step, f, &unused);
  q += f * g.num_tiles;
  quantized += f * g.num_tiles;
  placeholder += f * g.num_anchor_blocks;
  anchor_w += f * g.num_tiles;
  anchor_sym += f * g.num_tiles;
  flag += f * (g.num_tiles + 1);
  residual += f * g.num_tiles;
  if (blockIdx.x == 0 && threadIdx.x == 0) flag[g.num_tiles] = 0;
  EBZIP_FOR_EACH(t, g.num_tiles) {
    interp::AnchorResidual<T>(g, bound, t, q, quantized, placeholder, anchor_w, anchor_sym, flag,
                              residual);
  }
}

__global__ void AnchorOutlierKernel(Geometry g, const uint32_t* flag, const uint32_t* at,
                                    const int32_t* residual, uint32_t* outlier_index,
                                    int32_t* outlier_residual, const uint32_t* tile_start,
                                    uint32_t* counts, BatchStep step) {
  const uint64_t f = blockIdx.y;
  flag += f * (g.num_tiles + 1);
  at += f * (g.num_tiles + 1);
  residual += f * g.num_tiles;
  outlier_index += f * step.outliers;
  outlier_residual += f * step.outliers;
  tile_start += f * step.tile_start;
  counts += f * step.counts;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    counts[0] = tile_start[g.num_tiles];
    counts[1] = at[g.num_tiles];
  }
  EBZIP_FOR_EACH(t, g.num_tiles) {
    interp::AnchorOutlier(g, t, flag, at, residual, outlier_index, outlier_residual);
  }
}

__global__ void AnchorLoadKernel(Geometry g, const uint16_t* sym_elem, int32_t* q) {
  EBZIP_FOR_EACH(t, g.num_tiles) { interp::AnchorLoad(g, t, sym_elem, q); }
}

__global__ void ApplyOutliersKernel(Geometry g, const uint32_t* index, const int32_t* value,
                                    uint64_t count, const uint16_t* sym_elem, int32_t* q,
                                    uint32_t* error) {
  SubBlock<> sb{0, 1, 0, nullptr};
  EBZIP_FOR_EACH(j, count) {
    interp::AnchorApplyOutlier(sb, g, j, index, value, sym_elem, q, error);
  }
}

__global__ void AnchorPrefixKernel(Geometry g, int d, int32_t* q) {
  EBZIP_FOR_EACH(t, g.num_tiles) { interp::AnchorPrefix(g, d, t, q); }
}

template <typename T>
__global__ void AnchorDequantizeKernel(Geometry g, const int32_t* q, T* anchor_w) {
  EBZIP_FOR_EACH(t, g.num_tiles) { interp::AnchorDequantize<T>(g.step, t, q, anchor_w); }
}

// Without a fill mask, from symbol order (no scatter): the anchors' checks,
// residuals and outliers.
__global__ void AnchorLoadDirectKernel(Geometry g, interp::DirectArgs args, int32_t* q) {
  SubBlock<> sb{0, 1, 0, nullptr};
  EBZIP_FOR_EACH(t, g.num_tiles) { interp::AnchorLoadDirect(sb, g, t, args, q); }
}

__global__ void ApplyOutliersDirectKernel(Geometry g, const uint32_t* index, const int32_t* value,
                                          uint64_t count, interp::DirectArgs args, int32_t* q) {
  SubBlock<> sb{0, 1, 0, nullptr};
  EBZIP_FOR_EACH(j, count) {
    interp::AnchorApplyOutlierDirect(sb, g, j, index, value, args, q);
  }
}

// S and the outlier count against what the decoder was given.
__global__ void DecodeChecksKernel(Geometry g, const uint32_t* tile_start, uint64_t num_symbols,
                                   const uint32_t* anchor_zeros, uint64_t num_outliers,
                                   uint32_t* error) {
  uint32_t e = 0;
  if (tile_start[g.num_tiles] != num_symbols) e |= interp::kErrSymbolCount;
  if (*anchor_zeros != num_outliers) e |= interp::kErrOutlierCount;
  if (e != 0) atomicOr(error, e);
}

// ---------------------------------------------------------------------------
// Decode batches (LaunchInterpDecodeBatch): frame blockIdx.y's own arrays,
// the key tables and tile starts shared.

__device__ interp::DirectArgs FrameArgs(const InterpDecodeFrame& fr, const uint32_t* tile_start,
                                        uint32_t* anchor_zeros) {
  return {fr.symbols, fr.num_symbols, tile_start, fr.error, anchor_zeros, fr.step};
}

__global__ void ZeroBatchKernel(const InterpDecodeFrame* frames, uint32_t count,
                                uint32_t* anchor_zeros) {
  const uint32_t f = blockIdx.x * blockDim.x + threadIdx.x;
  if (f < count) {
    *frames[f].error = 0;
    anchor_zeros[f] = 0;
  }
}

__global__ void AnchorLoadBatchKernel(Geometry g, const InterpDecodeFrame* frames,
                                      const uint32_t* tile_start, uint32_t* anchor_zeros,
                                      int32_t* q) {
  SubBlock<> sb{0, 1, 0, nullptr};
  const uint64_t f = blockIdx.y;
  const interp::DirectArgs args = FrameArgs(frames[f], tile_start, anchor_zeros + f);
  q += f * g.num_tiles;
  EBZIP_FOR_EACH(t, g.num_tiles) { interp::AnchorLoadDirect(sb, g, t, args, q); }
}

__global__ void ApplyOutliersBatchKernel(Geometry g, const InterpDecodeFrame* frames,
                                         const uint32_t* tile_start, uint32_t* anchor_zeros,
                                         int32_t* q) {
  SubBlock<> sb{0, 1, 0, nullptr};
  const uint64_t f = blockIdx.y;
  const InterpDecodeFrame& fr = frames[f];
  const interp::DirectArgs args = FrameArgs(fr, tile_start, anchor_zeros + f);
  q += f * g.num_tiles;
  EBZIP_FOR_EACH(j, fr.num_outliers) {
    interp::AnchorApplyOutlierDirect(sb, g, j, fr.outlier_index, fr.outlier_residual, args, q);
  }
}

__global__ void DecodeChecksBatchKernel(Geometry g, const InterpDecodeFrame* frames,
                                        uint32_t count, const uint32_t* tile_start,
                                        const uint32_t* anchor_zeros) {
  const uint32_t f = blockIdx.x * blockDim.x + threadIdx.x;
  if (f >= count) return;
  const InterpDecodeFrame& fr = frames[f];
  uint32_t e = 0;
  if (tile_start[g.num_tiles] != fr.num_symbols) e |= interp::kErrSymbolCount;
  if (anchor_zeros[f] != fr.num_outliers) e |= interp::kErrOutlierCount;
  if (e != 0) atomicOr(fr.error, e);
}

__global__ void AnchorPrefixBatchKernel(Geometry g, int d, int32_t* q) {
  q += uint64_t{blockIdx.y} * g.num_tiles;
  EBZIP_FOR_EACH(t, g.num_tiles) { interp::AnchorPrefix(g, d, t, q); }
}

template <typename T>
__global__ void AnchorDequantizeBatchKernel(Geometry g, const InterpDecodeFrame* frames,
                                            const int32_t* q, T* anchor_w) {
  const uint64_t f = blockIdx.y;
  const double step = frames[f].step;
  q += f * g.num_tiles;
  anchor_w += f * g.num_tiles;
  EBZIP_FOR_EACH(t, g.num_tiles) { interp::AnchorDequantize<T>(step, t, q, anchor_w); }
}

#undef EBZIP_FOR_EACH

// ---------------------------------------------------------------------------
// Tiles.

template <typename T, bool kFill, bool kPerFrame>
__global__ void __launch_bounds__(kInterpBlockThreads)
    EncodeTilesKernel(Geometry g, const KeyHeader* headers, const uint32_t* entries,
                      const uint64_t* boxes, interp::EncodeTileArgs<T> args, SubLayout layout,
                      BatchStep step) {
  const uint64_t f = blockIdx.y;
  args.bound = TakeFrame<kPerFrame>(g, step, f, &args.x);
  if (kFill) args.fill += f * step.fill;
  args.tile_start += f * step.tile_start;
  args.anchor_w += f * g.num_tiles;
  args.anchor_sym += f * g.num_tiles;
  args.symbols += f * step.symbols;
  args.verbatim_mask += f * step.verbatim;
  unsigned char* base;
  auto sb = MakeSubBlock(g, layout.bytes, &base);
  const interp::EncodeTileSmem<T> sm{
      reinterpret_cast<T*>(base + layout.box), kFill ? base + layout.fbox : nullptr,
      kFill ? reinterpret_cast<uint16_t*>(base + layout.srank) : nullptr,
      kFill ? base + layout.keep : nullptr};
  const uint64_t stride = uint64_t{gridDim.x} * g.tiles_per_block;
  for (uint64_t t = uint64_t{blockIdx.x} * g.tiles_per_block + threadIdx.x / g.tile_threads;
       t < g.num_tiles; t += stride) {
    interp::EncodeTile<T, kFill>(sb, g, headers, entries, boxes, t, args, sm);
  }
}

template <bool kFill>
__global__ void __launch_bounds__(kInterpBlockThreads)
    ScatterKernel(Geometry g, const KeyHeader* headers, const uint32_t* entries,
                  interp::ScatterArgs args, SubLayout layout) {
  unsigned char* base;
  auto sb = MakeSubBlock<BarrierIds::kConstant>(g, layout.bytes, &base);
  const interp::ScatterSmem sm{reinterpret_cast<uint16_t*>(base + layout.box),
                               kFill ? base + layout.fbox : nullptr};
  const uint64_t stride = uint64_t{gridDim.x} * g.tiles_per_block;
  for (uint64_t t = uint64_t{blockIdx.x} * g.tiles_per_block + threadIdx.x / g.tile_threads;
       t < g.num_tiles; t += stride) {
    interp::ScatterTile<kFill>(sb, g, headers, entries, t, args, sm);
  }
}

template <typename T>
__global__ void __launch_bounds__(kInterpBlockThreads)
    DecodeTilesKernel(Geometry g, const KeyHeader* headers, const uint32_t* entries,
                      const uint64_t* boxes, const uint16_t* sym_elem, const T* anchor_w, T* out,
                      SubLayout layout, interp::TileSpan span) {
  unsigned char* base;
  auto sb = MakeSubBlock<BarrierIds::kConstant>(g, layout.bytes, &base);
  T* box = reinterpret_cast<T*>(base + layout.box);
  const uint64_t stride = uint64_t{gridDim.x} * g.tiles_per_block;
  for (uint64_t i = uint64_t{blockIdx.x} * g.tiles_per_block + threadIdx.x / g.tile_threads;
       i < span.total; i += stride) {
    const uint64_t t = span.Tile(g, static_cast<uint32_t>(i));
    interp::DecodeTile<T>(sb, g, headers, entries, boxes, t, sym_elem, anchor_w, out, box);
  }
}

// The direct decoder's tiles of one frame: a sub-block a tile.
template <typename T>
__device__ void DecodeDirectTiles(const Geometry& g, const KeyHeader* headers,
                                  const uint32_t* entries, const uint32_t* far,
                                  const uint64_t* boxes,
                                  const interp::DirectArgs& args, const T* anchor_w, T* out,
                                  const SubLayout& layout, const interp::TileSpan& span) {
  unsigned char* base;
  auto sb = MakeSubBlock<BarrierIds::kConstant>(g, layout.bytes, &base);
  const interp::DirectSmem<T> sm{reinterpret_cast<T*>(base + layout.box),
                                 reinterpret_cast<interp::Neighbors*>(base + layout.nb),
                                 reinterpret_cast<interp::PassTable*>(base + layout.passes)};
  const uint64_t stride = uint64_t{gridDim.x} * g.tiles_per_block;
  for (uint64_t i = uint64_t{blockIdx.x} * g.tiles_per_block + threadIdx.x / g.tile_threads;
       i < span.total; i += stride) {
    const uint64_t t = span.Tile(g, static_cast<uint32_t>(i));
    interp::DecodeTileDirect<T>(sb, g, headers, entries, far, boxes, t, args, anchor_w, out, sm);
  }
}

// 32 registers for 8 blocks of 256 threads an SM (40 bytes spilled; 44
// unbounded, 5 blocks): on the H100 a 1 GiB decode's tiles ran 5-7 % faster
// at 6 blocks than at 5, and 3-4 % faster again at 8.
template <typename T>
__global__ void __launch_bounds__(kInterpBlockThreads, 8)
    DecodeTilesDirectKernel(Geometry g, const KeyHeader* headers, const uint32_t* entries,
                            const uint32_t* far, const uint64_t* boxes, interp::DirectArgs args,
                            const T* anchor_w, T* out, SubLayout layout, interp::TileSpan span) {
  DecodeDirectTiles<T>(g, headers, entries, far, boxes, args, anchor_w, out, layout, span);
}

// Decode batches' tiles (LaunchInterpDecodeBatch; their anchors above):
// frame blockIdx.y, every tile (`all`).
// Unbounded (54 registers, 4 blocks an SM): bounded to 32 registers it
// spills 40 bytes, and small batches showed no clear gain on the H100 (one
// run each: the decode stage of 8 arrays of 256 KiB 15 % slower, of 32
// arrays 9 % faster).
template <typename T>
__global__ void __launch_bounds__(kInterpBlockThreads)
    DecodeTilesBatchKernel(Geometry g, const KeyHeader* headers, const uint32_t* entries,
                           const uint32_t* far, const uint64_t* boxes,
                           const InterpDecodeFrame* frames,
                           const uint32_t* tile_start, uint32_t* anchor_zeros, const T* anchor_w,
                           SubLayout layout, interp::TileSpan all) {
  const uint64_t f = blockIdx.y;
  const InterpDecodeFrame& fr = frames[f];
  DecodeDirectTiles<T>(g, headers, entries, far, boxes, FrameArgs(fr, tile_start, anchor_zeros + f),
                       anchor_w + f * g.num_tiles, static_cast<T*>(fr.output), layout, all);
}

// ---------------------------------------------------------------------------
// Host side.

// The scratch block's arrays; Carve runs once to measure, once to hand out.
struct Scratch {
  KeyHeader* headers = nullptr;
  uint32_t* entries = nullptr;
  uint32_t* far = nullptr;  // FarEntry, beside the far-face entries
  uint64_t* boxes = nullptr;
  uint32_t* tile_start = nullptr;
  uint32_t* counts = nullptr;  // per tile, with a fill mask (then scanned)
  int32_t* q = nullptr;
  void* anchor_w = nullptr;
  void* cub_temp = nullptr;
  // Encoding.
  uint8_t* quantized = nullptr;
  int32_t* placeholder = nullptr;
  uint16_t* anchor_sym = nullptr;
  uint32_t* flag = nullptr;
  uint32_t* at = nullptr;
  int32_t* residual = nullptr;
  uint32_t* raw = nullptr;  // a batch's scans before RebaseKernel
  // Decoding.
  uint16_t* sym_elem = nullptr;
  uint32_t* anchor_zeros = nullptr;
};

// `frames`: an encoding batch's (decoding takes one); each frame has its own
// per-anchor arrays, one after another, and shares the key tables (and the
// tile starts, without a fill mask). `cub_bytes`: for a scan over every
// frame's num_tiles + 1 entries.
Scratch Carve(const InterpPlan& plan, bool decode, WorkspaceCarver& c, uint64_t frames,
              size_t cub_bytes) {
  const Geometry& g = plan.geo;
  const uint64_t tiles = g.num_tiles;
  const uint64_t f = frames;
  Scratch s;
  s.headers = c.Take<KeyHeader>(interp::kMaxKeys);
  s.entries = c.Take<uint32_t>(plan.table_entries);
  s.far = c.Take<uint32_t>(plan.table_entries);
  s.boxes = c.Take<uint64_t>(plan.box_entries);
  s.tile_start = c.Take<uint32_t>((tiles + 1) * (plan.has_fill ? f : 1));
  if (plan.has_fill) s.counts = c.Take<uint32_t>((tiles + 1) * f);
  s.q = c.Take<int32_t>(tiles * f);
  s.anchor_w = c.Take<uint8_t>(tiles * plan.elem_size * f);
  s.cub_temp = c.Take<uint8_t>(cub_bytes);
  if (!decode) {
    s.quantized = c.Take<uint8_t>(tiles * f);
    s.placeholder = c.Take<int32_t>(g.num_anchor_blocks * f);
    s.anchor_sym = c.Take<uint16_t>(tiles * f);
    s.flag = c.Take<uint32_t>((tiles + 1) * f);
    s.at = c.Take<uint32_t>((tiles + 1) * f);
    s.residual = c.Take<int32_t>(tiles * f);
    if (f > 1) s.raw = c.Take<uint32_t>((tiles + 1) * f);
  } else {
    s.sym_elem = c.Take<uint16_t>(plan.decode_direct ? 0 : g.n);
    s.anchor_zeros = c.Take<uint32_t>(f);
  }
  return s;
}

// CUB's scratch for a scan over `frames` frames' num_tiles + 1 entries.
cudaError_t BatchCubBytes(const InterpPlan& plan, uint64_t frames, size_t* bytes) {
  if (frames == 1) {
    *bytes = plan.cub_bytes;
    return cudaSuccess;
  }
  return cub::DeviceScan::ExclusiveSum(nullptr, *bytes, static_cast<uint32_t*>(nullptr),
                                       static_cast<uint32_t*>(nullptr),
                                       (plan.geo.num_tiles + 1) * frames);
}

template <typename Kernel>
cudaError_t AllowShared(Kernel kernel, size_t bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(bytes));
}

uint32_t TileGrid(const Geometry& g) { return GridFor(g.num_tiles, g.tiles_per_block); }
// The geometry the encoder's tile kernel runs with: its own launch policy.
Geometry ForEncoding(const Geometry& g) {
  Geometry e = g;
  e.tile_threads = g.encode_tile_threads;
  e.tiles_per_block = g.encode_tiles_per_block;
  return e;
}
uint32_t TileBlockThreads(const Geometry& g) { return g.tile_threads * g.tiles_per_block; }
uint32_t SpanGrid(const Geometry& g, const interp::TileSpan& span) {
  return GridFor(span.total, g.tiles_per_block);
}

// The key headers (computed here, passed by value), their pass entries and
// their box tables.
cudaError_t LaunchTables(const Geometry& g, const Scratch& s, cudaStream_t stream) {
  HeaderTable table;
  interp::ComputeHeaders(g, table.h);
  CopyHeadersKernel<<<1, 256, 0, stream>>>(table, s.headers);
  EntriesKernel<<<dim3(std::max<uint32_t>(g.num_passes, 1), interp::kMaxKeys), kSmallThreads, 0,
                  stream>>>(g, s.headers, s.entries, s.far);
  BoxesKernel<<<dim3(GridFor(g.box_volume, kSmallThreads), interp::kMaxKeys), kSmallThreads, 0,
                stream>>>(g, s.headers, s.boxes);
  return cudaGetLastError();
}

// Tables and tile starts, as decoding begins (encoding does the same for a
// batch: EncodeT).
absl::Status LaunchCommon(const InterpPlan& plan, const uint8_t* fill_mask, const Scratch& s,
                          cudaStream_t stream) {
  const Geometry& g = plan.geo;
  CUDA_RETURN_IF_ERROR(LaunchTables(g, s, stream));
  if (!plan.has_fill) {
    StartsKernel<<<GridFor(g.num_tiles + 1, kSmallThreads), kSmallThreads, 0, stream>>>(
        g, s.tile_start);
    CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return absl::OkStatus();
  }
  const SubLayout l = LayoutFor(TileKernel::kCount, g, plan.elem_size, true);
  const size_t shared = size_t{l.bytes} * g.tiles_per_block;
  CountKernel<<<TileGrid(g), TileBlockThreads(g), shared, stream>>>(g, s.headers, fill_mask,
                                                                    s.counts, l.bytes, 0, 0);
  CUDA_RETURN_IF_ERROR(cudaGetLastError());
  size_t temp = plan.cub_bytes;
  CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(s.cub_temp, temp, s.counts, s.tile_start,
                                                     g.num_tiles + 1, stream));
  return absl::OkStatus();
}

// Exclusive sums of `frames` frames' num_tiles + 1 entries each, frame by
// frame: one scan over all of them, rebased per frame (one frame: directly).
absl::Status ScanFrames(const InterpPlan& plan, uint64_t frames, const Scratch& s,
                        size_t cub_bytes, const uint32_t* in, uint32_t* out,
                        cudaStream_t stream) {
  const uint64_t per_frame = plan.geo.num_tiles + 1;
  size_t temp = cub_bytes;
  CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(s.cub_temp, temp, in, frames == 1 ? out : s.raw,
                                                     per_frame * frames, stream));
  if (frames > 1) {
    RebaseKernel<<<dim3(GridFor(per_frame, kSmallThreads), static_cast<uint32_t>(frames)),
                   kSmallThreads, 0, stream>>>(s.raw, out, per_frame);
    CUDA_RETURN_IF_ERROR(cudaGetLastError());
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status EncodeT(const InterpPlan& plan, const InterpEncodeBatch& batch, const Scratch& s,
                     size_t cub_bytes, cudaStream_t stream) {
  const Geometry& g = plan.geo;
  const uint32_t frames = batch.frames;
  const T* x = static_cast<const T*>(batch.input);
  const uint8_t* fill = batch.fill_mask;
  const InterpEncodeOutputs& out = batch.out;
  BatchStep step;
  step.x = batch.input_stride / sizeof(T);
  step.fill = batch.fill_stride;
  step.symbols = batch.symbols_stride;
  step.verbatim = batch.verbatim_stride;
  step.outliers = batch.outlier_stride;
  step.counts = batch.counts_stride;
  step.tile_start = plan.has_fill ? g.num_tiles + 1 : 0;
  step.segments = batch.segments;
  step.items = batch.items;
  const bool per_frame = batch.segments != nullptr;

  // Tables and tile starts.
  CUDA_RETURN_IF_ERROR(LaunchTables(g, s, stream));
  if (!plan.has_fill) {
    StartsKernel<<<GridFor(g.num_tiles + 1, kSmallThreads), kSmallThreads, 0, stream>>>(
        g, s.tile_start);
    CUDA_RETURN_IF_ERROR(cudaGetLastError());
  } else {
    const SubLayout l = LayoutFor(TileKernel::kCount, g, plan.elem_size, true);
    const size_t shared = size_t{l.bytes} * g.tiles_per_block;
    CountKernel<<<dim3(TileGrid(g), frames), TileBlockThreads(g), shared, stream>>>(
        g, s.headers, fill, s.counts, l.bytes, step.fill, g.num_tiles + 1);
    CUDA_RETURN_IF_ERROR(cudaGetLastError());
    if (absl::Status st = ScanFrames(plan, frames, s, cub_bytes, s.counts, s.tile_start, stream);
        !st.ok()) {
      return st;
    }
  }

  const uint64_t mask_words = CeilDiv(g.n, 32);
  if (frames == 1) {
    CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(out.verbatim_mask, 0, mask_words * sizeof(uint32_t), stream));
  } else {
    CUDA_RETURN_IF_ERROR(cudaMemset2DAsync(out.verbatim_mask, step.verbatim * sizeof(uint32_t), 0,
                                           mask_words * sizeof(uint32_t), frames, stream));
  }
  T* anchor_w = static_cast<T*>(s.anchor_w);
  const dim3 anchor_grid(GridFor(g.num_tiles, kSmallThreads), frames);
  if (per_frame) {
    AnchorQuantizeKernel<T, true><<<anchor_grid, kSmallThreads, 0, stream>>>(
        g, x, fill, s.q, s.quantized, out.verbatim_mask, step);
  } else {
    AnchorQuantizeKernel<T, false><<<anchor_grid, kSmallThreads, 0, stream>>>(
        g, x, fill, s.q, s.quantized, out.verbatim_mask, step);
  }
  AnchorPlaceholderKernel<<<dim3(GridFor(g.num_anchor_blocks, kSmallThreads), frames),
                            kSmallThreads, 0, stream>>>(g, s.q, s.quantized, s.placeholder);
  if (per_frame) {
    AnchorResidualKernel<T, true><<<anchor_grid, kSmallThreads, 0, stream>>>(
        g, s.q, s.quantized, s.placeholder, anchor_w, s.anchor_sym, s.flag, s.residual, step);
  } else {
    AnchorResidualKernel<T, false><<<anchor_grid, kSmallThreads, 0, stream>>>(
        g, s.q, s.quantized, s.placeholder, anchor_w, s.anchor_sym, s.flag, s.residual, step);
  }
  CUDA_RETURN_IF_ERROR(cudaGetLastError());
  if (absl::Status st = ScanFrames(plan, frames, s, cub_bytes, s.flag, s.at, stream); !st.ok()) {
    return st;
  }
  AnchorOutlierKernel<<<anchor_grid, kSmallThreads, 0, stream>>>(
      g, s.flag, s.at, s.residual, out.outlier_index, out.outlier_residual, s.tile_start,
      out.counts, step);
  CUDA_RETURN_IF_ERROR(cudaGetLastError());

  const interp::EncodeTileArgs<T> args{
      interp::BoundOf(g), x, fill, s.tile_start, anchor_w, s.anchor_sym, out.symbols,
      out.verbatim_mask};
  const Geometry ge = ForEncoding(g);
  const SubLayout l = LayoutFor(TileKernel::kEncode, ge, sizeof(T), fill != nullptr);
  const size_t shared = size_t{l.bytes} * ge.tiles_per_block;
  const dim3 tile_grid(TileGrid(ge), frames);
  auto launch = [&](auto kernel) -> absl::Status {
    CUDA_RETURN_IF_ERROR(AllowShared(kernel, shared));
    kernel<<<tile_grid, TileBlockThreads(ge), shared, stream>>>(ge, s.headers, s.entries,
                                                                s.boxes, args, l, step);
    return absl::OkStatus();
  };
  absl::Status launched =
      fill != nullptr ? (per_frame ? launch(EncodeTilesKernel<T, true, true>)
                                   : launch(EncodeTilesKernel<T, true, false>))
                      : (per_frame ? launch(EncodeTilesKernel<T, false, true>)
                                   : launch(EncodeTilesKernel<T, false, false>));
  if (!launched.ok()) return launched;
  CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

// Without a fill mask: tables and starts, the anchors from their tiles' first
// symbols (S and the outlier count checked once the zeros are counted), then
// the tiles straight from symbol order.
template <typename T>
absl::Status DecodeDirectT(const InterpPlan& plan, const InterpDecodeInputs& in, T* output,
                           const Scratch& s, uint32_t* error, cudaStream_t stream) {
  const Geometry& g = plan.geo;
  const interp::TileSpan span = in.tiles != nullptr ? *in.tiles : interp::AllTiles(g);
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(error, 0, sizeof(uint32_t), stream));
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(s.anchor_zeros, 0, sizeof(uint32_t), stream));
  if (absl::Status st = LaunchCommon(plan, nullptr, s, stream); !st.ok()) return st;
  const interp::DirectArgs args{in.symbols,   in.num_symbols, s.tile_start,
                                error,        s.anchor_zeros, g.step};
  const uint32_t anchor_grid = GridFor(g.num_tiles, kSmallThreads);
  AnchorLoadDirectKernel<<<anchor_grid, kSmallThreads, 0, stream>>>(g, args, s.q);
  if (in.num_outliers > 0) {
    ApplyOutliersDirectKernel<<<GridFor(in.num_outliers, kSmallThreads), kSmallThreads, 0,
                                stream>>>(g, in.outlier_index, in.outlier_residual,
                                          in.num_outliers, args, s.q);
  }
  DecodeChecksKernel<<<1, 1, 0, stream>>>(g, s.tile_start, in.num_symbols, s.anchor_zeros,
                                          in.num_outliers, error);
  for (int d = interp::kIDims - 1; d >= 0; --d) {
    if (g.tiles[d] > 1 && g.ablock[d] > 1) {
      AnchorPrefixKernel<<<anchor_grid, kSmallThreads, 0, stream>>>(g, d, s.q);
    }
  }
  T* anchor_w = static_cast<T*>(s.anchor_w);
  AnchorDequantizeKernel<T><<<anchor_grid, kSmallThreads, 0, stream>>>(g, s.q, anchor_w);
  CUDA_RETURN_IF_ERROR(cudaGetLastError());

  const SubLayout l = LayoutFor(TileKernel::kDecodeDirect, g, sizeof(T), false);
  const size_t shared = size_t{l.bytes} * g.tiles_per_block;
  CUDA_RETURN_IF_ERROR(AllowShared(DecodeTilesDirectKernel<T>, shared));
  DecodeTilesDirectKernel<T><<<SpanGrid(g, span), TileBlockThreads(g), shared, stream>>>(
      g, s.headers, s.entries, s.far, s.boxes, args, anchor_w, output, l, span);
  CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

template <typename T>
absl::Status DecodeT(const InterpPlan& plan, const InterpDecodeInputs& in, T* output,
                     const Scratch& s, uint32_t* error, cudaStream_t stream) {
  if (plan.decode_direct) return DecodeDirectT(plan, in, output, s, error, stream);
  const Geometry& g = plan.geo;
  const interp::TileSpan span = in.tiles != nullptr ? *in.tiles : interp::AllTiles(g);
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(error, 0, sizeof(uint32_t), stream));
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(s.anchor_zeros, 0, sizeof(uint32_t), stream));
  if (absl::Status st = LaunchCommon(plan, in.fill_mask, s, stream); !st.ok()) return st;

  const interp::ScatterArgs args{in.symbols, in.num_symbols, in.fill_mask,  s.tile_start,
                                 s.sym_elem, error,          s.anchor_zeros};
  const SubLayout ls = LayoutFor(TileKernel::kScatter, g, sizeof(T), plan.has_fill);
  const size_t scatter_shared = size_t{ls.bytes} * g.tiles_per_block;
  if (plan.has_fill) {
    CUDA_RETURN_IF_ERROR(AllowShared(ScatterKernel<true>, scatter_shared));
    ScatterKernel<true><<<TileGrid(g), TileBlockThreads(g), scatter_shared, stream>>>(
        g, s.headers, s.entries, args, ls);
  } else {
    CUDA_RETURN_IF_ERROR(AllowShared(ScatterKernel<false>, scatter_shared));
    ScatterKernel<false><<<TileGrid(g), TileBlockThreads(g), scatter_shared, stream>>>(
        g, s.headers, s.entries, args, ls);
  }
  DecodeChecksKernel<<<1, 1, 0, stream>>>(g, s.tile_start, in.num_symbols, s.anchor_zeros,
                                          in.num_outliers, error);
  CUDA_RETURN_IF_ERROR(cudaGetLastError());

  T* anchor_w = static_cast<T*>(s.anchor_w);
  const uint32_t anchor_grid = GridFor(g.num_tiles, kSmallThreads);
  AnchorLoadKernel<<<anchor_grid, kSmallThreads, 0, stream>>>(g, s.sym_elem, s.q);
  if (in.num_outliers > 0) {
    ApplyOutliersKernel<<<GridFor(in.num_outliers, kSmallThreads), kSmallThreads, 0, stream>>>(
        g, in.outlier_index, in.outlier_residual, in.num_outliers, s.sym_elem, s.q, error);
  }
  for (int d = interp::kIDims - 1; d >= 0; --d) {
    if (g.tiles[d] > 1 && g.ablock[d] > 1) {
      AnchorPrefixKernel<<<anchor_grid, kSmallThreads, 0, stream>>>(g, d, s.q);
    }
  }
  AnchorDequantizeKernel<T><<<anchor_grid, kSmallThreads, 0, stream>>>(g, s.q, anchor_w);
  CUDA_RETURN_IF_ERROR(cudaGetLastError());

  const SubLayout ld = LayoutFor(TileKernel::kDecode, g, sizeof(T), plan.has_fill);
  const size_t shared = size_t{ld.bytes} * g.tiles_per_block;
  CUDA_RETURN_IF_ERROR(AllowShared(DecodeTilesKernel<T>, shared));
  DecodeTilesKernel<T><<<SpanGrid(g, span), TileBlockThreads(g), shared, stream>>>(
      g, s.headers, s.entries, s.boxes, s.sym_elem, anchor_w, output, ld, span);
  CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

uint32_t NextPowerOfTwo(uint64_t x) {
  uint32_t p = 1;
  while (p < x && p < (1u << 31)) p <<= 1;
  return p;
}

}  // namespace

InterpSharedBytes InterpShared(const interp::Geometry& g, int elem_size, bool has_fill) {
  const uint32_t e = static_cast<uint32_t>(elem_size);
  InterpSharedBytes b;
  b.encode =
      size_t{LayoutFor(TileKernel::kEncode, g, e, has_fill).bytes} * g.encode_tiles_per_block;
  b.decode = size_t{LayoutFor(TileKernel::kDecode, g, e, has_fill).bytes} * g.tiles_per_block;
  b.scatter = size_t{LayoutFor(TileKernel::kScatter, g, e, has_fill).bytes} * g.tiles_per_block;
  b.count = size_t{LayoutFor(TileKernel::kCount, g, e, has_fill).bytes} * g.tiles_per_block;
  return b;
}

absl::StatusOr<interp::Geometry> MakeInterpGeometry(const InterpParams& p, bool has_fill,
                                                    size_t max_shared_bytes) {
  if (absl::Status s = ValidateInterpParams(p); !s.ok()) return s;
  interp::Geometry g{};
  const int rank = static_cast<int>(p.shape.size());
  const int pad = interp::kIDims - rank;
  for (int d = 0; d < interp::kIDims; ++d) {
    g.dims[d] = 1;
    g.ablock[d] = 1;
  }
  g.k = 0;
  for (int i = 0; i < rank; ++i) {
    const int d = pad + i;
    g.dims[d] = p.shape[i];
    g.ablock[d] = interp::kAnchorBlock;
    if (p.tile[i] > 1) {
      g.idim[g.k++] = static_cast<uint32_t>(d);
      g.E = p.tile[i];
    }
  }
  g.log2E = 0;
  while ((1u << g.log2E) < g.E) ++g.log2E;
  g.num_passes = g.log2E * g.k;
  if (g.num_passes > interp::kMaxPasses) {
    return absl::UnimplementedError("interpolation on the GPU: too many passes");
  }
  g.stride[interp::kIDims - 1] = 1;
  for (int d = interp::kIDims - 2; d >= 0; --d) g.stride[d] = g.stride[d + 1] * g.dims[d + 1];
  g.n = 1;
  g.num_tiles = 1;
  g.num_anchor_blocks = 1;
  for (int d = 0; d < interp::kIDims; ++d) {
    g.tiles[d] = g.dims[d];
    for (uint32_t e = 0; e < g.k; ++e) {
      if (g.idim[e] == static_cast<uint32_t>(d)) g.tiles[d] = CeilDiv(g.dims[d], g.E);
    }
    g.ablocks[d] = CeilDiv(g.tiles[d], g.ablock[d]);
    g.n *= g.dims[d];
    g.num_tiles *= g.tiles[d];
    g.num_anchor_blocks *= g.ablocks[d];
  }
  g.astride[interp::kIDims - 1] = 1;
  for (int d = interp::kIDims - 2; d >= 0; --d) g.astride[d] = g.astride[d + 1] * g.tiles[d + 1];
  uint64_t box = 1, own = 1;
  for (uint32_t e = 0; e < g.k; ++e) {
    const uint64_t extent = g.dims[g.idim[e]];
    g.pitch[e] = static_cast<uint32_t>(std::min<uint64_t>(g.E + 1, extent));
    box *= g.pitch[e];
    own *= std::min<uint64_t>(g.E, extent);
    if (box > interp::kMaxBoxVolume) {
      return absl::UnimplementedError(
          "interpolation on the GPU: a tile's closed box exceeds 65536 elements");
    }
  }
  for (uint32_t e = g.k; e < static_cast<uint32_t>(interp::kIDims); ++e) g.pitch[e] = 1;
  for (uint32_t e = 0; e < static_cast<uint32_t>(interp::kIDims); ++e) {
    uint32_t s = 1;
    for (uint32_t f = e + 1; f < g.k; ++f) s *= g.pitch[f];
    g.bstride[e] = e < g.k ? s : 0;
    g.pitch_div[e].Init(g.pitch[e]);
    g.bstride_div[e].Init(std::max<uint32_t>(s, 1));
  }
  g.box_volume = static_cast<uint32_t>(box);
  g.own_max = static_cast<uint32_t>(own);
  g.radius = static_cast<int32_t>(p.radius);
  g.cubic = p.order == InterpOrder::kCubic ? 1 : 0;
  g.abs_bound = p.abs_bound;
  g.step = p.quant_step;

  // Policy: threads per tile from the tile's size, then as many tiles per
  // block of kInterpBlockThreads as shared memory allows.
  auto threads_for = [&](uint32_t per_thread) {
    return std::clamp<uint32_t>(NextPowerOfTwo(CeilDiv(own, per_thread)), kMinTileThreads,
                                kInterpBlockThreads);
  };
  g.tile_threads = threads_for(kElementsPerThread);
  g.tiles_per_block = kInterpBlockThreads / g.tile_threads;
  g.encode_tile_threads = threads_for(kEncodeElementsPerThread);
  g.encode_tiles_per_block = kInterpBlockThreads / g.encode_tile_threads;
  const int elem = static_cast<int>(DTypeSize(p.dtype));
  for (;;) {
    const InterpSharedBytes b = InterpShared(g, elem, has_fill);
    const bool fits = std::max({b.decode, b.scatter, b.count}) <= max_shared_bytes;
    const bool encode_fits = b.encode <= max_shared_bytes;
    if (fits && encode_fits) break;
    if ((!fits && g.tiles_per_block == 1) || (!encode_fits && g.encode_tiles_per_block == 1)) {
      return absl::UnimplementedError(
          "interpolation on the GPU: a tile's closed box does not fit shared memory");
    }
    if (!fits) g.tiles_per_block /= 2;
    if (!encode_fits) g.encode_tiles_per_block /= 2;
  }
  return g;
}

namespace {

// A plan depends on the device and on everything of the parameters but the
// bound (WithBound): what the cache below keys on.
struct PlanKey {
  int device;
  DType dtype;
  std::vector<uint64_t> shape;
  std::array<uint16_t, kMaxDims> tile;
  InterpOrder order;
  uint32_t radius;
  bool has_fill;
  auto Tied() const { return std::tie(device, dtype, shape, tile, order, radius, has_fill); }
  bool operator<(const PlanKey& o) const { return Tied() < o.Tied(); }
};

absl::StatusOr<InterpPlan> PlanInterpOn(int device, const InterpParams& params, bool has_fill) {
  int shared = 0;
  CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  absl::StatusOr<interp::Geometry> g = MakeInterpGeometry(params, has_fill, static_cast<size_t>(shared));
  if (!g.ok()) return g.status();
  InterpPlan plan;
  plan.geo = *g;
  plan.elem_size = static_cast<int>(DTypeSize(params.dtype));
  plan.has_fill = has_fill;
  // The direct decoder's box shares its tile's shared memory with its
  // Neighbors; where that does not fit, the scatter path decodes.
  plan.decode_direct =
      !has_fill && size_t{LayoutFor(TileKernel::kDecodeDirect, plan.geo, static_cast<uint32_t>(plan.elem_size), false)
                                  .bytes} * plan.geo.tiles_per_block <=
                       static_cast<size_t>(shared);
  KeyHeader headers[interp::kMaxKeys];
  plan.table_entries = interp::ComputeHeaders(plan.geo, headers, &plan.box_entries);
  CUDA_RETURN_IF_ERROR(
      cub::DeviceScan::ExclusiveSum(nullptr, plan.cub_bytes, static_cast<uint32_t*>(nullptr),
                                    static_cast<uint32_t*>(nullptr), plan.geo.num_tiles + 1));
  WorkspaceCarver measure_encode, measure_decode;
  Carve(plan, false, measure_encode, 1, plan.cub_bytes);
  Carve(plan, true, measure_decode, 1, plan.cub_bytes);
  plan.encode_scratch = measure_encode.size();
  plan.decode_scratch = measure_decode.size();
  return plan;
}

}  // namespace

// Plans are kept: a batch of small arrays plans the same few shapes several
// times a call (sizing the workspace, the survey, the chosen frames), and a
// service's calls repeat them; planning was ~3 us of host time each.
absl::StatusOr<InterpPlan> PlanInterp(const InterpParams& params, bool has_fill) {
  if (absl::Status s = ValidateInterpParams(params); !s.ok()) return s;
  int device = 0;
  CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  PlanKey key{device,       params.dtype,  params.shape,   params.tile,
              params.order, params.radius, has_fill};
  static std::mutex mu;
  static std::map<PlanKey, InterpPlan>* cache = new std::map<PlanKey, InterpPlan>();
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache->find(key); it != cache->end()) {
      return WithBound(it->second, params.abs_bound, params.quant_step);
    }
  }
  auto plan = PlanInterpOn(device, params, has_fill);
  if (!plan.ok()) return plan.status();
  std::lock_guard<std::mutex> lock(mu);
  constexpr size_t kMostPlans = 256;  // a bound on memory, not a working set
  if (cache->size() >= kMostPlans) cache->clear();
  cache->emplace(std::move(key), *plan);
  return plan;
}

absl::StatusOr<size_t> InterpEncodeBatchScratch(const InterpPlan& plan, uint32_t frames) {
  if (frames == 0 || frames > kMaxInterpBatchFrames) {
    return absl::InvalidArgumentError("interpolation: batch of 0 or too many frames");
  }
  size_t cub_bytes = 0;
  CUDA_RETURN_IF_ERROR(BatchCubBytes(plan, frames, &cub_bytes));
  WorkspaceCarver measure;
  Carve(plan, false, measure, frames, cub_bytes);
  return measure.size();
}

absl::Status LaunchInterpEncodeBatch(const InterpPlan& plan, const InterpEncodeBatch& batch,
                                     void* scratch, cudaStream_t stream) {
  if ((batch.fill_mask != nullptr) != plan.has_fill) {
    return absl::InvalidArgumentError("interpolation: fill mask and plan disagree");
  }
  if (batch.frames == 0 || batch.frames > kMaxInterpBatchFrames) {
    return absl::InvalidArgumentError("interpolation: batch of 0 or too many frames");
  }
  if ((batch.segments != nullptr) != (batch.items != nullptr)) {
    return absl::InvalidArgumentError("interpolation: segments without items, or items alone");
  }
  if (batch.input_stride % plan.elem_size != 0) {
    return absl::InvalidArgumentError("interpolation: input stride not whole elements");
  }
  size_t cub_bytes = 0;
  CUDA_RETURN_IF_ERROR(BatchCubBytes(plan, batch.frames, &cub_bytes));
  WorkspaceCarver carver(scratch);
  const Scratch s = Carve(plan, false, carver, batch.frames, cub_bytes);
  if (plan.elem_size == 4) return EncodeT<float>(plan, batch, s, cub_bytes, stream);
  return EncodeT<double>(plan, batch, s, cub_bytes, stream);
}

InterpPlan WithBound(InterpPlan plan, double abs_bound, double quant_step) {
  plan.geo.abs_bound = abs_bound;
  plan.geo.step = quant_step;
  return plan;
}

absl::Status LaunchInterpEncode(const InterpPlan& plan, const void* input, const uint8_t* fill_mask,
                                void* scratch, const InterpEncodeOutputs& out,
                                cudaStream_t stream) {
  InterpEncodeBatch batch;
  batch.input = input;
  batch.fill_mask = fill_mask;
  batch.out = out;
  return LaunchInterpEncodeBatch(plan, batch, scratch, stream);
}

template <typename T>
absl::Status DecodeBatchT(const InterpPlan& plan, const InterpDecodeFrame* frames, uint32_t count,
                          uint64_t max_outliers, const Scratch& s, cudaStream_t stream) {
  const interp::Geometry& g = plan.geo;
  ZeroBatchKernel<<<GridFor(count, kSmallThreads), kSmallThreads, 0, stream>>>(frames, count,
                                                                              s.anchor_zeros);
  if (absl::Status st = LaunchCommon(plan, nullptr, s, stream); !st.ok()) return st;
  const dim3 anchor_grid(GridFor(g.num_tiles, kSmallThreads), count);
  AnchorLoadBatchKernel<<<anchor_grid, kSmallThreads, 0, stream>>>(g, frames, s.tile_start,
                                                                    s.anchor_zeros, s.q);
  if (max_outliers > 0) {
    ApplyOutliersBatchKernel<<<dim3(GridFor(max_outliers, kSmallThreads), count), kSmallThreads,
                               0, stream>>>(g, frames, s.tile_start, s.anchor_zeros, s.q);
  }
  DecodeChecksBatchKernel<<<GridFor(count, kSmallThreads), kSmallThreads, 0, stream>>>(
      g, frames, count, s.tile_start, s.anchor_zeros);
  for (int d = interp::kIDims - 1; d >= 0; --d) {
    if (g.tiles[d] > 1 && g.ablock[d] > 1) {
      AnchorPrefixBatchKernel<<<anchor_grid, kSmallThreads, 0, stream>>>(g, d, s.q);
    }
  }
  T* anchor_w = static_cast<T*>(s.anchor_w);
  AnchorDequantizeBatchKernel<T><<<anchor_grid, kSmallThreads, 0, stream>>>(g, frames, s.q,
                                                                            anchor_w);
  CUDA_RETURN_IF_ERROR(cudaGetLastError());
  const SubLayout l = LayoutFor(TileKernel::kDecodeDirect, g, sizeof(T), false);
  const size_t shared = size_t{l.bytes} * g.tiles_per_block;
  CUDA_RETURN_IF_ERROR(AllowShared(DecodeTilesBatchKernel<T>, shared));
  DecodeTilesBatchKernel<T><<<dim3(TileGrid(g), count), TileBlockThreads(g), shared, stream>>>(
      g, s.headers, s.entries, s.far, s.boxes, frames, s.tile_start, s.anchor_zeros, anchor_w, l,
      interp::AllTiles(g));
  CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

absl::Status LaunchInterpDecode(const InterpPlan& plan, const InterpDecodeInputs& in, void* output,
                                void* scratch, uint32_t* error, cudaStream_t stream) {
  if ((in.fill_mask != nullptr) != plan.has_fill) {
    return absl::InvalidArgumentError("interpolation: fill mask and plan disagree");
  }
  WorkspaceCarver carver(scratch);
  const Scratch s = Carve(plan, true, carver, 1, plan.cub_bytes);
  if (plan.elem_size == 4) {
    return DecodeT(plan, in, static_cast<float*>(output), s, error, stream);
  }
  return DecodeT(plan, in, static_cast<double*>(output), s, error, stream);
}

absl::StatusOr<size_t> InterpDecodeBatchScratch(const InterpPlan& plan, uint32_t count) {
  if (count == 0 || count > kMaxInterpBatchFrames) {
    return absl::InvalidArgumentError("interpolation: decode batch of 0 or too many frames");
  }
  WorkspaceCarver measure;
  Carve(plan, true, measure, count, plan.cub_bytes);
  return measure.size();
}

absl::Status LaunchInterpDecodeBatch(const InterpPlan& plan, const InterpDecodeFrame* frames,
                                     uint32_t count, uint64_t max_outliers, void* scratch,
                                     cudaStream_t stream) {
  if (plan.has_fill || !plan.decode_direct) {
    return absl::InvalidArgumentError("interpolation: a decode batch takes direct frames only");
  }
  if (count == 0 || count > kMaxInterpBatchFrames) {
    return absl::InvalidArgumentError("interpolation: decode batch of 0 or too many frames");
  }
  WorkspaceCarver carver(scratch);
  const Scratch s = Carve(plan, true, carver, count, plan.cub_bytes);
  if (plan.elem_size == 4) return DecodeBatchT<float>(plan, frames, count, max_outliers, s, stream);
  return DecodeBatchT<double>(plan, frames, count, max_outliers, s, stream);
}

}  // namespace ebzip::gpu
