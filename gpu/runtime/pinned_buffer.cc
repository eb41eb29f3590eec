#include "gpu/runtime/pinned_buffer.h"

#include <cuda_runtime_api.h>

#include "gpu/cuda_status.h"

namespace ebzip::gpu::runtime {

absl::StatusOr<PinnedBuffer> PinnedBuffer::Make(uint64_t bytes, unsigned flags) {
  PinnedBuffer b;
  void* data = nullptr;
  CUDA_RETURN_IF_ERROR(cudaHostAlloc(&data, bytes, flags));
  b.data_ = static_cast<uint8_t*>(data);
  b.bytes_ = bytes;
  return b;
}

absl::StatusOr<PinnedBuffer> PinnedBuffer::Allocate(uint64_t bytes) {
  return Make(bytes, cudaHostAllocDefault);  // what cudaMallocHost allocates
}

absl::StatusOr<PinnedBuffer> PinnedBuffer::AllocatePortable(uint64_t bytes) {
  return Make(bytes, cudaHostAllocPortable);
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    Free();
    data_ = other.data_;
    bytes_ = other.bytes_;
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void PinnedBuffer::Free() {
  if (data_ == nullptr) return;
  cudaFreeHost(data_);
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace ebzip::gpu::runtime
