// Decompression's element side: outlier residuals into place, inverse
// Lorenzo and dequantization one block at a time in shared memory, then fill
// runs and verbatim values over the top (FORMAT.md §8), each checked as the
// CPU decoder checks it.
#include "codec/quantize_point.h"
#include "gpu/block_group.cuh"
#include "gpu/device_util.cuh"
#include "gpu/kernels.h"

namespace ebzip::gpu {
namespace {

__device__ uint32_t SegmentOf(const Segment* s, uint32_t n, uint64_t k, uint64_t Segment::*base) {
  return FindSegment(n, k, [s, base](uint32_t i) { return s[i].*base; });
}

__global__ void ScatterOutliersKernel(const Segment* segments, uint32_t num_segments,
                                      uint64_t total, const Item* items, const uint16_t* symbols,
                                      int32_t* deltas, DeviceStatus* status) {
  const uint64_t k = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (k >= total) return;
  const uint32_t s = SegmentOf(segments, num_segments, k, &Segment::outlier_base);
  const Segment& seg = segments[s];
  // Interpolation frames' outliers: gpu/interp_frame_kernels.h.
  if (seg.predictor != format::kPredictorLorenzo) return;
  const uint64_t j = k - seg.outlier_base;
  const uint8_t* sec = items[seg.item].archive + seg.section_offset[format::kOutliers];
  const uint32_t index = LoadBytes<uint32_t>(sec + 4 * j);
  if (index >= seg.geo.n || (j > 0 && index <= LoadBytes<uint32_t>(sec + 4 * (j - 1))) ||
      symbols[seg.symbol_base + index] != 0) {
    ReportError(status, kErrOutliers, s);
    return;
  }
  deltas[seg.symbol_base + index] = LoadBytes<int32_t>(sec + 4 * (seg.outlier_count + j));
}

__global__ void CheckOutlierCountKernel(const Segment* segments, uint32_t num_segments,
                                        const uint64_t* zero_symbols, DeviceStatus* status) {
  const uint32_t s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s < num_segments && !segments[s].partial && zero_symbols[s] != segments[s].outlier_count) {
    ReportError(status, kErrOutliers, s);
  }
}

// Inverse Lorenzo and dequantization of one Lorenzo block, of any shape.
template <typename T>
__device__ void ReconstructBlock(const Segment& seg, uint64_t b, const uint16_t* symbols,
                                 const int32_t* deltas, uint32_t* q) {
  T* out = static_cast<T*>(seg.output);
  const int32_t radius = static_cast<int32_t>(seg.radius);
  BlockView view;
  view.Init(seg.geo, b);
  const uint32_t v = view.volume;
  __syncthreads();  // the previous block's reads are done
  for (uint32_t j = threadIdx.x; j < v; j += kThreads) {
    uint32_t c[kDims];
    view.Coords(j, c);
    const uint64_t i = seg.symbol_base + view.Index(c);
    const uint16_t sym = symbols[i];
    q[j] = static_cast<uint32_t>(sym != 0 ? static_cast<int32_t>(sym) - radius : deltas[i]);
  }
  // Prefix sums along each dimension, wrapping like the CPU decoder.
  for (int d = kDims - 1; d >= 0; --d) {
    const uint32_t e = view.extent[d];
    if (e <= 1) continue;
    __syncthreads();
    const uint32_t stride = view.InnerStride(d);
    const uint32_t lines = v / e;
    for (uint32_t line = threadIdx.x; line < lines; line += kThreads) {
      // Line start: outer index * (e * stride) + inner offset.
      const uint32_t first = (line / stride) * e * stride + line % stride;
      uint32_t acc = q[first];
      for (uint32_t k = 1; k < e; ++k) {
        acc += q[first + k * stride];
        q[first + k * stride] = acc;
      }
    }
  }
  __syncthreads();
  const double step = seg.quant_step;
  for (uint32_t j = threadIdx.x; j < v; j += kThreads) {
    uint32_t c[kDims];
    view.Coords(j, c);
    out[view.Index(c)] = Dequantize<T>(static_cast<int32_t>(q[j]), step);
  }
}

// Prefix sums along dimension D (1-3) of the n blocks of a group: a thread
// per line, lines in distinct banks (FixedBlock's padded rows).
template <class Shape, int D>
__device__ void PrefixAlong(uint32_t n, uint32_t* q) {
  constexpr uint32_t kE1 = Shape::kE1, kE2 = Shape::kE2, kE3 = Shape::kE3;
  constexpr uint32_t extent = D == 1 ? kE1 : D == 2 ? kE2 : kE3;
  if constexpr (extent > 1) {
    constexpr uint32_t kRow = Shape::kRowWords;  // rows are whole x-lines here (Row == E3)
    constexpr uint32_t kPlane = kE2 * kRow;
    constexpr uint32_t step = D == 1 ? kPlane : D == 2 ? kRow : 1;
    constexpr uint32_t per_block = Shape::kVolume / extent;
    for (uint32_t line = threadIdx.x; line < n * per_block; line += kThreads) {
      const uint32_t blk = line / per_block;
      const uint32_t rest = line % per_block;
      // The line's other two coordinates, outer first.
      const uint32_t start = D == 1   ? rest / kE3 * kRow + rest % kE3
                             : D == 2 ? rest / kE3 * kPlane + rest % kE3
                                      : rest * kRow;
      uint32_t* p = q + blk * Shape::kBlockWords + start;
      uint32_t acc = p[0];
#pragma unroll
      for (uint32_t k = 1; k < extent; ++k) {
        acc += p[k * step];
        p[k * step] = acc;
      }
    }
    __syncthreads();
  }
}

// A 1-D block's prefix sum: a warp per block, 8 elements per lane, then a
// scan of the lanes' totals.
template <class Shape>
__device__ void PrefixOneDimension(uint32_t n, uint32_t* q) {
  static_assert(Shape::kE3 == 32 * 8 && Shape::kRowWords == 9);
  const uint32_t lane = threadIdx.x % 32;
  for (uint32_t blk = threadIdx.x / 32; blk < n; blk += kThreads / 32) {
    uint32_t* p = q + blk * Shape::kBlockWords + lane * Shape::kRowWords;
    uint32_t v[8];
    uint32_t acc = 0;
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = acc += p[k];
    uint32_t scan = acc;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const uint32_t up = __shfl_up_sync(0xFFFFFFFFu, scan, d);
      if (lane >= static_cast<uint32_t>(d)) scan += up;
    }
    const uint32_t before = scan - acc;
#pragma unroll
    for (int k = 0; k < 8; ++k) p[k] = v[k] + before;
  }
  __syncthreads();
}

