// Ends calls that wait on their client for too long. A call that holds part
// of the byte budget and then sends nothing (or stops reading its reply)
// would otherwise keep everyone else out until its connection closes; with
// the watch, it is cancelled --idle_timeout after its last progress and what
// it held goes back. One thread looks at every call a few times per timeout.
#ifndef EBZIP_SERVER_IDLE_WATCH_H_
#define EBZIP_SERVER_IDLE_WATCH_H_

#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace ebzip::server {

// What the watch needs of a call.
class IdleCall {
 public:
  virtual ~IdleCall() = default;
  // Since when the call has waited on its client (a read it started that
  // has not completed, a write not yet taken); InfiniteFuture when it waits
  // on nobody or on the server itself (its work is queued or running).
  virtual absl::Time WaitingSince() = 0;
  // Keeps the call alive while the watch uses it outside its lock.
  virtual void Ref() = 0;
  virtual void Unref() = 0;
  // Ends the call: it was idle for `idle`.
  virtual void ExpireIdle(absl::Duration idle) = 0;
};

class IdleWatch {
 public:
  // A zero or infinite timeout watches nothing.
  explicit IdleWatch(absl::Duration timeout);
  ~IdleWatch();  // stops the thread; every call must have left first
  IdleWatch(const IdleWatch&) = delete;
  IdleWatch& operator=(const IdleWatch&) = delete;

  absl::Duration timeout() const { return timeout_; }

  // A call starts and ends being watched. Leave returns only once the watch
  // no longer uses the call without a reference of its own.
  void Join(IdleCall* call);
  void Leave(IdleCall* call);

  // Looks at every call once now (the thread does this every timeout / 4).
  void CheckNow();

 private:
  void Loop();

  const absl::Duration timeout_;
  absl::Mutex mu_;
  absl::flat_hash_set<IdleCall*> calls_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_IDLE_WATCH_H_
