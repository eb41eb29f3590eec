// Blocks of one long-lived host region, handed out to requests and taken
// back when they are done. The GPU backend's region is page-locked: a small
// array received into one of its blocks goes up to the device by DMA from
// where the call wrote it, and a decompressed one comes down into one and is
// sent from there, instead of each passing through the worker's staging with
// a copy; those copies were a quarter of a batch's time on the GPU hosts
// measured.
//
// Blocks come in power-of-two classes from kSmallestBlock to kLargestBlock;
// a freed block waits on its class's free list for the next request of that
// class, and the region is carved further only when that list is empty. A
// request larger than kLargestBlock, or one that finds the region used up,
// gets an empty block and its caller uses ordinary memory instead.
#ifndef EBZIP_SERVER_HOST_BLOCK_POOL_H_
#define EBZIP_SERVER_HOST_BLOCK_POOL_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"

namespace ebzip::server {

class HostBlockPool;

// A block of the pool, filled from the front; returns to the pool when
// destroyed. Empty (false) when the pool had none to give.
class HostBlock {
 public:
  HostBlock() = default;
  HostBlock(HostBlock&& other) noexcept { *this = std::move(other); }
  HostBlock& operator=(HostBlock&& other) noexcept;
  ~HostBlock() { Release(); }

  explicit operator bool() const { return data_ != nullptr; }
  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  uint64_t capacity() const { return capacity_; }
  absl::Span<const uint8_t> bytes() const { return {data_, size_}; }
  // Appends n bytes; n must fit in capacity() - size() (callers check).
  void Append(const void* from, uint64_t n);
  // The first n bytes (at most capacity()) were written by other means, a
  // DMA say: they are the block's contents.
  void SetFilled(uint64_t n) { size_ = n; }
  // Gives the block back now.
  void Release();
  // Lets go of the block without giving it back: for a block a device may
  // still write into when its context is lost. Its bytes stay carved.
  void Abandon();

 private:
  friend class HostBlockPool;
  std::shared_ptr<HostBlockPool> pool_;
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t capacity_ = 0;
  int size_class_ = 0;
};

// What the pool's metrics show (ebzip_host_pool_*).
struct HostPoolStats {
  uint64_t bytes = 0;   // the region
  uint64_t carved = 0;  // of it, cut into blocks so far
  uint64_t given = 0;   // in blocks given out and not yet back (or abandoned)
  uint64_t misses = 0;  // requests of at most kLargestBlock that got none
};

class HostBlockPool : public std::enable_shared_from_this<HostBlockPool> {
 public:
  static constexpr uint64_t kSmallestBlock = uint64_t{64} << 10;
  // A whole frame of the default size (2^24 float32 elements) or of
  // float64 fits one block, so large arrays stream through the pool frame by
  // frame too.
  static constexpr uint64_t kLargestBlock = uint64_t{128} << 20;

  // The pool carves [region, region + bytes); `release(region)` runs when
  // the pool and every block it gave out are gone.
  static std::shared_ptr<HostBlockPool> Create(uint8_t* region, uint64_t bytes,
                                               std::function<void(uint8_t*)> release);
  ~HostBlockPool();

  // A block of at least `bytes` (a 64 KiB one for 0), or an empty one
  // (see above). With the region used up, a freed block of a larger class
  // serves too, so one burst of large arrays does not keep small ones out.
  HostBlock Take(uint64_t bytes);

  // Bytes of the region carved into blocks so far.
  uint64_t carved() const;
  HostPoolStats stats() const;

 private:
  static constexpr int kClasses = 12;  // 64 KiB .. 128 MiB
  static_assert(kSmallestBlock << (kClasses - 1) == kLargestBlock);
  HostBlockPool(uint8_t* region, uint64_t bytes, std::function<void(uint8_t*)> release)
      : region_(region), bytes_(bytes), release_(std::move(release)) {}
  friend class HostBlock;
  void Give(uint8_t* block, int size_class);

  uint8_t* const region_;
  const uint64_t bytes_;
  const std::function<void(uint8_t*)> release_;
  mutable absl::Mutex mu_;
  uint64_t carved_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t given_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t misses_ ABSL_GUARDED_BY(mu_) = 0;
  std::array<std::vector<uint8_t*>, kClasses> free_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_HOST_BLOCK_POOL_H_
