// ebzipd, the built binary, as gRPC tools and orchestrators meet it: the
// standard health service answers for the server ("") and for
// ebzip.v1.Compressor by name, and both turn NOT_SERVING when SIGTERM
// starts the drain; server reflection answers in version 1 and v1alpha,
// lists the services and describes the API (and the health service), and
// --reflection=false turns both off. The clients here are plain gRPC stubs
// over loopback, as grpcurl or a kubelet would be.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "ebzip/v1/ebzip.grpc.pb.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1/reflection.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

extern char** environ;

namespace ebzip::testing {
namespace {

using grpc::health::v1::HealthCheckResponse;
using grpc::reflection::v1::ServerReflectionRequest;
using grpc::reflection::v1::ServerReflectionResponse;

// An ebzipd child process on a kernel-chosen loopback port, its stderr in a
// file; the port comes from its "ebzipd serving" log line.
class Ebzipd {
 public:
  explicit Ebzipd(std::vector<std::string> flags) {
    char dir[] = "/tmp/ebzip_conventions_XXXXXX";
    EXPECT_NE(mkdtemp(dir), nullptr);
    log_path_ = std::string(dir) + "/ebzipd.log";
    std::vector<std::string> args = {EBZIPD_PATH, "--listen",  "127.0.0.1:0", "--metrics_listen",
                                     "",          "--backend", "cpu"};
    args.insert(args.end(), flags.begin(), flags.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0600);
    EXPECT_EQ(posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    while (port_ == 0 && absl::Now() < deadline && !Exited()) {
      for (const nlohmann::json& event : LogLines()) {
        if (event.value("msg", "") == "ebzipd serving") port_ = event.at("port").get<int>();
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    EXPECT_GT(port_, 0) << "ebzipd did not start; its log:\n" << LogText();
  }

  ~Ebzipd() {
    if (pid_ > 0 && !Exited()) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::shared_ptr<grpc::Channel> Channel() const {
    return grpc::CreateChannel(address(), grpc::InsecureChannelCredentials());
  }
  void Signal(int signal) const { kill(pid_, signal); }
  // The exit status once it has exited, waiting up to `timeout`; -1 if not.
  int Wait(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (!Exited() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
    return Exited() && WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
  }

  std::string LogText() const {
    std::ifstream in(log_path_);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  bool Exited() {
    if (exited_) return true;
    exited_ = waitpid(pid_, &status_, WNOHANG) == pid_;
    return exited_;
  }

  std::vector<nlohmann::json> LogLines() const {
    std::vector<nlohmann::json> events;
    std::ifstream in(log_path_);
    for (std::string line; std::getline(in, line);) {
      auto event = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (event.is_object()) events.push_back(std::move(event));
    }
    return events;
  }

  std::string log_path_;
  pid_t pid_ = 0;
  int port_ = 0;
  int status_ = 0;
  bool exited_ = false;
};

// Check with a plain health stub; NOT_FOUND and the like come back as the
// call's status, UNKNOWN as the serving state then.
grpc::Status CheckHealth(grpc::Channel& channel, const std::string& service,
                         HealthCheckResponse::ServingStatus* state) {
  auto stub = grpc::health::v1::Health::NewStub(
      std::shared_ptr<grpc::Channel>(&channel, [](grpc::Channel*) {}));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  HealthCheckResponse response;
  grpc::Status status = stub->Check(&context, request, &response);
  *state = status.ok() ? response.status() : HealthCheckResponse::UNKNOWN;
  return status;
}

const char* const kHealthNames[] = {"", "ebzip.v1.Compressor"};

TEST(Conventions, HealthServesTheServerAndTheServiceByName) {
  Ebzipd ebzipd({});
  auto channel = ebzipd.Channel();
  for (const char* name : kHealthNames) {
    HealthCheckResponse::ServingStatus state;
    const grpc::Status status = CheckHealth(*channel, name, &state);
    EXPECT_TRUE(status.ok()) << "\"" << name << "\": " << status.error_message();
    EXPECT_EQ(state, HealthCheckResponse::SERVING) << "\"" << name << "\"";
  }
  // The name clients use is the one the API declares.
  EXPECT_EQ(std::string(kHealthNames[1]), v1::Compressor::service_full_name());
  for (const char* unknown : {"ebzip.v1.Nothing", "ebzip.v1", "Compressor"}) {
    HealthCheckResponse::ServingStatus state;
    EXPECT_EQ(CheckHealth(*channel, unknown, &state).error_code(), grpc::StatusCode::NOT_FOUND)
        << unknown;
  }
}

TEST(Conventions, HealthTurnsNotServingForBothNamesWhenTheDrainStarts) {
  // The drain waits a second before it closes the port (server.cc), long
  // enough for probes to see NOT_SERVING.
  Ebzipd ebzipd({"--drain_seconds", "10"});
  auto channel = ebzipd.Channel();
  HealthCheckResponse::ServingStatus state;
  ASSERT_TRUE(CheckHealth(*channel, "", &state).ok());  // connected
  ebzipd.Signal(SIGTERM);
  std::set<std::string> not_serving;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (not_serving.size() < 2 && absl::Now() < deadline) {
    for (const char* name : kHealthNames) {
      if (CheckHealth(*channel, name, &state).ok() && state == HealthCheckResponse::NOT_SERVING) {
        not_serving.insert(name);
      }
    }
    absl::SleepFor(absl::Milliseconds(2));
  }
  EXPECT_EQ(not_serving.size(), 2u)
      << "seen NOT_SERVING for " << not_serving.size() << " of the 2 names; log:\n"
      << ebzipd.LogText();
  EXPECT_EQ(ebzipd.Wait(absl::Seconds(30)), 0);
}

// Reflection over version `version` (v1 or v1alpha): both have the same
// messages, so v1's classes read either. One stream per question.
constexpr char kReflectionV1[] = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
constexpr char kReflectionV1Alpha[] =
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";

absl::StatusOr<ServerReflectionResponse> Ask(const std::shared_ptr<grpc::Channel>& channel,
                                             const char* method,
                                             const ServerReflectionRequest& request) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  // What a generated stub does, with the method's path chosen here.
  grpc::internal::RpcMethod rpc(method, grpc::internal::RpcMethod::BIDI_STREAMING, channel);
  std::unique_ptr<grpc::ClientReaderWriter<ServerReflectionRequest, ServerReflectionResponse>>
      stream(grpc::internal::ClientReaderWriterFactory<
             ServerReflectionRequest, ServerReflectionResponse>::Create(channel.get(), rpc,
                                                                        &context));
  ServerReflectionResponse response;
  const bool answered = stream->Write(request) && stream->WritesDone() && stream->Read(&response);
  for (ServerReflectionResponse extra; stream->Read(&extra);) {
  }
  const grpc::Status status = stream->Finish();
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  }
  if (!answered) return absl::InternalError("no answer");
  return response;
}

ServerReflectionRequest ListServices() {
  ServerReflectionRequest r;
  r.set_list_services("*");
  return r;
}

ServerReflectionRequest FileContaining(const std::string& symbol) {
  ServerReflectionRequest r;
  r.set_file_containing_symbol(symbol);
  return r;
}

// The file descriptors an answer carries, by file name.
std::map<std::string, google::protobuf::FileDescriptorProto> Files(
    const ServerReflectionResponse& response) {
  std::map<std::string, google::protobuf::FileDescriptorProto> files;
  for (const std::string& bytes : response.file_descriptor_response().file_descriptor_proto()) {
    google::protobuf::FileDescriptorProto file;
    EXPECT_TRUE(file.ParseFromString(bytes));
    files[file.name()] = file;
  }
  return files;
}

// The descriptor this test was compiled with, as reflection should send it.
google::protobuf::FileDescriptorProto Compiled(const google::protobuf::FileDescriptor* file) {
  google::protobuf::FileDescriptorProto proto;
  file->CopyTo(&proto);
  return proto;
}

TEST(Conventions, ReflectionV1AndV1AlphaListAndDescribeTheServices) {
  Ebzipd ebzipd({});
  auto channel = ebzipd.Channel();
  std::map<std::string, std::string> answers;  // per method, what each question got
  for (const char* method : {kReflectionV1, kReflectionV1Alpha}) {
    SCOPED_TRACE(method);
    auto list = Ask(channel, method, ListServices());
    ASSERT_TRUE(list.ok()) << list.status();
    ASSERT_TRUE(list->has_list_services_response()) << list->DebugString();
    std::set<std::string> services;
    for (const auto& s : list->list_services_response().service()) services.insert(s.name());
    for (const char* expected :
         {"ebzip.v1.Compressor", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
          "grpc.reflection.v1alpha.ServerReflection"}) {
      EXPECT_TRUE(services.count(expected)) << expected << " not listed";
    }
    EXPECT_EQ(list->original_request().list_services(), "*");

    // The API's file, byte for byte what the client was compiled with, by
    // service, by method and by file name.
    const auto api = Compiled(v1::CompressRequest::descriptor()->file());
    for (const std::string& symbol :
         {std::string("ebzip.v1.Compressor"), std::string("ebzip.v1.Compressor.Decompress"),
          std::string("ebzip.v1.CompressRequest")}) {
      auto file = Ask(channel, method, FileContaining(symbol));
      ASSERT_TRUE(file.ok()) << file.status();
      auto files = Files(*file);
      ASSERT_TRUE(files.count(api.name())) << symbol << ": " << file->DebugString();
      EXPECT_EQ(files[api.name()].SerializeAsString(), api.SerializeAsString()) << symbol;
    }
    ServerReflectionRequest by_name;
    by_name.set_file_by_filename(api.name());
    auto file = Ask(channel, method, by_name);
    ASSERT_TRUE(file.ok()) << file.status();
    EXPECT_TRUE(Files(*file).count(api.name()));

    // The health service, which gRPC serves without descriptors of its own.
    auto health = Ask(channel, method, FileContaining("grpc.health.v1.Health"));
    ASSERT_TRUE(health.ok()) << health.status();
    const auto health_file = Compiled(grpc::health::v1::HealthCheckRequest::descriptor()->file());
    EXPECT_TRUE(Files(*health).count(health_file.name())) << health->DebugString();

    // What is not there is NOT_FOUND, in the answer (the stream stays OK).
    for (const char* missing : {"ebzip.v1.Nothing", "nothing.at.All"}) {
      auto none = Ask(channel, method, FileContaining(missing));
      ASSERT_TRUE(none.ok()) << none.status();
      EXPECT_EQ(none->error_response().error_code(), grpc::StatusCode::NOT_FOUND) << missing;
    }
    ServerReflectionRequest no_file;
    no_file.set_file_by_filename("no/such.proto");
    auto none = Ask(channel, method, no_file);
    ASSERT_TRUE(none.ok()) << none.status();
    EXPECT_EQ(none->error_response().error_code(), grpc::StatusCode::NOT_FOUND);

    // Extension numbers: the API declares none, so an empty list of the
    // named type; an unknown type is NOT_FOUND.
    ServerReflectionRequest extensions;
    extensions.set_all_extension_numbers_of_type("ebzip.v1.CompressRequest");
    auto numbers = Ask(channel, method, extensions);
    ASSERT_TRUE(numbers.ok()) << numbers.status();
    EXPECT_EQ(numbers->all_extension_numbers_response().base_type_name(),
              "ebzip.v1.CompressRequest");
    EXPECT_EQ(numbers->all_extension_numbers_response().extension_number_size(), 0);
    answers[method] = list->list_services_response().SerializeAsString();
  }
  // The two versions list the same services, in the same order.
  EXPECT_EQ(answers[kReflectionV1], answers[kReflectionV1Alpha]);
}

TEST(Conventions, ReflectionOffTurnsOffBothVersions) {
  Ebzipd ebzipd({"--reflection=false"});
  auto channel = ebzipd.Channel();
  for (const char* method : {kReflectionV1, kReflectionV1Alpha}) {
    auto list = Ask(channel, method, ListServices());
    EXPECT_EQ(list.status().code(), absl::StatusCode::kUnimplemented) << method;
  }
  // Health stays (probes need it).
  HealthCheckResponse::ServingStatus state;
  EXPECT_TRUE(CheckHealth(*channel, "ebzip.v1.Compressor", &state).ok());
  EXPECT_EQ(state, HealthCheckResponse::SERVING);
}

}  // namespace
}  // namespace ebzip::testing
