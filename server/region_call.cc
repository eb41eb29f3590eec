#include "server/region_call.h"

#include <algorithm>
#include <new>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/archive_parts.h"
#include "codec/memory_bounds.h"
#include "server/archive_root.h"
#include "server/cpu_codec.h"
#include "server/limits.h"
#include "server/request_parsing.h"

namespace ebzip::server {
namespace {

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("options.", what));
}

}  // namespace

absl::StatusOr<DecompressChoice> DecompressChoice::Parse(const v1::DecompressOptions& o,
                                                         const CallLimits& limits) {
  DecompressChoice c;
  c.header_only_ = o.header_only();
  if (o.has_region()) {
    if (c.header_only_) return Invalid("header_only takes no region");
    const v1::Region& r = o.region();
    const int n = r.start_size();
    if (n < 1 || n > 4 || r.count_size() != n || (r.step_size() != 0 && r.step_size() != n)) {
      return Invalid(
          absl::StrCat("region: start, count (and step, unless empty) need one entry "
                       "per dimension, 1 to 4; got ",
                       r.start_size(), ", ", r.count_size(), " and ", r.step_size()));
    }
    Hyperslab h;
    h.start.assign(r.start().begin(), r.start().end());
    h.count.assign(r.count().begin(), r.count().end());
    if (r.step_size() == 0) {
      h.step.assign(n, 1);
    } else {
      h.step.assign(r.step().begin(), r.step().end());
    }
    for (int d = 0; d < n; ++d) {
      if (h.step[d] == 0) return Invalid(absl::StrCat("region: step 0 along dimension ", d));
    }
    c.region_ = std::move(h);
  }
  if (!o.archive_path().empty()) {
    if (limits.archive_root == nullptr) {
      return absl::FailedPreconditionError(
          "options.archive_path: this server reads no archives of its own (it runs without "
          "--archive_root); upload the archive instead");
    }
    if (absl::Status s = ArchiveRoot::CheckPath(o.archive_path()); !s.ok()) return s;
    c.path_ = o.archive_path();
    c.root_ = limits.archive_root.get();
  }
  return c;
}

absl::Status DecompressChoice::ReadArchive(CallEnv& env, Work& work) {
  auto file = root_->OpenFile(path_);
  if (!file.ok()) return file.status();
  if (file->size < format::kFileHeaderSize) {
    return format::CorruptArchive(
        absl::StrCat("the file holds ", file->size, " bytes, less than a file header"));
  }
  std::vector<uint8_t> head(format::kFileHeaderSize);
  if (absl::Status s = ReadAt(file->fd.get(), 0, absl::MakeSpan(head)); !s.ok()) return s;
  auto header = format::ParseFileHeader(head);
  if (!header.ok()) return header.status();
  const bool part = partial();
  // A part is priced at what is read of it, known once the index is.
  if (absl::Status s = CheckFileHeader(env, *header, part ? 0 : file->size); !s.ok()) return s;
  std::vector<uint8_t> bytes;
  const int fd = file->fd.get();
  auto read = [fd](uint64_t offset, absl::Span<uint8_t> out) { return ReadAt(fd, offset, out); };
  if (part) {
    // The index and the frame headers, then the frames the region meets
    // (the first frame for the header alone, or an empty region) as an
    // archive of their own (codec/archive_parts.h); Apply moves the region
    // to its rows.
    auto info = ReadArchiveInfoFrom(file->size, read);
    if (!info.ok()) return info.status();
    const std::vector<uint64_t> frames =
        region_ ? FramesOf(*info, *region_) : std::vector<uint64_t>();
    const FrameRange range = frames.empty() ? FrameRange{0, 1}
                                            : FrameRange{frames.front(),
                                                         frames.back() - frames.front() + 1};
    uint64_t size = format::kFileHeaderSize + format::FrameIndexSize(range.count) +
                    format::kTrailerSize;
    for (uint64_t k = 0; k < range.count; ++k) size += info->frames[range.first + k].size;
    if (absl::Status s = env.CheckSize(Limit::kRequestBytes, size, "the frames read hold");
        !s.ok()) {
      return s;
    }
    if (absl::Status s = work.reservation.Grow(size); !s.ok()) {
      return env.Refuse(Limit::kQueuedBytes, s);
    }
    auto archive = PartArchiveFrom(*info, range, read);
    if (!archive.ok()) return archive.status();
    whole_ = info->spec();
    first_row_ = range.first * info->header.frame_rows;
    work.input = *std::move(archive);
    return absl::OkStatus();
  }
  if (absl::Status s = env.CheckSize(Limit::kRequestBytes, file->size, "the archive holds");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = work.reservation.Grow(file->size); !s.ok()) {
    return env.Refuse(Limit::kQueuedBytes, s);
  }
  try {
    work.input.resize(file->size);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", file->size, " bytes for the archive"));
  }
  return ReadAt(fd, 0, absl::MakeSpan(work.input));
}

