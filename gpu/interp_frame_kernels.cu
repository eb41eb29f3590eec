// Version 2's glue kernels of decompression (gpu/interp_frame_kernels.h).
#include "codec/format.h"
#include "gpu/device_util.cuh"
#include "gpu/interp_frame_kernels.h"

namespace ebzip::gpu {
namespace {

// Grid-stride loops cap their grids here.
constexpr uint64_t kMaxBlocks = uint64_t{1} << 20;

unsigned Blocks(uint64_t threads) {
  const uint64_t b = (threads + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : b > kMaxBlocks ? kMaxBlocks : b);
}

__global__ void UnpackInterpOutliersKernel(const Segment* segments, uint32_t num_segments,
                                           uint64_t total, const Item* items, uint32_t* index,
                                           int32_t* residual, DeviceStatus* status) {
  for (uint64_t k = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; k < total;
       k += uint64_t{gridDim.x} * blockDim.x) {
    const uint32_t s =
        FindSegment(num_segments, k, [segments](uint32_t i) { return segments[i].outlier_base; });
    const Segment& seg = segments[s];
    if (seg.predictor != format::kPredictorInterp) continue;
    const uint64_t j = k - seg.outlier_base;
    const uint8_t* sec = items[seg.item].archive + seg.section_offset[format::kOutliers];
    const uint32_t at = LoadBytes<uint32_t>(sec + 4 * j);
    if (at >= seg.geo.n || (j > 0 && at <= LoadBytes<uint32_t>(sec + 4 * (j - 1)))) {
      ReportError(status, kErrOutliers, s);
    }
    index[k] = at;
    residual[k] = LoadBytes<int32_t>(sec + 4 * (seg.outlier_count + j));
  }
}

__global__ void ReportInterpErrorsKernel(const uint32_t* errors, uint32_t num_segments,
                                         DeviceStatus* status) {
  const uint32_t s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s < num_segments && errors[s] != 0) ReportError(status, kErrInterp, s, errors[s]);
}

__global__ void FillSymbolsKernel(uint16_t* symbols, uint64_t positions, uint16_t value) {
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < positions;
       i += uint64_t{gridDim.x} * blockDim.x) {
    symbols[i] = value;
  }
}

__global__ void OutlierAnchorsKernel(interp::Geometry g, uint16_t* symbols, uint64_t positions,
                                     const uint32_t* index, uint64_t count) {
  for (uint64_t j = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; j < count;
       j += uint64_t{gridDim.x} * blockDim.x) {
    const uint64_t i = index[j];
    if (i >= g.n) continue;
    uint64_t t = 0;
    bool anchor = true;
    for (int d = 0; d < interp::kIDims; ++d) {
      uint64_t x = i / g.stride[d] % g.dims[d];
      if (interp::IsInterpolated(g, d)) {
        anchor &= x % g.E == 0;
        x /= g.E;
      }
      t = t * g.tiles[d] + x;
    }
    const uint64_t at = interp::TileStartWithoutFill(g, t);
    if (anchor && at < positions) symbols[at] = 0;
  }
}

// Eight mask bytes to a thread, in one load where all eight are there (the
// mask is 8-byte aligned): fill comes in long runs, and most words have none.
template <typename T>
__global__ void FillFromMaskKernel(const uint8_t* mask, uint64_t n, T fill, T* out) {
  for (uint64_t i = (uint64_t{blockIdx.x} * blockDim.x + threadIdx.x) * 8; i < n;
       i += uint64_t{gridDim.x} * blockDim.x * 8) {
    if (i + 8 <= n && *reinterpret_cast<const uint64_t*>(mask + i) == 0) continue;
    const uint64_t end = i + 8 < n ? i + 8 : n;
    for (uint64_t e = i; e < end; ++e) {
      if (mask[e] != 0) out[e] = fill;
    }
  }
}

}  // namespace

cudaError_t LaunchUnpackInterpOutliers(const Segment* segments, uint32_t num_segments,
                                       uint64_t total_outliers, const Item* items,
                                       uint32_t* index, int32_t* residual, DeviceStatus* status,
                                       cudaStream_t stream) {
  if (total_outliers == 0) return cudaSuccess;
  UnpackInterpOutliersKernel<<<Blocks(total_outliers), kThreads, 0, stream>>>(
      segments, num_segments, total_outliers, items, index, residual, status);
  return cudaGetLastError();
}

cudaError_t LaunchReportInterpErrors(const uint32_t* errors, uint32_t num_segments,
                                     DeviceStatus* status, cudaStream_t stream) {
  ReportInterpErrorsKernel<<<Blocks(num_segments), kThreads, 0, stream>>>(errors, num_segments,
                                                                          status);
  return cudaGetLastError();
}

cudaError_t LaunchPrepareRegionSymbols(const interp::Geometry& g, uint16_t* symbols,
                                       uint64_t positions, const uint32_t* outlier_index,
                                       uint64_t num_outliers, cudaStream_t stream) {
  FillSymbolsKernel<<<Blocks(positions), kThreads, 0, stream>>>(symbols, positions,
                                                                static_cast<uint16_t>(g.radius));
  if (num_outliers > 0) {
    OutlierAnchorsKernel<<<Blocks(num_outliers), kThreads, 0, stream>>>(
        g, symbols, positions, outlier_index, num_outliers);
  }
  return cudaGetLastError();
}

cudaError_t LaunchFillFromMask(int elem_size, const uint8_t* mask, uint64_t n, double fill_value,
                               void* output, cudaStream_t stream) {
  const unsigned blocks = Blocks((n + 7) / 8);
  if (elem_size == 4) {
    FillFromMaskKernel<float><<<blocks, kThreads, 0, stream>>>(
        mask, n, static_cast<float>(fill_value), static_cast<float*>(output));
  } else {
    FillFromMaskKernel<double><<<blocks, kThreads, 0, stream>>>(mask, n, fill_value,
                                                                static_cast<double*>(output));
  }
  return cudaGetLastError();
}

}  // namespace ebzip::gpu
