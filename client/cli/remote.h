// --server, --tls and --token: when --server is given, compress and
// decompress go through ebzipd instead of the local codec, producing the
// same files.
#ifndef EBZIP_CLIENT_CLI_REMOTE_H_
#define EBZIP_CLIENT_CLI_REMOTE_H_

#include <memory>
#include <string>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "client/cli/modules.h"

ABSL_DECLARE_FLAG(std::string, server);

namespace ebzip::cli {

bool RemoteRequested();
// A client for --server with --tls/--token/--timeout/--max_output_bytes,
// from the remote module (modules.h).
absl::StatusOr<std::unique_ptr<RemoteSession>> ConnectFromFlags();

}  // namespace ebzip::cli

#endif  // EBZIP_CLIENT_CLI_REMOTE_H_
