#include "codec/huffman_encoder.h"

#include <algorithm>
#include <cstring>
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
  // One pass over the symbols: tasks of whole chunks encode them one after
  // the other into words of their own, which are the bitstream's from the
  // task's first chunk on (each chunk starts on a word), and gap entries
  // likewise; the pieces are put in place once every chunk's length is
  // known. The bitstream is far smaller than the symbols, so the copy is
  // cheap next to a pass that only measured the chunks.
  const uint64_t per_task = std::max<uint64_t>(1, kHistogramTask / 4 / chunk_symbols);
  const uint64_t tasks = (chunks + per_task - 1) / per_task;
  // A token is at most 32 bits (a 20-bit codeword and 12 extra bits with
  // runs; codes are limited to 32 bits without).
  int longest = 0;
  for (uint8_t l : lengths) longest = std::max<int>(longest, l);
  const uint64_t max_token_bits = static_cast<uint64_t>(longest) + (runs.enabled ? 12 : 0);
  struct Piece {
    std::vector<uint32_t> words;
    std::vector<uint8_t> gaps;
  };
  std::vector<Piece> pieces(tasks);
  std::vector<uint32_t> bits(chunks, 0);
  ParallelFor(tasks, [&](uint64_t t) {
    if (Cancelled(cancel)) return;
    Piece& piece = pieces[t];
    const uint64_t end_chunk = std::min(chunks, (t + 1) * per_task);
    for (uint64_t c = t * per_task; c < end_chunk; ++c) {
      const uint64_t begin = c * chunk_symbols;
      const uint64_t end = std::min<uint64_t>(n, begin + chunk_symbols);
      // Room for the chunk at its longest, trimmed to its length after.
      const uint64_t first_word = piece.words.size();
      const uint64_t max_bits = (end - begin) * max_token_bits;
      piece.words.resize(first_word + (max_bits + 31) / 32 + 1);
      BitWriter writer(piece.words.data() + first_word);
      const uint64_t first_gap = piece.gaps.size();
      if (with_gaps) piece.gaps.resize(first_gap + (max_bits + subsequence_bits - 1) / subsequence_bits);
      uint8_t* gap = with_gaps ? piece.gaps.data() + first_gap : nullptr;
      uint64_t pos = 0;
      uint64_t boundary = 0;  // next subsequence start not yet given a gap
      auto put = [&](uint32_t s, int extra_bits, uint32_t extra) {
        if (gap) {
          // A token starts before the chunk's end, so every boundary up to
          // it is inside the chunk.
          for (; boundary <= pos; boundary += subsequence_bits) {
            *gap++ = static_cast<uint8_t>(pos - boundary);
          }
        }
        // The codeword and its extra bits are consecutive: one put.
        const int length = lengths[s] + extra_bits;
        writer.Put(codes[s] << extra_bits | extra, length);
        pos += static_cast<uint64_t>(length);
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
        for (; boundary < pos; boundary += subsequence_bits) {
          *gap++ = static_cast<uint8_t>(pos - boundary);
        }
        piece.gaps.resize(static_cast<uint64_t>(gap - piece.gaps.data()));
      }
      writer.Flush();
      piece.words.resize(first_word + WordsForBits(pos));
      bits[c] = static_cast<uint32_t>(pos);
    }
  });

  EncodedSymbols out;
  out.layout = ChunkLayout::FromBits(std::move(bits), subsequence_bits);
  out.words.resize(out.layout.total_words);
  if (with_gaps) out.gaps.resize(out.layout.total_gap_entries);
  ParallelFor(tasks, [&](uint64_t t) {
    const uint64_t c = t * per_task;
    Piece& piece = pieces[t];
    if (!piece.words.empty()) {
      std::memcpy(out.words.data() + out.layout.start_word[c], piece.words.data(),
                  piece.words.size() * sizeof(uint32_t));
    }
    if (with_gaps && !piece.gaps.empty()) {
      std::memcpy(out.gaps.data() + out.layout.gap_offset[c], piece.gaps.data(), piece.gaps.size());
    }
    Piece().words.swap(piece.words);
    Piece().gaps.swap(piece.gaps);
  });
  return out;
}

}  // namespace ebzip
