// RemoteClient's deadline: by default every call (Compress, Decompress,
// Info, Health) carries one, kDefaultTimeout from its start; a timeout of
// zero sends none; and a call to a server that never answers ends
// DEADLINE_EXCEEDED at the deadline instead of waiting for ever. The server
// is an in-process fake on loopback that records the deadline each call
// arrived with, and can be told to answer nothing.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/remote/remote_client.h"
#include "ebzip/v1/ebzip.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace ebzip::client {
namespace {

using ::absl::StatusCode;

// How much later than the client's a deadline may reach the server: gRPC
// rounds the time left up to the grpc-timeout header's units.
constexpr absl::Duration kRounding = absl::Seconds(2);

// What the fake saw: each call's deadline, as time left when it arrived
// (InfiniteDuration: none).
class Deadlines {
 public:
  void Record(const std::string& method, const grpc::ServerContext& context) {
    absl::Duration left = absl::InfiniteDuration();
    if (context.deadline() != std::chrono::system_clock::time_point::max()) {
      left = absl::FromChrono(context.deadline()) - absl::Now();
    }
    absl::MutexLock lock(&mu_);
    seen_.push_back({method, left});
  }
  std::vector<std::pair<std::string, absl::Duration>> seen() const {
    absl::MutexLock lock(&mu_);
    return seen_;
  }
  void Clear() {
    absl::MutexLock lock(&mu_);
    seen_.clear();
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::pair<std::string, absl::Duration>> seen_ ABSL_GUARDED_BY(mu_);
};

// Until the call is cancelled (its deadline, or the server's shutdown).
void Hang(grpc::ServerContext* context) {
  const absl::Time limit = absl::Now() + absl::Seconds(60);
  while (!context->IsCancelled() && absl::Now() < limit) absl::SleepFor(absl::Milliseconds(5));
}

// Answers every call with a refusal the client does not retry
// (FAILED_PRECONDITION), or, when hanging, never.
class FakeCompressor final : public v1::Compressor::Service {
 public:
  FakeCompressor(Deadlines& deadlines, std::atomic<bool>& hang)
      : deadlines_(deadlines), hang_(hang) {}

  grpc::Status Compress(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::CompressResponse, v1::CompressRequest>* /*stream*/) override {
    return Answer("Compress", context);
  }
  grpc::Status Decompress(grpc::ServerContext* context,
                          grpc::ServerReaderWriter<v1::DecompressResponse,
                                                   v1::DecompressRequest>* /*stream*/) override {
    return Answer("Decompress", context);
  }
  grpc::Status GetServerInfo(grpc::ServerContext* context, const v1::GetServerInfoRequest*,
                             v1::ServerInfo*) override {
    return Answer("GetServerInfo", context);
  }

 private:
  grpc::Status Answer(const std::string& method, grpc::ServerContext* context) {
    deadlines_.Record(method, *context);
    if (hang_) Hang(context);
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "the fake does no work");
  }

  Deadlines& deadlines_;
  std::atomic<bool>& hang_;
};

// Check answers SERVING (or never, when hanging); Watch, which the
// client's channel uses to pick servers, always says SERVING.
class FakeHealth final : public grpc::health::v1::Health::Service {
 public:
  FakeHealth(Deadlines& deadlines, std::atomic<bool>& hang) : deadlines_(deadlines), hang_(hang) {}

  grpc::Status Check(grpc::ServerContext* context, const grpc::health::v1::HealthCheckRequest*,
                     grpc::health::v1::HealthCheckResponse* response) override {
    deadlines_.Record("Check", *context);
    if (hang_) {
      Hang(context);
      return grpc::Status::CANCELLED;
    }
    response->set_status(grpc::health::v1::HealthCheckResponse::SERVING);
    return grpc::Status::OK;
  }
  grpc::Status Watch(grpc::ServerContext* context, const grpc::health::v1::HealthCheckRequest*,
                     grpc::ServerWriter<grpc::health::v1::HealthCheckResponse>* writer) override {
    grpc::health::v1::HealthCheckResponse serving;
    serving.set_status(grpc::health::v1::HealthCheckResponse::SERVING);
    writer->Write(serving);
    Hang(context);
    return grpc::Status::OK;
  }

