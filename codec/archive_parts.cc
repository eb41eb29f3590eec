#include "codec/archive_parts.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "codec/format.h"
#include "codec/quantize_point.h"

namespace ebzip {
namespace {

absl::Status PartError(uint64_t frame, absl::string_view what) {
  return absl::InternalError(
      absl::StrCat("the part archive at frame ", frame, " does not follow the plan: ", what));
}

bool SameFill(const std::optional<double>& a, const std::optional<double>& b) {
  return a.has_value() == b.has_value() && (!a || ToBits(*a) == ToBits(*b));
}

}  // namespace

std::vector<FrameRange> SplitFrames(uint64_t frame_count, uint64_t parts) {
  std::vector<FrameRange> out;
  parts = std::min(parts, frame_count);
  if (parts == 0) return out;
  uint64_t first = 0;
  for (uint64_t i = 0; i < parts; ++i) {
    // The first (frame_count % parts) ranges take one frame more.
    const uint64_t count = frame_count / parts + (i < frame_count % parts ? 1 : 0);
    out.push_back({first, count});
    first += count;
  }
  return out;
}

ArraySpec PartSpec(const ArchivePlan& plan, FrameRange range) {
  ArraySpec spec{plan.header.dtype, plan.header.shape};
  const uint64_t first_row = range.first * plan.header.frame_rows;
  spec.shape[0] =
      std::min(range.count * plan.header.frame_rows, plan.header.shape[0] - first_row);
  return spec;
}

uint64_t PartDataOffset(const ArchivePlan& plan, FrameRange range) {
  return plan.FrameDataOffset(range.first);
}

CompressOptions PartOptions(const CompressOptions& options, const ValueRange& range) {
  CompressOptions part = options;
  if (part.mode == BoundMode::kRel) part.range = range;
  return part;
}

std::vector<uint8_t> ArchiveAssembler::Begin() {
  next_frame_ = 0;
  return writer_.Begin();
}

absl::Status ArchiveAssembler::AddPart(absl::Span<const uint8_t> part_archive,
                                       std::vector<uint8_t>* out) {
  auto info = ReadArchiveInfo(part_archive);
  if (!info.ok()) return PartError(next_frame_, info.status().message());
  const format::FileHeader& want = plan_.header;
  const format::FileHeader& got = info->header;
  if (got.version != want.version || got.dtype != want.dtype ||
      got.shape.size() != want.shape.size() ||
      !std::equal(got.shape.begin() + 1, got.shape.end(), want.shape.begin() + 1)) {
    return PartError(next_frame_, "another version, dtype or row shape");
  }
  if (got.frame_count > want.frame_count - next_frame_) {
    return PartError(next_frame_, absl::StrCat(got.frame_count, " frames, but only ",
                                               want.frame_count - next_frame_, " are left"));
  }
  if (got.bound_mode != want.bound_mode || got.bound_value != want.bound_value ||
      got.abs_bound != want.abs_bound || !SameFill(got.fill_value, want.fill_value)) {
    return PartError(next_frame_, absl::StrCat("bound ", got.abs_bound, " instead of ",
                                               want.abs_bound, ", or another fill value"));
  }
  for (uint64_t k = 0; k < got.frame_count; ++k) {
    const uint64_t index = next_frame_ + k;
    format::FrameHeader header = info->frame_headers[k];
    const FrameParams params = plan_.ParamsForFrame(index);
    if (header.shape[0] != params.shape[0]) {
      return PartError(index, absl::StrCat(header.shape[0], " rows instead of ", params.shape[0]));
    }
    header.first_row = params.first_row;
    const format::FrameIndexEntry& entry = info->frames[k];
    format::AppendFrameHeader(header, out);
    out->insert(out->end(), part_archive.begin() + entry.offset + format::kFrameHeaderSize,
                part_archive.begin() + entry.offset + entry.size);
    writer_.AddFrame(entry.size);
  }
  next_frame_ += got.frame_count;
  return absl::OkStatus();
}

absl::Status ArchiveAssembler::Finish(std::vector<uint8_t>* out) {
  if (next_frame_ != plan_.frame_count()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the parts held ", next_frame_, " frames of the ", plan_.frame_count(), " planned"));
  }
  writer_.Finish(out);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint8_t>> PartArchive(const ArchiveInfo& info,
                                                 absl::Span<const uint8_t> archive,
                                                 FrameRange range) {
  return PartArchiveFrom(info, range, [archive](uint64_t offset, absl::Span<uint8_t> out) {
    if (offset > archive.size() || out.size() > archive.size() - offset) {
      return format::CorruptArchive("truncated archive");
    }
    if (!out.empty()) std::memcpy(out.data(), archive.data() + offset, out.size());
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<uint8_t>> PartArchiveFrom(const ArchiveInfo& info, FrameRange range,
                                                     ArchiveReader read) {
  const format::FileHeader& whole = info.header;
  if (range.count == 0 || range.first > whole.frame_count ||
      range.count > whole.frame_count - range.first) {
    return absl::InvalidArgumentError(absl::StrCat("frames ", range.first, "+", range.count,
                                                   " of an archive of ", whole.frame_count));
  }
  format::FileHeader part = whole;
  const uint64_t first_row = range.first * whole.frame_rows;
  part.shape[0] = std::min(range.count * whole.frame_rows, whole.shape[0] - first_row);
  part.frame_rows = std::min(whole.frame_rows, part.shape[0]);
  part.frame_count = range.count;
  part.metadata_bytes = 0;
  uint64_t bytes = format::kFileHeaderSize + format::FrameIndexSize(range.count) +
                   format::kTrailerSize;
  for (uint64_t k = 0; k < range.count; ++k) bytes += info.frames[range.first + k].size;
  std::vector<uint8_t> out;
  try {
    out.reserve(bytes);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", bytes, " bytes"));
  }
  format::AppendFileHeader(part, &out);
  std::vector<format::FrameIndexEntry> entries;
  entries.reserve(range.count);
  for (uint64_t k = 0; k < range.count; ++k) {
    const format::FrameIndexEntry& e = info.frames[range.first + k];
    format::FrameHeader header = info.frame_headers[range.first + k];
    header.first_row -= first_row;
    entries.push_back({out.size(), e.size});
    format::AppendFrameHeader(header, &out);
    // The sections as they are: their CRCs still hold.
    const uint64_t at = out.size();
    out.resize(at + e.size - format::kFrameHeaderSize);
    if (absl::Status s = read(e.offset + format::kFrameHeaderSize,
                              absl::MakeSpan(out).subspan(at, e.size - format::kFrameHeaderSize));
        !s.ok()) {
      return s;
    }
  }
  const uint64_t index_offset = out.size();
  format::AppendFrameIndex(entries, &out);
  format::AppendTrailer(index_offset, &out);
  return out;
}

}  // namespace ebzip
