#include "server/server_flags.h"

#include <algorithm>
#include <cstdint>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "server/enum_names.h"
#include "server/gpu_backend.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:50051",
          "gRPC address: HOST:PORT, [IPV6]:PORT or unix:PATH (port 0: any free port)");
ABSL_FLAG(std::string, metrics_listen, "0.0.0.0:9464",
          "Prometheus /metrics address, HOST:PORT or [IPV6]:PORT; empty to turn off");
ABSL_FLAG(std::string, backend, "auto", "auto (GPU when one is visible), gpu or cpu");
ABSL_FLAG(uint64_t, max_request_bytes, uint64_t{4} << 30,
          "Largest array (or archive) one request may carry, in bytes");
ABSL_FLAG(uint64_t, max_queued_bytes, uint64_t{8} << 30,
          "Host bytes all requests in progress may hold (their data, the codec's working memory, "
          "their results); a request that cannot fit gets RESOURCE_EXHAUSTED");
ABSL_FLAG(uint64_t, max_output_bytes, uint64_t{64} << 30,
          "Largest array one request may produce (Decompress) or send (Compress), streamed or "
          "not, in bytes");
ABSL_FLAG(double, max_ratio, 65536,
          "Largest ratio of array bytes to archive bytes a Decompress may have (per frame)");
ABSL_FLAG(int32_t, max_calls, 1024, "Calls in progress at once; beyond it RESOURCE_EXHAUSTED");
ABSL_FLAG(uint64_t, min_frame_elements, uint64_t{1} << 16,
          "Smallest frame (CompressOptions.frame_elements) a Compress may ask for: smaller frames "
          "multiply the work and the archive");
ABSL_FLAG(int64_t, idle_timeout_seconds, 30,
          "End a call that has waited this long on its client (sent nothing, or read nothing of "
          "its reply) and free what it held; 0: never");
ABSL_FLAG(uint64_t, grpc_memory_bytes, uint64_t{512} << 20,
          "Memory gRPC itself may use for received messages not yet read and streams' state");
ABSL_FLAG(int32_t, max_concurrent_streams, 256, "Calls one connection may have open at once");
ABSL_FLAG(int64_t, keepalive_seconds, 60,
          "Ping a connection after this long without traffic and close it when no answer comes "
          "within 20 s (clients that vanished); 0: never");
ABSL_FLAG(bool, reflection, true,
          "Serve gRPC server reflection (it answers without the token: it describes the API, "
          "not data)");
ABSL_FLAG(bool, batching, true, "Pack small requests into batched launches");
ABSL_FLAG(uint64_t, max_batch_bytes, uint64_t{64} << 20,
          "Array bytes per batch; larger requests run alone");
ABSL_FLAG(uint32_t, max_batch_requests, 256, "Requests per batch");
ABSL_FLAG(int64_t, max_queue_delay_us, 500,
          "How long a small request may wait for others to batch with, in microseconds");
ABSL_FLAG(int32_t, cpu_workers, 2, "CPU backend: batches run at once (each uses every core)");
ABSL_FLAG(uint64_t, gpu_memory_bytes, 0,
          "GPU backend: device memory pool per GPU in bytes (0: 3/4 of free memory)");
ABSL_FLAG(uint64_t, gpu_pinned_bytes, uint64_t{256} << 20,
          "GPU backend: pinned host memory per GPU worker in bytes");
ABSL_FLAG(uint64_t, gpu_host_pool_bytes, uint64_t{1} << 30,
          "GPU backend: pinned host memory, shared by all GPUs, that arrays and frames of up to "
          "128 MiB are received into (to compress) and sent from (decompressed); 0: none");
ABSL_FLAG(int32_t, gpu_workers, 2,
          "GPU backend: workers per GPU, each with its own CUDA stream, share of the pool and "
          "pinned memory, so one's copies and host work overlap another's kernels");
ABSL_FLAG(std::string, gpu_wait, "yield",
          "GPU backend: how a worker waits for its GPU: yield (polls, letting other threads "
          "have the core between polls), block (sleeps until the GPU signals: frees the core, "
          "wakes later) or spin (polls, keeping one core per worker)");
ABSL_FLAG(std::string, gpu_failure_policy, "retry",
          "GPU backend: what the work a failed GPU was running does: retry (on the other GPUs, "
          "or the CPU codec when none is left) or fail (UNAVAILABLE, naming the GPU)");
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate chain; with --tls_key, serve TLS");
ABSL_FLAG(std::string, tls_key, "", "PEM private key for --tls_cert");
ABSL_FLAG(std::string, token, "", "Require \"authorization: Bearer TOKEN\" on every call");
ABSL_FLAG(std::string, token_file, "", "Read the token from this file (e.g. a mounted secret)");
ABSL_FLAG(std::string, archive_root, "",
          "Directory a Decompress may name archives under by a relative path instead of "
          "uploading them (no symbolic links, regular files only); empty: off");
ABSL_FLAG(int64_t, drain_seconds, 30,
          "On SIGTERM: how long calls in progress may take to finish before being cancelled");
