// ebzip_transfer_limits: the host's raw data-path limits that the service's
// figures are read against (issue #24, bench/README.md).
//
// For --bytes (e.g. 1G) it measures, median and best of --repeats:
//   tcp      the bytes sent over N loopback TCP connections at once, split
//            evenly, for each N in --connections
//   uds      the same over N Unix-domain stream sockets
//   grpc     the bytes moved by N gRPC streaming calls at once, a connection
//            each, up (client to server) and down (bench/grpc_transfer.h)
//   grpc_uds the same over a Unix-domain socket
//   grpc_calls  gRPC's own rate of small calls, in calls per second:
//            --call_streams threads making --call_round_trips round trips,
//            each a call the shape of a compression of --call_array_bytes
//            into --call_archive_bytes and one of its decompression
//            (bench/grpc_transfer.h): the ceiling of ebzip_load --method
//            both on arrays of that size
//   grpc_uds_calls  the same over a Unix-domain socket
//   memcpy   host memcpy of the bytes, one thread and N threads (each a slice)
//   cuda     when a CUDA device is visible: H2D and D2H of the bytes between
//            device --device and pinned, then pageable, host memory
// tcp and uds are plain POSIX sockets: what the wire allows, the ceiling a
// gRPC call moving the same bytes over as many connections can approach;
// grpc is how close gRPC itself comes, with nothing else to do.
//
// The sender is a forked process, not a thread: ebzipd and its client are two
// processes, each with its own address space, page tables and scheduler
// entity, and the reference figures were measured that way. Each
// process allocates and touches its own buffer after the fork, so that no
// copy-on-write fault lands in a timed transfer.
//
// Output: a table as it measures, then one line per measurement for scripts:
//   limit tcp connections=4 bytes=1073741824 GB/s=17.70 best=18.02
//   limit grpc_calls streams=64 bytes=262144 calls/s=25030 best=26097
// (GB = 1e9 bytes, as ebzip_load counts). Exit status: 0, 1 when a
// measurement failed, 2 on bad flags.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "bench/grpc_transfer.h"

#ifdef EBZIP_TRANSFER_LIMITS_CUDA
#include <cuda_runtime_api.h>
#endif

ABSL_FLAG(std::string, bytes, "1G",
          "Bytes per measurement: a number with an optional binary suffix K, M, G or T");
ABSL_FLAG(std::vector<std::string>, connections, std::vector<std::string>({"1", "2", "4", "8"}),
          "Socket connection counts to measure (memcpy also runs with each as its thread count)");
ABSL_FLAG(std::vector<std::string>, measure,
          std::vector<std::string>({"tcp", "uds", "grpc", "grpc_uds", "memcpy", "cuda"}),
          "What to measure: any of tcp, uds, grpc, grpc_uds, grpc_calls, grpc_uds_calls, memcpy, "
          "cuda");
ABSL_FLAG(int32_t, repeats, 3, "Timed repetitions per measurement (median and best reported)");
ABSL_FLAG(std::string, send_bytes, "1M",
          "Bytes per send()/recv() call and per gRPC message (ebzip's default message size)");
ABSL_FLAG(int32_t, device, 0, "CUDA device for the H2D/D2H copies");
ABSL_FLAG(int32_t, call_streams, 32, "grpc_calls: concurrent callers, a connection each");
ABSL_FLAG(int64_t, call_round_trips, 10000, "grpc_calls: round trips (two calls each) per repeat");
ABSL_FLAG(std::string, call_array_bytes, "256K", "grpc_calls: the array's bytes");
ABSL_FLAG(std::string, call_archive_bytes, "16K", "grpc_calls: the archive's bytes");

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

absl::StatusOr<uint64_t> ParseBytes(absl::string_view text) {
  std::string s = absl::AsciiStrToUpper(text);
  uint64_t scale = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'K':
        scale = uint64_t{1} << 10;
        break;
      case 'M':
        scale = uint64_t{1} << 20;
        break;
      case 'G':
        scale = uint64_t{1} << 30;
        break;
      case 'T':
        scale = uint64_t{1} << 40;
        break;
      default:
        break;
    }
    if (scale != 1) s.pop_back();
  }
  uint64_t n = 0;
  if (!absl::SimpleAtoi(s, &n) || n > UINT64_MAX / scale) {
    return absl::InvalidArgumentError(absl::StrCat("not a byte count: \"", text, "\""));
  }
  return n * scale;
}

