#include "server/host_block_pool.h"

#include <cassert>
#include <cstring>

namespace ebzip::server {

HostBlock& HostBlock::operator=(HostBlock&& other) noexcept {
  if (this != &other) {
    Release();
    pool_ = std::move(other.pool_);
    data_ = other.data_;
    size_ = other.size_;
    capacity_ = other.capacity_;
    size_class_ = other.size_class_;
    other.data_ = nullptr;
    other.size_ = other.capacity_ = 0;
  }
  return *this;
}

void HostBlock::Append(const void* from, uint64_t n) {
  assert(n <= capacity_ - size_);
  std::memcpy(data_ + size_, from, n);
  size_ += n;
}

void HostBlock::Abandon() {
  pool_.reset();
  data_ = nullptr;
  size_ = capacity_ = 0;
}

void HostBlock::Release() {
  if (data_ != nullptr) pool_->Give(data_, size_class_);
  pool_.reset();
  data_ = nullptr;
  size_ = capacity_ = 0;
}

std::shared_ptr<HostBlockPool> HostBlockPool::Create(uint8_t* region, uint64_t bytes,
                                                     std::function<void(uint8_t*)> release) {
  return std::shared_ptr<HostBlockPool>(new HostBlockPool(region, bytes, std::move(release)));
}

HostBlockPool::~HostBlockPool() {
  if (release_) release_(region_);
}

HostBlock HostBlockPool::Take(uint64_t bytes) {
  HostBlock block;
  if (bytes > kLargestBlock) return block;
  int size_class = 0;
  while ((kSmallestBlock << size_class) < bytes) ++size_class;
  const uint64_t size = kSmallestBlock << size_class;
  {
    absl::MutexLock lock(&mu_);
    if (!free_[size_class].empty()) {
      block.data_ = free_[size_class].back();
      free_[size_class].pop_back();
    } else if (size <= bytes_ - carved_) {
      block.data_ = region_ + carved_;
      carved_ += size;
    } else {
      int larger = size_class + 1;
      while (larger < kClasses && free_[larger].empty()) ++larger;
      if (larger == kClasses) {
        ++misses_;
        return block;
      }
      block.data_ = free_[larger].back();
      free_[larger].pop_back();
      size_class = larger;
    }
    given_ += kSmallestBlock << size_class;
  }
  block.pool_ = shared_from_this();
  block.capacity_ = kSmallestBlock << size_class;
  block.size_class_ = size_class;
  return block;
}

uint64_t HostBlockPool::carved() const {
  absl::MutexLock lock(&mu_);
  return carved_;
}

HostPoolStats HostBlockPool::stats() const {
  absl::MutexLock lock(&mu_);
  return {bytes_, carved_, given_, misses_};
}

void HostBlockPool::Give(uint8_t* block, int size_class) {
  absl::MutexLock lock(&mu_);
  free_[size_class].push_back(block);
  given_ -= kSmallestBlock << size_class;
}

}  // namespace ebzip::server
