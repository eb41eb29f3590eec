#include "bench/grpc_transfer.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/resource_quota.h"
#include "proto/raw_stream.h"

namespace ebzip::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Two generic methods: no .proto, the bytes are the messages.
constexpr char kUpload[] = "/ebzip.limits.Bytes/Upload";      // replies the byte count
constexpr char kDownload[] = "/ebzip.limits.Bytes/Download";  // asked (offset, length)
constexpr char kCall[] = "/ebzip.limits.Bytes/Call";          // asked two reply messages' sizes
// ebzipd's settings that bear on moving bulk bytes (server/server.cc,
// server/server_flags.cc): its largest accepted message and the memory quota
// past which gRPC stops reading from connections.
constexpr int kMaxReceiveMessageBytes = 64 << 20;
constexpr uint64_t kGrpcMemoryBytes = uint64_t{512} << 20;

// A message that refers to `n` bytes at `p`, which outlive the call: sent
// from where they are, as ebzip's payloads are (proto/payload.h).
grpc::ByteBuffer View(const char* p, uint64_t n) {
  grpc::Slice slice(p, n, grpc::Slice::STATIC_SLICE);
  return grpc::ByteBuffer(&slice, 1);
}

grpc::ByteBuffer Words(uint64_t a, uint64_t b) {
  char bytes[16];
  std::memcpy(bytes, &a, 8);
  std::memcpy(bytes + 8, &b, 8);
  grpc::Slice slice(bytes, sizeof(bytes));  // copied
  return grpc::ByteBuffer(&slice, 1);
}

// The first `n` 64-bit words of a small message; false when it is shorter.
bool ReadWords(const grpc::ByteBuffer& buffer, uint64_t* words, size_t n) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) return false;
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  if (bytes.size() < 8 * n) return false;
  std::memcpy(words, bytes.data(), 8 * n);
  return true;
}

// ---------------------------------------------------------------- server

// Upload: reads every message and drops it, then replies the byte count.
class Sink final : public grpc::ServerGenericBidiReactor {
 public:
  Sink() { StartRead(&in_); }
  void OnReadDone(bool ok) override {
    if (ok) {
      received_ += in_.Length();
      in_.Clear();
      StartRead(&in_);
      return;
    }
    out_ = Words(received_, 0);
    StartWriteAndFinish(&out_, grpc::WriteOptions(), grpc::Status::OK);
  }
  void OnDone() override { delete this; }

 private:
  grpc::ByteBuffer in_, out_;
  uint64_t received_ = 0;
};

// Download: sends the asked slice of the server's buffer in messages of
// `message_bytes`, one write in flight, as ebzipd's calls do.
class Source final : public grpc::ServerGenericBidiReactor {
 public:
  Source(const char* data, uint64_t size, uint64_t message_bytes)
      : data_(data), size_(size), message_bytes_(message_bytes) {
    StartRead(&in_);
  }
  void OnReadDone(bool ok) override {
    uint64_t ask[2];
    if (!ok || !ReadWords(in_, ask, 2) || ask[0] > size_ || ask[1] > size_ - ask[0]) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "want (offset, length) in range"));
      return;
    }
    at_ = ask[0];
    end_ = ask[0] + ask[1];
    WriteNext();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
      return;
    }
    WriteNext();
  }
  void OnDone() override { delete this; }

 private:
  void WriteNext() {
    if (at_ == end_) {
      Finish(grpc::Status::OK);
      return;
    }
    const uint64_t n = std::min(message_bytes_, end_ - at_);
    out_ = View(data_ + at_, n);
    at_ += n;
    StartWrite(&out_);
  }

  const char* data_;
  const uint64_t size_, message_bytes_;
  grpc::ByteBuffer in_, out_;
  uint64_t at_ = 0, end_ = 0;
};

// Call: the first message asks for the reply's two messages' sizes; it and
// the rest are read and dropped; then the two messages go out from the
// server's buffer, the second with the call's status.
class Answer final : public grpc::ServerGenericBidiReactor {
 public:
  Answer(const char* data, uint64_t size) : data_(data), size_(size) { StartRead(&in_); }
  void OnReadDone(bool ok) override {
    if (ok) {
      if (!asked_) {
        asked_ = ReadWords(in_, ask_, 2) && ask_[0] <= size_ && ask_[1] <= size_;
        if (!asked_) {
          Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "want two sizes in range"));
          return;
        }
      }
      in_.Clear();
      StartRead(&in_);
      return;
    }
    if (!asked_) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no request"));
      return;
    }
    out_ = View(data_, ask_[0]);
    StartWrite(&out_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
      return;
    }
    out_ = View(data_, ask_[1]);
    StartWriteAndFinish(&out_, grpc::WriteOptions(), grpc::Status::OK);
  }
  void OnDone() override { delete this; }

 private:
  const char* data_;
  const uint64_t size_;
  grpc::ByteBuffer in_, out_;
  uint64_t ask_[2] = {0, 0};
  bool asked_ = false;
};