// Median and best of the repetitions' rates.
struct Rate {
  double median = 0;
  double best = 0;
};

Rate Summarize(std::vector<double> gbps) {
  std::sort(gbps.begin(), gbps.end());
  return {gbps[gbps.size() / 2], gbps.back()};  // repeats >= 1
}

// One measurement's table row and machine-readable line.
class Report {
 public:
  void Add(const std::string& what, const std::string& detail, uint64_t bytes, Rate r) {
    std::printf("%-13s %-16s %12.2f %10.2f\n", what.c_str(), detail.c_str(), r.median, r.best);
    std::fflush(stdout);
    lines_.push_back(absl::StrFormat("limit %s %s bytes=%d GB/s=%.2f best=%.2f", what, detail,
                                     bytes, r.median, r.best));
  }
  void Fail(const std::string& what, const std::string& detail, const absl::Status& s) {
    std::fprintf(stderr, "ebzip_transfer_limits: %s %s: %s\n", what.c_str(), detail.c_str(),
                 s.ToString().c_str());
    failed_ = true;
  }
  void AddCalls(const std::string& what, const std::string& detail, uint64_t bytes, Rate r) {
    std::printf("%-13s %-16s %12.0f %10.0f calls/s\n", what.c_str(), detail.c_str(), r.median,
                r.best);
    std::fflush(stdout);
    lines_.push_back(absl::StrFormat("limit %s %s bytes=%d calls/s=%.0f best=%.0f", what, detail,
                                     bytes, r.median, r.best));
  }
  void PrintLines() const {
    for (const std::string& l : lines_) std::printf("%s\n", l.c_str());
  }
  bool failed() const { return failed_; }

 private:
  std::vector<std::string> lines_;
  bool failed_ = false;
};

// Touched memory: every page faulted in before anything is timed.
std::unique_ptr<char[]> TouchedBuffer(uint64_t bytes, char fill) {
  std::unique_ptr<char[]> p(new char[bytes]);
  std::memset(p.get(), fill, bytes);
  return p;
}

// ---------------------------------------------------------------- sockets

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

enum class Transport { kTcp, kUds };

// Where the receiver listens: a loopback port or a socket file.
struct Endpoint {
  Transport transport;
  sockaddr_storage addr{};
  socklen_t len = 0;
};

absl::Status Errno(const std::string& what) { return absl::ErrnoToStatus(errno, what); }

absl::StatusOr<Fd> Listen(Transport t, const std::string& uds_path, int backlog, Endpoint* ep) {
  ep->transport = t;
  Fd fd(socket(t == Transport::kTcp ? AF_INET : AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return Errno("socket");
  if (t == Transport::kTcp) {
    auto* in = reinterpret_cast<sockaddr_in*>(&ep->addr);
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    in->sin_port = 0;  // a free port
    ep->len = sizeof(sockaddr_in);
  } else {
    auto* un = reinterpret_cast<sockaddr_un*>(&ep->addr);
    un->sun_family = AF_UNIX;
    if (uds_path.size() >= sizeof(un->sun_path)) {
      return absl::InvalidArgumentError(absl::StrCat("socket path too long: ", uds_path));
    }
    std::memcpy(un->sun_path, uds_path.c_str(), uds_path.size() + 1);
    ep->len = sizeof(sockaddr_un);
  }
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&ep->addr), ep->len) != 0) return Errno("bind");
  if (listen(fd.get(), backlog) != 0) return Errno("listen");
  if (t == Transport::kTcp &&
      getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ep->addr), &ep->len) != 0) {
    return Errno("getsockname");
  }
  return fd;
}

