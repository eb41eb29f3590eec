// CUDA runtime errors as absl::Status, for the host side of the GPU codec.
#ifndef EBZIP_GPU_CUDA_STATUS_H_
#define EBZIP_GPU_CUDA_STATUS_H_

#include <cuda_runtime_api.h>

#include "absl/status/status.h"

namespace ebzip::gpu {

// INTERNAL (or RESOURCE_EXHAUSTED for out-of-memory) naming the failed call;
// OK for cudaSuccess.
absl::Status CudaStatus(cudaError_t error, const char* what);

#define CUDA_RETURN_IF_ERROR(expr)                                                    \
  do {                                                                                \
    if (cudaError_t cuda_error_ = (expr); cuda_error_ != cudaSuccess) {               \
      return ::ebzip::gpu::CudaStatus(cuda_error_, #expr);                            \
    }                                                                                 \
  } while (0)

}  // namespace ebzip::gpu

#endif  // EBZIP_GPU_CUDA_STATUS_H_
