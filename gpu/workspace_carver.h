// Lays out a call's arrays in one caller-provided block of memory. The same
// code runs twice: without a base to measure, then with one to hand out
// pointers, so the size query and the call cannot disagree.
#ifndef EBZIP_GPU_WORKSPACE_CARVER_H_
#define EBZIP_GPU_WORKSPACE_CARVER_H_

#include <cstddef>
#include <cstdint>

namespace ebzip::gpu {

class WorkspaceCarver {
 public:
  explicit WorkspaceCarver(void* base = nullptr) : base_(static_cast<uint8_t*>(base)) {}

  // `count` elements of T, 256-byte aligned (nullptr while measuring).
  template <typename T>
  T* Take(size_t count) {
    offset_ = (offset_ + 255) & ~size_t{255};
    T* p = base_ ? reinterpret_cast<T*>(base_ + offset_) : nullptr;
    offset_ += count * sizeof(T);
    return p;
  }
  size_t size() const { return offset_; }

 private:
  uint8_t* base_;
  size_t offset_ = 0;
};

}  // namespace ebzip::gpu

#endif  // EBZIP_GPU_WORKSPACE_CARVER_H_
