#include "gpu/runtime/device.h"

#include <cuda_runtime_api.h>

#include "gpu/cuda_status.h"
#include "gpu/gpu_codec.h"

namespace ebzip::gpu::runtime {
namespace {

unsigned ScheduleFlag(HostWait wait) {
  switch (wait) {
    case HostWait::kSpin:
      return cudaDeviceScheduleSpin;
    case HostWait::kBlock:
      return cudaDeviceScheduleBlockingSync;
    case HostWait::kYield:
      break;
  }
  return cudaDeviceScheduleYield;
}

}  // namespace

absl::StatusOr<int> DeviceCount() {
  int count = 0;
  CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&count));
  return count;
}

absl::StatusOr<std::unique_ptr<Device>> Device::Open(int ordinal, const DeviceOptions& options) {
  std::unique_ptr<Device> d(new Device());
  d->ordinal_ = ordinal;
  auto description = DeviceDescription(ordinal);
  if (!description.ok()) return description.status();
  d->description_ = *std::move(description);
  CUDA_RETURN_IF_ERROR(cudaSetDevice(ordinal));
  CUDA_RETURN_IF_ERROR(cudaSetDeviceFlags(ScheduleFlag(options.wait)));
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
  d->total_bytes_ = total_bytes;
  const uint64_t pool_bytes = options.pool_bytes != 0 ? options.pool_bytes : free_bytes / 4 * 3;
  void* pool = nullptr;
  CUDA_RETURN_IF_ERROR(cudaMalloc(&pool, pool_bytes));
  d->pool_ = PoolSlice(pool, pool_bytes);
  return d;
}

Device::~Device() {
  if (pool_.data() == nullptr) return;
  cudaSetDevice(ordinal_);
  cudaFree(pool_.data());
}

std::vector<PoolSlice> Device::SplitPool(int parts) const {
  const uint64_t slice = pool_.bytes() / parts / kDeviceAlign * kDeviceAlign;
  std::vector<PoolSlice> out;
  for (int k = 0; k < parts; ++k) out.emplace_back(pool_.data() + k * slice, slice);
  return out;
}

RunResult Device::MakeCurrent() const {
  if (absl::Status s = CudaStatus(cudaSetDevice(ordinal_), "cudaSetDevice"); !s.ok()) {
    return RunResult::DeviceLost(std::move(s));
  }
  return RunResult::Ran();
}

std::optional<uint64_t> Device::MemoryUsedBytes() const {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaSetDevice(ordinal_) != cudaSuccess ||
      cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    return std::nullopt;
  }
  return total_bytes - free_bytes;
}

}  // namespace ebzip::gpu::runtime
