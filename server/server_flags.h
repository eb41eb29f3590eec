// ebzipd's command line, read once: its flags, each of which may also come
// from the environment as EBZIPD_<FLAG> (how containers configure it; a flag
// on the command line wins), turned into typed options with every mode
// parsed from its name. main.cc parses, reads the token file and starts.
#ifndef EBZIP_SERVER_SERVER_FLAGS_H_
#define EBZIP_SERVER_SERVER_FLAGS_H_

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "server/server.h"

namespace ebzip::server {

// ebzipd's own flags (not Abseil's --help, --flagfile, ...), by name, from
// the flag registry.
std::vector<std::string> ServerFlagNames();

// The variable a flag may be given in: EBZIPD_ and the name in upper case.
std::string EnvironmentName(absl::string_view flag);

// "--FLAG=VALUE" for each of `flags` whose variable `getenv` finds, to go
// before the command line's arguments, which then override them.
std::vector<std::string> FlagsFromEnvironment(
    absl::Span<const std::string> flags,
    absl::FunctionRef<const char*(const char*)> getenv = std::getenv);

// What the parsed command line says.
struct DaemonConfig {
  ServerOptions server;    // its token is --token's; see token_file
  std::string token_file;  // --token_file: read by main, replacing the token
  absl::Duration drain;    // --drain_seconds
};
// The flags' values as a DaemonConfig; INVALID_ARGUMENT for a mode by an
// unknown name, naming the flag and the names it takes.
absl::StatusOr<DaemonConfig> DaemonConfigFromFlags();

// INVALID_ARGUMENT when a size, count or limit is out of range.
absl::Status CheckLimits(const ServerOptions& o);

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_SERVER_FLAGS_H_
