// The `ebzip` subcommands. Each takes its positional arguments (flags are
// already parsed, see flags.h); main() turns the status into a message and
// an exit code.
#ifndef EBZIP_CLIENT_CLI_COMMANDS_H_
#define EBZIP_CLIENT_CLI_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace ebzip::cli {

using Args = std::vector<std::string>;

absl::Status CompressCommand(const Args& args);
absl::Status DecompressCommand(const Args& args);
absl::Status InfoCommand(const Args& args);
absl::Status CompareCommand(const Args& args);
absl::Status HealthCommand(const Args& args);

}  // namespace ebzip::cli

#endif  // EBZIP_CLIENT_CLI_COMMANDS_H_
