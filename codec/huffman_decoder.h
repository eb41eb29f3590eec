// Three decoders for the chunked Huffman bitstream, all giving the same
// symbols (docs/design.md §1): chunk-parallel (each chunk decoded start to end),
// gap-array (each subsequence decoded from the codeword boundary the gap
// array gives, then counts are scanned and symbols written at their
// offsets, as Rivera et al. do on the GPU), and self-synchronizing (the same
// without a gap array: subsequences decode speculatively from their first
// bit and are corrected until every start is a true codeword boundary, with
// an early exit as soon as a correction meets the speculative path,
// Weißenberger & Schmidt). On the CPU these are the reference the GPU
// decoders are tested against; every inconsistency is DATA_LOSS.
#ifndef EBZIP_CODEC_HUFFMAN_DECODER_H_
#define EBZIP_CODEC_HUFFMAN_DECODER_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "codec/chunk_layout.h"
#include "codec/run_tokens.h"

namespace ebzip {

enum class DecoderKind { kAuto, kChunkParallel, kGapArray, kSelfSync };
const char* DecoderKindName(DecoderKind kind);

// Table-driven canonical decoding: codes up to kLookupBits long resolve with
// one lookup, longer ones by comparing against the first code of each length.
class HuffmanTable {
 public:
  static constexpr int kLookupBits = 12;

  // `lengths` must satisfy Kraft's inequality (ParseCodeLengths checks it).
  explicit HuffmanTable(absl::Span<const uint8_t> lengths);

  // Decodes the codeword at the top of `window` (the next 32 bits of the
  // stream, MSB first). Returns its length, or 0 when no codeword matches.
  int Decode(uint32_t window, uint16_t* symbol) const {
    const uint32_t e = lookup_[window >> (32 - kLookupBits)];
    if (e != 0) {
      *symbol = static_cast<uint16_t>(e >> 8);
      return static_cast<int>(e & 0xFF);
    }
    return DecodeLong(window, symbol);
  }

 private:
  int DecodeLong(uint32_t window, uint16_t* symbol) const;

  std::vector<uint32_t> lookup_;  // (symbol << 8) | length, 0 for "longer"
  int max_length_ = 0;
  std::vector<uint32_t> first_code_;  // per length
  std::vector<uint32_t> count_;       // per length
  std::vector<uint32_t> offset_;      // per length, into sorted_
  std::vector<uint16_t> sorted_;      // symbols by (length, symbol)
};

struct BitstreamView {
  absl::Span<const uint32_t> words;
  const ChunkLayout* layout;
  absl::Span<const uint8_t> gaps;  // empty when the frame has no gap array
  uint32_t chunk_symbols;
  uint32_t subsequence_bits;
  RunTokens runs;  // run tokens expand into runs of the zero residual
};

// Decodes out.size() symbols (positions: run tokens are expanded). kAuto picks the chunk-parallel decoder, the
// fastest on a CPU. kGapArray needs gap entries. CANCELLED once *cancel is
// set (codec/cancel.h): chunks not yet begun are skipped.
absl::Status HuffmanDecode(DecoderKind kind, const HuffmanTable& table, const BitstreamView& in,
                           absl::Span<uint16_t> out, const std::atomic<bool>* cancel = nullptr);

// The first `count` symbol positions of one chunk.
struct ChunkPrefix {
  uint64_t chunk = 0;
  uint64_t count = 0;
};

// What a region needs of a frame's bitstream (codec/region_frame.h): for each
// listed chunk c, its first `count` positions (at most the chunk's), written
// at out[c * chunk_symbols ...]; out.size() is the frame's positions and the
// rest of `out` is left as it was. Chunks are decoded start to end with the
// chunk-parallel decoder, listed chunks in parallel. A chunk decoded whole
// is checked as HuffmanDecode checks it; a prefix, for valid tokens that
// stay inside the chunk's bits and cover at least `count` positions.
absl::Status HuffmanDecodePrefixes(const HuffmanTable& table, const BitstreamView& in,
                                   absl::Span<const ChunkPrefix> prefixes, absl::Span<uint16_t> out,
                                   const std::atomic<bool>* cancel = nullptr);

}  // namespace ebzip

#endif  // EBZIP_CODEC_HUFFMAN_DECODER_H_
