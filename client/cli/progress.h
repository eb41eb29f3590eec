// A one-line progress bar on standard error, drawn only when it is a
// terminal and the job is large enough to be worth watching.
#ifndef EBZIP_CLIENT_CLI_PROGRESS_H_
#define EBZIP_CLIENT_CLI_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace ebzip::cli {

class Progress {
 public:
  Progress(std::string label, uint64_t total_bytes);
  ~Progress();  // clears the line
  void Advance(uint64_t bytes);

 private:
  void Draw();

  std::string label_;
  uint64_t total_;
  uint64_t done_ = 0;
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace ebzip::cli

#endif  // EBZIP_CLIENT_CLI_PROGRESS_H_
