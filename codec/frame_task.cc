#include "codec/frame_task.h"

#include "absl/strings/str_cat.h"
#include "codec/frame_codec.h"

namespace ebzip {

absl::StatusOr<FrameTask> FrameTaskOf(const ArchivePlan& plan, const CompressOptions& options,
                                      uint64_t index) {
  if (options.mode != BoundMode::kAbs && !options.range) {
    return absl::FailedPreconditionError(
        "a relative bound depends on the whole array's range: its frames cannot be compressed "
        "apart");
  }
  if (index >= plan.frame_count()) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame ", index, " of an array of ", plan.frame_count(), " frames"));
  }
  FrameTask task;
  task.spec = {plan.header.dtype, plan.header.shape};
  task.spec.shape[0] = plan.FrameDataBytes(index) / plan.row_bytes;
  task.first_row = index * plan.header.frame_rows;
  task.options = options;
  // As many rows as the format allows per frame: the task is one frame (its
  // rows never exceed the array's frame_rows, which obey that limit).
  task.options.frame_elements = format::kMaxFrameElements;
  // The metadata block belongs to the array's file header: a frame's bytes
  // depend on it only for the format version it may decide (and without it
  // the GPU codec takes the task).
  CompressOptions bare = task.options;
  bare.metadata.clear();
  if (ArchiveVersion(bare) == ArchiveVersion(task.options)) task.options.metadata.clear();
  return task;
}

absl::StatusOr<std::vector<uint8_t>> CompressFrame(const FrameTask& task,
                                                   absl::Span<const uint8_t> data,
                                                   const std::atomic<bool>* cancel) {
  if (absl::Status s = ValidateCompressOptions(task.spec, task.options); !s.ok()) return s;
  if (task.options.mode != BoundMode::kAbs && !task.options.range) {
    // The frame's own range would give it a bound of its own.
    return absl::FailedPreconditionError("a frame task with a relative bound needs its range");
  }
  if (data.size() != task.spec.num_bytes()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a frame of ", task.spec.num_bytes(), " bytes given ", data.size()));
  }
  auto plan = PlanArchive(task.spec, task.options,
                          ResolveBound(task.options, task.spec.dtype, RangeFor(task.spec, data, task.options)));
  if (!plan.ok()) return plan.status();
  if (plan->frame_count() != 1) {
    return absl::InvalidArgumentError("a frame task that plans more than one frame");
  }
  FrameParams params = plan->ParamsForFrame(0);
  params.first_row = task.first_row;
  std::vector<uint8_t> frame;
  if (absl::Status s = EncodeFrame(params, data.data(), &frame, cancel); !s.ok()) return s;
  return frame;
}

absl::StatusOr<ArchiveInfo> FramePart(const format::FileHeader& whole, uint64_t index,
                                      absl::Span<const uint8_t> frame) {
  if (frame.size() < format::kFrameHeaderSize || frame.size() % 8 != 0) {
    return format::CorruptArchive(
        absl::StrCat("frame ", index, " of ", frame.size(), " bytes cannot hold a frame"));
  }
  auto header = ParseFrameAt(whole, index, frame, frame.size());
  if (!header.ok()) return header.status();
  ArchiveInfo part;
  part.header = whole;
  part.header.shape[0] = header->shape[0];
  part.header.frame_rows = header->shape[0];
  part.header.frame_count = 1;
  part.header.metadata_bytes = 0;
  header->first_row = 0;
  part.frames.push_back({0, frame.size()});
  part.frame_headers.push_back(*header);
  return part;
}

}  // namespace ebzip