 private:
  Deadlines& deadlines_;
  std::atomic<bool>& hang_;
};

class RemoteClientDeadlineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    // The sync server's destructor waits for its pollers, which otherwise
    // sleep up to 10 s on the completion queue.
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::CQ_TIMEOUT_MSEC, 50);
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&compressor_);
    builder.RegisterService(&health_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }
  void TearDown() override {
    // Ends the Watch calls (and any hanging one) at once.
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
  }

  std::unique_ptr<RemoteClient> Client(RemoteOptions o) {
    o.server = "127.0.0.1:" + std::to_string(port_);
    auto c = RemoteClient::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }

  // One call of each kind; returns their statuses by method.
  std::vector<std::pair<std::string, absl::Status>> CallEach(RemoteClient& client) {
    const ArraySpec spec{DType::kFloat32, {16}};
    const std::vector<uint8_t> data(spec.num_bytes(), 0);
    CompressOptions options;
    options.bound = 1e-3;
    const std::vector<uint8_t> archive(64, 0);
    return {{"Compress", client.Compress(spec, data, options).status()},
            {"Decompress", client.Decompress(archive).status()},
            {"GetServerInfo", client.Info().status()},
            {"Check", client.Health()}};
  }

  Deadlines deadlines_;
  std::atomic<bool> hang_{false};
  FakeCompressor compressor_{deadlines_, hang_};
  FakeHealth health_{deadlines_, hang_};
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

TEST_F(RemoteClientDeadlineTest, EveryCallCarriesTheDefaultDeadline) {
  ASSERT_GT(kDefaultTimeout, absl::ZeroDuration());
  ASSERT_LT(kDefaultTimeout, absl::InfiniteDuration());
  EXPECT_EQ(RemoteOptions().timeout, kDefaultTimeout);
  auto client = Client({});
  ASSERT_NE(client, nullptr);
  CallEach(*client);
  const auto seen = deadlines_.seen();
  std::vector<std::string> methods;
  for (const auto& [method, left] : seen) {
    methods.push_back(method);
    // Set when the call started, a moment before the server saw it.
    EXPECT_LE(left, kDefaultTimeout + kRounding) << method;
    EXPECT_GT(left, kDefaultTimeout - absl::Seconds(30)) << method;
  }
  EXPECT_EQ(methods,
            (std::vector<std::string>{"Compress", "Decompress", "GetServerInfo", "Check"}));
}

TEST_F(RemoteClientDeadlineTest, AGivenTimeoutIsTheDeadline) {
  RemoteOptions o;
  o.timeout = absl::Seconds(42);
  auto client = Client(o);
  ASSERT_NE(client, nullptr);
  CallEach(*client);
  ASSERT_EQ(deadlines_.seen().size(), 4u);
  for (const auto& [method, left] : deadlines_.seen()) {
    EXPECT_LE(left, absl::Seconds(42) + kRounding) << method;
    EXPECT_GT(left, absl::Seconds(12)) << method;
  }
}

TEST_F(RemoteClientDeadlineTest, ZeroMeansNoDeadline) {
  for (absl::Duration none : {absl::ZeroDuration(), absl::InfiniteDuration()}) {
    deadlines_.Clear();
    RemoteOptions o;
    o.timeout = none;
    auto client = Client(o);
    ASSERT_NE(client, nullptr);
    CallEach(*client);
    ASSERT_EQ(deadlines_.seen().size(), 4u);
    for (const auto& [method, left] : deadlines_.seen()) {
      EXPECT_EQ(left, absl::InfiniteDuration()) << method << " with timeout " << none;
    }
  }
}

TEST_F(RemoteClientDeadlineTest, AServerThatNeverAnswersGivesDeadlineExceeded) {
  hang_ = true;
  RemoteOptions o;
  o.timeout = absl::Milliseconds(300);
  auto client = Client(o);
  ASSERT_NE(client, nullptr);
  for (const auto& [method, status] : CallEach(*client)) {
    EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << method << ": " << status;
  }
  // Each call ended at its deadline, not when the fake gave up (60 s).
  for (const auto& [method, left] : deadlines_.seen()) {
    EXPECT_LE(left, absl::Milliseconds(300) + kRounding) << method;
  }
}

TEST_F(RemoteClientDeadlineTest, ANeverAnsweringCallEndsAtTheDeadline) {
  hang_ = true;
  RemoteOptions o;
  o.timeout = absl::Milliseconds(500);
  auto client = Client(o);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Info().status().code() == StatusCode::kDeadlineExceeded);  // connected
  const absl::Time start = absl::Now();
  const absl::Status s = client->Info().status();
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s;
  EXPECT_GE(took, absl::Milliseconds(450));
  EXPECT_LT(took, absl::Seconds(10));
}

TEST_F(RemoteClientDeadlineTest, ANegativeTimeoutIsRefused) {
  RemoteOptions o;
  o.server = "127.0.0.1:" + std::to_string(port_);
  o.timeout = absl::Seconds(-1);
  EXPECT_EQ(RemoteClient::Connect(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ebzip::client