class BytesService final : public grpc::CallbackGenericService {
 public:
  BytesService(const char* data, uint64_t size, uint64_t message_bytes)
      : data_(data), size_(size), message_bytes_(message_bytes) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* c) override {
    if (c->method() == kUpload) return new Sink();
    if (c->method() == kDownload) return new Source(data_, size_, message_bytes_);
    if (c->method() == kCall) return new Answer(data_, size_);
    return CallbackGenericService::CreateReactor(c);  // UNIMPLEMENTED
  }

 private:
  const char* data_;
  const uint64_t size_, message_bytes_;
};

// The forked child: serves on a loopback port and on `unix_path` until
// `quit_fd` reaches end of file (the parent closed it, or exited). Writes the
// port (0: failed) to `port_fd` first.
int Serve(uint64_t bytes, uint64_t message_bytes, const std::string& unix_path, int port_fd,
          int quit_fd) {
  std::unique_ptr<char[]> data(new char[bytes]);
  std::memset(data.get(), 0x5a, bytes);  // touched before anything is timed
  BytesService service(data.get(), bytes, message_bytes);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.AddListeningPort("unix:" + unix_path, grpc::InsecureServerCredentials());
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterCallbackGenericService(&service);
  builder.SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  grpc::ResourceQuota quota("ebzip_transfer_limits");
  quota.Resize(kGrpcMemoryBytes);
  builder.SetResourceQuota(quota);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) port = 0;
  if (write(port_fd, &port, sizeof(port)) != sizeof(port) || port == 0) return 1;
  for (char c;;) {
    const ssize_t k = read(quit_fd, &c, 1);
    if (k == 0 || (k < 0 && errno != EINTR)) break;
  }
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  return 0;
}

// ---------------------------------------------------------------- client

absl::Status Check(const grpc::Status& s, const char* what) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(what, ": ", s.error_message()));
}

absl::Status Upload(grpc::Channel& channel, const char* p, uint64_t n, uint64_t message_bytes) {
  grpc::ClientContext context;
  auto stream = OpenRawStream(channel, kUpload, &context);
  for (uint64_t at = 0; at < n; at += message_bytes) {
    if (!stream->Write(View(p + at, std::min(message_bytes, n - at)))) break;  // Finish says why
  }
  stream->WritesDone();
  grpc::ByteBuffer reply;
  uint64_t got[1] = {0};
  const bool replied = stream->Read(&reply) && ReadWords(reply, got, 1);
  if (absl::Status s = Check(stream->Finish(), "upload"); !s.ok()) return s;
  if (!replied || got[0] != n) {
    return absl::InternalError(absl::StrCat("upload: the server received ", got[0], " of ", n));
  }
  return absl::OkStatus();
}

absl::Status Download(grpc::Channel& channel, uint64_t offset, uint64_t n) {
  grpc::ClientContext context;
  auto stream = OpenRawStream(channel, kDownload, &context);
  stream->Write(Words(offset, n));
  stream->WritesDone();
  grpc::ByteBuffer in;
  uint64_t received = 0;
  while (stream->Read(&in)) received += in.Length();  // dropped where gRPC put them
  if (absl::Status s = Check(stream->Finish(), "download"); !s.ok()) return s;
  if (received != n) {
    return absl::InternalError(absl::StrCat("download: received ", received, " of ", n));
  }
  return absl::OkStatus();
}

// Call i moves bytes [Slice(i), Slice(i + 1)).
uint64_t Slice(uint64_t bytes, int calls, int i) {
  const auto n = static_cast<uint64_t>(calls), k = static_cast<uint64_t>(i);
  return bytes / n * k + std::min(bytes % n, k);
}

