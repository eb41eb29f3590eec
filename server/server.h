// ebzipd as an object: the gRPC server (Compressor, health, reflection),
// the scheduler and backend behind it, and the metrics endpoint. main.cc
// wires flags and signals to it; tests run it in-process.
#ifndef EBZIP_SERVER_SERVER_H_
#define EBZIP_SERVER_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/admission.h"
#include "server/backend.h"
#include "server/call_env.h"
#include "server/enum_names.h"
#include "server/gpu_backend.h"  // its options' modes, with or without CUDA
#include "server/idle_watch.h"
#include "server/metrics.h"
#include "server/scheduler.h"

namespace grpc {
class Server;
}

namespace ebzip::server {

class CompressorService;

// What runs the codec (--backend).
enum class BackendChoice {
  kAuto,  // the GPU when one is visible, else the CPU
  kGpu,
  kCpu,
};
inline constexpr EnumName<BackendChoice> kBackendNames[] = {
    {BackendChoice::kAuto, "auto"}, {BackendChoice::kGpu, "gpu"}, {BackendChoice::kCpu, "cpu"}};

struct ServerOptions {
  std::string listen = "0.0.0.0:50051";         // HOST:PORT; port 0 picks one
  std::string metrics_listen = "0.0.0.0:9464";  // empty: no /metrics
  BackendChoice backend = BackendChoice::kAuto;
  // Limits (docs/operations.md, "Limits and abuse"; call_env.h's CallLimits).
  uint64_t max_request_bytes = uint64_t{4} << 30;
  uint64_t max_queued_bytes = uint64_t{8} << 30;
  uint64_t max_output_bytes = uint64_t{64} << 30;
  double max_ratio = 65536;
  int max_calls = 1024;
  uint64_t min_frame_elements = uint64_t{1} << 16;
  // A call waiting on its client this long is ended (zero: never).
  absl::Duration idle_timeout = absl::Seconds(30);
  // gRPC's own buffers (messages received and not yet read, streams'
  // state), bounded apart from the budget above.
  uint64_t grpc_memory_bytes = uint64_t{512} << 20;
  int max_concurrent_streams = 256;  // per connection
  // Connections without traffic are pinged this often, and closed when the
  // client does not answer within keepalive_timeout (zero: never).
  absl::Duration keepalive = absl::Seconds(60);
  absl::Duration keepalive_timeout = absl::Seconds(20);
  bool reflection = true;
  BatchingOptions batching;
  int cpu_workers = 2;
  // GPU backend (GpuBackendOptions): device memory pooled per GPU (0: 3/4
  // of the free memory at start), shared by its workers; pinned host memory
  // per worker; what a failed GPU's work does; how a worker waits for its
  // GPU.
  uint64_t gpu_memory_bytes = 0;
  uint64_t gpu_pinned_bytes = uint64_t{256} << 20;
  uint64_t gpu_host_pool_bytes = uint64_t{1} << 30;
  int gpu_workers = 2;
  GpuFailurePolicy gpu_failure_policy = GpuFailurePolicy::kRetry;
  GpuWait gpu_wait = GpuWait::kYield;
  int64_t gpu_fail_at_batch = -1;  // tests only: GpuBackendOptions::fail_at_batch
  int gpu_fail_device = -1;        // tests only: GpuBackendOptions::fail_device
  std::string tls_cert_file;       // PEM; both or neither
  std::string tls_key_file;
  std::string token;  // bearer token; empty: none required
  // A directory Decompress may name archives under (archive_root.h);
  // empty: requests must upload theirs.
  std::string archive_root;
  size_t message_bytes = size_t{1} << 20;
  // Frames of one streamed Compress (absolute bound, several frames) queued
  // or unsent at once: its memory bound.
  size_t stream_frames = 4;
  // Connections older than this are closed once their calls finish, so that
  // clients re-resolve the service name (zero: never).
  absl::Duration max_connection_age = absl::Minutes(5);
};

class EbzipServer {
 public:
  static absl::StatusOr<std::unique_ptr<EbzipServer>> Start(const ServerOptions& options);
  ~EbzipServer();

  int port() const { return port_; }
  int metrics_port() const { return metrics_->port(); }
  const Backend& backend() const { return *backend_; }

  // Health goes NOT_SERVING and new calls are refused (UNAVAILABLE); calls
  // in progress get until `grace` to finish, then are cancelled and the
  // server stops. True when every call finished within the grace period.
  bool Drain(absl::Duration grace);
  // Blocks until the server has stopped (after Drain).
  void Wait();

  // For tests and /metrics.
  Metrics& metrics() { return *metrics_; }
  uint64_t held_bytes() const { return admission_->held(); }
  size_t queued_requests() const { return scheduler_->queued(); }
  int calls_in_progress() const { return env_->calls_in_progress(); }

 private:
  EbzipServer() = default;

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<AdmissionControl> admission_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<IdleWatch> idle_watch_;
  std::unique_ptr<CallEnv> env_;
  std::unique_ptr<CompressorService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool stopped_ = false;
};

// The version ServerInfo and ebzip_build_info report.
const char* ServerVersion();

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_SERVER_H_
