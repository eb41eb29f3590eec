// A CUDA event owned for the length of a call, created at its first Record
// (none allocates device memory): what a host step waits on when the stream
// holds more work behind the point it needs.
#ifndef EBZIP_GPU_SCOPED_EVENT_H_
#define EBZIP_GPU_SCOPED_EVENT_H_

#include <cuda_runtime_api.h>

namespace ebzip::gpu {

class ScopedEvent {
 public:
  ScopedEvent() = default;
  ScopedEvent(const ScopedEvent&) = delete;
  ScopedEvent& operator=(const ScopedEvent&) = delete;
  ~ScopedEvent() {
    if (event_ != nullptr) cudaEventDestroy(event_);
  }
  cudaError_t Record(cudaStream_t stream) {
    if (event_ == nullptr) {
      if (cudaError_t e = cudaEventCreateWithFlags(&event_, cudaEventDisableTiming);
          e != cudaSuccess) {
        return e;
      }
    }
    return cudaEventRecord(event_, stream);
  }
  // Waits for the work recorded before; an error when never recorded.
  cudaError_t Synchronize() {
    return event_ == nullptr ? cudaErrorInvalidResourceHandle : cudaEventSynchronize(event_);
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace ebzip::gpu

#endif  // EBZIP_GPU_SCOPED_EVENT_H_
