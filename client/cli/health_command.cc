// ebzip health --server HOST:PORT: the standard gRPC health check, for
// container HEALTHCHECKs and scripts (exit 0 when SERVING), and the server's
// description.
#include <cstdio>

#include "client/cli/commands.h"
#include "client/cli/json_output.h"
#include "client/cli/remote.h"
#include "client/remote/remote_client.h"

namespace ebzip::cli {

absl::Status HealthCommand(const ParsedArgs& args) {
  if (!args.positional().empty() || !RemoteRequested(args)) {
    return absl::InvalidArgumentError("usage: ebzip health --server HOST:PORT [--tls CA]");
  }
  if (args.Switch("json") && args.Switch("quiet")) {
    return absl::InvalidArgumentError("--json and --quiet contradict each other");
  }
  auto client = ConnectFromFlags(args, client::PhysicalMemoryBytes());
  if (!client.ok()) return client.status();
  if (auto s = (*client)->Health(); !s.ok()) return s;
  if (args.Switch("quiet")) return absl::OkStatus();
  const std::string server = args.Value("server");
  // Info needs the token; health does not (probes have none).
  auto info = (*client)->Info();
  if (args.Switch("json")) {
    Json out = {{"server", server}, {"status", "SERVING"}};
    if (info.ok()) {
      out["version"] = info->version;
      out["backend"] = info->backend;
      out["format_version"] = info->format_version;
      out["devices"] = info->devices;
    }
    PrintJson(out);
    return absl::OkStatus();
  }
  std::printf("%s: SERVING\n", server.c_str());
  if (info.ok()) {
    std::printf("version %s, backend %s, format %u\n", info->version.c_str(), info->backend.c_str(),
                info->format_version);
    for (const auto& d : info->devices) std::printf("  %s\n", d.c_str());
  }
  return absl::OkStatus();
}

}  // namespace ebzip::cli
