#include "gpu/cuda_status.h"

#include "absl/strings/str_cat.h"

namespace ebzip::gpu {

absl::Status CudaStatus(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return absl::OkStatus();
  const std::string message =
      absl::StrCat("CUDA: ", cudaGetErrorName(error), " (", cudaGetErrorString(error), ") in ", what);
  if (error == cudaErrorMemoryAllocation) return absl::ResourceExhaustedError(message);
  return absl::InternalError(message);
}

}  // namespace ebzip::gpu
