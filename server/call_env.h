// What every call of the Compressor service shares: the scheduler, the
// admission budget, the metrics and the limits, plus the checks each call
// makes before it accepts a byte (token, drain) and the bookkeeping each
// makes when it ends (status metric, structured log line).
#ifndef EBZIP_SERVER_CALL_ENV_H_
#define EBZIP_SERVER_CALL_ENV_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "server/admission.h"
#include "server/backend.h"
#include "server/idle_watch.h"
#include "server/limits.h"
#include "server/metrics.h"
#include "server/scheduler.h"

namespace ebzip::server {

class ArchiveRoot;

// What one call may do (docs/operations.md, "Limits and abuse").
struct CallLimits {
  uint64_t max_request_bytes = uint64_t{4} << 30;   // an array or archive held whole
  uint64_t max_output_bytes = uint64_t{64} << 30;   // the array of a Decompress or Compress
  double max_ratio = 65536;                         // array bytes per archive byte (Decompress)
  int max_calls = 1024;                             // calls in progress at once
  uint64_t min_frame_elements = uint64_t{1} << 16;  // smallest frame a Compress may ask for
  size_t message_bytes = size_t{1} << 20;           // payload per outgoing message
  size_t stream_frames = 4;                         // frames of a streamed request in flight
  std::string token;                                // empty: no authentication
  // Where a Decompress may name archives (--archive_root); null: nowhere.
  std::shared_ptr<const ArchiveRoot> archive_root;
};

class CallEnv {
 public:
  CallEnv(Scheduler& s, AdmissionControl& a, Metrics& m, const Backend& b, IdleWatch& w,
          CallLimits l)
      : scheduler(s), admission(a), metrics(m), backend(b), limits(std::move(l)), idle_(w) {}

  // UNAUTHENTICATED without the right bearer token, UNAVAILABLE while
  // draining, RESOURCE_EXHAUSTED beyond --max_calls (this call counted).
  absl::Status Admit(const grpc::CallbackServerContext& context);

  // RESOURCE_EXHAUSTED for a request that needs `bytes` of the budget in
  // all: at once when it could never fit, or when the server is too full
  // for it now (it is not reserved: the call grows its reservation as it
  // goes, so that a client that stalls holds only what it has sent).
  absl::Status CheckCost(uint64_t bytes, const char* what);
  // RESOURCE_EXHAUSTED when `bytes` of one request pass --max_request_bytes
  // (kRequestBytes) or --max_output_bytes (kOutputBytes): "<what> <bytes>
  // bytes, more than ...".
  absl::Status CheckSize(Limit limit, uint64_t bytes, absl::string_view what,
                         absl::string_view hint = "");
  // Records a refusal by `limit` and returns `status`.
  absl::Status Refuse(Limit limit, absl::Status status);

  IdleWatch& idle_watch() { return idle_; }

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
  IdleWatch& idle_;
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
