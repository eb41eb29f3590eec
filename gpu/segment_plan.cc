#include "gpu/segment_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "codec/format.h"

namespace ebzip::gpu {

Geometry MakeGeometry(absl::Span<const uint64_t> shape, absl::Span<const uint16_t> block) {
  Geometry g{};
  const int pad = kDims - static_cast<int>(shape.size());
  for (int d = 0; d < kDims; ++d) {
    g.dims[d] = d < pad ? 1 : shape[d - pad];
    g.block[d] = d < pad ? 1 : std::max<uint32_t>(1, block[d - pad]);
    // A block longer than the frame is the frame: same prediction, and the
    // shared-memory limit then applies to what is really held.
    g.block[d] = static_cast<uint32_t>(std::min<uint64_t>(g.block[d], g.dims[d]));
  }
  g.n = 1;
  g.num_blocks = 1;
  for (int d = 0; d < kDims; ++d) {
    g.grid[d] = (g.dims[d] + g.block[d] - 1) / g.block[d];
    g.n *= g.dims[d];
    g.num_blocks *= g.grid[d];
  }
  return g;
}

void SetCodingParams(const FrameParams& p, Segment* seg) {
  seg->radius = p.radius;
  seg->chunk_symbols = p.chunk_symbols;
  seg->subsequence_bits = p.subsequence_bits;
  seg->chunk_group = p.chunk_group;
  seg->gap_array = p.gap_array;
  seg->max_code_length = static_cast<uint32_t>(p.max_code_length);
}

uint32_t HighestStage(const FrameParams& p) {
  const uint8_t stages = AllowedStages(p);
  for (uint32_t id = format::kLosslessRunValues; id > format::kLosslessHuffman; --id) {
    if (stages >> id & 1) return id;
  }
  return format::kLosslessHuffman;
}

absl::Status CheckGpuLimits(const Geometry& geo, uint32_t chunk_symbols, int max_code_length) {
  uint64_t volume = 1;
  for (int d = 0; d < kDims; ++d) volume *= geo.block[d];
  if (volume > kMaxBlockVolume) {
    return absl::UnimplementedError(absl::StrCat("the GPU codec takes Lorenzo blocks of up to ",
                                                 kMaxBlockVolume, " elements, not ", volume));
  }
  if (chunk_symbols > kMaxGpuChunkSymbols) {
    return absl::UnimplementedError(absl::StrCat("the GPU codec takes chunks of up to ",
                                                 kMaxGpuChunkSymbols, " symbols"));
  }
  if (max_code_length < 1 || max_code_length > format::kMaxCodeLength) {
    return absl::InvalidArgumentError("maximum code length out of range");
  }
  return absl::OkStatus();
}

void PlaceSegment(Segment* seg, BatchTotals* t) {
  const Geometry& g = seg->geo;
  uint64_t volume = 1;
  for (int d = 0; d < kDims; ++d) volume *= g.block[d];
  const uint64_t by_size = kTileElements / volume;
  const uint64_t by_count = (g.num_blocks + kMinTilesPerSegment - 1) / kMinTilesPerSegment;
  seg->blocks_per_tile = std::max<uint64_t>(1, std::min(by_size, by_count));
  seg->tiles = (g.num_blocks + seg->blocks_per_tile - 1) / seg->blocks_per_tile;
  seg->tile_base = t->tiles;
  t->tiles += seg->tiles;

  if (seg->positions == 0) seg->positions = g.n;
  seg->num_chunks = (seg->positions + seg->chunk_symbols - 1) / seg->chunk_symbols;
  seg->chunk_base = t->chunks;
  seg->slice_chunk_base = seg->chunk_base;
  t->chunks += seg->num_chunks;

  const uint64_t words = (g.n + 31) / 32;
  seg->mask_tiles = (words + kMaskTileWords - 1) / kMaskTileWords;
  seg->mask_tile_base = t->mask_tiles;
  seg->mask_base = t->mask_words;
  t->mask_tiles += seg->mask_tiles;
  t->mask_words += seg->mask_tiles * kMaskTileWords;

  seg->symbol_base = t->symbols;
  t->symbols += g.n;
  t->max_chunk_symbols = std::max(t->max_chunk_symbols, seg->chunk_symbols);
  t->max_code_length = std::max(t->max_code_length, seg->max_code_length);
}

}  // namespace ebzip::gpu
