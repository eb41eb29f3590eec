// GatherRegion (gpu_codec.h): a hyperslab of a device array copied into its
// own C-order buffer. A block takes one output row (every index but the
// last) at a time, so the division of a flat index into coordinates is paid
// once a row, not once an element; its threads walk the row, reading
// consecutive elements when the last step is 1.
#include <cuda_runtime_api.h>

#include <algorithm>

#include "gpu/cuda_status.h"
#include "gpu/gpu_codec.h"

namespace ebzip::gpu {
namespace {

constexpr int kDims = 4;
constexpr int kThreads = 256;

struct GatherGeometry {
  uint64_t start[kDims];
  uint64_t count[kDims];
  uint64_t step[kDims];
  uint64_t stride[kDims];  // the array's, in elements
  uint64_t rows;           // output rows: the product of count[0 .. kDims-2]
};

template <typename T>
__global__ void GatherKernel(const T* __restrict__ array, T* __restrict__ out,
                             GatherGeometry g) {
  const uint64_t inner = g.count[kDims - 1];
  for (uint64_t row = blockIdx.x; row < g.rows; row += gridDim.x) {
    uint64_t rest = row, at = 0;
    for (int d = kDims - 2; d >= 0; --d) {
      const uint64_t i = rest % g.count[d];
      rest /= g.count[d];
      at += (g.start[d] + i * g.step[d]) * g.stride[d];
    }
    at += g.start[kDims - 1];
    const T* src = array + at;
    T* dst = out + row * inner;
    for (uint64_t i = threadIdx.x; i < inner; i += blockDim.x) {
      dst[i] = src[i * g.step[kDims - 1]];
    }
  }
}

}  // namespace

absl::Status GatherRegion(const void* array, const ArraySpec& spec, const Hyperslab& rows,
                          void* out, Stream stream) {
  if (absl::Status s = CheckHyperslab(rows, spec.shape); !s.ok()) return s;
  const size_t ndim = spec.shape.size();
  if (ndim > kDims) return absl::InvalidArgumentError("more than 4 dimensions");
  if (rows.NumElements() == 0) return absl::OkStatus();
  // Right-aligned into four dimensions, the missing leading ones of extent 1.
  GatherGeometry g{};
  const size_t pad = kDims - ndim;
  uint64_t stride = 1;
  for (int d = kDims - 1; d >= 0; --d) {
    const bool real = static_cast<size_t>(d) >= pad;
    g.start[d] = real ? rows.start[d - pad] : 0;
    g.count[d] = real ? rows.count[d - pad] : 1;
    g.step[d] = real ? rows.step[d - pad] : 1;
    g.stride[d] = stride;
    if (real) stride *= spec.shape[d - pad];
  }
  g.rows = rows.NumElements() / g.count[kDims - 1];
  const unsigned blocks = static_cast<unsigned>(std::min<uint64_t>(g.rows, 1u << 16));
  if (DTypeSize(spec.dtype) == 4) {
    GatherKernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint32_t*>(array),
                                                  static_cast<uint32_t*>(out), g);
  } else {
    GatherKernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint64_t*>(array),
                                                  static_cast<uint64_t*>(out), g);
  }
  CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

}  // namespace ebzip::gpu