// Sends or receives exactly `n` bytes, `step` per call.
absl::Status SendAll(int fd, const char* p, uint64_t n, uint64_t step) {
  while (n > 0) {
    const ssize_t k = send(fd, p, std::min(n, step), MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return Errno("send");
    p += k;
    n -= static_cast<uint64_t>(k);
  }
  return absl::OkStatus();
}

absl::Status RecvAll(int fd, char* p, uint64_t n, uint64_t step) {
  while (n > 0) {
    const ssize_t k = recv(fd, p, std::min(n, step), 0);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return Errno("recv");
    if (k == 0) return absl::UnavailableError("the peer closed the connection early");
    p += k;
    n -= static_cast<uint64_t>(k);
  }
  return absl::OkStatus();
}

// Connection i carries bytes [Slice(i), Slice(i + 1)).
uint64_t Slice(uint64_t bytes, int connections, int i) {
  return bytes / static_cast<uint64_t>(connections) * static_cast<uint64_t>(i) +
         std::min<uint64_t>(bytes % static_cast<uint64_t>(connections), static_cast<uint64_t>(i));
}

// Runs `f(i)` for i in [0, n) on a thread each; returns the first failure.
template <typename F>
absl::Status OnThreads(int n, F f) {
  std::vector<absl::Status> status(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] { status[static_cast<size_t>(i)] = f(i); });
  for (auto& t : threads) t.join();
  for (const auto& s : status) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// The sender (in the forked child): connects, then for each repetition waits
// for the receiver's go byte on each connection and sends that connection's
// slice of its buffer.
absl::Status RunSender(const Endpoint& ep, uint64_t bytes, int connections, int repeats,
                       uint64_t step) {
  const auto buffer = TouchedBuffer(bytes, 0x5a);
  std::vector<Fd> fds;
  for (int i = 0; i < connections; ++i) {
    Fd fd(socket(ep.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) return Errno("socket");
    if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&ep.addr), ep.len) != 0) {
      return Errno("connect");
    }
    fds.push_back(std::move(fd));
  }
  return OnThreads(connections, [&](int i) -> absl::Status {
    const uint64_t begin = Slice(bytes, connections, i), end = Slice(bytes, connections, i + 1);
    for (int r = 0; r < repeats; ++r) {
      char go;
      if (absl::Status s = RecvAll(fds[i].get(), &go, 1, 1); !s.ok()) return s;
      if (absl::Status s = SendAll(fds[i].get(), buffer.get() + begin, end - begin, step);
          !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  });
}

// Accepts `connections` connections, giving up when the sender has exited or
// after 30 s.
absl::StatusOr<std::vector<Fd>> AcceptAll(int listener, int connections, pid_t sender) {
  std::vector<Fd> fds;
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (static_cast<int>(fds.size()) < connections) {
    pollfd p{listener, POLLIN, 0};
    const int ready = poll(&p, 1, 100);
    if (ready < 0 && errno != EINTR) return Errno("poll");
    if (ready > 0) {
      Fd fd(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
      if (fd.get() < 0) return Errno("accept");
      fds.push_back(std::move(fd));
      continue;
    }
    int wstatus;
    if (waitpid(sender, &wstatus, WNOHANG) == sender) {
      return absl::UnavailableError("the sender exited before connecting");
    }
    if (Clock::now() > deadline) return absl::DeadlineExceededError("no connection in 30 s");
  }
  return fds;
}

// The receiver's side, timed: from the go bytes to the last byte in.
absl::StatusOr<std::vector<double>> Receive(std::vector<Fd>& fds, uint64_t bytes, int repeats,
                                            uint64_t step) {
  const auto buffer = TouchedBuffer(bytes, 0);
  const int connections = static_cast<int>(fds.size());
  std::vector<double> gbps;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    absl::Status s = OnThreads(connections, [&](int i) -> absl::Status {
      const uint64_t begin = Slice(bytes, connections, i), end = Slice(bytes, connections, i + 1);
      const char go = 'g';
      if (absl::Status g = SendAll(fds[i].get(), &go, 1, 1); !g.ok()) return g;
      return RecvAll(fds[i].get(), buffer.get() + begin, end - begin, step);
    });
    const auto t1 = Clock::now();
    if (!s.ok()) return s;
    gbps.push_back(static_cast<double>(bytes) * 1e-9 / Seconds(t0, t1));
  }
  return gbps;
}

// Forks the sender, receives `bytes` over `connections` sockets `repeats`
// times. Call with no other thread running (the child forks a copy of this
// one alone).
absl::StatusOr<std::vector<double>> MeasureSockets(Transport t, uint64_t bytes, int connections,
                                                   int repeats, uint64_t step) {
  std::string dir, path;
  if (t == Transport::kUds) {
    char tmpl[] = "/tmp/ebzip_limits.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return Errno("mkdtemp");
    dir = tmpl;
    path = dir + "/sock";
  }
  Endpoint ep;
  absl::StatusOr<Fd> listener = Listen(t, path, connections, &ep);
  absl::StatusOr<std::vector<double>> result;
  if (!listener.ok()) {
    result = listener.status();
  } else {
    std::fflush(nullptr);  // nothing buffered twice
    const pid_t child = fork();
    if (child < 0) {
      result = Errno("fork");
    } else if (child == 0) {
      listener->Reset();
      const absl::Status s = RunSender(ep, bytes, connections, repeats, step);
      if (!s.ok())
        std::fprintf(stderr, "ebzip_transfer_limits: sender: %s\n", s.ToString().c_str());
      _exit(s.ok() ? 0 : 1);
    } else {
      absl::StatusOr<std::vector<Fd>> fds = AcceptAll(listener->get(), connections, child);
      listener->Reset();
      if (fds.ok()) {
        result = Receive(*fds, bytes, repeats, step);
        fds->clear();  // closed: a sender still waiting for a go byte ends
      } else {
        result = fds.status();
      }
      int wstatus = 0;
      while (waitpid(child, &wstatus, 0) < 0 && errno == EINTR) {
      }
      if (result.ok() && !(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)) {
        result = absl::InternalError("the sender failed");
      }
    }
  }
  if (!path.empty()) unlink(path.c_str());
  if (!dir.empty()) rmdir(dir.c_str());
  return result;
}

// ---------------------------------------------------------------- memcpy

std::vector<double> MeasureMemcpy(uint64_t bytes, int threads, int repeats) {
  const auto src = TouchedBuffer(bytes, 0x5a), dst = TouchedBuffer(bytes, 0);
  std::vector<double> gbps;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    if (threads == 1) {
      std::memcpy(dst.get(), src.get(), bytes);
    } else {
      (void)OnThreads(threads, [&](int i) {
        const uint64_t begin = Slice(bytes, threads, i), end = Slice(bytes, threads, i + 1);
        std::memcpy(dst.get() + begin, src.get() + begin, end - begin);
        return absl::OkStatus();
      });
    }
    const auto t1 = Clock::now();
    gbps.push_back(static_cast<double>(bytes) * 1e-9 / Seconds(t0, t1));
  }
  return gbps;
}

