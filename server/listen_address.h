// Checks a listen address before gRPC or the metrics server sees it. gRPC
// reads a host without a port ("localhost") as port 443, https's, and
// would listen there without a word; here it is an error that says what
// was expected.
#ifndef EBZIP_SERVER_LISTEN_ADDRESS_H_
#define EBZIP_SERVER_LISTEN_ADDRESS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace ebzip::server {

enum class UnixSockets { kAllowed, kRefused };

// OK for HOST:PORT (HOST a name or IPv4 address, or empty for every
// interface), [IPV6]:PORT, and, where `unix` allows, unix:PATH or
// unix:///ABSOLUTE_PATH. PORT is 0 to 65535 (0: the system picks one).
// INVALID_ARGUMENT naming `flag` and the accepted forms otherwise.
absl::Status CheckListenAddress(absl::string_view flag, absl::string_view address,
                                UnixSockets unix);

// For unix:PATH, UNAVAILABLE when a process accepts connections on PATH.
// gRPC removes a socket file it finds at PATH before binding, which frees a
// stale one but would also take the path from a server still running; TCP
// ports need no such check (the server sets no SO_REUSEPORT). OK for other
// addresses.
absl::Status CheckUnixSocketFree(absl::string_view address);

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_LISTEN_ADDRESS_H_