// All the calls at once, a thread each: the first failure, or the time taken.
template <typename F>
absl::StatusOr<double> TimeCalls(int n, F call) {
  std::vector<absl::Status> status(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) threads.emplace_back([&, i] { status[i] = call(i); });
  for (std::thread& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  for (const absl::Status& s : status) {
    if (!s.ok()) return s;
  }
  return seconds;
}

// `n` channels to `target`, each its own connection (as ebzip's client opens
// one per part, and ebzip_load one per stream), with ebzipd's message limit.
std::vector<std::shared_ptr<grpc::Channel>> Channels(const std::string& target, int n) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (int i = 0; i < n; ++i) {
    channels.push_back(grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
  }
  return channels;
}

void MeasureConnections(const std::string& target, GrpcTransport transport,
                        const GrpcTransferPlan& plan, int n, const char* data,
                        std::vector<GrpcRate>* out) {
  const std::vector<std::shared_ptr<grpc::Channel>> channels = Channels(target, n);
  GrpcRate up{transport, GrpcDirection::kUp, n, absl::OkStatus(), {}};
  GrpcRate down{transport, GrpcDirection::kDown, n, absl::OkStatus(), {}};
  // Connected, and one small call each, before anything is timed.
  absl::StatusOr<double> warm = TimeCalls(n, [&](int i) { return Download(*channels[i], 0, 1); });
  if (!warm.ok()) up.status = down.status = warm.status();
  for (int r = 0; r < plan.repeats && warm.ok(); ++r) {
    for (GrpcRate* rate : {&up, &down}) {
      if (!rate->status.ok()) continue;
      absl::StatusOr<double> seconds = TimeCalls(n, [&](int i) {
        const uint64_t begin = Slice(plan.bytes, n, i), end = Slice(plan.bytes, n, i + 1);
        return rate == &up ? Upload(*channels[i], data + begin, end - begin, plan.message_bytes)
                           : Download(*channels[i], begin, end - begin);
      });
      if (seconds.ok()) {
        rate->gbps.push_back(static_cast<double>(plan.bytes) * 1e-9 / *seconds);
      } else {
        rate->status = seconds.status();
      }
    }
  }
  out->push_back(std::move(up));
  out->push_back(std::move(down));
}

// One call of the small-request shape: `up` bytes after the message that
// asks for the reply's two messages, `down[0]` and `down[1]` bytes.
absl::Status Call(grpc::Channel& channel, const char* data, uint64_t up, const uint64_t down[2]) {
  grpc::ClientContext context;
  auto stream = OpenRawStream(channel, kCall, &context);
  if (stream->Write(Words(down[0], down[1]), grpc::WriteOptions().set_buffer_hint())) {
    stream->Write(View(data, up), grpc::WriteOptions().set_last_message());  // Finish says why not
  }
  grpc::ByteBuffer in;
  uint64_t received = 0;
  while (stream->Read(&in)) received += in.Length();
  if (absl::Status s = Check(stream->Finish(), "call"); !s.ok()) return s;
  if (received != down[0] + down[1]) {
    return absl::InternalError(
        absl::StrCat("call: received ", received, " of ", down[0] + down[1]));
  }
  return absl::OkStatus();
}

// A small message's bytes: the compression's header and summary, the
// decompression's header (about what ebzip's protobuf messages take).
constexpr uint64_t kSmallMessage = 64;

void MeasureCalls(const std::string& target, GrpcTransport transport, const GrpcCallPlan& plan,
                  const char* data, std::vector<GrpcCallRate>* out) {
  const int n = plan.streams;
  const std::vector<std::shared_ptr<grpc::Channel>> channels = Channels(target, n);
  GrpcCallRate rate{transport, n, absl::OkStatus(), {}};
  const uint64_t compress_down[2] = {plan.archive_bytes, kSmallMessage};
  const uint64_t decompress_down[2] = {kSmallMessage, plan.array_bytes};
  // Stream i makes round trips [Slice(i), Slice(i + 1)) of `count`.
  auto round_trips = [&](int64_t count) {
    return [&, count](int i) -> absl::Status {
      const uint64_t k =
          Slice(static_cast<uint64_t>(count), n, i + 1) - Slice(static_cast<uint64_t>(count), n, i);
      for (uint64_t j = 0; j < k; ++j) {
        if (absl::Status s = Call(*channels[i], data, plan.array_bytes, compress_down); !s.ok()) {
          return s;
        }
        if (absl::Status s = Call(*channels[i], data, plan.archive_bytes, decompress_down);
            !s.ok()) {
          return s;
        }
      }
      return absl::OkStatus();
    };
  };
  // Connected, and a few round trips each, before anything is timed.
  absl::StatusOr<double> warm = TimeCalls(n, round_trips(int64_t{4} * n));
  if (!warm.ok()) rate.status = warm.status();
  for (int r = 0; r < plan.repeats && rate.status.ok(); ++r) {
    absl::StatusOr<double> seconds = TimeCalls(n, round_trips(plan.round_trips));
    if (seconds.ok()) {
      rate.calls_per_s.push_back(2.0 * static_cast<double>(plan.round_trips) / *seconds);
    } else {
      rate.status = seconds.status();
    }
  }
  out->push_back(std::move(rate));
}

// The port the child wrote, or 0 when it wrote none within 30 s.
int ReadPort(int fd) {
  pollfd p{fd, POLLIN, 0};
  int port = 0;
  if (poll(&p, 1, 30000) == 1 && read(fd, &port, sizeof(port)) == sizeof(port)) return port;
  return 0;
}

// Forks a server holding `bytes` bytes to send and calls
// client(tcp_target, unix_target) against it; then shuts it down. Not OK
// when the server could not be started (client not called).
absl::Status WithServer(uint64_t bytes, uint64_t message_bytes,
                        absl::FunctionRef<void(const std::string&, const std::string&)> client) {
  char dir[] = "/tmp/ebzip_grpc_limits.XXXXXX";
  if (mkdtemp(dir) == nullptr) return absl::ErrnoToStatus(errno, "mkdtemp");
  const std::string unix_path = std::string(dir) + "/sock";
  int port_pipe[2], quit_pipe[2];
  if (pipe(port_pipe) != 0) {
    const absl::Status s = absl::ErrnoToStatus(errno, "pipe");
    rmdir(dir);
    return s;
  }
  if (pipe(quit_pipe) != 0) {
    const absl::Status s = absl::ErrnoToStatus(errno, "pipe");
    close(port_pipe[0]);
    close(port_pipe[1]);
    rmdir(dir);
    return s;
  }
  std::fflush(nullptr);  // nothing buffered twice
  const pid_t child = fork();
  if (child == 0) {
    close(port_pipe[0]);
    close(quit_pipe[1]);
    _exit(Serve(bytes, message_bytes, unix_path, port_pipe[1], quit_pipe[0]));
  }
  close(port_pipe[1]);
  close(quit_pipe[0]);
  if (child < 0) {
    const absl::Status s = absl::ErrnoToStatus(errno, "fork");
    close(port_pipe[0]);
    close(quit_pipe[1]);
    rmdir(dir);
    return s;
  }
  const int port = ReadPort(port_pipe[0]);
  close(port_pipe[0]);
  absl::Status status = absl::OkStatus();
  if (port == 0) {
    status = absl::UnavailableError("the gRPC server process did not start");
  } else {
    client(absl::StrCat("127.0.0.1:", port), "unix:" + unix_path);
  }
  close(quit_pipe[1]);  // the child shuts its server down and exits
  int wstatus = 0;
  while (waitpid(child, &wstatus, 0) < 0 && errno == EINTR) {
  }
  unlink(unix_path.c_str());
  rmdir(dir);
  return status;
}

}  // namespace

