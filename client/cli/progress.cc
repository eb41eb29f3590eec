#include "client/cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace ebzip::cli {
namespace {
constexpr uint64_t kMinBytes = 64 << 20;
constexpr int kWidth = 30;
}  // namespace

Progress::Progress(std::string label, uint64_t total_bytes)
    : label_(std::move(label)),
      total_(total_bytes),
      enabled_(total_bytes >= kMinBytes && ::isatty(STDERR_FILENO)),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {
  if (enabled_) Draw();
}

Progress::~Progress() {
  if (enabled_) std::fprintf(stderr, "\r\033[K");
}

void Progress::Advance(uint64_t bytes) {
  done_ += bytes;
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ > std::chrono::milliseconds(100) || done_ >= total_) {
    last_draw_ = now;
    Draw();
  }
}

void Progress::Draw() {
  const double fraction = total_ ? static_cast<double>(done_) / static_cast<double>(total_) : 1;
  const int filled = static_cast<int>(fraction * kWidth);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = seconds > 0 ? static_cast<double>(done_) / seconds / 1e6 : 0;
  std::fprintf(stderr, "\r%s [%.*s%*s] %3.0f%% %7.1f MB/s", label_.c_str(), filled,
               "##############################", kWidth - filled, "", fraction * 100, rate);
  std::fflush(stderr);
}

}  // namespace ebzip::cli