// The n whole blocks of a group (StartGroup) at once: ReconstructBlock's
// arithmetic with the extents fixed at compile time.
template <typename T, class Shape>
__device__ void ReconstructGroup(const Segment& seg, uint32_t n, const GroupState& st,
                                 const uint64_t* offsets, const uint16_t* symbols,
                                 const int32_t* deltas, uint32_t* q) {
  constexpr uint32_t P = Shape::kPositions;
  const int32_t radius = static_cast<int32_t>(seg.radius);
  uint16_t sym[Shape::kPerThread];
#pragma unroll
  for (uint32_t r = 0; r < Shape::kPerThread; ++r) {
    if (r / P < n) sym[r] = symbols[seg.symbol_base + st.origin[r / P] + offsets[r % P]];
  }
#pragma unroll
  for (uint32_t r = 0; r < Shape::kPerThread; ++r) {
    if (r / P >= n) continue;
    const int32_t v = sym[r] != 0 ? static_cast<int32_t>(sym[r]) - radius
                                  : deltas[seg.symbol_base + st.origin[r / P] + offsets[r % P]];
    q[Shape::Word(r / P, threadIdx.x + r % P * kThreads)] = static_cast<uint32_t>(v);
  }
  __syncthreads();
  if constexpr (Shape::kE1 == 1 && Shape::kE2 == 1) {
    PrefixOneDimension<Shape>(n, q);
  } else {
    PrefixAlong<Shape, 3>(n, q);
    PrefixAlong<Shape, 2>(n, q);
    PrefixAlong<Shape, 1>(n, q);
  }
  T* out = static_cast<T*>(seg.output);
  const double step = seg.quant_step;
#pragma unroll
  for (uint32_t r = 0; r < Shape::kPerThread; ++r) {
    if (r / P >= n) continue;
    const uint32_t v = q[Shape::Word(r / P, threadIdx.x + r % P * kThreads)];
    out[st.origin[r / P] + offsets[r % P]] = Dequantize<T>(static_cast<int32_t>(v), step);
  }
}

