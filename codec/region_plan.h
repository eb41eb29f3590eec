// A region as whole frames, for a decoder that takes whole frames and cannot
// skip inside one (the GPU codec): the frames the region meets, gathered
// into an archive of their own, and where the region's values lie in their
// decoded rows.
#ifndef EBZIP_CODEC_REGION_PLAN_H_
#define EBZIP_CODEC_REGION_PLAN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "codec/archive.h"
#include "codec/region.h"

namespace ebzip {

struct WholeFramesPlan {
  // The frames FramesOf names, packed: frame k of `part` is rows
  // [k * frame_rows, ...) of its array, and its index offset counts from
  // `bytes_begin`. Decoding `part` (DecompressInto, gpu::DecompressBatch)
  // over archive bytes [bytes_begin, bytes_end) gives those frames' rows one
  // after another. Frames the region skips (a step along dimension 0 longer
  // than a frame) lie inside the byte range but are not decoded.
  ArchiveInfo part;
  uint64_t bytes_begin = 0;
  uint64_t bytes_end = 0;

  // One per frame of `part`: the region's rows in that frame as a
  // hyperslab of part's array, and the element of the region's output (its
  // C order) where they begin. Gathering every piece fills the output.
  struct Piece {
    Hyperslab rows;
    uint64_t out_element = 0;
  };
  std::vector<Piece> pieces;
};

// The plan for `region` (checked against the archive's shape:
// INVALID_ARGUMENT as CheckHyperslab says). An empty region gives a plan of
// no frames and no pieces.
absl::StatusOr<WholeFramesPlan> PlanWholeFrames(const ArchiveInfo& info, const Hyperslab& region);

// The same frames cut into at most `max_groups` (>= 1) plans of consecutive
// frames met, as even as whole frames allow, so that one group's bytes can
// go up while another decodes. Pieces keep their places in the region's
// output; none for an empty region.
absl::StatusOr<std::vector<WholeFramesPlan>> PlanFrameGroups(const ArchiveInfo& info,
                                                             const Hyperslab& region,
                                                             size_t max_groups);

// The bounding box of a plan's pieces (in order) in its part's array:
// every piece's rows lie inside it. What a decoder that can skip inside
// frames is told it wants (gpu::DecompressTask::wanted).
Hyperslab PiecesBox(absl::Span<const WholeFramesPlan::Piece> pieces);

}  // namespace ebzip

#endif  // EBZIP_CODEC_REGION_PLAN_H_
