// Structured logs: one JSON object per line on stderr, so log collectors
// (Kubernetes, journald, Loki) can index fields without parsing prose.
#ifndef EBZIP_SERVER_LOG_H_
#define EBZIP_SERVER_LOG_H_

#include <string>
#include <utility>
#include <vector>

namespace ebzip::server {

enum class LogLevel { kInfo, kWarning, kError };

using LogFields = std::vector<std::pair<std::string, std::string>>;

void LogEvent(LogLevel level, const std::string& message, const LogFields& fields = {});
// Off by default in tests that make thousands of calls.
void SetLogQuiet(bool quiet);

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_LOG_H_
