// Running a call again when a server refused it before doing any work.
//
// This is the retry gRPC's service config would describe (a retryPolicy on
// UNAVAILABLE), done in the client instead: gRPC 1.51's retry code (Debian
// 12's libgrpc) aborts the client process when a retried streaming call
// races a pick that client-side health checking holds back
// ("client_channel.cc: assertion failed: pending_batches_[idx] == nullptr",
// about one run in twenty of the drain test). Here a retry also works for
// requests larger than gRPC's retry buffer (256 KiB).
#ifndef EBZIP_CLIENT_REMOTE_RETRY_H_
#define EBZIP_CLIENT_REMOTE_RETRY_H_

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/time/time.h"

namespace ebzip::client {

struct RetryPolicy {
  int max_attempts = 3;
  absl::Duration initial_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(1);
  double backoff_multiplier = 2;
};

// Runs `attempt` until it succeeds or fails for good. An attempt runs again
// only when it failed UNAVAILABLE (a draining server's refusal, a refused
// or broken connection) and left *delivered false, that is, handed nothing
// of the reply to the caller; and only while attempts remain and the next
// would start before `deadline`. Waits the backoff (±20 %, so that clients
// refused together do not come back together) between attempts. Returns the
// last attempt's status.
absl::Status CallWithRetries(const RetryPolicy& policy, absl::Time deadline,
                             absl::FunctionRef<absl::Status(bool* delivered)> attempt);

}  // namespace ebzip::client

#endif  // EBZIP_CLIENT_REMOTE_RETRY_H_
