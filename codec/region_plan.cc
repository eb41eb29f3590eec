#include "codec/region_plan.h"

#include <algorithm>

namespace ebzip {

namespace {

// The plan over `frames` (ascending, each met by the checked region `r`).
WholeFramesPlan PlanFrames(const ArchiveInfo& info, const Hyperslab& r,
                           absl::Span<const uint64_t> frames) {
  WholeFramesPlan plan;
  const uint64_t frame_rows = info.header.frame_rows;
  plan.bytes_begin = info.frames[frames.front()].offset;
  plan.bytes_end = info.frames[frames.back()].offset + info.frames[frames.back()].size;

  ArchiveInfo& part = plan.part;
  part.header = info.header;
  part.header.frame_count = frames.size();
  part.header.metadata_bytes = 0;
  // Every frame but the array's last has frame_rows rows, and only the last
  // of the list can be the array's last.
  part.header.shape[0] = (frames.size() - 1) * frame_rows + info.FrameRows(frames.back());
  const uint64_t region_row = r.NumElements() / r.count[0];  // elements of one row of the output
  for (size_t k = 0; k < frames.size(); ++k) {
    const uint64_t f = frames[k];
    format::FrameIndexEntry entry = info.frames[f];
    entry.offset -= plan.bytes_begin;
    part.frames.push_back(entry);
    format::FrameHeader header = info.frame_headers[f];
    header.first_row = k * frame_rows;
    part.frame_headers.push_back(header);

    // The region's rows in frame f: indices i_first .. i_last of dimension 0.
    const uint64_t first_row = f * frame_rows;
    const uint64_t end_row = first_row + info.FrameRows(f);
    const uint64_t i_first =
        first_row <= r.start[0] ? 0 : (first_row - r.start[0] + r.step[0] - 1) / r.step[0];
    const uint64_t i_last = std::min(r.count[0] - 1, (end_row - 1 - r.start[0]) / r.step[0]);
    WholeFramesPlan::Piece piece{r, i_first * region_row};
    piece.rows.start[0] = r.start[0] + i_first * r.step[0] - first_row + k * frame_rows;
    piece.rows.count[0] = i_last - i_first + 1;
    plan.pieces.push_back(std::move(piece));
  }
  return plan;
}

}  // namespace

absl::StatusOr<WholeFramesPlan> PlanWholeFrames(const ArchiveInfo& info, const Hyperslab& r) {
  if (absl::Status s = CheckHyperslab(r, info.header.shape); !s.ok()) return s;
  const std::vector<uint64_t> frames = FramesOf(info, r);
  if (frames.empty()) return WholeFramesPlan{};
  return PlanFrames(info, r, frames);
}

absl::StatusOr<std::vector<WholeFramesPlan>> PlanFrameGroups(const ArchiveInfo& info,
                                                             const Hyperslab& r,
                                                             size_t max_groups) {
  if (absl::Status s = CheckHyperslab(r, info.header.shape); !s.ok()) return s;
  const std::vector<uint64_t> frames = FramesOf(info, r);
  const size_t groups = std::min(std::max<size_t>(max_groups, 1), frames.size());
  std::vector<WholeFramesPlan> plans;
  for (size_t g = 0, first = 0; g < groups; ++g) {
    const size_t end = frames.size() * (g + 1) / groups;
    plans.push_back(PlanFrames(info, r, absl::MakeConstSpan(frames).subspan(first, end - first)));
    first = end;
  }
  return plans;
}

Hyperslab PiecesBox(absl::Span<const WholeFramesPlan::Piece> pieces) {
  if (pieces.empty()) return Hyperslab{};
  Hyperslab box = pieces.front().rows;
  const Hyperslab& last = pieces.back().rows;
  box.count[0] = last.start[0] + (last.count[0] - 1) * last.step[0] + 1 - box.start[0];
  box.step[0] = 1;
  return box;
}

}  // namespace ebzip
