#include "server/server.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "server/archive_root.h"
#include "server/compressor_service.h"
#include "server/cpu_backend.h"
#include "server/gpu_backend.h"
#include "server/listen_address.h"
#include "server/log.h"
#include "server/reflection.h"
#ifdef EBZIP_HAVE_GPU
#include "gpu/gpu_codec.h"
#endif

namespace ebzip::server {
namespace {

constexpr int kMaxReceiveMessageBytes = 64 << 20;

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const ServerOptions& o) {
  if (o.tls_cert_file.empty() != o.tls_key_file.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  if (o.tls_cert_file.empty()) return grpc::InsecureServerCredentials();
  auto cert = ReadFile(o.tls_cert_file);
  if (!cert.ok()) return cert.status();
  auto key = ReadFile(o.tls_key_file);
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({*key, *cert});
  return grpc::SslServerCredentials(ssl);
}

absl::StatusOr<std::unique_ptr<Backend>> MakeBackend(const ServerOptions& o) {
  if (o.gpu_workers < 1) return absl::InvalidArgumentError("--gpu_workers must be at least 1");
  if (o.backend == BackendChoice::kCpu) return MakeCpuBackend(o.cpu_workers);
#ifdef EBZIP_HAVE_GPU
  const absl::Status gpu = gpu::DeviceAvailable();
  if (gpu.ok()) {
    GpuBackendOptions g;
    g.memory_bytes = o.gpu_memory_bytes;
    g.pinned_bytes = o.gpu_pinned_bytes;
    g.host_pool_bytes = o.gpu_host_pool_bytes;
    g.workers_per_gpu = o.gpu_workers;
    g.on_failure = o.gpu_failure_policy;
    g.wait = o.gpu_wait;
    g.fail_at_batch = o.gpu_fail_at_batch;
    g.fail_device = o.gpu_fail_device;
    return MakeGpuBackend(g);
  }
  if (o.backend == BackendChoice::kGpu) {
    return absl::FailedPreconditionError(absl::StrCat("--backend gpu: ", gpu.message()));
  }
  LogEvent(LogLevel::kInfo, "no GPU visible; using the CPU backend",
           {{"why", std::string(gpu.message())}});
#else
  if (o.backend == BackendChoice::kGpu) {
    return absl::FailedPreconditionError(
        "--backend gpu: this ebzipd was built without CUDA (configure with nvcc present)");
  }
#endif
  return MakeCpuBackend(o.cpu_workers);
}

}  // namespace

const char* ServerVersion() { return "0.1.0"; }

absl::StatusOr<std::unique_ptr<EbzipServer>> EbzipServer::Start(const ServerOptions& o) {
  if (absl::Status st = CheckListenAddress("listen", o.listen, UnixSockets::kAllowed); !st.ok()) {
    return st;
  }
  if (!o.metrics_listen.empty()) {
    if (absl::Status st =
            CheckListenAddress("metrics_listen", o.metrics_listen, UnixSockets::kRefused);
        !st.ok()) {
      return st;
    }
  }
  std::shared_ptr<const ArchiveRoot> archive_root;
  if (!o.archive_root.empty()) {
    auto root = ArchiveRoot::Open(o.archive_root);
    if (!root.ok()) return root.status();
    archive_root = *std::move(root);
  }
  std::unique_ptr<EbzipServer> s(new EbzipServer());
  auto backend = MakeBackend(o);
  if (!backend.ok()) return backend.status();
  s->backend_ = *std::move(backend);
  s->metrics_ = std::make_unique<Metrics>(ServerVersion(), s->backend_->name());
  s->admission_ = std::make_unique<AdmissionControl>(o.max_queued_bytes);
  s->scheduler_ = std::make_unique<Scheduler>(*s->backend_, o.batching, s->metrics_.get());
  CallLimits limits;
  limits.max_request_bytes = o.max_request_bytes;
  limits.max_output_bytes = o.max_output_bytes;
  limits.max_ratio = o.max_ratio;
  limits.max_calls = o.max_calls;
  limits.min_frame_elements = o.min_frame_elements;
  limits.message_bytes = o.message_bytes;
  limits.stream_frames = o.stream_frames;
  limits.token = o.token;
  limits.archive_root = std::move(archive_root);
  s->idle_watch_ = std::make_unique<IdleWatch>(o.idle_timeout);
  s->env_ = std::make_unique<CallEnv>(*s->scheduler_, *s->admission_, *s->metrics_, *s->backend_,
                                      *s->idle_watch_, limits);
  s->service_ = std::make_unique<CompressorService>(*s->env_, ServerVersion());

  EbzipServer* self = s.get();
  StateSources sources;
  sources.held_bytes = [self] { return self->admission_->held(); };
  sources.held_bytes_limit = o.max_queued_bytes;
  sources.queued_requests = [self] { return static_cast<uint64_t>(self->scheduler_->queued()); };
  sources.devices = [self] { return self->backend_->DeviceStates(); };
  sources.host_pool = [self] { return self->backend_->HostPool(); };
  s->metrics_->SetStateSources(std::move(sources));
  if (!o.metrics_listen.empty()) {
    if (absl::Status st = s->metrics_->Serve(o.metrics_listen); !st.ok()) return st;
  }

  auto credentials = Credentials(o);
  if (!credentials.ok()) return credentials.status();
  grpc::EnableDefaultHealthCheckService(true);
  // Reflection answers without the token (it describes the API, no data):
  // operators who mind turn it off (docs/operations.md).
  grpc::ServerBuilder builder;
  ConfigureReflection(builder, o.reflection);
  if (absl::Status st = CheckUnixSocketFree(o.listen); !st.ok()) return st;
  builder.AddListeningPort(o.listen, *credentials, &s->port_);
  // gRPC sets SO_REUSEPORT by default, which lets a second server bind a
  // port already in use and take half its connections; a port in use must
  // instead stop the server that comes second.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(s->service_.get());
  builder.SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  // gRPC's own memory (messages it has received and the reactors have not
  // read, per-stream state) has a quota of its own; past it gRPC stops
  // reading from connections rather than growing.
  grpc::ResourceQuota quota("ebzipd");
  quota.Resize(o.grpc_memory_bytes);
  builder.SetResourceQuota(quota);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, o.max_concurrent_streams);
  if (o.keepalive > absl::ZeroDuration()) {
    // Finds connections whose client vanished without closing them (a
    // powered-off node, a dropped route), whose calls the idle timeout
    // ends but whose sockets would otherwise stay open.
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS,
                               static_cast<int>(absl::ToInt64Milliseconds(o.keepalive)));
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                               static_cast<int>(absl::ToInt64Milliseconds(o.keepalive_timeout)));
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    // gRPC stops pinging after two pings without data by default: a
    // connection whose call waits quietly must be pinged for as long.
    builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  }
  if (o.max_connection_age > absl::ZeroDuration()) {
    // gRPC clients resolve a name again only when a connection closes: ageing
    // connections out is what lets clients of a headless Service find
    // replicas added since they connected. Calls in flight finish first.
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS,
                               static_cast<int>(absl::ToInt64Milliseconds(o.max_connection_age)));
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                               static_cast<int>(absl::ToInt64Milliseconds(absl::Hours(1))));
  }
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", o.listen,
        ": the port is in use, the address is not this machine's, or gRPC refused the TLS "
        "files (its log lines above say which)"));
  }
  // Health answers for the whole server ("") and for the service by name,
  // as clients that check the service they call ask; Drain turns both to
  // NOT_SERVING. Other names are NOT_FOUND.
  grpc::HealthCheckServiceInterface* health = s->server_->GetHealthCheckService();
  health->SetServingStatus(v1::Compressor::service_full_name(), true);
  health->SetServingStatus(true);
  LogFields serving = {{"listen", o.listen},
                       {"metrics_port", s->metrics_->port()},
                       {"backend", s->backend_->name()},
                       {"tls", !o.tls_cert_file.empty()},
                       {"token", !o.token.empty()},
                       {"batching", o.batching.enabled}};
  // A Unix socket has no port (gRPC reports 1 for it).
  if (!absl::StartsWith(o.listen, "unix:")) serving.insert(serving.begin() + 1, {"port", s->port_});
  LogEvent(LogLevel::kInfo, "ebzipd serving", serving);
  return s;
}

