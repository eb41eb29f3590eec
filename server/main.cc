// ebzipd: the compression service. Its flags (server_flags.h) can also come
// from the environment as EBZIPD_<FLAG> (EBZIPD_LISTEN, EBZIPD_TOKEN, ...),
// which is how containers configure it; a flag on the command line wins.
#include <malloc.h>
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/synchronization/mutex.h"
#include "server/log.h"
#include "server/server.h"
#include "server/server_flags.h"

namespace {

// argv with the EBZIPD_* environment variables put in front as flags, so
// the command line, parsed after them, overrides them.
std::vector<char*> ArgsWithEnvironment(int argc, char** argv, std::vector<std::string>* storage) {
  *storage = ebzip::server::FlagsFromEnvironment(ebzip::server::ServerFlagNames());
  std::vector<char*> args{argv[0]};
  for (auto& s : *storage) args.push_back(s.data());
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  return args;
}

// The token: --token's, or the contents of --token_file when given.
std::string Token(const ebzip::server::DaemonConfig& config) {
  std::string token = config.server.token;
  const std::string& file = config.token_file;
  if (!file.empty()) {
    FILE* f = std::fopen(file.c_str(), "rb");
    if (f == nullptr) {
      ebzip::server::LogEvent(ebzip::server::LogLevel::kError, "cannot read --token_file",
                              {{"path", file}, {"error", std::strerror(errno)}});
      std::exit(2);
    }
    char buf[4096];
    token.assign(buf, std::fread(buf, 1, sizeof(buf), f));
    std::fclose(f);
    token = std::string(absl::StripAsciiWhitespace(token));
  }
  return token;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "ebzipd: the ebzip compression service (gRPC ebzip.v1.Compressor).\n"
      "Flags may also be set as EBZIPD_<FLAG> environment variables.");
  ebzip::server::RouteGrpcLogs();
  std::vector<std::string> storage;
  std::vector<char*> args = ArgsWithEnvironment(argc, argv, &storage);
  absl::ParseCommandLine(static_cast<int>(args.size()), args.data());
  // Debian builds Abseil without NDEBUG, which leaves absl::Mutex's deadlock
  // detector on: every lock and unlock, gRPC's included, then updates one
  // process-wide lock graph under a spin lock, ~16x the lock's own cost and
  // a point where every thread queues. The
  // tests keep it on, where a lock-order bug should show.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // glibc's malloc, left to adapt, gives a freed heap top above 2x the last
  // freed mapping (512 KiB after a 256 KiB request) back to the kernel, so
  // each small request faults its buffers in anew. Fixed thresholds keep
  // buffers below 4 MiB on the heap and at most 16 MiB free at an arena's
  // top; larger buffers (streamed frames) are still mapped and unmapped.
  // Malloc tunables in GLIBC_TUNABLES are the operator's choice instead.
  if (const char* t = std::getenv("GLIBC_TUNABLES");
      t == nullptr || std::strstr(t, "glibc.malloc.") == nullptr) {
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
    mallopt(M_TRIM_THRESHOLD, 16 << 20);
  }

  // Block the stop signals in every thread (threads inherit the mask), then
  // wait for them here.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  auto config = ebzip::server::DaemonConfigFromFlags();
  if (!config.ok()) {  // a mode by an unknown name: bad usage
    ebzip::server::LogEvent(ebzip::server::LogLevel::kError, "cannot start",
                            {{"error", std::string(config.status().message())},
                             {"code", absl::StatusCodeToString(config.status().code())}});
    return 2;
  }
  ebzip::server::ServerOptions& o = config->server;
  o.token = Token(*config);
  if (absl::Status limits = ebzip::server::CheckLimits(o); !limits.ok()) {
    ebzip::server::LogEvent(ebzip::server::LogLevel::kError, std::string(limits.message()));
    return 2;
  }

  auto server = ebzip::server::EbzipServer::Start(o);
  if (!server.ok()) {
    ebzip::server::LogEvent(ebzip::server::LogLevel::kError, "cannot start",
                            {{"error", std::string(server.status().message())},
                             {"code", absl::StatusCodeToString(server.status().code())}});
    // A bad flag value (an address without a port) is bad usage; anything else (a port in use, no GPU) a failure to start.
    if (server.status().code() == absl::StatusCode::kInvalidArgument) return 2;
    return 1;
  }
  int signal = 0;
  sigwait(&stop, &signal);
  ebzip::server::LogEvent(ebzip::server::LogLevel::kInfo, "signal received",
                          {{"signal", signal == SIGTERM ? "SIGTERM" : "SIGINT"}});
  (*server)->Drain(config->drain);
  return 0;
}
