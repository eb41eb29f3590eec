// A worker's own device memory: a slice of its device's pool (device.h),
// carved afresh for every batch by a bump allocator, so that requests never
// allocate on the device.
#ifndef EBZIP_GPU_RUNTIME_POOL_SLICE_H_
#define EBZIP_GPU_RUNTIME_POOL_SLICE_H_

#include <cstdint>

namespace ebzip::gpu::runtime {

// Every place carved from a pool starts at this alignment (the codec's
// buffers and workspace need no more).
inline constexpr uint64_t kDeviceAlign = 256;
inline constexpr uint64_t AlignUp(uint64_t n) {
  return (n + kDeviceAlign - 1) / kDeviceAlign * kDeviceAlign;
}

// A view of device memory, valid while the Device whose pool it is lives.
class PoolSlice {
 public:
  PoolSlice() = default;
  PoolSlice(void* data, uint64_t bytes) : data_(static_cast<uint8_t*>(data)), bytes_(bytes) {}
  uint8_t* data() const { return data_; }
  uint64_t bytes() const { return bytes_; }

 private:
  uint8_t* data_ = nullptr;
  uint64_t bytes_ = 0;
};

// Takes aligned places from the start of a slice, until it is used up.
class PoolCarver {
 public:
  explicit PoolCarver(PoolSlice slice) : slice_(slice) {}
  // nullptr when the slice has no room left for n bytes.
  uint8_t* Take(uint64_t n) {
    if (AlignUp(n) > slice_.bytes() - used_) return nullptr;
    uint8_t* p = slice_.data() + used_;
    used_ += AlignUp(n);
    return p;
  }
  uint64_t left() const { return slice_.bytes() - used_; }

 private:
  PoolSlice slice_;
  uint64_t used_ = 0;
};

}  // namespace ebzip::gpu::runtime

#endif  // EBZIP_GPU_RUNTIME_POOL_SLICE_H_
