// The entropy stage of a frame (FORMAT.md §5, §15.4): a canonical Huffman
// code over the frame's symbols, or over its tokens when runs of the zero
// residual are coded as run tokens (and, §15.4.1, as run-value tokens).
// Every code's size is exact from its histogram, so choosing among them
// costs no encoding.
#ifndef EBZIP_CODEC_ENTROPY_CODER_H_
#define EBZIP_CODEC_ENTROPY_CODER_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "codec/huffman_encoder.h"
#include "codec/run_tokens.h"

namespace ebzip {

// A code for one stage and what it would cost.
struct StageCode {
  RunTokens runs;
  std::vector<uint8_t> lengths;       // per symbol of the stage's alphabet
  std::vector<uint8_t> length_bytes;  // the code-length section
  uint64_t bits = 0;                  // payload, extra bits and the section, in bits
};

// The code of one stage over chunks of chunk_symbols positions.
StageCode PlainCode(absl::Span<const uint16_t> symbols, uint32_t radius, int max_code_length);
StageCode TokenCode(absl::Span<const uint16_t> symbols, const RunTokens& runs,
                    uint32_t chunk_symbols, int max_code_length);

// The code of the stage a frame uses (FORMAT.md §15.9) among `stages`, a
// set of lossless ids (bit i for id i, not empty): the one of fewest bits,
// the lower id on a tie. The codes come from one pass over the symbols
// (CountSymbols).
StageCode SmallerCode(absl::Span<const uint16_t> symbols, uint32_t radius, uint32_t chunk_symbols,
                      int max_code_length, uint8_t stages);

// Encodes the symbols with `code` (its chunks, gap array and bitstream).
EncodedSymbols EncodeWith(const StageCode& code, absl::Span<const uint16_t> symbols,
                          uint32_t chunk_symbols, uint32_t subsequence_bits, bool gap_array,
                          const std::atomic<bool>* cancel);

}  // namespace ebzip

#endif  // EBZIP_CODEC_ENTROPY_CODER_H_
