// --server, --tls, --token and --deadline: when --server is given, compress
// and decompress go through ebzipd instead of the local codec, producing the
// same files.
#ifndef EBZIP_CLIENT_CLI_REMOTE_H_
#define EBZIP_CLIENT_CLI_REMOTE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "client/cli/flags.h"
#include "client/cli/modules.h"

namespace ebzip::cli {

// Seconds a server call may take, --deadline's default: generous for the
// arrays a workstation holds, finite so that a stalled server or network
// does not hang a script forever.
inline constexpr double kDefaultDeadlineSeconds = 300;

bool RemoteRequested(const ParsedArgs& args);
// A client for --server with --tls/--token/--deadline, from the remote
// module (modules.h). A decompressed reply is held to `max_output_bytes`.
absl::StatusOr<std::unique_ptr<RemoteSession>> ConnectFromFlags(const ParsedArgs& args,
                                                                uint64_t max_output_bytes);

}  // namespace ebzip::cli

#endif  // EBZIP_CLIENT_CLI_REMOTE_H_
