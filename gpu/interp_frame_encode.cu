#include "gpu/interp_frame_encode.h"

#include <algorithm>

#include "codec/quantize_point.h"
#include "gpu/device_util.cuh"
#include "gpu/kernels.h"

namespace ebzip::gpu {
namespace {

template <typename T>
__global__ void FillByteMaskKernel(const Segment* segment, const Item* items, uint64_t n,
                                   uint8_t* mask) {
  using Bits = typename FloatTraits<T>::Bits;
  const Bits* x = static_cast<const Bits*>(segment->input);
  const Bits fill = static_cast<Bits>(items[segment->item].fill_bits);
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += uint64_t{gridDim.x} * blockDim.x) {
    mask[i] = x[i] == fill ? 1 : 0;
  }
}

__global__ void TakeInterpResultsKernel(Segment* segment, const uint32_t* counts,
                                        const uint32_t* outlier_index,
                                        const int32_t* outlier_residual, uint64_t max_outliers,
                                        uint32_t* outlier_mask, int32_t* deltas) {
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
// counted in shared memory, the rest with global atomics.
constexpr uint32_t kHistWindow = 4096;
constexpr uint32_t kHistPositions = 16384;  // per thread block

__global__ void SymbolHistogramKernel(const Segment* segment, const uint16_t* symbols,
                                      uint32_t* histogram) {
  __shared__ uint32_t bins[kHistWindow];
  const uint64_t positions = segment->positions;
  const uint64_t begin = blockIdx.x * uint64_t{kHistPositions};
  if (begin >= positions) return;  // uniform across the block
  const uint64_t end = min(positions, begin + kHistPositions);
  const uint32_t low = segment->radius > kHistWindow / 2 ? segment->radius - kHistWindow / 2 : 0;
  for (uint32_t b = threadIdx.x; b < kHistWindow; b += blockDim.x) bins[b] = 0;
  __syncthreads();
  const uint16_t* sym = symbols + segment->symbol_base;
  for (uint64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const uint32_t s = sym[i];
    if (s - low < kHistWindow) {
      atomicAdd(&bins[s - low], 1u);
    } else {
      atomicAdd(&histogram[s], 1u);
    }
  }
  __syncthreads();
  for (uint32_t b = threadIdx.x; b < kHistWindow; b += blockDim.x) {
    if (bins[b] != 0 && low + b < kHistogramBins) atomicAdd(&histogram[low + b], bins[b]);
  }
}

}  // namespace

cudaError_t LaunchFillByteMask(int elem_size, const Segment* segment, const Item* items,
                               uint64_t n, uint8_t* mask, cudaStream_t stream) {
  const uint64_t blocks = std::min<uint64_t>((n + kThreads - 1) / kThreads, 132 * 16);
  if (elem_size == 4) {
    FillByteMaskKernel<float><<<blocks, kThreads, 0, stream>>>(segment, items, n, mask);
  } else {
    FillByteMaskKernel<double><<<blocks, kThreads, 0, stream>>>(segment, items, n, mask);
  }
  return cudaGetLastError();
}

cudaError_t LaunchTakeInterpResults(Segment* segment, const uint32_t* counts,
                                    const uint32_t* outlier_index, const int32_t* outlier_residual,
                                    uint64_t max_outliers, uint32_t* outlier_mask, int32_t* deltas,
                                    cudaStream_t stream) {
  const uint64_t blocks =
      std::max<uint64_t>(1, std::min<uint64_t>((max_outliers + kThreads - 1) / kThreads, 1024));
  TakeInterpResultsKernel<<<blocks, kThreads, 0, stream>>>(
      segment, counts, outlier_index, outlier_residual, max_outliers, outlier_mask, deltas);
  return cudaGetLastError();
}

cudaError_t LaunchSymbolHistogram(const Segment* segment, const uint16_t* symbols, uint64_t n,
                                  uint32_t* histogram, cudaStream_t stream) {
  const uint64_t blocks = std::max<uint64_t>(1, (n + kHistPositions - 1) / kHistPositions);
  SymbolHistogramKernel<<<blocks, kThreads, 0, stream>>>(segment, symbols, histogram);
  return cudaGetLastError();
}

}  // namespace ebzip::gpu
