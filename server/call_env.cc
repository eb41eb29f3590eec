#include "server/call_env.h"

#include <chrono>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/log.h"

namespace ebzip::server {
namespace {

std::string Metadata(const grpc::CallbackServerContext& context, const char* key) {
  const auto& md = context.client_metadata();
  auto it = md.find(key);
  return it == md.end() ? std::string() : std::string(it->second.data(), it->second.size());
}

// Whether `given` equals `secret`, in a time that depends only on the
// secret's length: neither where the strings first differ nor a length
// mismatch returns early.
bool SameSecret(const std::string& given, const std::string& secret) {
  unsigned diff = given.size() == secret.size() ? 0 : 1;
  for (size_t i = 0; i < secret.size(); ++i) {
    const unsigned char g = given.empty() ? 0 : given[i % given.size()];
    diff |= g ^ static_cast<unsigned char>(secret[i]);
  }
  return diff == 0;
}

}  // namespace

absl::Status CallEnv::Admit(const grpc::CallbackServerContext& context) {
  if (!limits.token.empty() &&
      !SameSecret(Metadata(context, "authorization"), "Bearer " + limits.token)) {
    return absl::UnauthenticatedError(
        "missing or wrong bearer token (metadata \"authorization: Bearer <token>\")");
  }
  if (draining_.load()) {
    return absl::UnavailableError("the server is draining; retry on another replica");
  }
  if (calls_in_progress() > limits.max_calls) {
    return Refuse(Limit::kCalls, absl::ResourceExhaustedError(absl::StrCat(
                                     "the server has ", limits.max_calls,
                                     " calls in progress (--max_calls); retry later")));
  }
  return absl::OkStatus();
}

absl::Status CallEnv::CheckCost(uint64_t bytes, const char* what) {
  if (bytes > admission.limit()) {
    return Refuse(Limit::kQueuedBytes,
                  absl::ResourceExhaustedError(absl::StrCat(
                      what, " needs ", bytes,
                      " bytes of server memory, more than all requests "
                      "together may hold (--max_queued_bytes ",
                      admission.limit(),
                      "); send a smaller array, or larger frames to a server with more memory")));
  }
  const uint64_t held = admission.held();
  if (held > admission.limit() - bytes) {
    return Refuse(Limit::kQueuedBytes, absl::ResourceExhaustedError(absl::StrCat(
                                           "server is full: ", held, " of ", admission.limit(),
                                           " bytes held by requests in progress, ", what, " needs ",
                                           bytes, "; retry later")));
  }
  return absl::OkStatus();
}

absl::Status CallEnv::CheckSize(Limit limit, uint64_t bytes, absl::string_view what,
                                absl::string_view hint) {
  const bool output = limit == Limit::kOutputBytes;
  const uint64_t most = output ? limits.max_output_bytes : limits.max_request_bytes;
  if (bytes <= most) return absl::OkStatus();
  return Refuse(limit,
                absl::ResourceExhaustedError(absl::StrCat(
                    what, " ", bytes, " bytes, more than this server takes in one request (",
                    output ? "--max_output_bytes " : "--max_request_bytes ", most, hint, ")")));
}

absl::Status CallEnv::Refuse(Limit limit, absl::Status status) {
  metrics.LimitHit(limit);
  return status;
}

void CallEnv::StartCall(Method m) {
  metrics.RequestStarted(m);
  absl::MutexLock lock(&mu_);
  ++calls_;
}

void CallEnv::EndCall(Method m, const std::string& request_id, const std::string& peer,
                      const absl::Status& status, absl::Duration took, uint64_t in, uint64_t out) {
  metrics.RequestFinished(m, status.code(), absl::ToDoubleSeconds(took));
  const bool bad = status.code() == absl::StatusCode::kInternal ||
                   status.code() == absl::StatusCode::kUnknown ||
                   status.code() == absl::StatusCode::kDataLoss;
  LogEvent(bad ? LogLevel::kWarning : LogLevel::kInfo, "request finished",
           {{"method", MethodName(m)},
            {"request_id", request_id},
            {"peer", peer},
            {"code", absl::StatusCodeToString(status.code())},
            {"message", std::string(status.message())},
            {"seconds", absl::ToDoubleSeconds(took)},
            {"bytes_in", in},
            {"bytes_out", out}});
  absl::MutexLock lock(&mu_);
  --calls_;
}

bool CallEnv::WaitIdle(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithDeadline(absl::Condition(
                                   +[](int* calls) { return *calls == 0; }, &calls_),
                               deadline);
}

int CallEnv::calls_in_progress() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

grpc::Status ToGrpc(const absl::Status& s) {
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

std::string RequestId(const grpc::CallbackServerContext& context, const std::string& given) {
  if (!given.empty()) return given;
  std::string from_metadata = Metadata(context, "ebzip-request-id");
  if (!from_metadata.empty()) return from_metadata;
  thread_local std::mt19937_64 rng(std::random_device{}());
  return absl::StrCat(absl::Hex(rng(), absl::kZeroPad16));
}

int PriorityFromMetadata(const grpc::CallbackServerContext& context) {
  int p = 0;
  return absl::SimpleAtoi(Metadata(context, "ebzip-priority"), &p) ? p : 0;
}

absl::Time Deadline(const grpc::CallbackServerContext& context) {
  const auto d = context.deadline();
  if (d >= std::chrono::system_clock::time_point::max() - std::chrono::hours(24 * 365)) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(d);
}

}  // namespace ebzip::server
