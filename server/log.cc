#include "server/log.h"

#include <atomic>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace ebzip::server {
namespace {

std::atomic<bool> quiet{false};

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

// A JSON string literal (RFC 8259 §7).
std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      absl::StrAppend(&out, "\\u00", absl::Hex(c, absl::kZeroPad2));
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace

void SetLogQuiet(bool q) { quiet.store(q); }

void LogEvent(LogLevel level, const std::string& message, const LogFields& fields) {
  if (quiet.load() && level == LogLevel::kInfo) return;
  std::string line = absl::StrCat(
      "{\"time\":", Quoted(absl::FormatTime(absl::RFC3339_full, absl::Now(), absl::UTCTimeZone())),
      ",\"level\":", Quoted(LevelName(level)), ",\"msg\":", Quoted(message));
  for (const auto& [key, value] : fields) absl::StrAppend(&line, ",", Quoted(key), ":", Quoted(value));
  line += "}\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace ebzip::server
