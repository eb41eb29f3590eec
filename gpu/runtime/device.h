// One GPU as the service holds it: how host threads wait for it, and one
// memory pool allocated at start and cut into the slices its workers carve
// (pool_slice.h). Opening sets the process's flags for the device and
// allocates; nothing later allocates device memory.
#ifndef EBZIP_GPU_RUNTIME_DEVICE_H_
#define EBZIP_GPU_RUNTIME_DEVICE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpu/runtime/pool_slice.h"
#include "gpu/runtime/run_result.h"

namespace ebzip::gpu::runtime {

// How a host thread waits for the device (cudaDeviceSchedule*):
// server/gpu_backend.h's GpuWait says what each costs.
enum class HostWait {
  kYield,  // polls, yielding the core between polls
  kBlock,  // sleeps until the device signals
  kSpin,   // polls
};

struct DeviceOptions {
  HostWait wait = HostWait::kYield;
  uint64_t pool_bytes = 0;  // 0: 3/4 of the device's free memory when opened
};

// The CUDA devices visible to the process.
absl::StatusOr<int> DeviceCount();

class Device {
 public:
  // Describes device `ordinal`, sets its wait mode, measures its memory and
  // allocates its pool; the device is then the calling thread's current one.
  static absl::StatusOr<std::unique_ptr<Device>> Open(int ordinal, const DeviceOptions& options);
  ~Device();  // frees the pool
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  int ordinal() const { return ordinal_; }
  // "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)".
  const std::string& description() const { return description_; }
  uint64_t total_bytes() const { return total_bytes_; }
  uint64_t pool_bytes() const { return pool_.bytes(); }
  // The pool in `parts` equal aligned slices, one per worker.
  std::vector<PoolSlice> SplitPool(int parts) const;

  // Makes this the calling thread's current device.
  RunResult MakeCurrent() const;
  // Device memory in use now, by every process; none when the device cannot
  // say (it was lost).
  std::optional<uint64_t> MemoryUsedBytes() const;

 private:
  Device() = default;
  int ordinal_ = 0;
  std::string description_;
  uint64_t total_bytes_ = 0;
  PoolSlice pool_;  // owned: cudaFree'd by the destructor
};

}  // namespace ebzip::gpu::runtime

#endif  // EBZIP_GPU_RUNTIME_DEVICE_H_
