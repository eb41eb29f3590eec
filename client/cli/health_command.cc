// ebzip health --server HOST:PORT: the standard gRPC health check, for
// container HEALTHCHECKs and scripts (exit 0 when SERVING), and the server's
// description.
#include <cstdio>

#include "absl/flags/flag.h"
#include "client/cli/commands.h"
#include "client/cli/flags.h"
#include "client/cli/remote.h"

namespace ebzip::cli {

absl::Status HealthCommand(const Args& args) {
  if (!args.empty() || !RemoteRequested()) {
    return absl::InvalidArgumentError("usage: ebzip health --server HOST:PORT [--tls CA]");
  }
  auto client = ConnectFromFlags();
  if (!client.ok()) return client.status();
  if (auto s = (*client)->Health(); !s.ok()) return s;
  if (absl::GetFlag(FLAGS_quiet)) return absl::OkStatus();
  std::printf("%s: SERVING\n", absl::GetFlag(FLAGS_server).c_str());
  // Info needs the token; health does not (probes have none).
  auto info = (*client)->Info();
  if (info.ok()) {
    std::printf("version %s, backend %s, format %u\n", info->version.c_str(),
                info->backend.c_str(), info->format_version);
    for (const auto& d : info->devices) std::printf("  %s\n", d.c_str());
  }
  return absl::OkStatus();
}

}  // namespace ebzip::cli
