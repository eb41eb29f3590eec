#include "client/remote/retry.h"

#include <algorithm>

#include "absl/random/random.h"
#include "absl/time/clock.h"

namespace ebzip::client {

absl::Status CallWithRetries(const RetryPolicy& policy, absl::Time deadline,
                             absl::FunctionRef<absl::Status(bool* delivered)> attempt) {
  absl::BitGen jitter;
  absl::Duration backoff = policy.initial_backoff;
  for (int n = 1;; ++n) {
    bool delivered = false;
    absl::Status status = attempt(&delivered);
    if (status.ok() || status.code() != absl::StatusCode::kUnavailable || delivered ||
        n >= policy.max_attempts) {
      return status;
    }
    const absl::Duration wait = backoff * absl::Uniform(jitter, 0.8, 1.2);
    if (absl::Now() + wait >= deadline) return status;
    absl::SleepFor(wait);
    backoff = std::min(backoff * policy.backoff_multiplier, policy.max_backoff);
  }
}

}  // namespace ebzip::client
