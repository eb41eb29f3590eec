#include "client/cli/remote.h"

#include "absl/flags/flag.h"
#include "client/cli/flags.h"

ABSL_FLAG(std::string, server, "",
          "compress/decompress through ebzipd at HOST:PORT instead of locally");
ABSL_FLAG(std::string, tls, "",
          "with --server: PEM file of the CA that signed the server's "
          "certificate (turns TLS on)");
ABSL_FLAG(std::string, tls_server_name, "",
          "with --tls: the name to expect in the server's certificate, if not the host's");
ABSL_FLAG(std::string, token, "", "with --server: bearer token (or $EBZIP_TOKEN)");
ABSL_FLAG(double, timeout, 0, "with --server: seconds before a call is abandoned (0: none)");

namespace ebzip::cli {

bool RemoteRequested() { return !absl::GetFlag(FLAGS_server).empty(); }

absl::StatusOr<std::unique_ptr<RemoteSession>> ConnectFromFlags() {
  RemoteConnection o;
  o.server = absl::GetFlag(FLAGS_server);
  o.tls_ca_file = absl::GetFlag(FLAGS_tls);
  o.tls_server_name = absl::GetFlag(FLAGS_tls_server_name);
  o.token = absl::GetFlag(FLAGS_token);
  if (o.token.empty()) {
    // The environment keeps the token out of `ps` listings.
    if (const char* t = std::getenv("EBZIP_TOKEN"); t != nullptr) o.token = t;
  }
  const double timeout = absl::GetFlag(FLAGS_timeout);
  if (timeout < 0) return absl::InvalidArgumentError("--timeout must not be negative");
  if (timeout > 0) o.timeout_seconds = timeout;
  // What the server replies is held to the same limit as a local decompress.
  auto max_output_bytes = MaxOutputBytesFromFlag();
  if (!max_output_bytes.ok()) return max_output_bytes.status();
  o.max_output_bytes = *max_output_bytes;
  auto module = LoadRemoteModule();
  if (!module.ok()) return module.status();
  return (*module)->Connect(o);
}

}  // namespace ebzip::cli
