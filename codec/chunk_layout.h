// Where each chunk of the bitstream starts and how long it is: the hybrid
// chunk index (FORMAT.md §Chunk index) and the gap-array offsets derived
// from it.
#ifndef EBZIP_CODEC_CHUNK_LAYOUT_H_
#define EBZIP_CODEC_CHUNK_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace ebzip {

struct ChunkLayout {
  std::vector<uint64_t> start_word;  // first 32-bit word of each chunk
  std::vector<uint32_t> bits;        // exact bit length of each chunk
  std::vector<uint64_t> gap_offset;  // first gap-array entry of each chunk
  uint64_t total_words = 0;
  uint64_t total_gap_entries = 0;

  // Builds starts and gap offsets from bit lengths.
  static ChunkLayout FromBits(std::vector<uint32_t> bits, uint32_t subsequence_bits);
};

inline uint64_t WordsForBits(uint64_t bits) { return (bits + 31) / 32; }

// The chunk-index section: one u64 word offset per group, then u32 lengths.
void AppendChunkIndex(const ChunkLayout& layout, uint32_t chunk_group, std::vector<uint8_t>* out);
// The same bytes written at `out`, which has room for ChunkIndexBytes.
void WriteChunkIndex(const ChunkLayout& layout, uint32_t chunk_group, uint8_t* out);
uint64_t ChunkIndexBytes(uint64_t num_chunks, uint32_t chunk_group);

// Parses and cross-checks a chunk index: group offsets must match the sum of
// lengths, chunks must fit max_chunk_bits, and the totals must match the
// bitstream and gap-array sizes. DATA_LOSS otherwise.
absl::StatusOr<ChunkLayout> ParseChunkIndex(absl::Span<const uint8_t> bytes, uint64_t num_chunks,
                                            uint32_t chunk_group, uint32_t subsequence_bits,
                                            uint64_t max_chunk_bits, uint64_t bitstream_words);

}  // namespace ebzip

#endif  // EBZIP_CODEC_CHUNK_LAYOUT_H_
