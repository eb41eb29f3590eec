// Every limit a request can run into, by the name the metric
// ebzip_limit_hits_total{limit="..."} and docs/operations.md ("Limits and
// abuse") give it.
#ifndef EBZIP_SERVER_LIMITS_H_
#define EBZIP_SERVER_LIMITS_H_

#include <array>
#include <cstdint>

namespace ebzip::server {

enum class Limit {
  kQueuedBytes,   // --max_queued_bytes: the budget all requests share
  kRequestBytes,  // --max_request_bytes: an array or archive held whole
  kOutputBytes,   // --max_output_bytes: what one request may produce
  kRatio,         // --max_ratio: array bytes per archive byte
  kIdleTimeout,   // --idle_timeout_seconds: a call waiting on its client
  kCalls,         // --max_calls: calls in progress at once
  kOptions,       // option limits: frame size, frames per array, chunk sizes
};
inline constexpr std::array<Limit, 7> kAllLimits = {
    Limit::kQueuedBytes, Limit::kRequestBytes, Limit::kOutputBytes, Limit::kRatio,
    Limit::kIdleTimeout, Limit::kCalls,        Limit::kOptions};

inline const char* LimitName(Limit l) {
  switch (l) {
    case Limit::kQueuedBytes:
      return "queued_bytes";
    case Limit::kRequestBytes:
      return "request_bytes";
    case Limit::kOutputBytes:
      return "output_bytes";
    case Limit::kRatio:
      return "ratio";
    case Limit::kIdleTimeout:
      return "idle_timeout";
    case Limit::kCalls:
      return "calls";
    case Limit::kOptions:
      return "options";
  }
  return "unknown";
}

// Options that would multiply the work or the archive of a request beyond
// what its bytes justify (a frame, a Huffman chunk and a gap-array
// subsequence each cost a fixed overhead; a frame also rebuilds a code over
// the whole alphabet). Smaller values are refused with INVALID_ARGUMENT; the
// smallest frame is --min_frame_elements.
inline constexpr uint32_t kMinChunkSymbols = 1024;
inline constexpr uint32_t kMinSubsequenceBits = 256;
// Frames of one array, either way: a call keeps 16 bytes per frame of its
// index (1 MiB at most), and each frame is a work.
inline constexpr uint64_t kMaxFrames = uint64_t{1} << 16;

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_LIMITS_H_
