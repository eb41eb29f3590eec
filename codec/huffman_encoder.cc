#include "codec/huffman_encoder.h"

#include <algorithm>
#include <mutex>

#include "codec/cancel.h"
#include "codec/parallel.h"

namespace ebzip {
namespace {

constexpr uint64_t kHistogramTask = 1 << 20;

// Packs codewords MSB-first into consecutive 32-bit words.
class BitWriter {
 public:
  explicit BitWriter(uint32_t* out) : out_(out) {}
  void Put(uint32_t code, int length) {
    acc_ |= static_cast<uint64_t>(code) << (64 - length - fill_);
    fill_ += length;
    if (fill_ >= 32) {
      *out_++ = static_cast<uint32_t>(acc_ >> 32);
      acc_ <<= 32;
      fill_ -= 32;
    }
  }
  void Flush() {
    if (fill_ > 0) *out_++ = static_cast<uint32_t>(acc_ >> 32);
    acc_ = 0;
    fill_ = 0;
  }

 private:
  uint32_t* out_;
  uint64_t acc_ = 0;
  int fill_ = 0;
};

}  // namespace

std::vector<uint32_t> Histogram(absl::Span<const uint16_t> symbols, uint32_t alphabet) {
  std::vector<uint32_t> total(alphabet, 0);
  std::mutex mu;
  const uint64_t tasks = (symbols.size() + kHistogramTask - 1) / kHistogramTask;
  ParallelFor(tasks, [&](uint64_t t) {
    std::vector<uint32_t> local(alphabet, 0);
    const uint64_t end = std::min<uint64_t>(symbols.size(), (t + 1) * kHistogramTask);
    for (uint64_t i = t * kHistogramTask; i < end; ++i) ++local[symbols[i]];
    std::lock_guard<std::mutex> lock(mu);
    for (uint32_t s = 0; s < alphabet; ++s) total[s] += local[s];
  });
  return total;
}

EncodedSymbols HuffmanEncode(absl::Span<const uint16_t> symbols, absl::Span<const uint8_t> lengths,
                             absl::Span<const uint32_t> codes, uint32_t chunk_symbols,
                             uint32_t subsequence_bits, bool with_gaps,
                             const std::atomic<bool>* cancel, const RunTokens& runs) {
  const uint64_t n = symbols.size();
  const uint64_t chunks = (n + chunk_symbols - 1) / chunk_symbols;
  auto chunk_range = [&](uint64_t c) {
    return std::make_pair(c * chunk_symbols, std::min<uint64_t>(n, (c + 1) * chunk_symbols));
  };

  std::vector<uint32_t> bits(chunks);
  ParallelFor(chunks, [&](uint64_t c) {
    if (Cancelled(cancel)) return;
    auto [begin, end] = chunk_range(c);
    uint32_t sum = 0;
    if (runs.enabled) {
      ForEachToken(symbols.subspan(begin, end - begin), runs,
                   [&](uint32_t s, int extra, uint32_t, uint32_t) { sum += lengths[s] + extra; });
    } else {
      for (uint64_t i = begin; i < end; ++i) sum += lengths[symbols[i]];
    }
    bits[c] = sum;
  });

  EncodedSymbols out;
  out.layout = ChunkLayout::FromBits(std::move(bits), subsequence_bits);
  out.words.assign(out.layout.total_words, 0);
  if (with_gaps) out.gaps.assign(out.layout.total_gap_entries, 0);

  ParallelFor(chunks, [&](uint64_t c) {
    if (Cancelled(cancel)) return;
    auto [begin, end] = chunk_range(c);
    BitWriter writer(out.words.data() + out.layout.start_word[c]);
    uint8_t* gap = with_gaps ? out.gaps.data() + out.layout.gap_offset[c] : nullptr;
    const uint64_t chunk_bits = out.layout.bits[c];
    uint64_t pos = 0;
    uint64_t boundary = 0;  // next subsequence start not yet given a gap
    auto put = [&](uint32_t s, int extra_bits, uint32_t extra) {
      if (gap) {
        for (; boundary <= pos && boundary < chunk_bits; boundary += subsequence_bits) {
          *gap++ = static_cast<uint8_t>(pos - boundary);
        }
      }
      writer.Put(codes[s], lengths[s]);
      if (extra_bits != 0) writer.Put(extra, extra_bits);
      pos += lengths[s] + extra_bits;
    };
    if (runs.enabled) {
      ForEachToken(symbols.subspan(begin, end - begin), runs,
                   [&](uint32_t s, int extra_bits, uint32_t extra, uint32_t) {
                     put(s, extra_bits, extra);
                   });
    } else {
      for (uint64_t i = begin; i < end; ++i) put(symbols[i], 0, 0);
    }
    if (gap) {
      // Subsequences that no codeword starts in point at the chunk's end.
      for (; boundary < chunk_bits; boundary += subsequence_bits) {
        *gap++ = static_cast<uint8_t>(chunk_bits - boundary);
      }
    }
    writer.Flush();
  });
  return out;
}

}  // namespace ebzip
