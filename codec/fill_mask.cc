#include "codec/fill_mask.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "codec/byte_io.h"
#include "codec/format.h"
#include "codec/huffman_code.h"
#include "codec/run_tokens.h"

namespace ebzip {
namespace {

using format::kMaskChunkTokens;
using format::kMaskClasses;
using format::kMaskHeaderBytes;
using format::kMaxMaskRun;

constexpr int kMaxMaskCodeLength = 20;

// Appends a run of `length` to *lengths, longer runs than kMaxMaskRun split
// by empty runs of the other bit.
void AppendRun(uint64_t length, std::vector<uint32_t>* lengths) {
  while (length > kMaxMaskRun) {
    lengths->push_back(kMaxMaskRun);
    lengths->push_back(0);
    length -= kMaxMaskRun;
  }
  lengths->push_back(static_cast<uint32_t>(length));
}

// The run lengths of X, alternating 0s and 1s from a run of 0s.
std::vector<uint32_t> RunLengths(absl::Span<const uint8_t> mask, uint64_t row) {
  std::vector<uint32_t> lengths;
  uint8_t bit = 0;
  uint64_t run = 0;
  auto emit = [&](uint64_t length) { AppendRun(length, &lengths); };
  const uint8_t* m = mask.data();
  for (uint64_t i = 0; i < mask.size();) {
    // Eight elements at a time while X stays the same bit: X is mostly
    // long runs (fill in rows that repeat).
    if (i >= row && mask.size() - i >= 8) {
      uint64_t here, above;
      std::memcpy(&here, m + i, 8);
      std::memcpy(&above, m + i - row, 8);
      if ((here ^ above) == (bit ? 0x0101010101010101ull : 0)) {
        run += 8;
        i += 8;
        continue;
      }
    }
    const uint8_t x = i < row ? m[i] : static_cast<uint8_t>(m[i] ^ m[i - row]);
    if (x != bit) {
      emit(run);
      bit = x;
      run = 0;
    }
    ++run;
    ++i;
  }
  emit(run);
  return lengths;
}

// A token's class and extra bits (§15.6).
int MaskClass(uint32_t length) { return length == 0 ? 0 : RunClass(length + 1); }

// The fill section of these run lengths.
EncodedFillMask EncodeLengths(const std::vector<uint32_t>& lengths) {
  std::vector<uint32_t> histogram(kMaskClasses, 0);
  for (uint32_t l : lengths) ++histogram[MaskClass(l)];
  const std::vector<uint8_t> code_lengths = BuildCodeLengths(histogram, kMaxMaskCodeLength);
  const std::vector<uint32_t> codes = CanonicalCodes(code_lengths);

  const uint64_t chunks = format::MaskChunks(lengths.size());
  std::vector<uint32_t> chunk_bits(chunks, 0);
  std::vector<uint32_t> words;
  for (uint64_t c = 0; c < chunks; ++c) {
    const uint64_t begin = c * kMaskChunkTokens;
    const uint64_t end = std::min<uint64_t>(lengths.size(), begin + kMaskChunkTokens);
    uint64_t acc = 0;  // bits not yet in a word, left-aligned
    int fill = 0;
    uint64_t bits = 0;
    auto put = [&](uint32_t value, int count) {
      if (count == 0) return;
      acc |= static_cast<uint64_t>(value) << (64 - count - fill);
      fill += count;
      bits += count;
      if (fill >= 32) {
        words.push_back(static_cast<uint32_t>(acc >> 32));
        acc <<= 32;
        fill -= 32;
      }
    };
    for (uint64_t t = begin; t < end; ++t) {
      const int c_class = MaskClass(lengths[t]);
      put(codes[c_class], code_lengths[c_class]);
      put(lengths[t] + 1 - (1u << c_class), c_class);
    }
    if (fill > 0) words.push_back(static_cast<uint32_t>(acc >> 32));
    chunk_bits[c] = static_cast<uint32_t>(bits);
  }

  EncodedFillMask out;
  out.tokens = lengths.size();
  std::vector<uint8_t>& s = out.section;
  s.reserve(kMaskHeaderBytes + 4 * (chunks + words.size()));
  s.insert(s.end(), code_lengths.begin(), code_lengths.end());
  s.resize(kMaskHeaderBytes, 0);
  ByteWriter w(&s);
  for (uint32_t b : chunk_bits) w.Put<uint32_t>(b);
  for (uint32_t word : words) w.Put<uint32_t>(word);
  return out;
}

}  // namespace

EncodedFillMask EncodeFillMask(absl::Span<const uint8_t> mask, uint64_t row) {
  return EncodeLengths(RunLengths(mask, row));
}

EncodedFillMask EncodeNoFill(uint64_t n) {
  std::vector<uint32_t> lengths;
  AppendRun(n, &lengths);
  return EncodeLengths(lengths);
}

absl::StatusOr<std::vector<uint32_t>> DecodeFillRuns(absl::Span<const uint8_t> section,
                                                     uint64_t tokens, uint64_t n) {
  auto corrupt = [](absl::string_view what) {
    return format::CorruptArchive(absl::StrCat("fill mask: ", what));
  };
  const uint64_t chunks = format::MaskChunks(tokens);
  if (tokens == 0 || section.size() < kMaskHeaderBytes + 4 * chunks) return corrupt("too short");
  std::array<uint8_t, kMaskClasses> code_lengths;
  std::copy_n(section.begin(), kMaskClasses, code_lengths.begin());
  for (uint64_t i = kMaskClasses; i < kMaskHeaderBytes; ++i) {
    if (section[i] != 0) return corrupt("non-zero padding");
  }
  // The 13 lengths checked as the code-length section's are: each at most
  // the limit, one used, Kraft's inequality.
  uint64_t kraft = 0;
  bool any = false;
  for (uint8_t l : code_lengths) {
    if (l > kMaxMaskCodeLength) return corrupt("code length too long");
    if (l != 0) kraft += uint64_t{1} << (kMaxMaskCodeLength - l), any = true;
  }
  if (!any || kraft > (uint64_t{1} << kMaxMaskCodeLength)) return corrupt("invalid code");
  const std::vector<uint32_t> codes = CanonicalCodes(code_lengths);

  const uint8_t* bits_at = section.data() + kMaskHeaderBytes;
  const uint64_t words_bytes = section.size() - kMaskHeaderBytes - 4 * chunks;
  if (words_bytes % 4 != 0) return corrupt("bitstream is not whole words");
  const uint64_t total_words = words_bytes / 4;
  const uint8_t* words_at = bits_at + 4 * chunks;
  auto word = [&](uint64_t w) -> uint64_t {
    return w < total_words ? LoadLE<uint32_t>(words_at + 4 * w) : 0;
  };

  // Decoding a class: the canonical code is tiny, so a linear search over
  // the (length, class) pairs is enough.
  struct Entry {
    uint8_t length;
    uint32_t code;
    int klass;
  };
  std::vector<Entry> entries;
  for (int c = 0; c < kMaskClasses; ++c) {
    if (code_lengths[c] != 0) entries.push_back({code_lengths[c], codes[c], c});
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.length < b.length; });

