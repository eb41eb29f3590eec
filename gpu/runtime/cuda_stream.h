// A CUDA stream owned by one worker, and what the worker enqueues on it:
// copies of host ranges to and from the device, and waiting for all of it.
// Every call says whether the device is still there (run_result.h): a CUDA
// error here means the device's context is lost.
#ifndef EBZIP_GPU_RUNTIME_CUDA_STREAM_H_
#define EBZIP_GPU_RUNTIME_CUDA_STREAM_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "gpu/gpu_codec.h"
#include "gpu/runtime/run_result.h"

namespace ebzip::gpu::runtime {

class CudaStream {
 public:
  // A stream on the current device that does not wait for the default one.
  static absl::StatusOr<CudaStream> Create();

  CudaStream() = default;
  CudaStream(CudaStream&& other) noexcept { *this = std::move(other); }
  CudaStream& operator=(CudaStream&& other) noexcept;
  ~CudaStream() { Destroy(); }

  // For the codec's calls (gpu_codec.h).
  Stream get() const { return stream_; }

  // Enqueue a copy of `bytes`. From or into page-locked host memory it runs
  // behind the work before it, and the host range must stay until the stream
  // has passed it; pageable memory is copied before the call returns.
  RunResult CopyToDevice(void* device, const void* host, uint64_t bytes);
  RunResult CopyToHost(void* host, const void* device, uint64_t bytes);
  // Waits until the stream has run everything enqueued so far.
  RunResult Synchronize();

 private:
  void Destroy();
  Stream stream_ = nullptr;
  int device_ = 0;  // current when created, current again when destroyed
};

}  // namespace ebzip::gpu::runtime

#endif  // EBZIP_GPU_RUNTIME_CUDA_STREAM_H_
