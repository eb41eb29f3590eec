// The GPU backend: a few scheduler workers per visible GPU (Triton's
// instance groups), each owning a CUDA stream, a slice of the device's memory
// pool and pinned host memory allocated once at start (gpu/runtime/worker.h),
// so requests never allocate on the device and one worker's copies and host
// work overlap another's kernels. This is the adapter between the scheduler's
// works and the runtime: it cuts batches into rounds, runs what the GPU does
// not take on the CPU codec and applies the failure policy; it makes no CUDA
// calls of its own. A batch of arrays of one dtype runs as one set of the
// GPU codec's batched launches (gpu_codec.h). What the kernels do not take
// (gpu_codec.h's UNIMPLEMENTED cases, arrays larger than a worker's pool)
// runs on the CPU codec, which writes the same bytes. Every worker runs a
// small array both ways at start, so the first requests do not pay for
// loading kernels.
//
// A GPU that fails (a CUDA error leaves its context unusable) is given up
// until restart: its workers stop taking work, and what it was running goes
// back to the queue for the other GPUs (or fails, see GpuFailurePolicy).
// The last GPU standing is never given up: its workers go on with the CPU
// codec, so the server keeps serving.
#ifndef EBZIP_SERVER_GPU_BACKEND_H_
#define EBZIP_SERVER_GPU_BACKEND_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "server/backend.h"
#include "server/enum_names.h"

namespace ebzip::server {

// What happens to the work a GPU was running when it failed.
enum class GpuFailurePolicy {
  kRetry,  // runs again on another GPU (the CPU codec when none is left)
  kFail,   // finishes with UNAVAILABLE, naming the GPU; the client resends
};
// Their names (--gpu_failure_policy), the default first.
inline constexpr EnumName<GpuFailurePolicy> kGpuFailurePolicyNames[] = {
    {GpuFailurePolicy::kRetry, "retry"}, {GpuFailurePolicy::kFail, "fail"}};

// How a worker waits for its GPU (cudaDeviceSchedule*). CUDA's default,
// spinning while the process has fewer contexts than cores, keeps one core
// busy per worker however idle, which gRPC's threads wanted under the
// small-request load. Blocking gives the core back but wakes late: a batch
// of small arrays took 0.70-0.80 ms instead of 0.51-0.54 on the H100 host.
// Yielding polls as fast while other threads wait for no core,
// and lets them run when they do.
enum class GpuWait {
  kYield,  // polls, yielding the core between polls
  kBlock,  // sleeps until the GPU signals
  kSpin,   // polls
};
// Their names (--gpu_wait, the "gpu ready" log line), the default first.
inline constexpr EnumName<GpuWait> kGpuWaitNames[] = {
    {GpuWait::kYield, "yield"}, {GpuWait::kBlock, "block"}, {GpuWait::kSpin, "spin"}};

struct GpuBackendOptions {
  uint64_t memory_bytes = 0;  // pool per GPU, shared by its workers; 0: 3/4 of its free memory
  uint64_t pinned_bytes = uint64_t{256} << 20;  // per worker
  // Page-locked memory, shared by all GPUs, that arrays and streamed frames
  // of up to 128 MiB are received into (to compress) and decompressed into
  // (host_block_pool.h); 0: none, the heap.
  uint64_t host_pool_bytes = uint64_t{1} << 30;
  int workers_per_gpu = 2;
  GpuWait wait = GpuWait::kYield;
  GpuFailurePolicy on_failure = GpuFailurePolicy::kRetry;
  // Fault injection for tests: GPU `fail_device` (-1: every GPU) fails, as
  // on a CUDA error, when it starts its batch number `fail_at_batch`
  // (counting from 0, over all its workers); -1: never.
  int64_t fail_at_batch = -1;
  int fail_device = -1;
};

absl::StatusOr<std::unique_ptr<Backend>> MakeGpuBackend(const GpuBackendOptions& options);

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_GPU_BACKEND_H_