ABSL_FLAG(uint32_t, message_bytes, 1 << 20, "Payload bytes per streamed response message");
ABSL_FLAG(int64_t, max_connection_age_seconds, 300,
          "Close client connections after this long (their calls finish first), so that clients "
          "re-resolve the service and find new replicas; 0: never");
ABSL_FLAG(uint32_t, stream_frames, 4,
          "Compress with an absolute bound and several frames streams frame by frame: frames of "
          "one request queued, running or unsent at once (its memory bound; --max_request_bytes "
          "does not apply)");

namespace ebzip::server {

std::vector<std::string> ServerFlagNames() {
  // Ours are the flags defined in this file.
  const std::string file = absl::GetFlagReflectionHandle(FLAGS_listen).Filename();
  std::vector<std::string> names;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (flag->Filename() == file) names.emplace_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string EnvironmentName(absl::string_view flag) {
  return absl::StrCat("EBZIPD_", absl::AsciiStrToUpper(flag));
}

std::vector<std::string> FlagsFromEnvironment(
    absl::Span<const std::string> flags, absl::FunctionRef<const char*(const char*)> getenv) {
  std::vector<std::string> args;
  for (const std::string& flag : flags) {
    if (const char* value = getenv(EnvironmentName(flag).c_str()); value != nullptr) {
      args.push_back(absl::StrCat("--", flag, "=", value));
    }
  }
  return args;
}

absl::StatusOr<DaemonConfig> DaemonConfigFromFlags() {
  DaemonConfig c;
  ServerOptions& o = c.server;
  o.listen = absl::GetFlag(FLAGS_listen);
  o.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  auto backend = ParseEnumName("backend", kBackendNames, absl::GetFlag(FLAGS_backend));
  if (!backend.ok()) return backend.status();
  o.backend = *backend;
  o.max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  o.max_queued_bytes = absl::GetFlag(FLAGS_max_queued_bytes);
  o.max_output_bytes = absl::GetFlag(FLAGS_max_output_bytes);
  o.max_ratio = absl::GetFlag(FLAGS_max_ratio);
  o.max_calls = absl::GetFlag(FLAGS_max_calls);
  o.min_frame_elements = absl::GetFlag(FLAGS_min_frame_elements);
  o.idle_timeout = absl::Seconds(absl::GetFlag(FLAGS_idle_timeout_seconds));
  o.grpc_memory_bytes = absl::GetFlag(FLAGS_grpc_memory_bytes);
  o.max_concurrent_streams = absl::GetFlag(FLAGS_max_concurrent_streams);
  o.keepalive = absl::Seconds(absl::GetFlag(FLAGS_keepalive_seconds));
  o.reflection = absl::GetFlag(FLAGS_reflection);
  o.batching.enabled = absl::GetFlag(FLAGS_batching);
  o.batching.max_batch_bytes = absl::GetFlag(FLAGS_max_batch_bytes);
  o.batching.max_batch_requests = absl::GetFlag(FLAGS_max_batch_requests);
  o.batching.max_queue_delay = absl::Microseconds(absl::GetFlag(FLAGS_max_queue_delay_us));
  o.cpu_workers = absl::GetFlag(FLAGS_cpu_workers);
  o.gpu_memory_bytes = absl::GetFlag(FLAGS_gpu_memory_bytes);
  o.gpu_pinned_bytes = absl::GetFlag(FLAGS_gpu_pinned_bytes);
  o.gpu_host_pool_bytes = absl::GetFlag(FLAGS_gpu_host_pool_bytes);
  o.gpu_workers = absl::GetFlag(FLAGS_gpu_workers);
  auto policy = ParseEnumName("gpu_failure_policy", kGpuFailurePolicyNames,
                              absl::GetFlag(FLAGS_gpu_failure_policy));
  if (!policy.ok()) return policy.status();
  o.gpu_failure_policy = *policy;
  auto wait = ParseEnumName("gpu_wait", kGpuWaitNames, absl::GetFlag(FLAGS_gpu_wait));
  if (!wait.ok()) return wait.status();
  o.gpu_wait = *wait;
  o.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  o.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  o.token = absl::GetFlag(FLAGS_token);
  o.archive_root = absl::GetFlag(FLAGS_archive_root);
  c.token_file = absl::GetFlag(FLAGS_token_file);
  o.message_bytes = absl::GetFlag(FLAGS_message_bytes);
  o.stream_frames = absl::GetFlag(FLAGS_stream_frames);
  o.max_connection_age = absl::Seconds(absl::GetFlag(FLAGS_max_connection_age_seconds));
  c.drain = absl::Seconds(absl::GetFlag(FLAGS_drain_seconds));
  return c;
}

absl::Status CheckLimits(const ServerOptions& o) {
  if (o.message_bytes == 0 || o.max_request_bytes == 0 || o.max_queued_bytes == 0 ||
      o.stream_frames == 0 || o.max_output_bytes == 0 || !(o.max_ratio >= 1) || o.max_calls < 1 ||
      o.grpc_memory_bytes == 0 || o.max_concurrent_streams < 1 ||
      o.idle_timeout < absl::ZeroDuration() || o.keepalive < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--message_bytes, --stream_frames and the limits must be positive "
        "(--max_ratio at least 1; the timeouts may be 0: off)");
  }
  return absl::OkStatus();
}

}  // namespace ebzip::server
