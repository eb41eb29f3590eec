// ebzipd's command line: the EBZIPD_* variables come from the flag registry
// (every flag docs/operations.md lists, none of Abseil's own), and the modes
// are parsed once into ServerOptions' enums with an error naming the flag.
#include "server/server_flags.h"

#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"

ABSL_FLAG(int, defined_elsewhere, 0, "A flag that is not ebzipd's");

namespace ebzip::server {
namespace {

// Sets flag `name` as the command line would.
void SetFlag(const std::string& name, const std::string& value) {
  absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
  ASSERT_NE(flag, nullptr) << name;
  std::string error;
  ASSERT_TRUE(flag->ParseFrom(value, &error)) << name << "=" << value << ": " << error;
}

TEST(ServerFlags, EveryDocumentedFlagHasItsVariableAndAbseilsHaveNone) {
  // docs/operations.md's flags: each may be given as EBZIPD_<FLAG>.
  const std::vector<std::string> documented = {
      "archive_root", "backend", "batching", "cpu_workers", "drain_seconds", "gpu_failure_policy",
      "gpu_host_pool_bytes", "gpu_memory_bytes", "gpu_pinned_bytes", "gpu_wait", "gpu_workers",
      "grpc_memory_bytes", "idle_timeout_seconds", "keepalive_seconds", "listen",
      "max_batch_bytes", "max_batch_requests", "max_calls", "max_concurrent_streams",
      "max_connection_age_seconds", "max_output_bytes", "max_queue_delay_us",
      "max_queued_bytes", "max_ratio", "max_request_bytes", "message_bytes", "metrics_listen",
      "min_frame_elements", "reflection", "stream_frames", "tls_cert", "tls_key", "token",
      "token_file"};
  EXPECT_EQ(ServerFlagNames(), documented);
  // Flags defined elsewhere (Abseil's --flagfile, --help, ... in ebzipd;
  // this file's here) are registered too, but are not ebzipd's to take from
  // the environment.
  ASSERT_NE(absl::FindCommandLineFlag("defined_elsewhere"), nullptr);
  std::map<std::string, std::string> env;
  for (const char* other : {"defined_elsewhere", "flagfile", "fromenv", "tryfromenv", "help"}) {
    env[EnvironmentName(other)] = "x";
  }
  const std::vector<std::string> names = ServerFlagNames();
  EXPECT_TRUE(FlagsFromEnvironment(names, [&](const char* var) -> const char* {
                auto it = env.find(var);
                return it == env.end() ? nullptr : it->second.c_str();
              }).empty());
}

TEST(ServerFlags, VariablesBecomeFlagsWithTheirValuesAsGiven) {
  EXPECT_EQ(EnvironmentName("gpu_wait"), "EBZIPD_GPU_WAIT");
  const std::map<std::string, std::string> env = {
      {"EBZIPD_GPU_WAIT", "spin"},
      {"EBZIPD_REFLECTION", "false"},
      {"EBZIPD_METRICS_LISTEN", ""},  // set but empty: turns /metrics off
      {"EBZIPD_TOKEN", "a b=c"},
      {"EBZIPD_NOT_A_FLAG", "1"},
      {"ebzipd_listen", "lower case is not the variable"},
  };
  auto getenv = [&](const char* var) -> const char* {
    auto it = env.find(var);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_EQ(FlagsFromEnvironment(ServerFlagNames(), getenv),
            (std::vector<std::string>{"--gpu_wait=spin", "--metrics_listen=", "--reflection=false",
                                      "--token=a b=c"}));
}

TEST(ServerFlags, DefaultsAreServerOptionsDefaults) {
  absl::FlagSaver saver;
  auto config = DaemonConfigFromFlags();
  ASSERT_TRUE(config.ok()) << config.status();
  const ServerOptions& o = config->server;
  const ServerOptions d;
  EXPECT_EQ(o.listen, d.listen);
  EXPECT_EQ(o.metrics_listen, d.metrics_listen);
  EXPECT_EQ(o.backend, BackendChoice::kAuto);
  EXPECT_EQ(o.max_request_bytes, d.max_request_bytes);
  EXPECT_EQ(o.max_queued_bytes, d.max_queued_bytes);
  EXPECT_EQ(o.max_output_bytes, d.max_output_bytes);
  EXPECT_EQ(o.max_ratio, d.max_ratio);
  EXPECT_EQ(o.max_calls, d.max_calls);
  EXPECT_EQ(o.min_frame_elements, d.min_frame_elements);
  EXPECT_EQ(o.idle_timeout, d.idle_timeout);
  EXPECT_EQ(o.grpc_memory_bytes, d.grpc_memory_bytes);
  EXPECT_EQ(o.max_concurrent_streams, d.max_concurrent_streams);
  EXPECT_EQ(o.keepalive, d.keepalive);
  EXPECT_EQ(o.reflection, d.reflection);
  EXPECT_EQ(o.cpu_workers, d.cpu_workers);
  EXPECT_EQ(o.gpu_memory_bytes, d.gpu_memory_bytes);
  EXPECT_EQ(o.gpu_pinned_bytes, d.gpu_pinned_bytes);
  EXPECT_EQ(o.gpu_host_pool_bytes, d.gpu_host_pool_bytes);
  EXPECT_EQ(o.gpu_workers, d.gpu_workers);
  EXPECT_EQ(o.gpu_failure_policy, GpuFailurePolicy::kRetry);
  EXPECT_EQ(o.gpu_wait, GpuWait::kYield);
  EXPECT_EQ(o.message_bytes, d.message_bytes);
  EXPECT_EQ(o.stream_frames, d.stream_frames);
  EXPECT_EQ(o.max_connection_age, d.max_connection_age);
  EXPECT_EQ(config->drain, absl::Seconds(30));
  EXPECT_TRUE(config->token_file.empty());
  EXPECT_TRUE(CheckLimits(o).ok());
}

TEST(ServerFlags, ModesAreParsedFromTheirNames) {
  struct Case {
    const char* flag;
    const char* value;
    std::function<bool(const ServerOptions&)> holds;
  };
  const Case cases[] = {
      {"backend", "gpu", [](const ServerOptions& o) { return o.backend == BackendChoice::kGpu; }},
      {"backend", "cpu", [](const ServerOptions& o) { return o.backend == BackendChoice::kCpu; }},
      {"backend", "auto", [](const ServerOptions& o) { return o.backend == BackendChoice::kAuto; }},
      {"gpu_wait", "block", [](const ServerOptions& o) { return o.gpu_wait == GpuWait::kBlock; }},
      {"gpu_wait", "spin", [](const ServerOptions& o) { return o.gpu_wait == GpuWait::kSpin; }},
      {"gpu_wait", "yield", [](const ServerOptions& o) { return o.gpu_wait == GpuWait::kYield; }},
      {"gpu_failure_policy", "fail",
       [](const ServerOptions& o) { return o.gpu_failure_policy == GpuFailurePolicy::kFail; }},
      {"gpu_failure_policy", "retry",
       [](const ServerOptions& o) { return o.gpu_failure_policy == GpuFailurePolicy::kRetry; }},
  };
  for (const Case& c : cases) {
    absl::FlagSaver saver;
    SetFlag(c.flag, c.value);
    auto config = DaemonConfigFromFlags();
    ASSERT_TRUE(config.ok()) << c.flag << "=" << c.value << ": " << config.status();
    EXPECT_TRUE(c.holds(config->server)) << c.flag << "=" << c.value;
  }
}

TEST(ServerFlags, AnUnknownModeIsRefusedNamingTheFlagAndItsValues) {
  struct Case {
    const char* flag;
    const char* value;
    const char* message;
  };
  const Case cases[] = {
      {"backend", "tpu", "--backend must be auto, gpu or cpu, not \"tpu\""},
      {"backend", "GPU", "--backend must be auto, gpu or cpu, not \"GPU\""},
      {"gpu_wait", "sometimes", "--gpu_wait must be yield, block or spin, not \"sometimes\""},
      {"gpu_wait", "", "--gpu_wait must be yield, block or spin, not \"\""},
      {"gpu_failure_policy", "ignore", "--gpu_failure_policy must be retry or fail, not \"ignore\""},
  };
  for (const Case& c : cases) {
    absl::FlagSaver saver;
    SetFlag(c.flag, c.value);
    auto config = DaemonConfigFromFlags();
    ASSERT_FALSE(config.ok()) << c.flag << "=" << c.value;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(config.status().message(), c.message);
  }
}

TEST(ServerFlags, LimitsOutOfRangeAreRefused) {
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"message_bytes", "0"},
           {"max_calls", "0"},
           {"max_ratio", "0.5"},
           {"max_ratio", "nan"},
           {"idle_timeout_seconds", "-1"},
           {"keepalive_seconds", "-1"},
           {"stream_frames", "0"},
       }) {
    absl::FlagSaver saver;
    SetFlag(flag, value);
    auto config = DaemonConfigFromFlags();
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(CheckLimits(config->server).code(), absl::StatusCode::kInvalidArgument)
        << flag << "=" << value;
  }
  // Off is not out of range.
  absl::FlagSaver saver;
  SetFlag("idle_timeout_seconds", "0");
  SetFlag("keepalive_seconds", "0");
  auto config = DaemonConfigFromFlags();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(CheckLimits(config->server).ok());
}

}  // namespace
}  // namespace ebzip::server
