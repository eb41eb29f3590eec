#include "server/admission.h"

#include "absl/strings/str_cat.h"

namespace ebzip::server {

bool AdmissionControl::TryAdd(uint64_t bytes) {
  uint64_t held = held_.load(std::memory_order_relaxed);
  do {
    if (bytes > limit_ || held > limit_ - bytes) return false;
  } while (!held_.compare_exchange_weak(held, held + bytes, std::memory_order_relaxed));
  return true;
}

Reservation& Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    Release();
    owner_ = other.owner_;
    bytes_ = other.bytes_;
    other.bytes_ = 0;
  }
  return *this;
}

absl::Status Reservation::Grow(uint64_t bytes) {
  if (owner_ != nullptr && !owner_->TryAdd(bytes)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("server is full: ", owner_->held(), " of ", owner_->limit(),
                     " bytes (--max_queued_bytes) held by requests in progress, this one needs ",
                     bytes, " more; retry later"));
  }
  bytes_ += bytes;
  return absl::OkStatus();
}

void Reservation::Resize(uint64_t bytes) {
  if (owner_ == nullptr) {  // a default Reservation holds nothing of anyone's
    bytes_ = bytes;
    return;
  }
  if (bytes > bytes_) {
    owner_->Add(bytes - bytes_);
  } else {
    owner_->Sub(bytes_ - bytes);
  }
  bytes_ = bytes;
}

void Reservation::Release() {
  if (owner_ != nullptr && bytes_ > 0) owner_->Sub(bytes_);
  bytes_ = 0;
}

}  // namespace ebzip::server
