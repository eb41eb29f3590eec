#include "gpu/interp_frame_encode.h"

#include <algorithm>

#include "codec/quantize_point.h"
#include "gpu/device_util.cuh"
#include "gpu/kernels.h"

namespace ebzip::gpu {
namespace {

template <typename T>
__global__ void FillByteMaskKernel(const Segment* segments, const Item* items, uint64_t n,
                                   uint8_t* mask, uint64_t mask_stride) {
  using Bits = typename FloatTraits<T>::Bits;
  const Segment* segment = segments + blockIdx.y;
  mask += blockIdx.y * mask_stride;
  const Bits* x = static_cast<const Bits*>(segment->input);
  const Bits fill = static_cast<Bits>(items[segment->item].fill_bits);
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += uint64_t{gridDim.x} * blockDim.x) {
    mask[i] = x[i] == fill ? 1 : 0;
  }
}

__global__ void TakeInterpResultsKernel(Segment* segments, const uint32_t* counts,
                                        uint64_t counts_stride, const uint32_t* outlier_index,
                                        const int32_t* outlier_residual, uint64_t outlier_stride,
                                        uint64_t max_outliers, uint32_t* outlier_mask,
                                        int32_t* deltas) {
  Segment* segment = segments + blockIdx.y;
  counts += blockIdx.y * counts_stride;
  outlier_index += blockIdx.y * outlier_stride;
  outlier_residual += blockIdx.y * outlier_stride;
  const uint64_t count = min(uint64_t{counts[1]}, max_outliers);
  if (blockIdx.x == 0 && threadIdx.x == 0) segment->positions = counts[0];
  for (uint64_t k = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; k < count;
       k += uint64_t{gridDim.x} * blockDim.x) {
    const uint32_t i = outlier_index[k];
    atomicOr(outlier_mask + segment->mask_base + i / 32, 1u << (i % 32));
    deltas[segment->symbol_base + i] = outlier_residual[k];
  }
}

// Residual symbols cluster around radius: a window of bins around it is
// counted in shared memory, the rest with global atomics. The radius itself
// (most symbols of a smooth field) is counted in a register and added once
// per warp. Each thread takes 8 neighbouring symbols at a time, in one
// 16-byte load, so that a warp's loads cover 512 bytes.
constexpr uint32_t kHistWindow = 4096;
constexpr uint32_t kHistPositions = 16384;  // per thread block

__global__ void SymbolHistogramKernel(const Segment* segments, const uint16_t* symbols,
                                      uint32_t* histograms) {
  __shared__ uint32_t bins[kHistWindow];
  const Segment* segment = segments + blockIdx.y;
  uint32_t* histogram = histograms + uint64_t{blockIdx.y} * kHistogramBins;
  const uint64_t positions = segment->positions;
  const uint64_t begin = blockIdx.x * uint64_t{kHistPositions};
  if (begin >= positions) return;  // uniform across the block
  const uint64_t end = min(positions, begin + kHistPositions);
  const uint32_t radius = segment->radius;
  const uint32_t low = radius > kHistWindow / 2 ? radius - kHistWindow / 2 : 0;
  for (uint32_t b = threadIdx.x; b < kHistWindow; b += blockDim.x) bins[b] = 0;
  __syncthreads();
  const uint16_t* sym = symbols + segment->symbol_base;
  uint32_t zeros = 0;
  auto add = [&](uint32_t s) {
    if (s == radius) {
      ++zeros;
    } else if (s - low < kHistWindow) {
      atomicAdd(&bins[s - low], 1u);
    } else {
      atomicAdd(&histogram[s], 1u);
    }
  };
  // The first positions up to a 16-byte boundary, then whole 16-byte
  // groups, then what is left: at most 7 positions each, a thread apiece.
  const uint64_t misaligned = (reinterpret_cast<uintptr_t>(sym + begin) % 16) / 2;
  const uint64_t head = min(end, misaligned == 0 ? begin : begin + 8 - misaligned);
  const uint64_t body_end = head + (end - head) / 8 * 8;
  if (begin + threadIdx.x < head) add(sym[begin + threadIdx.x]);
  for (uint64_t i = head + 8 * uint64_t{threadIdx.x}; i < body_end; i += 8 * uint64_t{blockDim.x}) {
    const uint4 v = *reinterpret_cast<const uint4*>(sym + i);
    const uint32_t pairs[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      add(pairs[k] & 0xFFFFu);
      add(pairs[k] >> 16);
    }
  }
  if (body_end + threadIdx.x < end) add(sym[body_end + threadIdx.x]);
  for (int d = 16; d > 0; d /= 2) zeros += __shfl_down_sync(0xFFFFFFFFu, zeros, d);
  if (threadIdx.x % 32 == 0 && zeros != 0) atomicAdd(&bins[radius - low], zeros);
  __syncthreads();
  for (uint32_t b = threadIdx.x; b < kHistWindow; b += blockDim.x) {
    if (bins[b] != 0 && low + b < kHistogramBins) atomicAdd(&histogram[low + b], bins[b]);
  }
}

}  // namespace

cudaError_t LaunchFillByteMask(int elem_size, const Segment* segments, uint32_t count,
                               const Item* items, uint64_t n, uint8_t* mask, uint64_t mask_stride,
                               cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  const dim3 grid(
      static_cast<uint32_t>(std::min<uint64_t>((n + kThreads - 1) / kThreads, 132 * 16)), count);
  if (elem_size == 4) {
    FillByteMaskKernel<float><<<grid, kThreads, 0, stream>>>(segments, items, n, mask, mask_stride);
  } else {
    FillByteMaskKernel<double>
        <<<grid, kThreads, 0, stream>>>(segments, items, n, mask, mask_stride);
  }
  return cudaGetLastError();
}

cudaError_t LaunchTakeInterpResults(Segment* segments, uint32_t count, const uint32_t* counts,
                                    uint64_t counts_stride, const uint32_t* outlier_index,
                                    const int32_t* outlier_residual, uint64_t outlier_stride,
                                    uint64_t max_outliers, uint32_t* outlier_mask, int32_t* deltas,
                                    cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  const dim3 grid(static_cast<uint32_t>(std::max<uint64_t>(
                      1, std::min<uint64_t>((max_outliers + kThreads - 1) / kThreads, 1024))),
                  count);
  TakeInterpResultsKernel<<<grid, kThreads, 0, stream>>>(segments, counts, counts_stride,
                                                         outlier_index, outlier_residual,
                                                         outlier_stride, max_outliers,
                                                         outlier_mask, deltas);
  return cudaGetLastError();
}

cudaError_t LaunchSymbolHistogram(const Segment* segments, uint32_t count, const uint16_t* symbols,
                                  uint64_t n, uint32_t* histograms, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  const dim3 grid(
      static_cast<uint32_t>(std::max<uint64_t>(1, (n + kHistPositions - 1) / kHistPositions)),
      count);
  SymbolHistogramKernel<<<grid, kThreads, 0, stream>>>(segments, symbols, histograms);
  return cudaGetLastError();
}

}  // namespace ebzip::gpu
