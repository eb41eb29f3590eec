#include "codec/entropy_coder.h"

#include "codec/huffman_code.h"

namespace ebzip {
namespace {

StageCode Finish(StageCode code, absl::Span<const uint32_t> histogram, uint64_t extra_bits,
                 int max_code_length) {
  code.lengths = BuildCodeLengths(histogram, max_code_length);
  code.length_bytes.reserve(MaxCodeLengthBytes(histogram.size()));
  AppendCodeLengths(code.lengths, &code.length_bytes);
  uint64_t bits = extra_bits + 8 * code.length_bytes.size();
  for (size_t s = 0; s < histogram.size(); ++s) bits += uint64_t{histogram[s]} * code.lengths[s];
  code.bits = bits;
  return code;
}

}  // namespace

StageCode PlainCode(absl::Span<const uint16_t> symbols, uint32_t radius, int max_code_length) {
  StageCode code;
  code.runs = {false, radius};
  return Finish(std::move(code), Histogram(symbols, 2 * radius), 0, max_code_length);
}

StageCode TokenCode(absl::Span<const uint16_t> symbols, const RunTokens& runs,
                    uint32_t chunk_symbols, int max_code_length) {
  StageCode code;
  code.runs = runs;
  const TokenStats stats = TokenHistogram(symbols, chunk_symbols, code.runs);
  return Finish(std::move(code), stats.histogram, stats.extra_bits, max_code_length);
}

StageCode SmallerCode(absl::Span<const uint16_t> symbols, uint32_t radius, uint32_t chunk_symbols,
                      int max_code_length, uint8_t stages) {
  if (stages == (1u << format::kLosslessHuffman)) {
    return PlainCode(symbols, radius, max_code_length);
  }
  const SymbolCounts counts = CountSymbols(symbols, chunk_symbols, radius);
  StageCode best;
  bool have = false;
  for (uint8_t id : {format::kLosslessHuffman, format::kLosslessZeroRuns,
                     format::kLosslessRunValues}) {
    if (!(stages >> id & 1)) continue;
    StageCode code;
    code.runs = RunTokens::ForStage(id, radius);
    if (id == format::kLosslessHuffman) {
      code = Finish(std::move(code), counts.histogram, 0, max_code_length);
    } else {
      const TokenStats tokens = counts.Tokens(radius, id == format::kLosslessRunValues);
      code = Finish(std::move(code), tokens.histogram, tokens.extra_bits, max_code_length);
    }
    if (!have || code.bits < best.bits) best = std::move(code);
    have = true;
  }
  return best;
}

EncodedSymbols EncodeWith(const StageCode& code, absl::Span<const uint16_t> symbols,
                          uint32_t chunk_symbols, uint32_t subsequence_bits, bool gap_array,
                          const std::atomic<bool>* cancel) {
  const std::vector<uint32_t> codes = CanonicalCodes(code.lengths);
  return HuffmanEncode(symbols, code.lengths, codes, chunk_symbols, subsequence_bits, gap_array,
                       cancel, code.runs);
}

}  // namespace ebzip
