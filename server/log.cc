#include "server/log.h"

#include <atomic>
#include <cstdio>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpc/support/log.h"
#include "nlohmann/json.hpp"

namespace ebzip::server {
namespace {

std::atomic<bool> quiet{false};

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

void GrpcLog(gpr_log_func_args* args) {
  LogLevel level = LogLevel::kInfo;
  if (args->severity == GPR_LOG_SEVERITY_ERROR) level = LogLevel::kError;
  if (args->severity == GPR_LOG_SEVERITY_DEBUG) level = LogLevel::kDebug;
  LogEvent(level, args->message != nullptr ? args->message : "",
           {{"source", "grpc"},
            {"file", args->file != nullptr ? args->file : ""},
            {"line", args->line}});
}

}  // namespace

void SetLogQuiet(bool q) { quiet.store(q); }

void LogEvent(LogLevel level, const std::string& message, const LogFields& fields) {
  if (quiet.load() && (level == LogLevel::kInfo || level == LogLevel::kDebug)) return;
  // Insertion order: time, level and msg lead every line, as people read it.
  nlohmann::ordered_json line;
  line["time"] = absl::FormatTime(absl::RFC3339_full, absl::Now(), absl::UTCTimeZone());
  line["level"] = LevelName(level);
  line["msg"] = message;
  // A named pair, not a structured binding: clang 14 (the fuzz build's)
  // cannot capture those.
  for (const auto& field : fields) {
    const auto& key = field.first;
    std::visit([&line, &key](const auto& v) { line[key] = v; }, field.second.value());
  }
  // Strings may carry what a client sent (request ids, peers, messages):
  // bytes that are not UTF-8 become U+FFFD rather than an exception.
  std::string text = line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  text += '\n';
  std::fwrite(text.data(), 1, text.size(), stderr);
}

void RouteGrpcLogs() { gpr_set_log_function(&GrpcLog); }

}  // namespace ebzip::server
