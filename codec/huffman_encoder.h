// Chunked Huffman encoding: symbols are cut into chunks of a fixed count,
// each chunk starts on a 32-bit word, and (optionally) a gap array records
// for every subsequence of each chunk where its first token begins. With
// run tokens (codec/run_tokens.h) a chunk's zero runs become class tokens
// followed by extra bits.
#ifndef EBZIP_CODEC_HUFFMAN_ENCODER_H_
#define EBZIP_CODEC_HUFFMAN_ENCODER_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "codec/chunk_layout.h"
#include "codec/run_tokens.h"

namespace ebzip {

struct EncodedSymbols {
  ChunkLayout layout;
  std::vector<uint32_t> words;  // the bitstream, MSB-first within each word
  std::vector<uint8_t> gaps;    // empty unless requested
};

// Every token must have a non-zero length. Once *cancel is set
// (codec/cancel.h) the chunks not yet begun are left unwritten: the caller
// checks the flag and discards the result.
EncodedSymbols HuffmanEncode(absl::Span<const uint16_t> symbols, absl::Span<const uint8_t> lengths,
                             absl::Span<const uint32_t> codes, uint32_t chunk_symbols,
                             uint32_t subsequence_bits, bool with_gaps,
                             const std::atomic<bool>* cancel = nullptr,
                             const RunTokens& runs = {});

// 256-bin-per-thread histogram of 16-bit symbols over the whole alphabet.
std::vector<uint32_t> Histogram(absl::Span<const uint16_t> symbols, uint32_t alphabet);

}  // namespace ebzip

#endif  // EBZIP_CODEC_HUFFMAN_ENCODER_H_