bool EbzipServer::Drain(absl::Duration grace) {
  if (stopped_) return true;
  const absl::Time deadline = absl::Now() + grace;
  server_->GetHealthCheckService()->SetServingStatus(false);
  env_->StartDraining();
  LogEvent(LogLevel::kInfo, "draining",
           {{"calls_in_progress", env_->calls_in_progress()},
            {"grace_seconds", absl::ToDoubleSeconds(grace)}});
  // Lame duck: clients that watch our health (both ebzip clients do) stop
  // sending here within milliseconds of NOT_SERVING, and calls that still
  // come are refused UNAVAILABLE, which they retry elsewhere. A call that
  // arrives once the transport is shutting down is cancelled instead, which
  // no client retries: give the watchers a second before that.
  absl::SleepFor(std::min(absl::Seconds(1), grace));
  const bool clean = env_->WaitIdle(deadline);
  // Stops taking calls at the transport (clients retry those elsewhere), and
  // cancels what is left at the deadline (their work sees the flag). A call
  // that raced in and is being refused UNAVAILABLE gets at least a second to
  // say so: cancelled instead, its client would not retry it.
  server_->Shutdown(absl::ToChronoTime(std::max(deadline, absl::Now() + absl::Seconds(1))));
  scheduler_->Stop();
  stopped_ = true;
  LogEvent(clean ? LogLevel::kInfo : LogLevel::kWarning, "stopped",
           {{"all_calls_finished", clean}});
  return clean;
}

void EbzipServer::Wait() { server_->Wait(); }

EbzipServer::~EbzipServer() {
  // A scrape must not reach parts destroyed below.
  if (metrics_ != nullptr) metrics_->SetStateSources({});
  if (!stopped_ && server_ != nullptr) {
    server_->Shutdown(absl::ToChronoTime(absl::Now()));
    scheduler_->Stop();
  }
  if (server_ != nullptr) server_->Wait();
  // Every call has ended by now: the watch can go before what it watched.
  idle_watch_.reset();
}

}  // namespace ebzip::server