absl::Status DecompressChoice::CheckFileHeader(CallEnv& env, const format::FileHeader& h,
                                               uint64_t archive_bytes) const {
  if (h.frame_count > kMaxFrames) {
    return env.Refuse(Limit::kOptions, absl::ResourceExhaustedError(absl::StrCat(
                                           "the archive has ", h.frame_count,
                                           " frames, more than this server's ", kMaxFrames)));
  }
  const uint64_t full = ArraySpec{h.dtype, h.shape}.num_bytes();
  uint64_t out = full;
  if (header_only_) {
    out = 0;
  } else if (region_) {
    if (absl::Status s = CheckHyperslab(*region_, h.shape); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("options.", s.message(), " (the array is ", ShapeToString(h.shape), ")"));
    }
    out = SaturatingMul(region_->NumElements(), DTypeSize(h.dtype));
  }
  if (absl::Status s = env.CheckSize(Limit::kOutputBytes, out,
                                     region_ ? "the region holds" : "the archive decodes to");
      !s.ok()) {
    return s;
  }
  const uint64_t frame_out = full / h.shape[0] * h.frame_rows;
  uint64_t cost = archive_bytes;
  if (region_) {
    format::FileHeader one = h;
    one.shape[0] = h.frame_rows;
    one.frame_count = 1;
    cost = SaturatingAdd(cost, SaturatingAdd(out, DecompressHeapBytes(one, frame_out, 1)));
  } else if (!header_only_) {
    const uint64_t at_once = std::min<uint64_t>(kFramesAtOnce, h.frame_count);
    cost = SaturatingAdd(cost, DecompressHeapBytes(h, std::max(archive_bytes, frame_out), at_once));
  }
  return env.CheckCost(cost, "this request");
}

absl::Status DecompressChoice::Apply(Work& work) const {
  const ArraySpec spec = work.info->spec();
  if (header_only_) {
    Hyperslab none = WholeArray(spec.shape);
    std::fill(none.count.begin(), none.count.end(), 0);
    work.region = std::move(none);
    work.header_only = true;
  } else if (region_) {
    Hyperslab r = *region_;
    // An empty region decodes nothing (CheckFileHeader has checked it
    // against the whole array); any other moves to the rows of the part
    // read (by 0 for an upload).
    if (r.NumElements() > 0) {
      r.start[0] -= first_row_;
      if (absl::Status s = CheckHyperslab(r, spec.shape); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("options.", s.message()));
      }
    }
    work.region = std::move(r);
  }
  return absl::OkStatus();
}

void DecompressChoice::Describe(const Work& work, Metrics& metrics,
                                v1::DecompressHeader* header) const {
  const ArraySpec whole = whole_.value_or(work.info->spec());
  *header->mutable_archive_array() = ToProto(whole);
  *header->mutable_array() = ToProto(whole);
  if (work.region && !work.header_only) {
    *header->mutable_array() = ToProto(ArraySpec{whole.dtype, work.region->Shape()});
    const uint64_t sent = work.region->NumElements() * DTypeSize(whole.dtype);
    metrics.RegionSent(whole.num_bytes(), sent);
  }
}

uint64_t RegionWorkingBytes(const Work& work) {
  const ArchiveInfo& info = *work.info;
  const Hyperslab& r = *work.region;
  const uint64_t out = r.NumElements() * DTypeSize(info.header.dtype);
  const std::vector<uint64_t> frames = FramesOf(info, r);
  if (frames.empty()) return out;
  uint64_t working = 0;
  for (uint64_t f : frames) {
    working = std::max(working, DecodeFrameWorkingBytes(info.frame_headers[f]));
  }
  const uint64_t rows = info.spec().num_bytes() / info.header.shape[0] * info.header.frame_rows;
  return SaturatingAdd(out, SaturatingAdd(rows, working));
}

void DecompressRegionOnCpu(Work& w) {
  const Hyperslab& r = *w.region;
  if (r.NumElements() == 0) {  // the header alone, or an empty region
    w.SetArray(std::vector<uint8_t>());
    return;
  }
  std::vector<uint8_t> out(r.NumElements() * DTypeSize(w.info->header.dtype));  // reserved
  if (absl::Status s = DecompressRegion(*w.info, w.input, r, DecoderKind::kAuto,
                                        absl::MakeSpan(out), &w.cancelled);
      !s.ok()) {
    w.status = std::move(s);
    return;
  }
  w.SetArray(std::move(out));
}

}  // namespace ebzip::server
