#include "codec/region_plan.h"

#include <algorithm>

namespace ebzip {

absl::StatusOr<WholeFramesPlan> PlanWholeFrames(const ArchiveInfo& info, const Hyperslab& r) {
  if (absl::Status s = CheckHyperslab(r, info.header.shape); !s.ok()) return s;
  WholeFramesPlan plan;
  const std::vector<uint64_t> frames = FramesOf(info, r);
  if (frames.empty()) return plan;
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

}  // namespace ebzip
