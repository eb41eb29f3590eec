#include "codec/region.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <memory>
#include <new>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "codec/cancel.h"
#include "codec/region_frame.h"

namespace ebzip {
namespace {

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("region: ", what));
}

// A non-negative decimal integer, the whole of `text`.
bool ParseIndex(absl::string_view text, uint64_t* value) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && p == end;
}

// Copies the region's elements of one row (dimensions 1 ..) from `src` (a
// whole row of the array) to `dst`, in the region's C order.
void GatherRow(const uint8_t* src, uint8_t* dst, const Hyperslab& r,
               absl::Span<const uint64_t> shape, size_t elem) {
  const size_t ndim = shape.size();
  if (ndim == 1) {
    std::memcpy(dst, src, elem);
    return;
  }
  // Element strides of the array along each dimension.
  std::vector<uint64_t> stride(ndim, 1);
  for (size_t d = ndim - 1; d-- > 1;) stride[d] = stride[d + 1] * shape[d + 1];
  const size_t last = ndim - 1;
  std::vector<uint64_t> index(ndim, 0);  // over dimensions 1 .. last - 1
  const uint64_t inner = r.count[last];
  for (;;) {
    uint64_t at = 0;
    for (size_t d = 1; d < last; ++d) at += (r.start[d] + index[d] * r.step[d]) * stride[d];
    at += r.start[last];
    if (r.step[last] == 1) {
      std::memcpy(dst, src + at * elem, inner * elem);
      dst += inner * elem;
    } else {
      for (uint64_t i = 0; i < inner; ++i, dst += elem) {
        std::memcpy(dst, src + (at + i * r.step[last]) * elem, elem);
      }
    }
    // The next run: dimensions last - 1 down to 1, odometer style.
    size_t d = last;
    for (;;) {
      if (--d == 0) return;
      if (++index[d] < r.count[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace

uint64_t Hyperslab::NumElements() const {
  uint64_t n = 1;
  for (uint64_t c : count) n *= c;
  return n;
}

std::string Hyperslab::ToString() const {
  std::vector<std::string> items;
  for (size_t d = 0; d < start.size(); ++d) {
    const uint64_t stop = count[d] == 0 ? start[d] : start[d] + (count[d] - 1) * step[d] + 1;
    items.push_back(step[d] == 1 ? absl::StrCat(start[d], ":", stop)
                                 : absl::StrCat(start[d], ":", stop, ":", step[d]));
  }
  return absl::StrJoin(items, ",");
}

Hyperslab WholeArray(absl::Span<const uint64_t> shape) {
  Hyperslab h;
  h.start.assign(shape.size(), 0);
  h.count.assign(shape.begin(), shape.end());
  h.step.assign(shape.size(), 1);
  return h;
}

absl::Status CheckHyperslab(const Hyperslab& r, absl::Span<const uint64_t> shape) {
  const size_t ndim = shape.size();
  if (r.start.size() != ndim || r.count.size() != ndim || r.step.size() != ndim) {
    return Invalid(absl::StrCat("has ", r.start.size(), " dimensions, the array ", ndim));
  }
  for (size_t d = 0; d < ndim; ++d) {
    if (r.step[d] == 0) return Invalid(absl::StrCat("step 0 along dimension ", d));
    if (r.start[d] > shape[d]) {
      return Invalid(absl::StrCat("start ", r.start[d], " past dimension ", d, "'s extent ",
                                  shape[d]));
    }
    // The last index, start + (count - 1) * step, inside the extent; in
    // divisions, so that nothing overflows.
    if (r.count[d] > 0 &&
        (r.start[d] == shape[d] || (r.count[d] - 1) > (shape[d] - 1 - r.start[d]) / r.step[d])) {
      return Invalid(absl::StrCat("dimension ", d, " runs past its extent ", shape[d]));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Hyperslab> ParseHyperslab(absl::string_view text,
                                         absl::Span<const uint64_t> shape) {
  const std::vector<absl::string_view> items = absl::StrSplit(text, ',');
  if (items.size() != shape.size()) {
    return Invalid(absl::StrCat("\"", text, "\" has ", items.size(), " items; the array has ",
                                shape.size(), " dimensions"));
  }
  Hyperslab h;
  for (size_t d = 0; d < shape.size(); ++d) {
    const std::vector<absl::string_view> parts = absl::StrSplit(items[d], ':');
    uint64_t start = 0, stop = shape[d], step = 1;
    auto bad = [&](absl::string_view why) {
      return Invalid(absl::StrCat("item ", d, " \"", items[d], "\": ", why));
    };
    if (parts.size() == 1) {
      if (!ParseIndex(parts[0], &start)) return bad("not start:stop[:step] or an index");
      if (start >= shape[d]) return bad(absl::StrCat("index past the extent ", shape[d]));
      stop = start + 1;
    } else if (parts.size() <= 3) {
      if (!parts[0].empty() && !ParseIndex(parts[0], &start)) return bad("start is not an index");
      if (!parts[1].empty() && !ParseIndex(parts[1], &stop)) return bad("stop is not an index");
      if (parts.size() == 3 && !parts[2].empty() && !ParseIndex(parts[2], &step)) {
        return bad("step is not a positive integer");
      }
      if (step == 0) return bad("step 0");
      if (stop > shape[d]) return bad(absl::StrCat("stop past the extent ", shape[d]));
      if (start > stop) return bad("start after stop");
    } else {
      return bad("more than start:stop:step");
    }
    h.start.push_back(start);
    h.count.push_back(stop == start ? 0 : (stop - start - 1) / step + 1);
    h.step.push_back(step);
  }
  if (absl::Status s = CheckHyperslab(h, shape); !s.ok()) return s;
  return h;
}

std::vector<uint64_t> FramesOf(const ArchiveInfo& info, const Hyperslab& r) {
  std::vector<uint64_t> frames;
  if (r.NumElements() == 0) return frames;
  const uint64_t frame_rows = info.header.frame_rows;
  for (uint64_t i = 0; i < r.count[0];) {
    const uint64_t row = r.start[0] + i * r.step[0];
    const uint64_t f = row / frame_rows;
    frames.push_back(f);
    // The first selected row past this frame.
    const uint64_t next_row = (f + 1) * frame_rows;
    i = (next_row - r.start[0] + r.step[0] - 1) / r.step[0];
  }
  return frames;
}

absl::Status DecompressRegion(const ArchiveInfo& info, absl::Span<const uint8_t> archive,
                              const Hyperslab& r, DecoderKind decoder, absl::Span<uint8_t> out,
                              const std::atomic<bool>* cancel, RegionFrames policy) {
  constexpr absl::string_view kWhat = "region decompression";
  const ArraySpec spec = info.spec();
  if (absl::Status s = CheckHyperslab(r, spec.shape); !s.ok()) return s;
  const size_t elem = DTypeSize(spec.dtype);
  if (out.size() != r.NumElements() * elem) {
    return absl::InvalidArgumentError(
        absl::StrCat("region: output holds ", out.size(), " bytes, the region ",
                     r.NumElements() * elem));
  }
  const std::vector<uint64_t> frames = FramesOf(info, r);
  if (frames.empty()) return absl::OkStatus();
  const uint64_t row_elements = spec.num_elements() / spec.shape[0];
  const uint64_t out_row_bytes = r.NumElements() / r.count[0] * elem;
  // One frame at a time (DecodeFrame runs its stages in parallel), so the
  // memory is one frame's rows whatever the region. Left uninitialized: a
  // part of a frame writes, and the system maps, only the pages it needs.
  std::unique_ptr<uint8_t[]> rows(new (std::nothrow)
                                      uint8_t[info.header.frame_rows * row_elements * elem]);
  if (!rows) return absl::ResourceExhaustedError("region: cannot allocate a frame's rows");
  RegionScratch scratch;
  const size_t ndim = spec.shape.size();
  // The region's box in every frame but along dimension 0.
  std::vector<uint64_t> lo(ndim), hi(ndim);
  uint64_t box_row = 1;
  for (size_t d = 1; d < ndim; ++d) {
    lo[d] = r.start[d];
    hi[d] = r.start[d] + (r.count[d] - 1) * r.step[d] + 1;
    box_row *= hi[d] - lo[d];
  }
  for (uint64_t f : frames) {
    if (Cancelled(cancel)) return CancelledStatus(kWhat);
    const uint64_t first_row = f * info.header.frame_rows;
    const uint64_t end_row = first_row + info.FrameRows(f);
    // The region's first and last rows in this frame.
    const uint64_t i_first =
        first_row <= r.start[0] ? 0 : (first_row - r.start[0] + r.step[0] - 1) / r.step[0];
    const uint64_t i_last = std::min(r.count[0] - 1, (end_row - 1 - r.start[0]) / r.step[0]);
    lo[0] = r.start[0] + i_first * r.step[0] - first_row;
    hi[0] = r.start[0] + i_last * r.step[0] + 1 - first_row;
    const bool part = policy == RegionFrames::kPart ||
                      (policy == RegionFrames::kAuto &&
                       2 * (hi[0] - lo[0]) * box_row <= info.FrameRows(f) * row_elements);
    absl::Status s;
    if (part) {
      const format::FrameIndexEntry& e = info.frames[f];
      s = DecodeFrameRegion(archive.subspan(e.offset, e.size), info.frame_headers[f], lo, hi,
                            rows.get(), &scratch, cancel);
    } else {
      s = DecompressFrame(info, archive, f, decoder, rows.get(), cancel);
    }
    if (!s.ok()) return s;
    // The region's rows in this frame: i with first_row <= start + i*step < end_row.
    uint64_t i = first_row <= r.start[0] ? 0 : (first_row - r.start[0] + r.step[0] - 1) / r.step[0];
    for (; i < r.count[0]; ++i) {
      const uint64_t row = r.start[0] + i * r.step[0];
      if (row >= end_row) break;
      GatherRow(rows.get() + (row - first_row) * row_elements * elem,
                out.data() + i * out_row_bytes, r, spec.shape, elem);
    }
  }
  if (Cancelled(cancel)) return CancelledStatus(kWhat);
  return absl::OkStatus();
}

}  // namespace ebzip
