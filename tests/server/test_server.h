// An ebzipd running in the test's process on a free loopback port, and what
// tests need around it: clients, raw stubs, waiting for quiescence.
#ifndef EBZIP_TESTS_SERVER_TEST_SERVER_H_
#define EBZIP_TESTS_SERVER_TEST_SERVER_H_

#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "client/remote/remote_client.h"
#include "ebzip/v1/ebzip.grpc.pb.h"
#include "gtest/gtest.h"
#include "server/cpu_codec.h"
#include "server/log.h"
#include "server/server.h"

namespace ebzip::testing {

// The backend the suite runs against: "cpu" here, "gpu" in
// tests/gpu's build of the same tests.
#ifndef EBZIP_TEST_BACKEND
#define EBZIP_TEST_BACKEND "cpu"
#endif

inline server::ServerOptions TestServerOptions() {
  server::ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.metrics_listen = "";
  o.backend = *server::ParseEnumName("backend", server::kBackendNames, EBZIP_TEST_BACKEND);
  o.max_queued_bytes = uint64_t{2} << 30;
  o.gpu_memory_bytes = uint64_t{2} << 30;
  o.gpu_pinned_bytes = uint64_t{64} << 20;
  // The tests stream arrays of a few small frames.
  o.min_frame_elements = 1024;
  return o;
}

// Starts a server or skips the test (a GPU build without a GPU).
#define START_TEST_SERVER(var, options)                                                      \
  ::ebzip::server::SetLogQuiet(true);                                                        \
  auto var##_or = ::ebzip::server::EbzipServer::Start(options);                              \
  if (!var##_or.ok() && var##_or.status().code() == absl::StatusCode::kFailedPrecondition) { \
    GTEST_SKIP() << var##_or.status();                                                       \
  }                                                                                          \
  ASSERT_TRUE(var##_or.ok()) << var##_or.status();                                           \
  std::unique_ptr<::ebzip::server::EbzipServer> var = *std::move(var##_or)

inline std::string Address(const server::EbzipServer& s) {
  return "127.0.0.1:" + std::to_string(s.port());
}

inline std::unique_ptr<client::RemoteClient> ClientFor(const server::EbzipServer& s,
                                                       client::RemoteOptions o = {}) {
  o.server = Address(s);
  auto c = client::RemoteClient::Connect(o);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : nullptr;
}

inline std::unique_ptr<v1::Compressor::Stub> StubFor(const server::EbzipServer& s) {
  return v1::Compressor::NewStub(
      grpc::CreateChannel(Address(s), grpc::InsecureChannelCredentials()));
}

// Waits until no call is in progress and no byte is held; false on timeout.
inline bool WaitQuiet(const server::EbzipServer& s, absl::Duration timeout = absl::Seconds(30)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (s.calls_in_progress() == 0 && s.held_bytes() == 0 && s.queued_requests() == 0) {
      return true;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  return false;
}

// What a Compress of `shape` float32 elements, one work, costs the budget
// once it is queued: its array and the codec's working memory.
inline uint64_t CompressCost(std::vector<uint64_t> shape, CompressOptions options = {}) {
  server::Work w;
  w.method = server::Method::kCompress;
  w.spec = {DType::kFloat32, std::move(shape)};
  w.options = std::move(options);
  if (w.options.bound == 0) w.options.bound = 1e-3;
  return w.spec.num_bytes() + server::CpuWorkingBytes(w);
}

// The value of one series ("name{label=\"v\"}") in an exposition text; -1
// when it is absent.
inline double MetricValue(const std::string& text, const std::string& series) {
  size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

}  // namespace ebzip::testing

#endif  // EBZIP_TESTS_SERVER_TEST_SERVER_H_
