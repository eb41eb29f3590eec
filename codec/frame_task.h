// One frame of an array, compressed or decoded without the rest of its
// archive (FORMAT.md §2: frames are independent). A service that streams a
// large array compresses each frame as soon as its rows arrive and sends its
// bytes between the file header and the frame index that ArchiveWriter
// writes; it decodes each frame of a streamed archive as soon as it arrives.
// The frames are byte-identical to those of the whole array's archive,
// whoever compressed them (a CPU thread, any GPU).
#ifndef EBZIP_CODEC_FRAME_TASK_H_
#define EBZIP_CODEC_FRAME_TASK_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codec/archive.h"
#include "codec/format.h"

namespace ebzip {

// Frame `index` of an array as a compression of its own: `spec` is the
// frame's rows, `options` the array's with room for all of them in one
// frame, `first_row` where they start in the array. Compressing the rows
// under these options gives one frame whose bytes are the array's frame
// once its header says `first_row`: gpu::CompressTask takes a FrameTask as
// it is, and CompressFrame below is the CPU codec's.
struct FrameTask {
  ArraySpec spec;
  CompressOptions options;
  uint64_t first_row = 0;
};

// Frame `index` of `plan`, the plan of `options` for an array.
// FAILED_PRECONDITION for a relative bound without its range
// (CompressOptions::range): the bound depends on every frame's values.
absl::StatusOr<FrameTask> FrameTaskOf(const ArchivePlan& plan, const CompressOptions& options,
                                      uint64_t index);

// The CPU codec on a FrameTask: the frame's bytes (`data` holds
// task.spec.num_bytes()), or CANCELLED soon after *cancel is set.
// FAILED_PRECONDITION for a relative bound without its range, as above.
absl::StatusOr<std::vector<uint8_t>> CompressFrame(const FrameTask& task,
                                                   absl::Span<const uint8_t> data,
                                                   const std::atomic<bool>* cancel = nullptr);

// The other way: `frame`, frame `index` of an archive whose file header is
// `whole`, as a one-frame archive over the frame's own bytes (as
// codec/region_plan.h's parts are): DecompressInto and
// gpu::DecompressBatch decode it to the frame's rows. DATA_LOSS when the
// frame's header does not belong at `index` of `whole` or disagrees with
// the frame's size.
absl::StatusOr<ArchiveInfo> FramePart(const format::FileHeader& whole, uint64_t index,
                                      absl::Span<const uint8_t> frame);

}  // namespace ebzip

#endif  // EBZIP_CODEC_FRAME_TASK_H_
