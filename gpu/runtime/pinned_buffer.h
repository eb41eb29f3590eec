// Page-locked host memory, allocated once and freed with its owner: the
// device copies to and from it by DMA, asynchronously, where pageable memory
// is staged by the driver and copied before the call returns.
#ifndef EBZIP_GPU_RUNTIME_PINNED_BUFFER_H_
#define EBZIP_GPU_RUNTIME_PINNED_BUFFER_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace ebzip::gpu::runtime {

class PinnedBuffer {
 public:
  // Page-locked for the current device's context.
  static absl::StatusOr<PinnedBuffer> Allocate(uint64_t bytes);
  // Page-locked for every device's context (memory that any GPU's workers
  // copy from and into).
  static absl::StatusOr<PinnedBuffer> AllocatePortable(uint64_t bytes);

  PinnedBuffer() = default;
  PinnedBuffer(PinnedBuffer&& other) noexcept { *this = std::move(other); }
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  ~PinnedBuffer() { Free(); }

  uint8_t* data() const { return data_; }
  uint64_t bytes() const { return bytes_; }
  absl::Span<uint8_t> span() const { return {data_, bytes_}; }

 private:
  static absl::StatusOr<PinnedBuffer> Make(uint64_t bytes, unsigned flags);
  void Free();
  uint8_t* data_ = nullptr;
  uint64_t bytes_ = 0;
};

}  // namespace ebzip::gpu::runtime

#endif  // EBZIP_GPU_RUNTIME_PINNED_BUFFER_H_
