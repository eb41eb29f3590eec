#include "server/listen_address.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace ebzip::server {
namespace {

bool ValidPort(absl::string_view port) {
  if (port.empty() || port.size() > 5) return false;
  for (char c : port) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  int value = 0;
  return absl::SimpleAtoi(port, &value) && value <= 65535;
}

// A DNS name or an IPv4 address: letters, digits, '-', '.', '_'.
bool ValidHost(absl::string_view host) {
  for (char c : host) {
    const auto u = static_cast<unsigned char>(c);
    if (!absl::ascii_isalnum(u) && c != '-' && c != '.' && c != '_') return false;
  }
  return true;
}

bool ValidIpv6(absl::string_view address) {
  in6_addr parsed;
  return inet_pton(AF_INET6, std::string(address).c_str(), &parsed) == 1;
}

}  // namespace

absl::Status CheckListenAddress(absl::string_view flag, absl::string_view address,
                                UnixSockets unix) {
  const bool unix_ok = unix == UnixSockets::kAllowed;
  auto invalid = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, " \"", address, "\": ", why, "; expected HOST:PORT, [IPV6]:PORT",
        unix_ok ? " or unix:PATH" : "", " (e.g. 0.0.0.0:50051, [::]:50051, localhost:0)"));
  };
  if (absl::StartsWith(address, "unix:")) {
    if (!unix_ok) return invalid("no Unix sockets here");
    absl::string_view path = address.substr(5);
    if (absl::StartsWith(path, "//")) {
      path.remove_prefix(2);
      if (!absl::StartsWith(path, "/")) return invalid("unix:// takes an absolute path");
    }
    if (path.empty()) return invalid("no socket path");
    return absl::OkStatus();
  }
  absl::string_view host = address;
  if (absl::StartsWith(address, "[")) {
    const size_t close = address.find(']');
    if (close == absl::string_view::npos || !ValidIpv6(address.substr(1, close - 1))) {
      return invalid("no IPv6 address between the brackets");
    }
    host = address.substr(0, close + 1);
    if (address.size() == host.size()) return invalid("no port");
    if (address[host.size()] != ':') return invalid("\":PORT\" must follow \"]\"");
  } else {
    const size_t colon = address.rfind(':');
    if (colon == absl::string_view::npos) return invalid("no port");
    host = address.substr(0, colon);
  }
  const absl::string_view port = address.substr(host.size() + 1);
  if (!ValidPort(port)) return invalid(absl::StrCat("\"", port, "\" is no port (0 to 65535)"));
  if (absl::StartsWith(host, "[")) return absl::OkStatus();
  if (host.empty()) return invalid("no host (0.0.0.0 or [::] for every interface)");
  if (absl::StrContains(host, ':')) return invalid("an IPv6 address goes in brackets");
  if (!ValidHost(host)) return invalid(absl::StrCat("\"", host, "\" is no host name or address"));
  return absl::OkStatus();
}

absl::Status CheckUnixSocketFree(absl::string_view address) {
  if (!absl::StartsWith(address, "unix:")) return absl::OkStatus();
  absl::string_view path = address.substr(5);
  if (absl::StartsWith(path, "//")) path.remove_prefix(2);
  sockaddr_un sun{};
  sun.sun_family = AF_UNIX;
  if (path.size() >= sizeof(sun.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("--listen \"", address,
                                                   "\": the path is longer than ",
                                                   sizeof(sun.sun_path) - 1, " bytes"));
  }
  std::memcpy(sun.sun_path, path.data(), path.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::OkStatus();  // gRPC's bind will say what is wrong
  const bool answered = connect(fd, reinterpret_cast<const sockaddr*>(&sun), sizeof(sun)) == 0;
  close(fd);
  if (answered) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", address, ": another process listens there"));
  }
  return absl::OkStatus();
}

}  // namespace ebzip::server
