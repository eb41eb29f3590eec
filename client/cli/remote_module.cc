// The remote module (modules.h): the ebzipd client behind RemoteSession.
#include <memory>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/cli/modules.h"
#include "client/remote/remote_client.h"
#include "ebzip/v1/ebzip.pb.h"

namespace ebzip::cli {
namespace {

class Session final : public RemoteSession {
 public:
  explicit Session(std::unique_ptr<client::RemoteClient> client) : client_(std::move(client)) {}

  absl::StatusOr<client::RemoteSummary> Compress(const ArraySpec& spec,
                                                 absl::Span<const uint8_t> data,
                                                 const CompressOptions& options,
                                                 const client::ByteSink& sink) override {
    return client_->Compress(spec, data, options, sink);
  }
  absl::StatusOr<client::RemoteArrayHeader> Decompress(
      absl::Span<const uint8_t> archive, const client::DecompressRequestOptions& request,
      const std::function<absl::Status(const client::RemoteArrayHeader&)>& on_header,
      const client::ByteSink& sink) override {
    return client_->Decompress(archive, request, on_header, sink);
  }
  absl::Status Health() override { return client_->Health(); }
  absl::StatusOr<ServerDescription> Info() override {
    auto info = client_->Info();
    if (!info.ok()) return info.status();
    ServerDescription d;
    d.version = info->version();
    d.backend = info->backend();
    d.format_version = info->format_version();
    d.devices.assign(info->devices().begin(), info->devices().end());
    return d;
  }

 private:
  std::unique_ptr<client::RemoteClient> client_;
};

class Module final : public RemoteModule {
 public:
  absl::StatusOr<std::unique_ptr<RemoteSession>> Connect(const RemoteConnection& c) override {
    client::RemoteOptions o;
    o.server = c.server;
    o.tls_ca_file = c.tls_ca_file;
    o.tls_server_name = c.tls_server_name;
    o.token = c.token;
    if (c.timeout_seconds) o.timeout = absl::Seconds(*c.timeout_seconds);
    o.max_output_bytes = c.max_output_bytes;
    o.streams = c.streams;
    auto client = client::RemoteClient::Connect(o);
    if (!client.ok()) return client.status();
    return std::unique_ptr<RemoteSession>(new Session(*std::move(client)));
  }
};

}  // namespace
}  // namespace ebzip::cli

extern "C" __attribute__((visibility("default"))) void* EbzipRemoteModule() {
  // As main() does for the command's own Abseil (which may be a static copy,
  // client/cli/CMakeLists.txt): the deadlock detector Debian's Abseil leaves
  // on makes each of gRPC's locks cost ~16x.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  static ebzip::cli::Module module;
  return static_cast<ebzip::cli::RemoteModule*>(&module);
}
