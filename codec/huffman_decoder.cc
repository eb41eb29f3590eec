#include "codec/huffman_decoder.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "codec/cancel.h"
#include "codec/format.h"
#include "codec/huffman_code.h"
#include "codec/parallel.h"

namespace ebzip {
namespace {

absl::Status CorruptChunk(uint64_t chunk, absl::string_view what) {
  return format::CorruptArchive(absl::StrCat("bitstream: chunk ", chunk, ": ", what));
}

// Bit access to one chunk; reads past the bitstream's end see zeros.
class ChunkBits {
 public:
  ChunkBits(absl::Span<const uint32_t> words, uint64_t start_word, uint32_t bits)
      : words_(words), base_(start_word * 32), bits_(bits) {}

  uint32_t Peek(uint64_t pos) const {
    const uint64_t bit = base_ + pos;
    const uint64_t w = bit >> 5;
    const uint64_t hi = w < words_.size() ? words_[w] : 0;
    const uint64_t lo = w + 1 < words_.size() ? words_[w + 1] : 0;
    return static_cast<uint32_t>(((hi << 32 | lo) << (bit & 31)) >> 32);
  }
  uint32_t bits() const { return bits_; }
  // The word at index w of the bitstream, 0 beyond its end.
  uint32_t Word(uint64_t w) const { return w < words_.size() ? words_[w] : 0; }
  uint64_t base() const { return base_; }

 private:
  absl::Span<const uint32_t> words_;
  uint64_t base_;
  uint32_t bits_;
};

struct Run {
  bool ok = true;    // false: an invalid token or one past the chunk's end
  uint64_t end = 0;  // position of the first token at or after `limit`
  uint64_t count = 0;  // positions covered
};

// One token: its codeword and extra bits (length 0 when no codeword
// matches or the token runs past the chunk), and the positions it covers:
// `repeat` of `symbol`, then for a run-value token one of `value`.
struct Token {
  int length = 0;
  uint16_t symbol = 0;
  uint32_t repeat = 1;
  uint32_t value = kNoRunValue;