template <typename T, class Shape>
__device__ void ReconstructTile(const Segment& seg, uint64_t b_begin, uint64_t b_end,
                                const uint16_t* symbols, const int32_t* deltas, uint32_t* q,
                                GroupState& st) {
  uint64_t offsets[Shape::kPositions];
  PositionOffsets<Shape>(seg.geo, offsets);
  for (uint64_t b = b_begin; b < b_end;) {
    const uint32_t n = StartGroup<Shape>(seg.geo, b, b_end, st);
    if (n > 0) {
      ReconstructGroup<T, Shape>(seg, n, st, offsets, symbols, deltas, q);
      b += n;
    } else {
      ReconstructBlock<T>(seg, b, symbols, deltas, q);
      ++b;
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    ReconstructKernel(const Segment* segments, uint32_t num_segments, const uint16_t* symbols,
                      const int32_t* deltas) {
  __shared__ uint32_t q[kGroupWords > kMaxBlockVolume ? kGroupWords : kMaxBlockVolume];
  __shared__ GroupState st;
  const uint32_t s = SegmentOfTile(segments, num_segments, blockIdx.x);
  const Segment& seg = segments[s];
  if (seg.predictor != format::kPredictorLorenzo) return;  // gpu/interp_kernels.h decodes it
  const uint64_t tile = blockIdx.x - seg.tile_base;
  const uint64_t b_begin = tile * seg.blocks_per_tile;
  const uint64_t b_end = min(seg.geo.num_blocks, b_begin + seg.blocks_per_tile);
  switch (ShapeOf(seg.geo)) {
    case BlockShape::k3D:
      ReconstructTile<T, Block3D>(seg, b_begin, b_end, symbols, deltas, q, st);
      break;
    case BlockShape::k2D:
      ReconstructTile<T, Block2D>(seg, b_begin, b_end, symbols, deltas, q, st);
      break;
    case BlockShape::k1D:
      ReconstructTile<T, Block1D>(seg, b_begin, b_end, symbols, deltas, q, st);
      break;
    case BlockShape::kOther:
      for (uint64_t b = b_begin; b < b_end; ++b) {
        ReconstructBlock<T>(seg, b, symbols, deltas, q);
      }
      break;
  }
}

template <typename T>
__global__ void FillRunsKernel(const Segment* segments, uint32_t num_segments, uint64_t total,
                               const Item* items, DeviceStatus* status) {
  // A warp per run: runs over land can be long.
  const uint64_t k = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32;
  const uint32_t lane = threadIdx.x % 32;
  if (k >= total) return;
  const uint32_t s = SegmentOf(segments, num_segments, k, &Segment::fill_run_base);
  const Segment& seg = segments[s];
  if (seg.fill_coding != format::kFillCodingRuns) return;  // a fill mask's tokens
  const uint64_t j = k - seg.fill_run_base;
  const uint8_t* sec = items[seg.item].archive + seg.section_offset[format::kFillRuns];
  const uint64_t start = LoadBytes<uint32_t>(sec + 8 * j);
  const uint64_t length = LoadBytes<uint32_t>(sec + 8 * j + 4);
  const uint64_t covered = j > 0 ? uint64_t{LoadBytes<uint32_t>(sec + 8 * (j - 1))} +
                                       LoadBytes<uint32_t>(sec + 8 * j - 4)
                                 : 0;
  if (length == 0 || start < covered || start + length > seg.geo.n) {
    if (lane == 0) ReportError(status, kErrFillRuns, s);
    return;
  }
  T* out = static_cast<T*>(seg.output);
  const T fill = static_cast<T>(seg.fill_value);
  for (uint64_t i = start + lane; i < start + length; i += 32) out[i] = fill;
}

template <typename T>
__global__ void VerbatimKernel(const Segment* segments, uint32_t num_segments, uint64_t total,
                               const Item* items, DeviceStatus* status) {
  const uint64_t k = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (k >= total) return;
  const uint32_t s = SegmentOf(segments, num_segments, k, &Segment::verbatim_base);
  const Segment& seg = segments[s];
  const uint64_t j = k - seg.verbatim_base;
  const uint8_t* sec = items[seg.item].archive + seg.section_offset[format::kVerbatim];
  const uint32_t index = LoadBytes<uint32_t>(sec + 4 * j);
  if (index >= seg.geo.n || (j > 0 && index <= LoadBytes<uint32_t>(sec + 4 * (j - 1)))) {
    ReportError(status, kErrVerbatim, s);
    return;
  }
  static_cast<T*>(seg.output)[index] =
      LoadBytes<T>(sec + Align8(4 * seg.verbatim_count) + sizeof(T) * j);
}

uint64_t Blocks(uint64_t threads, uint32_t per_block) {
  return std::max<uint64_t>(1, (threads + per_block - 1) / per_block);
}

}  // namespace

cudaError_t LaunchScatterOutliers(const Segment* segments, uint32_t num_segments,
                                  uint64_t total_outliers, const Item* items,
                                  const uint16_t* symbols, int32_t* deltas, DeviceStatus* status,
                                  cudaStream_t stream) {
  if (total_outliers == 0) return cudaSuccess;
  ScatterOutliersKernel<<<Blocks(total_outliers, kThreads), kThreads, 0, stream>>>(
      segments, num_segments, total_outliers, items, symbols, deltas, status);
  return cudaGetLastError();
}

cudaError_t LaunchCheckOutlierCounts(const Segment* segments, uint32_t num_segments,
                                     const uint64_t* zero_symbols, DeviceStatus* status,
                                     cudaStream_t stream) {
  CheckOutlierCountKernel<<<Blocks(num_segments, 128), 128, 0, stream>>>(segments, num_segments,
                                                                         zero_symbols, status);
  return cudaGetLastError();
}

cudaError_t LaunchReconstruct(int elem_size, const Segment* segments, uint32_t num_segments,
                              uint64_t num_tiles, const uint16_t* symbols, const int32_t* deltas,
                              cudaStream_t stream) {
  if (elem_size == 4) {
    ReconstructKernel<float>
        <<<num_tiles, kThreads, 0, stream>>>(segments, num_segments, symbols, deltas);
  } else {
    ReconstructKernel<double>
        <<<num_tiles, kThreads, 0, stream>>>(segments, num_segments, symbols, deltas);
  }
  return cudaGetLastError();
}

cudaError_t LaunchRestoreSpecials(int elem_size, const Segment* segments, uint32_t num_segments,
                                  uint64_t total_runs, uint64_t total_verbatim, const Item* items,
                                  DeviceStatus* status, cudaStream_t stream) {
  if (total_runs > 0) {
    if (elem_size == 4) {
      FillRunsKernel<float><<<Blocks(total_runs * 32, kThreads), kThreads, 0, stream>>>(
          segments, num_segments, total_runs, items, status);
    } else {
      FillRunsKernel<double><<<Blocks(total_runs * 32, kThreads), kThreads, 0, stream>>>(
          segments, num_segments, total_runs, items, status);
    }
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  if (total_verbatim > 0) {
    if (elem_size == 4) {
      VerbatimKernel<float><<<Blocks(total_verbatim, kThreads), kThreads, 0, stream>>>(
          segments, num_segments, total_verbatim, items, status);
    } else {
      VerbatimKernel<double><<<Blocks(total_verbatim, kThreads), kThreads, 0, stream>>>(
          segments, num_segments, total_verbatim, items, status);
    }
  }
  return cudaGetLastError();
}

}  // namespace ebzip::gpu
