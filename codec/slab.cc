#include "codec/slab.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "codec/format.h"

namespace ebzip {

absl::StatusOr<CompressOptions> SlabOptions(const CompressOptions& options) {
  if (options.mode != BoundMode::kAbs && !options.range) {
    return absl::FailedPreconditionError(
        "a relative bound depends on the whole array's range: slabs cannot be compressed apart");
  }
  CompressOptions slab = options;
  // As many rows as the format allows per frame: the slab is one frame
  // (its rows never exceed the array's frame_rows, which obey that limit).
  slab.frame_elements = format::kMaxFrameElements;
  return slab;
}

ArraySpec SlabSpec(const ArchivePlan& plan, uint64_t index) {
  ArraySpec spec{plan.header.dtype, plan.header.shape};
  spec.shape[0] = plan.FrameDataBytes(index) / plan.row_bytes;
  return spec;
}

absl::StatusOr<std::vector<uint8_t>> FrameFromSlabArchive(absl::Span<const uint8_t> slab_archive,
                                                          uint64_t first_row) {
  auto info = ReadArchiveInfo(slab_archive);
  if (!info.ok()) return info.status();
  if (info->frames.size() != 1) {
    return format::CorruptArchive(
        absl::StrCat("a slab archive holds ", info->frames.size(), " frames, not 1"));
  }
  const format::FrameIndexEntry& entry = info->frames[0];
  format::FrameHeader header = info->frame_headers[0];
  header.first_row = first_row;
  std::vector<uint8_t> frame;
  frame.reserve(entry.size);
  format::AppendFrameHeader(header, &frame);
  const size_t header_bytes = frame.size();
  frame.insert(frame.end(), slab_archive.begin() + entry.offset + header_bytes,
               slab_archive.begin() + entry.offset + entry.size);
  return frame;
}

absl::StatusOr<std::vector<uint8_t>> SlabArchiveOfFrame(const format::FileHeader& whole,
                                                        uint64_t index,
                                                        absl::Span<const uint8_t> frame) {
  auto header = format::ParseFrameHeader(frame);
  if (!header.ok()) return header.status();
  const uint64_t first_row = index * whole.frame_rows;
  const uint64_t rows = std::min(whole.frame_rows, whole.shape[0] - first_row);
  if (header->first_row != first_row || header->shape[0] != rows) {
    return format::CorruptArchive(absl::StrCat("frame ", index, " says rows ", header->first_row,
                                               "+", header->shape[0], ", not ", first_row, "+",
                                               rows));
  }
  if (header->frame_size() != frame.size()) {
    return format::CorruptArchive(absl::StrCat("frame ", index, " is ", frame.size(),
                                               " bytes, its header says ", header->frame_size()));
  }
  format::FileHeader slab = whole;
  slab.shape[0] = rows;
  slab.frame_rows = rows;
  slab.frame_count = 1;
  header->first_row = 0;
  std::vector<uint8_t> out;
  format::AppendFileHeader(slab, &out);
  const uint64_t frame_offset = out.size();
  format::AppendFrameHeader(*header, &out);
  out.insert(out.end(), frame.begin() + format::kFrameHeaderSize, frame.end());
  const uint64_t index_offset = out.size();
  format::AppendFrameIndex(std::vector<format::FrameIndexEntry>{{frame_offset, frame.size()}},
                           &out);
  format::AppendTrailer(index_offset, &out);
  return out;
}

}  // namespace ebzip