  uint32_t positions() const { return repeat + (value != kNoRunValue); }
};

// The token whose codeword starts `window` (codeword length `len`, 0 when
// none matches), its extra bits read from the same window: a codeword is at
// most 20 bits with run tokens and the class at most 12.
Token TokenOf(const RunTokens& runs, uint32_t window, int len, uint16_t symbol) {
  Token t;
  t.symbol = symbol;
  if (len != 0 && runs.IsRun(symbol)) {
    const RunTokenShape shape = ShapeOf(symbol, runs.radius);
    if (!shape.valid) return t;  // length 0: invalid
    const int c = shape.klass;
    t.repeat = (1u << c) + (c == 0 ? 0 : (window << len) >> (32 - c));
    t.symbol = static_cast<uint16_t>(runs.radius);
    t.value = shape.value;
    len += c;
  }
  t.length = len;
  return t;
}

Token NextToken(const HuffmanTable& table, const RunTokens& runs, const ChunkBits& in,
                uint64_t pos) {
  const uint32_t window = in.Peek(pos);
  uint16_t symbol;
  const int len = table.Decode(window, &symbol);
  Token t = TokenOf(runs, window, len, symbol);
  if (pos + t.length > in.bits()) t.length = 0;
  return t;
}

// Writes the token's first `count` positions (at most its positions()).
void WriteToken(const Token& t, uint64_t count, uint16_t* out) {
  if (t.repeat == 1 && t.value == kNoRunValue) {
    if (count != 0) *out = t.symbol;
    return;
  }
  std::fill_n(out, std::min<uint64_t>(count, t.repeat), t.symbol);
  if (count > t.repeat) out[t.repeat] = static_cast<uint16_t>(t.value);
}

// Decodes the tokens that start in [start, limit). Writes symbols to `out`
// when given (at most `capacity`), and marks token starts in `marks`
// (bit p - mark_base) when given.
Run DecodeRun(const HuffmanTable& table, const RunTokens& runs, const ChunkBits& in,
              uint64_t start, uint64_t limit, uint16_t* out, uint64_t capacity,
              uint64_t* marks = nullptr, uint64_t mark_base = 0) {
  Run run;
  uint64_t pos = start;
  while (pos < limit) {
    const Token t = NextToken(table, runs, in, pos);
    if (t.length == 0) {
      run.ok = false;
      break;
    }
    if (marks) marks[(pos - mark_base) >> 6] |= uint64_t{1} << ((pos - mark_base) & 63);
    if (out) {
      if (t.positions() > capacity - run.count) {
        run.ok = false;
        break;
      }
      WriteToken(t, t.positions(), out + run.count);
    }
    run.count += t.positions();
    pos += t.length;
  }
  run.end = pos;
  return run;
}

// DecodeRun without marks, token for token the same: the next bits of the
// stream wait in a register (refilled a word at a time) instead of being
// fetched for each token, and the loop calls nothing. With `prefix`, it
// stops once `capacity` positions are written, the last run token cut
// short (a region needs only a chunk's first positions).
Run DecodeRunFast(const HuffmanTable& table, const RunTokens& runs, const ChunkBits& in,
                  uint64_t start, uint64_t limit, uint16_t* out, uint64_t capacity,
                  bool prefix = false) {
  Run run;
  uint64_t pos = start;
  const uint64_t first = in.base() + start;
  uint64_t next_word = (first >> 5) + 2;
  // buf holds the stream from bit `pos` on, left-aligned; `avail` of its
  // bits are loaded (at least 32 at each token).
  uint64_t buf = (uint64_t{in.Word(first >> 5)} << 32 | in.Word((first >> 5) + 1))
                 << (first & 31);
  int avail = 64 - static_cast<int>(first & 31);
  const uint64_t bits = in.bits();
  while (pos < limit && !(prefix && run.count == capacity)) {
    if (avail < 32) {
      buf |= uint64_t{in.Word(next_word++)} << (32 - avail);
      avail += 32;
    }
    const uint32_t window = static_cast<uint32_t>(buf >> 32);
    uint16_t symbol;
    const int codeword = table.Decode(window, &symbol);
    const Token t = TokenOf(runs, window, codeword, symbol);
    const int len = t.length;
    if (len == 0 || pos + len > bits) {
      run.ok = false;
      break;
    }
    uint64_t positions = t.positions();
    if (out != nullptr) {
      if (positions > capacity - run.count) {
        if (!prefix) {
          run.ok = false;
          break;
        }
        positions = capacity - run.count;
      }
      if (positions == 1 && t.value == kNoRunValue) {
        out[run.count] = t.symbol;
      } else {
        WriteToken(t, positions, out + run.count);
      }
    }
    run.count += positions;
    pos += static_cast<uint64_t>(len);
    buf <<= len;
    avail -= len;
  }
  run.end = pos;
  return run;
}

absl::Status DecodeChunkSequential(const HuffmanTable& table, const RunTokens& runs,
                                   const ChunkBits& in, uint64_t chunk, absl::Span<uint16_t> out) {
  Run run = DecodeRunFast(table, runs, in, 0, in.bits(), out.data(), out.size());
  if (!run.ok) return CorruptChunk(chunk, "invalid codeword");
  if (run.count != out.size()) return CorruptChunk(chunk, "symbol count mismatch");
  return absl::OkStatus();
}

// Count, scan, write: the second half of both subsequence decoders. Checks
// that each subsequence ends exactly where the next one starts.
absl::Status DecodeFromStarts(const HuffmanTable& table, const RunTokens& runs,
                              const ChunkBits& in, uint64_t chunk, uint32_t subsequence_bits,
                              absl::Span<const uint64_t> starts, absl::Span<uint16_t> out) {
  const size_t m = starts.size();
  std::vector<uint64_t> offsets(m + 1, 0);
  for (size_t j = 0; j < m; ++j) {
    const uint64_t limit = std::min<uint64_t>(uint64_t{subsequence_bits} * (j + 1), in.bits());
    Run run = DecodeRunFast(table, runs, in, starts[j], limit, nullptr, 0);
    const uint64_t expected_end = j + 1 < m ? starts[j + 1] : in.bits();
    if (!run.ok || run.end != expected_end) {
      return CorruptChunk(chunk, absl::StrCat("subsequence ", j, " does not meet the next"));
    }
    offsets[j + 1] = offsets[j] + run.count;
  }
  if (offsets[m] != out.size()) return CorruptChunk(chunk, "symbol count mismatch");
  for (size_t j = 0; j < m; ++j) {
    const uint64_t limit = std::min<uint64_t>(uint64_t{subsequence_bits} * (j + 1), in.bits());
    DecodeRunFast(table, runs, in, starts[j], limit, out.data() + offsets[j],
                  offsets[j + 1] - offsets[j]);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint64_t>> StartsFromGaps(const ChunkBits& in, uint64_t chunk,
                                                     uint32_t subsequence_bits,
                                                     absl::Span<const uint8_t> gaps) {
  std::vector<uint64_t> starts(gaps.size());
  for (size_t j = 0; j < gaps.size(); ++j) {
    starts[j] = uint64_t{subsequence_bits} * j + gaps[j];
    if (starts[j] > in.bits() || (j == 0 && gaps[0] != 0)) {
      return CorruptChunk(chunk, "gap points outside the chunk");
    }
  }
  return starts;
}

// Finds every subsequence's first codeword boundary without a gap array.
absl::StatusOr<std::vector<uint64_t>> StartsBySelfSync(const HuffmanTable& table,
                                                       const RunTokens& runs,
                                                       const ChunkBits& in, uint64_t chunk,
                                                       uint32_t subsequence_bits) {
  const uint64_t s = subsequence_bits;
  const uint64_t m = (in.bits() + s - 1) / s;
  auto limit_of = [&](uint64_t j) { return std::min<uint64_t>(s * (j + 1), in.bits()); };

  // Phase 1: every subsequence decodes speculatively from its first bit (in
  // parallel on a GPU), remembering where its codewords started: one bit
  // per bit of the chunk, since subsequence j only marks bits of its own
  // [s*j, s*(j+1)). Of each path only its end is kept, kNoEnd where it
  // failed.
  constexpr uint64_t kNoEnd = ~uint64_t{0};
  std::vector<uint64_t> speculative_end(m, kNoEnd);
  std::vector<uint64_t> marks((uint64_t{in.bits()} + 63) / 64, 0);
  for (uint64_t j = 1; j < m; ++j) {
    const Run run =
        DecodeRun(table, runs, in, s * j, limit_of(j), nullptr, 0, marks.data(), 0);
    if (run.ok) speculative_end[j] = run.end;
  }
  // Phase 2: walk the true boundaries; a subsequence whose speculative start
  // was wrong re-decodes from the true one until it lands on a codeword
  // start of its speculative path, after which both paths agree.
  std::vector<uint64_t> starts(m, 0);
  Run first = DecodeRun(table, runs, in, 0, limit_of(0), nullptr, 0);
  if (!first.ok) return CorruptChunk(chunk, "invalid codeword");
  uint64_t boundary = first.end;
  for (uint64_t j = 1; j < m; ++j) {
    starts[j] = boundary;
    const bool spec_ok = speculative_end[j] != kNoEnd;
    uint64_t pos = boundary;
    bool synced = false;
    while (pos < limit_of(j)) {
      if (spec_ok && (marks[pos >> 6] >> (pos & 63) & 1)) {
        synced = true;
        break;
      }
      const Token t = NextToken(table, runs, in, pos);
      if (t.length == 0) return CorruptChunk(chunk, "invalid codeword");
      pos += t.length;
    }
    boundary = synced ? speculative_end[j] : pos;
  }
  return starts;
}

}  // namespace

absl::Status HuffmanDecodePrefixes(const HuffmanTable& table, const BitstreamView& in,
                                   absl::Span<const ChunkPrefix> prefixes, absl::Span<uint16_t> out,
                                   const std::atomic<bool>* cancel) {
  const ChunkLayout& layout = *in.layout;
  const uint64_t chunks = layout.bits.size();
  if (chunks != (out.size() + in.chunk_symbols - 1) / in.chunk_symbols) {
    return format::CorruptArchive("chunk count disagrees with element count");
  }
  std::atomic<bool> failed{false};
  std::mutex mu;
  absl::Status first_error;
  ParallelFor(prefixes.size(), [&](uint64_t k) {
    if (failed.load(std::memory_order_relaxed) || Cancelled(cancel)) return;
    const uint64_t c = prefixes[k].chunk;
    const uint64_t begin = c * in.chunk_symbols;
    const uint64_t size = std::min<uint64_t>(in.chunk_symbols, out.size() - begin);
    const uint64_t count = std::min<uint64_t>(prefixes[k].count, size);
    const ChunkBits bits(in.words, layout.start_word[c], layout.bits[c]);
    absl::Status status;
    if (count == size) {
      // The whole chunk, checked as a full decode checks it.
      status = DecodeChunkSequential(table, in.runs, bits, c, out.subspan(begin, size));
    } else {
      const Run run = DecodeRunFast(table, in.runs, bits, 0, bits.bits(), out.data() + begin,
                                    count, /*prefix=*/true);
      if (!run.ok) {
        status = CorruptChunk(c, "invalid codeword");
      } else if (run.count != count) {
        status = CorruptChunk(c, "symbol count mismatch");
      }
    }
    if (!status.ok() && !failed.exchange(true)) {
      std::lock_guard<std::mutex> lock(mu);
      first_error = status;
    }
  });
  if (failed) {
    std::lock_guard<std::mutex> lock(mu);
    return first_error;
  }
  if (Cancelled(cancel)) return CancelledStatus("Huffman decoding");
  return absl::OkStatus();
}

const char* DecoderKindName(DecoderKind kind) {
  switch (kind) {
    case DecoderKind::kAuto:
      return "auto";
    case DecoderKind::kChunkParallel:
      return "chunk-parallel";
    case DecoderKind::kGapArray:
      return "gap-array";
    case DecoderKind::kSelfSync:
      return "self-sync";
  }
  return "unknown";
}

HuffmanTable::HuffmanTable(absl::Span<const uint8_t> lengths) {
  uint32_t count[256] = {};  // a local: see CanonicalCodes
  int max_length = 0;
  ForEachCodedSymbol(lengths, [&](uint32_t, uint8_t l) {
    ++count[l];
    max_length = std::max<int>(max_length, l);
  });
  max_length_ = max_length;
  count_.assign(count, count + max_length_ + 1);
  first_code_.assign(max_length_ + 1, 0);
  offset_.assign(max_length_ + 1, 0);
  uint32_t code = 0;
  uint32_t offset = 0;
  for (int l = 1; l <= max_length_; ++l) {
    code = (code + count_[l - 1]) << 1;
    first_code_[l] = code;
    offset_[l] = offset;
    offset += count_[l];
  }
  count_[0] = 0;
  sorted_.resize(offset);
  std::vector<uint32_t> fill = offset_;
  uint16_t* sorted = sorted_.data();
  uint32_t* at = fill.data();
  ForEachCodedSymbol(lengths,
                     [&](uint32_t s, uint8_t l) { sorted[at[l]++] = static_cast<uint16_t>(s); });
  lookup_.assign(size_t{1} << kLookupBits, 0);
  for (int l = 1; l <= std::min(max_length_, kLookupBits); ++l) {
    for (uint32_t i = 0; i < count_[l]; ++i) {
      const uint32_t entry = (uint32_t{sorted_[offset_[l] + i]} << 8) | static_cast<uint32_t>(l);
      const uint32_t prefix = (first_code_[l] + i) << (kLookupBits - l);
      std::fill_n(lookup_.begin() + prefix, size_t{1} << (kLookupBits - l), entry);
    }
  }
}

int HuffmanTable::DecodeLong(uint32_t window, uint16_t* symbol) const {
  for (int l = kLookupBits + 1; l <= max_length_; ++l) {
    const uint32_t code = window >> (32 - l);
    if (code - first_code_[l] < count_[l]) {
      *symbol = sorted_[offset_[l] + (code - first_code_[l])];
      return l;
    }
  }
  return 0;
}

absl::Status HuffmanDecode(DecoderKind kind, const HuffmanTable& table, const BitstreamView& in,
                           absl::Span<uint16_t> out, const std::atomic<bool>* cancel) {
  const ChunkLayout& layout = *in.layout;
  const uint64_t chunks = layout.bits.size();
  if (chunks != (out.size() + in.chunk_symbols - 1) / in.chunk_symbols) {
    return format::CorruptArchive("chunk count disagrees with element count");
  }
  if (kind == DecoderKind::kAuto) kind = DecoderKind::kChunkParallel;
  if (kind == DecoderKind::kGapArray && in.gaps.size() != layout.total_gap_entries) {
    return in.gaps.empty() ? absl::FailedPreconditionError(
                                 "the gap-array decoder needs a gap array, and "
                                 "this archive was written without one")
                           : format::CorruptArchive("gap array size disagrees with chunks");
  }
  std::atomic<bool> failed{false};
  std::mutex mu;
  absl::Status first_error;
  ParallelFor(chunks, [&](uint64_t c) {
    if (failed.load(std::memory_order_relaxed) || Cancelled(cancel)) return;
    const uint64_t begin = c * in.chunk_symbols;
    auto chunk_out = out.subspan(begin, std::min<uint64_t>(in.chunk_symbols, out.size() - begin));
    ChunkBits bits(in.words, layout.start_word[c], layout.bits[c]);
    absl::Status status;
    switch (kind) {
      case DecoderKind::kGapArray: {
        const uint64_t m = (layout.bits[c] + in.subsequence_bits - 1) / in.subsequence_bits;
        auto starts =
            StartsFromGaps(bits, c, in.subsequence_bits, in.gaps.subspan(layout.gap_offset[c], m));
        status = starts.ok() ? DecodeFromStarts(table, in.runs, bits, c, in.subsequence_bits,
                                                *starts, chunk_out)
                             : starts.status();
        break;
      }
      case DecoderKind::kSelfSync: {
        auto starts = StartsBySelfSync(table, in.runs, bits, c, in.subsequence_bits);
        status = starts.ok() ? DecodeFromStarts(table, in.runs, bits, c, in.subsequence_bits,
                                                *starts, chunk_out)
                             : starts.status();
        break;
      }
      default:
        status = DecodeChunkSequential(table, in.runs, bits, c, chunk_out);
    }
    if (!status.ok() && !failed.exchange(true)) {
      std::lock_guard<std::mutex> lock(mu);
      first_error = status;
    }
  });
  if (failed) {
    std::lock_guard<std::mutex> lock(mu);
    return first_error;
  }
  if (Cancelled(cancel)) return CancelledStatus("Huffman decoding");
  return absl::OkStatus();
}

}  // namespace ebzip
