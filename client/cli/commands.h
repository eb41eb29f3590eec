// The `ebzip` subcommands: each one's name, usage, the flags it takes
// (flags.h holds it to them) and the function that runs it. main() turns
// the status a command returns into a message and an exit code.
#ifndef EBZIP_CLIENT_CLI_COMMANDS_H_
#define EBZIP_CLIENT_CLI_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "client/cli/flags.h"

namespace ebzip::cli {

struct Command {
  absl::string_view name;
  absl::string_view usage;    // after "usage: ebzip "; may span lines
  absl::string_view summary;  // one line, for `ebzip --help`
  std::vector<absl::string_view> flags;
  absl::Status (*run)(const ParsedArgs& args);
};

// In the order `ebzip --help` lists them.
const std::vector<Command>& Commands();
const Command* FindCommand(absl::string_view name);

// `ebzip COMMAND --help`.
std::string CommandHelp(const Command& command);

absl::Status CompressCommand(const ParsedArgs& args);
absl::Status DecompressCommand(const ParsedArgs& args);
absl::Status InfoCommand(const ParsedArgs& args);
absl::Status CompareCommand(const ParsedArgs& args);
absl::Status HealthCommand(const ParsedArgs& args);

}  // namespace ebzip::cli

#endif  // EBZIP_CLIENT_CLI_COMMANDS_H_