// ---------------------------------------------------------------- CUDA

#ifdef EBZIP_TRANSFER_LIMITS_CUDA
absl::Status Cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorString(e)));
}

// Host and device buffers of one size, freed on every path.
struct CudaBuffers {
  void* device = nullptr;
  void* pinned = nullptr;
  std::unique_ptr<char[]> pageable;
  ~CudaBuffers() {
    if (device != nullptr) cudaFree(device);
    if (pinned != nullptr) cudaFreeHost(pinned);
  }
};

absl::Status MeasureCuda(uint64_t bytes, int repeats, int device, Report* report) {
  if (absl::Status s = Cuda(cudaSetDevice(device), "cudaSetDevice"); !s.ok()) return s;
  cudaDeviceProp prop;
  if (absl::Status s = Cuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
      !s.ok()) {
    return s;
  }
  std::printf("# cuda device %d: %s\n", device, prop.name);
  CudaBuffers b;
  if (absl::Status s = Cuda(cudaMalloc(&b.device, bytes), "cudaMalloc"); !s.ok()) return s;
  if (absl::Status s = Cuda(cudaMallocHost(&b.pinned, bytes), "cudaMallocHost"); !s.ok()) return s;
  std::memset(b.pinned, 0x5a, bytes);
  b.pageable = TouchedBuffer(bytes, 0x5a);
  struct Copy {
    const char* what;
    void* dst;
    const void* src;
    cudaMemcpyKind kind;
  };
  const Copy copies[] = {
      {"h2d_pinned", b.device, b.pinned, cudaMemcpyHostToDevice},
      {"d2h_pinned", b.pinned, b.device, cudaMemcpyDeviceToHost},
      {"h2d_pageable", b.device, b.pageable.get(), cudaMemcpyHostToDevice},
      {"d2h_pageable", b.pageable.get(), b.device, cudaMemcpyDeviceToHost},
  };
  for (const Copy& c : copies) {
    // One untimed copy first: the first of a kind pays for lazy setup.
    if (absl::Status s = Cuda(cudaMemcpy(c.dst, c.src, bytes, c.kind), c.what); !s.ok()) return s;
    std::vector<double> gbps;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = Clock::now();
      if (absl::Status s = Cuda(cudaMemcpy(c.dst, c.src, bytes, c.kind), c.what); !s.ok()) return s;
      gbps.push_back(static_cast<double>(bytes) * 1e-9 / Seconds(t0, Clock::now()));
    }
    report->Add(c.what, absl::StrCat("device=", device), bytes, Summarize(gbps));
  }
  return absl::OkStatus();
}
#endif

