#include "gpu/runtime/cuda_stream.h"

#include <cuda_runtime_api.h>

#include "gpu/cuda_status.h"

namespace ebzip::gpu::runtime {
namespace {

RunResult Lost(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return RunResult::Ran();
  return RunResult::DeviceLost(CudaStatus(error, what));
}

}  // namespace

absl::StatusOr<CudaStream> CudaStream::Create() {
  CudaStream s;
  CUDA_RETURN_IF_ERROR(cudaGetDevice(&s.device_));
  cudaStream_t stream = nullptr;
  CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  s.stream_ = stream;
  return s;
}

CudaStream& CudaStream::operator=(CudaStream&& other) noexcept {
  if (this != &other) {
    Destroy();
    stream_ = other.stream_;
    device_ = other.device_;
    other.stream_ = nullptr;
  }
  return *this;
}

void CudaStream::Destroy() {
  if (stream_ == nullptr) return;
  cudaSetDevice(device_);
  cudaStreamDestroy(stream_);
  stream_ = nullptr;
}

RunResult CudaStream::CopyToDevice(void* device, const void* host, uint64_t bytes) {
  return Lost(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_),
              "cudaMemcpyAsync (host to device)");
}

RunResult CudaStream::CopyToHost(void* host, const void* device, uint64_t bytes) {
  return Lost(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_),
              "cudaMemcpyAsync (device to host)");
}

RunResult CudaStream::Synchronize() {
  return Lost(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

}  // namespace ebzip::gpu::runtime
