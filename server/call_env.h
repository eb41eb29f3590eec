// What every call of the Compressor service shares: the scheduler, the
// admission budget, the metrics and the limits, plus the checks each call
// makes before it accepts a byte (token, drain) and the bookkeeping each
// makes when it ends (status metric, structured log line).
#ifndef EBZIP_SERVER_CALL_ENV_H_
#define EBZIP_SERVER_CALL_ENV_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "server/admission.h"
#include "server/backend.h"
#include "server/metrics.h"
#include "server/scheduler.h"

namespace ebzip::server {

struct CallLimits {
  uint64_t max_request_bytes = uint64_t{4} << 30;
  size_t message_bytes = size_t{1} << 20;  // payload per outgoing message
  size_t stream_frames = 4;                // frames of a streamed request in flight
  std::string token;                       // empty: no authentication
};

class CallEnv {
 public:
  CallEnv(Scheduler& s, AdmissionControl& a, Metrics& m, const Backend& b, CallLimits l)
      : scheduler(s), admission(a), metrics(m), backend(b), limits(std::move(l)) {}

  // UNAUTHENTICATED without the right bearer token, UNAVAILABLE while draining.
  absl::Status Admit(const grpc::CallbackServerContext& context) const;

  // A call starts and ends; EndCall records its status and logs it.
  void StartCall(Method m);
  void EndCall(Method m, const std::string& request_id, const std::string& peer,
               const absl::Status& status, absl::Duration took, uint64_t in, uint64_t out);

  // Refuse new calls from now on; wait until no call is left or `deadline`.
  // True when every call finished in time.
  void StartDraining() { draining_.store(true); }
  bool WaitIdle(absl::Time deadline);
  int calls_in_progress() const;

  Scheduler& scheduler;
  AdmissionControl& admission;
  Metrics& metrics;
  const Backend& backend;
  const CallLimits limits;

 private:
  std::atomic<bool> draining_{false};
  mutable absl::Mutex mu_;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
};

grpc::Status ToGrpc(const absl::Status& s);
// The client's "ebzip-request-id" metadata, the given id, or a fresh one.
std::string RequestId(const grpc::CallbackServerContext& context, const std::string& given);
// The "ebzip-priority" metadata (Decompress has no header to carry it).
int PriorityFromMetadata(const grpc::CallbackServerContext& context);
// The call's deadline, or InfiniteFuture.
absl::Time Deadline(const grpc::CallbackServerContext& context);

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_CALL_ENV_H_
