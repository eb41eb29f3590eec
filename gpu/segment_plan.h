// Host side of the segment table: a frame's 4-D geometry, the GPU kernels'
// limits, and where each frame's share of the batch-wide arrays begins.
#ifndef EBZIP_GPU_SEGMENT_PLAN_H_
#define EBZIP_GPU_SEGMENT_PLAN_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "codec/frame_codec.h"
#include "gpu/segment.h"

namespace ebzip::gpu {

Geometry MakeGeometry(absl::Span<const uint64_t> shape, absl::Span<const uint16_t> block);

// The entropy stage's parameters of a frame the compressor codes: radius,
// chunks, subsequences, gap array, code length limit.
void SetCodingParams(const FrameParams& p, Segment* seg);

// The highest lossless stage (FORMAT.md §15.2's id) a frame of `p` may use
// (AllowedStages): Segment::highest_lossless, up to which runs are counted
// and token histograms made before the compressor picks the stage.
uint32_t HighestStage(const FrameParams& p);

// UNIMPLEMENTED for what the kernels cannot stage in shared memory.
absl::Status CheckGpuLimits(const Geometry& geo, uint32_t chunk_symbols, int max_code_length);

// Running totals of a batch while its segments are placed.
struct BatchTotals {
  uint64_t symbols = 0;
  uint64_t mask_words = 0;
  uint64_t mask_tiles = 0;
  uint64_t chunks = 0;
  uint64_t tiles = 0;
  uint32_t max_chunk_symbols = 1;
  uint32_t max_code_length = 1;
};

// Given seg->geo and its coding parameters, fills in the tile, chunk, mask
// and symbol fields and advances `totals`. Chunks cover seg->positions (set
// to n when 0); symbols get room for n.
void PlaceSegment(Segment* seg, BatchTotals* totals);

}  // namespace ebzip::gpu

#endif  // EBZIP_GPU_SEGMENT_PLAN_H_
