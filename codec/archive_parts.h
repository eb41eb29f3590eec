// An archive cut into parts along its frames, and put back together. Frames
// are independent (FORMAT.md §2), so a client may send the frames of one
// large array over several streams or connections at once:
// - compressing, each part is the array's rows of a range of frames,
//   compressed as an array of its own with the whole array's options and
//   range (CompressOptions::range); ArchiveAssembler takes the part archives
//   in order and writes the archive the whole array would have given, byte
//   for byte;
// - decompressing, PartArchive makes a valid archive of a range of frames
//   whose array is exactly those frames' rows.
#ifndef EBZIP_CODEC_ARCHIVE_PARTS_H_
#define EBZIP_CODEC_ARCHIVE_PARTS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codec/archive.h"

namespace ebzip {

struct FrameRange {
  uint64_t first = 0;
  uint64_t count = 0;
};

// `parts` contiguous ranges covering frames [0, frame_count), as equal as
// whole frames allow (fewer when there are fewer frames). None for no frames.
std::vector<FrameRange> SplitFrames(uint64_t frame_count, uint64_t parts);

// The array of a part: the rows of `range`'s frames.
ArraySpec PartSpec(const ArchivePlan& plan, FrameRange range);
// Where the part's rows lie in the array's bytes.
uint64_t PartDataOffset(const ArchivePlan& plan, FrameRange range);

// Options that compress a part of an array planned with `options` into the
// frames the whole array gets: the same options, with the whole array's
// range for a relative bound.
CompressOptions PartOptions(const CompressOptions& options, const ValueRange& range);

// Builds the whole array's archive from its parts' archives, given in
// order: Begin(), then AddPart for each part, then Finish(). A part archive
// that is not the frames this plan expects there (another bound, frame
// size, shape or version) is INTERNAL: whoever compressed it did not follow
// the plan.
class ArchiveAssembler {
 public:
  explicit ArchiveAssembler(const ArchivePlan& plan) : plan_(plan), writer_(plan_) {}
  // The file header (and metadata block).
  std::vector<uint8_t> Begin();
  // The part's frames, moved to their rows of the array, appended to *out.
  absl::Status AddPart(absl::Span<const uint8_t> part_archive, std::vector<uint8_t>* out);
  // The frame index and trailer, appended to *out; FAILED_PRECONDITION
  // unless every frame was added.
  absl::Status Finish(std::vector<uint8_t>* out);

  uint64_t frames_added() const { return next_frame_; }

 private:
  const ArchivePlan plan_;
  ArchiveWriter writer_;
  uint64_t next_frame_ = 0;
};

// A valid archive of frames `range` of `archive` (validated by
// ReadArchiveInfo into `info`): its array is those frames' rows, its frames
// moved to start at row 0; no metadata block. Decompressing it gives bytes
// [FrameDataOffset(first), +rows * row bytes) of the whole array.
absl::StatusOr<std::vector<uint8_t>> PartArchive(const ArchiveInfo& info,
                                                 absl::Span<const uint8_t> archive,
                                                 FrameRange range);
// The same for an archive read through `read` (ReadArchiveInfoFrom gave
// `info`): only the range's frames are read.
absl::StatusOr<std::vector<uint8_t>> PartArchiveFrom(const ArchiveInfo& info, FrameRange range,
                                                     ArchiveReader read);

}  // namespace ebzip

#endif  // EBZIP_CODEC_ARCHIVE_PARTS_H_
