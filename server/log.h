// Structured logs: one JSON object per line on stderr, so log collectors
// (Kubernetes, journald, Loki) can index fields without parsing prose.
// Values keep their JSON types (numbers, booleans, strings), and gRPC's own
// log lines come out the same way once RouteGrpcLogs has run.
#ifndef EBZIP_SERVER_LOG_H_
#define EBZIP_SERVER_LOG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace ebzip::server {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

// A field's value: a JSON string, boolean, integer or number. A class rather
// than a bare variant so that every integer type converts without
// ambiguity and a string literal never turns into a boolean.
class LogValue {
 public:
  using Value = std::variant<std::string, bool, int64_t, uint64_t, double>;

  LogValue(const char* s) : value_(std::string(s)) {}       // NOLINT: implicit by design
  LogValue(std::string s) : value_(std::move(s)) {}         // NOLINT
  LogValue(std::string_view s) : value_(std::string(s)) {}  // NOLINT
  LogValue(bool b) : value_(b) {}                           // NOLINT
  LogValue(double d) : value_(d) {}                         // NOLINT
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  LogValue(T v)  // NOLINT
      : value_(std::is_signed_v<T> ? Value(static_cast<int64_t>(v))
                                   : Value(static_cast<uint64_t>(v))) {}

  const Value& value() const { return value_; }

 private:
  Value value_;
};

using LogFields = std::vector<std::pair<std::string, LogValue>>;

// Writes {"time":..., "level":..., "msg":..., fields...} as one line.
void LogEvent(LogLevel level, const std::string& message, const LogFields& fields = {});
// Off by default in tests that make thousands of calls.
void SetLogQuiet(bool quiet);
// gRPC's log lines (gpr_log: bind failures, TLS errors, its assertions) go
// through LogEvent with "source":"grpc" and their file and line; how many
// gRPC writes is still GRPC_VERBOSITY's (default: errors only).
void RouteGrpcLogs();

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_LOG_H_
