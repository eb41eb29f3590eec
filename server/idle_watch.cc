#include "server/idle_watch.h"

#include <algorithm>
#include <vector>

#include "absl/time/clock.h"

namespace ebzip::server {

namespace {
bool Watching(absl::Duration timeout) {
  return timeout > absl::ZeroDuration() && timeout != absl::InfiniteDuration();
}
}  // namespace

IdleWatch::IdleWatch(absl::Duration timeout) : timeout_(timeout) {
  if (Watching(timeout_)) thread_ = std::thread([this] { Loop(); });
}

IdleWatch::~IdleWatch() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void IdleWatch::Join(IdleCall* call) {
  if (!Watching(timeout_)) return;
  absl::MutexLock lock(&mu_);
  calls_.insert(call);
}

void IdleWatch::Leave(IdleCall* call) {
  if (!Watching(timeout_)) return;
  absl::MutexLock lock(&mu_);
  calls_.erase(call);
}

void IdleWatch::CheckNow() {
  const absl::Time now = absl::Now();
  std::vector<IdleCall*> expired;
  {
    // A call found here cannot be deleted before its Ref: deleting comes
    // after Leave, which waits for this lock.
    absl::MutexLock lock(&mu_);
    for (IdleCall* call : calls_) {
      if (now - call->WaitingSince() >= timeout_) {
        call->Ref();
        expired.push_back(call);
      }
    }
  }
  // Outside the lock: ending a call can finish it, and its OnDone Leaves.
  for (IdleCall* call : expired) {
    call->ExpireIdle(timeout_);
    call->Unref();
  }
}

void IdleWatch::Loop() {
  // A call is ended between timeout and 1.25 x timeout after it went quiet.
  const absl::Duration period = std::max(timeout_ / 4, absl::Milliseconds(10));
  absl::MutexLock lock(&mu_);
  while (!stop_) {
    mu_.AwaitWithTimeout(absl::Condition(&stop_), period);
    if (stop_) break;
    mu_.Unlock();
    CheckNow();
    mu_.Lock();
  }
}

}  // namespace ebzip::server
