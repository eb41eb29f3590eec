// Admission control: a budget of host bytes that requests may hold at once
// (their input while it arrives and waits, their output until it is sent).
// Asking beyond it fails at once with RESOURCE_EXHAUSTED rather than
// queueing, so a burst cannot grow the server's memory without bound.
#ifndef EBZIP_SERVER_ADMISSION_H_
#define EBZIP_SERVER_ADMISSION_H_

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"

namespace ebzip::server {

class AdmissionControl;

// Costs are summed from headers a client wrote: they saturate, never wrap.
inline uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
inline uint64_t SaturatingMul(uint64_t a, uint64_t b) {
  return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

// Bytes held from an AdmissionControl, given back when destroyed. A default
// Reservation belongs to no budget: it records sizes and holds nothing (works
// made outside a call: a backend's warm-up, tests).
class Reservation {
 public:
  Reservation() = default;
  Reservation(Reservation&& other) noexcept { *this = std::move(other); }
  Reservation& operator=(Reservation&& other) noexcept;
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  ~Reservation() { Release(); }

  // Holds `bytes` more; RESOURCE_EXHAUSTED (holding nothing more) if the
  // budget would be exceeded. Not thread-safe: one owner at a time.
  absl::Status Grow(uint64_t bytes);
  // Changes the holding to `bytes`, even beyond the budget: to shrink it to
  // the output once the input and working memory are gone.
  void Resize(uint64_t bytes);
  void Release();
  uint64_t bytes() const { return bytes_; }

 private:
  friend class AdmissionControl;

  // Costs are summed from headers a client wrote: they saturate, never wrap.
  inline uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
  }
  inline uint64_t SaturatingMul(uint64_t a, uint64_t b) {
    return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
  }
  AdmissionControl* owner_ = nullptr;
  uint64_t bytes_ = 0;
};

class AdmissionControl {
 public:
  explicit AdmissionControl(uint64_t limit) : limit_(limit) {}
  Reservation Empty() {
    Reservation r;
    r.owner_ = this;
    return r;
  }
  uint64_t limit() const { return limit_; }
  uint64_t held() const { return held_.load(std::memory_order_relaxed); }

 private:
  friend class Reservation;
  bool TryAdd(uint64_t bytes);
  void Add(uint64_t bytes) { held_.fetch_add(bytes, std::memory_order_relaxed); }
  void Sub(uint64_t bytes) { held_.fetch_sub(bytes, std::memory_order_relaxed); }

  const uint64_t limit_;
  std::atomic<uint64_t> held_{0};
};

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_ADMISSION_H_
