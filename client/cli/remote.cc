#include "client/cli/remote.h"

#include <cmath>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/remote/remote_client.h"

namespace ebzip::cli {

bool RemoteRequested(const ParsedArgs& args) { return !args.Value("server").empty(); }

absl::StatusOr<std::unique_ptr<RemoteSession>> ConnectFromFlags(const ParsedArgs& args,
                                                                uint64_t max_output_bytes) {
  RemoteConnection o;
  o.server = args.Value("server");
  o.tls_ca_file = args.Value("tls");
  o.tls_server_name = args.Value("tls_server_name");
  o.token = args.Value("token");
  if (o.token.empty()) {
    // The environment keeps the token out of `ps` listings.
    if (const char* t = std::getenv("EBZIP_TOKEN"); t != nullptr) o.token = t;
  }
  // --timeout is the flag's earlier name.
  const std::string flag = args.Has("deadline") || !args.Has("timeout") ? "deadline" : "timeout";
  double deadline = kDefaultDeadlineSeconds;
  const std::optional<std::string> text = args.OptionalValue(flag);
  if (text && (!absl::SimpleAtod(*text, &deadline) || !std::isfinite(deadline) || deadline < 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad --", flag, " '", *text, "': expected seconds, 0 for none"));
  }
  o.timeout_seconds = deadline;  // 0: none (RemoteOptions::timeout)
  o.max_output_bytes = max_output_bytes;
  // Health makes one small call: it takes no --streams.
  if (const std::optional<std::string> streams =
          args.Takes("streams") ? args.OptionalValue("streams") : std::nullopt;
      streams) {
    if (!absl::SimpleAtoi(*streams, &o.streams) || o.streams < 0 ||
        o.streams > client::kMaxStreams) {
      return absl::InvalidArgumentError(absl::StrCat("bad --streams '", *streams, "': expected 0 to ",
                                                     client::kMaxStreams));
    }
  }
  auto module = LoadRemoteModule();
  if (!module.ok()) return module.status();
  return (*module)->Connect(o);
}

}  // namespace ebzip::cli
