// A request's job as the scheduler and backends see it: what to do, the bytes
// to do it on, and where the result goes. Shared (std::shared_ptr) between
// the call that made it and the scheduler, so whichever lets go last frees
// the buffers, and a cancelled call never leaves memory behind.
#ifndef EBZIP_SERVER_WORK_H_
#define EBZIP_SERVER_WORK_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "codec/archive.h"
#include "codec/frame_task.h"
#include "codec/region.h"
#include "codec/types.h"
#include "server/admission.h"
#include "server/host_block_pool.h"

namespace ebzip::server {

enum class Method { kCompress, kDecompress };
inline const char* MethodName(Method m) {
  return m == Method::kCompress ? "compress" : "decompress";
}

struct Work {
  Method method = Method::kCompress;
  std::string request_id;
  int priority = 0;
  absl::Time enqueued;
  absl::Time deadline = absl::InfiniteFuture();

  // Compress: the array and its options; `input` holds spec.num_bytes().
  // Decompress: `input` is the archive and `info` its parsed headers.
  // A small array may be received into `input_block` (the GPU backend's
  // page-locked memory) instead of `input`; input_bytes() is whichever.
  ArraySpec spec;
  CompressOptions options;
  std::vector<uint8_t> input;
  HostBlock input_block;
  std::optional<ArchiveInfo> info;
  // Compress of one frame of a streamed array (codec/frame_task.h): spec and
  // options are the FrameTask's, this its first row, and the output is the
  // frame's bytes alone. (A decompression of one frame needs nothing more:
  // its `info` is the frame's FramePart.)
  std::optional<uint64_t> frame_first_row;
  FrameTask frame_task() const { return {spec, options, frame_first_row.value_or(0)}; }
  absl::Span<const uint8_t> input_bytes() const {
    return input_block ? input_block.bytes() : absl::Span<const uint8_t>(input);
  }
  // Decompress of part of the archive (server/region_call.h): only the
  // region's values, in its C order; with header_only an empty region, and
  // the reply is the header alone.
  std::optional<Hyperslab> region;
  bool header_only = false;

  // Host bytes this work holds against the budget: its input as it arrived,
  // then (once queued) the codec's working memory, then its output
  // (cpu_codec.h says how each is taken).
  Reservation reservation;

  // Written by the backend before `on_done`.
  absl::Status status;
  std::vector<uint8_t> output;  // the archive (or frame), or the array
  HostBlock output_block;       // or the array, in the GPU backend's pool (SetArray)
  double abs_bound = 0;
  uint64_t outliers = 0;
  uint64_t verbatim = 0;
  uint64_t fill_runs = 0;
  uint64_t frames = 0;
  std::string device;  // where it ran: "cpu", "gpu:0"
  absl::Duration queue_time;
  absl::Duration compute_time;

  // Set when the call goes away; backends may stop early.
  std::atomic<bool> cancelled{false};
  // Called exactly once, from a scheduler thread, when the work is finished
  // (status says how).
  std::function<void()> on_done;

  // Record a result: the input is freed and the reservation moved to the
  // output. SetArchive also fills the summary from the frame headers, SetFrame
  // (a frame work's result) from the frame's header.
  void SetArchive(std::vector<uint8_t> archive);
  void SetFrame(std::vector<uint8_t> frame);
  void SetArray(std::vector<uint8_t> array);
  void SetArray(HostBlock array);
  bool has_output() const { return !output.empty() || output_block; }

  // The bytes a batch is measured in: the array's size either way.
  uint64_t array_bytes() const {
    return method == Method::kCompress ? spec.num_bytes() : info->spec().num_bytes();
  }
  DType dtype() const { return method == Method::kCompress ? spec.dtype : info->header.dtype; }
};

// Appends bytes of a request. Through pointers of the vector's own element
// type the library copies with memmove; a string's iterators (char, not
// uint8_t) made it a loop over bytes, 12 % of ebzipd's CPU time under a load
// of 256 KiB requests.
inline void AppendBytes(absl::Span<const uint8_t> from, std::vector<uint8_t>* to) {
  to->insert(to->end(), from.begin(), from.end());
}

// AppendBytes for a buffer whose memory the budget holds: `held` grows
// before the buffer does, by what is allocated rather than what is filled
// (capacity grows geometrically, never past `most`, and a reallocation's
// old and new buffers are both held while it copies). RESOURCE_EXHAUSTED,
// appending nothing, when the budget cannot take it.
absl::Status AppendHeld(absl::Span<const uint8_t> from, uint64_t most, std::vector<uint8_t>* to,
                        Reservation* held);

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_WORK_H_