  uint64_t start_word = 0;
  uint64_t element = 0;
  std::vector<uint32_t> runs;
  runs.reserve(tokens);
  for (uint64_t c = 0; c < chunks; ++c) {
    const uint64_t chunk_bits = LoadLE<uint32_t>(bits_at + 4 * c);
    const uint64_t count = std::min<uint64_t>(kMaskChunkTokens, tokens - c * kMaskChunkTokens);
    if (start_word + (chunk_bits + 31) / 32 > total_words) return corrupt("chunk past the end");
    uint64_t pos = 0;
    auto peek = [&](uint64_t p) -> uint32_t {
      const uint64_t b = start_word * 32 + p;
      const uint64_t two = word(b / 32) << 32 | word(b / 32 + 1);
      return static_cast<uint32_t>((two << (b % 32)) >> 32);
    };
    for (uint64_t t = 0; t < count; ++t) {
      const uint32_t window = peek(pos);
      int klass = -1, len = 0;
      for (const Entry& e : entries) {
        if ((window >> (32 - e.length)) == e.code) {
          klass = e.klass;
          len = e.length;
          break;
        }
      }
      if (klass < 0 || pos + len + klass > chunk_bits) return corrupt("invalid token");
      const uint32_t extra = klass == 0 ? 0 : peek(pos + len) >> (32 - klass);
      pos += len + klass;
      const uint64_t length = (uint64_t{1} << klass) + extra - 1;
      if (length > n - element) return corrupt("runs longer than the frame");
      runs.push_back(static_cast<uint32_t>(length));
      element += length;
    }
    if (pos != chunk_bits) return corrupt("chunk length disagrees with its tokens");
    start_word += (chunk_bits + 31) / 32;
  }
  if (start_word != total_words) return corrupt("bitstream length disagrees with its chunks");
  if (element != n) return corrupt("runs do not cover the frame");
  return runs;
}

bool AnyFill(const std::vector<uint32_t>& runs) {
  for (size_t k = 1; k < runs.size(); k += 2) {
    if (runs[k] != 0) return true;
  }
  return false;
}

uint64_t ExpandFillRuns(const std::vector<uint32_t>& runs, uint64_t row, absl::Span<uint8_t> mask) {
  uint64_t element = 0;
  uint8_t bit = 0;
  for (uint32_t length : runs) {
    std::fill_n(mask.begin() + element, length, bit);
    element += length;
    bit ^= 1;
  }
  // X back to M: each row XORed with the (already restored) previous one,
  // eight bytes at a time where the row is at least that long.
  const uint64_t n = mask.size();
  uint8_t* m = mask.data();
  uint64_t i = row;
  if (row >= 8) {
    for (; i + 8 <= n; i += 8) {
      uint64_t here, above;
      std::memcpy(&here, m + i, 8);
      std::memcpy(&above, m + i - row, 8);
      here ^= above;
      std::memcpy(m + i, &here, 8);
    }
  }
  for (; i < n; ++i) m[i] ^= m[i - row];
  // Bytes are 0 or 1: multiplying a word by 0x0101...01 sums them into
  // its top byte.
  uint64_t fill = 0;
  i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, m + i, 8);
    fill += (word * 0x0101010101010101ull) >> 56;
  }
  for (; i < n; ++i) fill += m[i];
  return fill;
}

absl::StatusOr<uint64_t> DecodeFillMask(absl::Span<const uint8_t> section, uint64_t tokens,
                                        uint64_t row, absl::Span<uint8_t> mask) {
  auto runs = DecodeFillRuns(section, tokens, mask.size());
  if (!runs.ok()) return runs.status();
  return ExpandFillRuns(*runs, row, mask);
}

}  // namespace ebzip