// Measures the copies when a device is visible; otherwise says why not.
void MaybeMeasureCuda(uint64_t bytes, int repeats, int device, Report* report) {
#ifdef EBZIP_TRANSFER_LIMITS_CUDA
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
    std::printf("# cuda: skipped, no device visible (cudaGetDeviceCount: %s)\n",
                e == cudaSuccess ? "0 devices" : cudaGetErrorString(e));
    return;
  }
  if (device < 0 || device >= count) {
    report->Fail("cuda", absl::StrCat("device=", device),
                 absl::InvalidArgumentError(absl::StrCat(count, " devices visible")));
    return;
  }
  if (absl::Status s = MeasureCuda(bytes, repeats, device, report); !s.ok()) {
    report->Fail("cuda", absl::StrCat("device=", device), s);
  }
#else
  (void)bytes, (void)repeats, (void)device, (void)report;
  std::printf("# cuda: skipped, built without CUDA\n");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "ebzip_transfer_limits [--bytes=1G] [--connections=1,2,4,8] "
      "[--measure=tcp,uds,grpc,grpc_uds,grpc_calls,grpc_uds_calls,memcpy,cuda]\n"
      "[--call_streams=32] [--call_round_trips=10000] [--call_array_bytes=256K] "
      "[--call_archive_bytes=16K]\n"
      "Loopback socket, gRPC, memcpy and host<->device copy bandwidth: the limits the service's\n"
      "figures are read against (bench/README.md).");
  absl::ParseCommandLine(argc, argv);

  const absl::StatusOr<uint64_t> bytes = ParseBytes(absl::GetFlag(FLAGS_bytes));
  const absl::StatusOr<uint64_t> step = ParseBytes(absl::GetFlag(FLAGS_send_bytes));
  const int repeats = absl::GetFlag(FLAGS_repeats);
  const absl::StatusOr<uint64_t> call_array = ParseBytes(absl::GetFlag(FLAGS_call_array_bytes));
  const absl::StatusOr<uint64_t> call_archive = ParseBytes(absl::GetFlag(FLAGS_call_archive_bytes));
  const int call_streams = absl::GetFlag(FLAGS_call_streams);
  const int64_t call_round_trips = absl::GetFlag(FLAGS_call_round_trips);
  std::vector<int> connections;
  bool flags_ok = bytes.ok() && *bytes > 0 && step.ok() && *step > 0 && repeats >= 1 &&
                  call_array.ok() && *call_array <= (uint64_t{32} << 20) && call_archive.ok() &&
                  *call_archive <= (uint64_t{32} << 20) && call_streams >= 1 &&
                  call_streams <= 1024 && call_round_trips >= call_streams;
  for (const std::string& c : absl::GetFlag(FLAGS_connections)) {
    int n = 0;
    if (!absl::SimpleAtoi(c, &n) || n < 1 || n > 1024) flags_ok = false;
    if (std::find(connections.begin(), connections.end(), n) == connections.end()) {
      connections.push_back(n);
    }
  }
  bool want_tcp = false, want_uds = false, want_memcpy = false, want_cuda = false;
  std::vector<ebzip::bench::GrpcTransport> grpc_transports, call_transports;
  for (const std::string& m : absl::GetFlag(FLAGS_measure)) {
    if (m == "tcp") {
      want_tcp = true;
    } else if (m == "uds") {
      want_uds = true;
    } else if (m == "grpc") {
      grpc_transports.push_back(ebzip::bench::GrpcTransport::kTcp);
    } else if (m == "grpc_uds") {
      grpc_transports.push_back(ebzip::bench::GrpcTransport::kUnix);
    } else if (m == "grpc_calls") {
      call_transports.push_back(ebzip::bench::GrpcTransport::kTcp);
    } else if (m == "grpc_uds_calls") {
      call_transports.push_back(ebzip::bench::GrpcTransport::kUnix);
    } else if (m == "memcpy") {
      want_memcpy = true;
    } else if (m == "cuda") {
      want_cuda = true;
    } else {
      flags_ok = false;
    }
  }
  if (!flags_ok || connections.empty() ||
      (bytes.ok() &&
       *bytes < static_cast<uint64_t>(*std::max_element(connections.begin(), connections.end())))) {
    std::fprintf(stderr,
                 "ebzip_transfer_limits: --bytes >= the most connections, --send_bytes > 0, "
                 "--connections in 1..1024, --repeats >= 1, --call_streams in 1..1024, "
                 "--call_round_trips >= --call_streams, --call_*_bytes <= 32M and --measure of "
                 "tcp, uds, grpc, grpc_uds, grpc_calls, grpc_uds_calls, memcpy, cuda, please\n");
    return 2;
  }

  std::printf(
      "# ebzip_transfer_limits: %llu B per measurement, GB/s (1e9 B/s) median and best of %d; "
      "sockets: sender a forked process, %llu B per send/recv; %u CPUs\n",
      static_cast<unsigned long long>(*bytes), repeats, static_cast<unsigned long long>(*step),
      std::thread::hardware_concurrency());
  std::printf("%-13s %-16s %12s %10s\n", "what", "detail", "GB/s median", "best");
  Report report;
  // Sockets first: they fork, which wants no CUDA context and no threads.
  for (const auto& [on, transport, name] : {std::tuple{want_tcp, Transport::kTcp, "tcp"},
                                            std::tuple{want_uds, Transport::kUds, "uds"}}) {
    if (!on) continue;
    for (int n : connections) {
      const std::string detail = absl::StrCat("connections=", n);
      absl::StatusOr<std::vector<double>> gbps =
          MeasureSockets(transport, *bytes, n, repeats, *step);
      if (gbps.ok()) {
        report.Add(name, detail, *bytes, Summarize(*gbps));
      } else {
        report.Fail(name, detail, gbps.status());
      }
    }
  }
  // gRPC next: it forks its server before this process first uses gRPC.
  if (!grpc_transports.empty() || !call_transports.empty()) {
    const ebzip::bench::GrpcLimits grpc = ebzip::bench::MeasureGrpc(
        {*bytes, grpc_transports, connections, repeats, *step},
        {call_transports, call_streams, call_round_trips, *call_array, *call_archive, repeats});
    for (const ebzip::bench::GrpcRate& r : grpc.transfers) {
      const bool up = r.direction == ebzip::bench::GrpcDirection::kUp;
      const char* name = r.transport == ebzip::bench::GrpcTransport::kTcp
                             ? (up ? "grpc_up" : "grpc_down")
                             : (up ? "grpc_uds_up" : "grpc_uds_down");
      const std::string detail = absl::StrCat("connections=", r.connections);
      if (r.status.ok()) {
        report.Add(name, detail, *bytes, Summarize(r.gbps));
      } else {
        report.Fail(name, detail, r.status);
      }
    }
    for (const ebzip::bench::GrpcCallRate& r : grpc.calls) {
      const char* name =
          r.transport == ebzip::bench::GrpcTransport::kTcp ? "grpc_calls" : "grpc_uds_calls";
      const std::string detail = absl::StrCat("streams=", r.streams);
      if (r.status.ok()) {
        report.AddCalls(name, detail, *call_array, Summarize(r.calls_per_s));
      } else {
        report.Fail(name, detail, r.status);
      }
    }
  }
  if (want_memcpy) {
    std::vector<int> threads = {1};
    for (int n : connections) {
      if (n != 1) threads.push_back(n);
    }
    for (int n : threads) {
      report.Add("memcpy", absl::StrCat("threads=", n), *bytes,
                 Summarize(MeasureMemcpy(*bytes, n, repeats)));
    }
  }
  if (want_cuda) MaybeMeasureCuda(*bytes, repeats, absl::GetFlag(FLAGS_device), &report);
  report.PrintLines();
  return report.failed() ? 1 : 0;
}