GrpcLimits MeasureGrpc(const GrpcTransferPlan& transfers, const GrpcCallPlan& calls) {
  GrpcLimits out;
  const uint64_t call_bytes = std::max(calls.array_bytes, calls.archive_bytes) + kSmallMessage;
  const uint64_t bytes = std::max(transfers.bytes, call_bytes);
  const absl::Status s = WithServer(
      bytes, transfers.message_bytes, [&](const std::string& tcp, const std::string& unix_target) {
        std::unique_ptr<char[]> data(new char[bytes]);
        std::memset(data.get(), 0x5a, bytes);
        for (GrpcTransport t : transfers.transports) {
          const std::string& target = t == GrpcTransport::kTcp ? tcp : unix_target;
          for (int n : transfers.connections) {
            MeasureConnections(target, t, transfers, n, data.get(), &out.transfers);
          }
        }
        for (GrpcTransport t : calls.transports) {
          MeasureCalls(t == GrpcTransport::kTcp ? tcp : unix_target, t, calls, data.get(),
                       &out.calls);
        }
      });
  if (!s.ok()) {
    out = {};
    for (GrpcTransport t : transfers.transports) {
      for (int n : transfers.connections) {
        out.transfers.push_back({t, GrpcDirection::kUp, n, s, {}});
        out.transfers.push_back({t, GrpcDirection::kDown, n, s, {}});
      }
    }
    for (GrpcTransport t : calls.transports) out.calls.push_back({t, calls.streams, s, {}});
  }
  return out;
}

}  // namespace ebzip::bench
