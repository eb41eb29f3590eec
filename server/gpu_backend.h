// The GPU backend: one scheduler worker per visible GPU, each owning a CUDA
// stream, a device memory pool and pinned host memory allocated once at
// start, so requests never allocate on the device. A batch of arrays of one
// dtype runs as one set of the GPU codec's batched launches (gpu_codec.h).
// What the kernels do not take (gpu_codec.h's UNIMPLEMENTED cases, arrays
// larger than the pool) runs on the CPU codec, which writes the same bytes.
#ifndef EBZIP_SERVER_GPU_BACKEND_H_
#define EBZIP_SERVER_GPU_BACKEND_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "server/backend.h"

namespace ebzip::server {

struct GpuBackendOptions {
  uint64_t memory_bytes = 0;  // pool per GPU; 0: 3/4 of its free memory
  uint64_t pinned_bytes = uint64_t{256} << 20;
  // Fault injection for tests: each GPU fails (as on a CUDA error) when it
  // starts its batch number `fail_at_batch` (counting from 0); -1: never.
  int64_t fail_at_batch = -1;
};

absl::StatusOr<std::unique_ptr<Backend>> MakeGpuBackend(const GpuBackendOptions& options);

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_GPU_BACKEND_H_
