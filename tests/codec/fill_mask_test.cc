// The fill mask of an interpolation frame (FORMAT.md §15.6), read back from
// archives by a decoder written here from the specification alone, so that
// what the writer puts in the fill section is checked against the text and
// not only against the reader it ships with (the two could agree on the same
// misreading). Also EncodeFillMask/DecodeFillMask on masks with long runs
// and many tokens.
#include "codec/fill_mask.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "absl/types/span.h"
#include "codec/archive.h"
#include "codec/byte_io.h"
#include "codec/format.h"
#include "gtest/gtest.h"

namespace ebzip {
namespace {

using Bytes = std::vector<uint8_t>;

// The run lengths L_0, L_1, ... coded in a fill section of `tokens` tokens,
// decoded as §15.6 says (canonical codes of §5.2, bit order of §1).
std::vector<uint64_t> SpecRunLengths(absl::Span<const uint8_t> section, uint64_t tokens) {
  constexpr int kClasses = 13;
  std::vector<int> length(kClasses);
  for (int c = 0; c < kClasses; ++c) length[c] = section[c];
  // §5.2: bl_count, next_code, codes in class order.
  int max_length = 0;
  for (int l : length) max_length = std::max(max_length, l);
  std::vector<uint32_t> bl_count(max_length + 1, 0), next_code(max_length + 2, 0);
  for (int l : length) {
    if (l) ++bl_count[l];
  }
  uint32_t code = 0;
  for (int l = 1; l <= max_length; ++l) {
    code = (code + bl_count[l - 1]) << 1;
    next_code[l] = code;
  }
  std::vector<uint32_t> codeword(kClasses, 0);
  for (int c = 0; c < kClasses; ++c) {
    if (length[c]) codeword[c] = next_code[length[c]]++;
  }
  const uint64_t chunks = (tokens + 4095) / 4096;
  const uint8_t* bits_at = section.data() + 16;
  const uint8_t* words = bits_at + 4 * chunks;
  auto bit = [&](uint64_t k) {  // bit k of the mask bitstream
    const uint32_t word = LoadLE<uint32_t>(words + 4 * (k / 32));
    return (word >> (31 - k % 32)) & 1;
  };
  std::vector<uint64_t> runs;
  uint64_t start_word = 0;
  for (uint64_t c = 0; c < chunks; ++c) {
    const uint32_t chunk_bits = LoadLE<uint32_t>(bits_at + 4 * c);
    uint64_t pos = start_word * 32;
    const uint64_t count = std::min<uint64_t>(4096, tokens - 4096 * c);
    for (uint64_t t = 0; t < count; ++t) {
      uint32_t value = 0;
      int klass = -1;
      for (int l = 1; l <= max_length && klass < 0; ++l) {
        value = value << 1 | bit(pos++);
        for (int k = 0; k < kClasses; ++k) {
          if (length[k] == l && codeword[k] == value) klass = k;
        }
      }
      EXPECT_GE(klass, 0) << "no codeword at bit " << pos;
      if (klass < 0) return runs;
      uint64_t extra = 0;
      for (int i = 0; i < klass; ++i) extra = extra << 1 | bit(pos++);
      runs.push_back((uint64_t{1} << klass) + extra - 1);
    }
    EXPECT_EQ(pos, start_word * 32 + chunk_bits) << "mask chunk " << c;
    start_word += (chunk_bits + 31) / 32;
  }
  return runs;
}

// The runs of X, alternating 0s and 1s from 0s, with empty runs dropped and
// neighbours of the same bit merged (the writer splits runs longer than
// 8190 with empty runs, which this undoes).
std::vector<uint64_t> Normalize(const std::vector<uint64_t>& runs) {
  std::vector<uint64_t> out{0};
  int bit = 0;
  for (uint64_t r : runs) {
    if (r != 0) {
      if ((static_cast<int>(out.size()) - 1) % 2 != bit) out.push_back(0);
      out.back() += r;
    }
    bit ^= 1;
  }
  return out;
}

std::vector<uint64_t> RunsOf(const std::vector<uint8_t>& x) {
  std::vector<uint64_t> runs;
  uint8_t bit = 0;
  uint64_t run = 0;
  for (uint8_t v : x) {
    if (v != bit) {
      runs.push_back(run);
      bit = v;
      run = 0;
    }
    ++run;
  }
  runs.push_back(run);
  return Normalize(runs);
}

// X of §15.6 for mask M: each row XORed with the previous one, a row being
// R = n / shape[0] elements for ndim >= 2 and n for ndim = 1.
std::vector<uint8_t> SpecX(const std::vector<uint8_t>& m, const std::vector<uint64_t>& shape) {
  const uint64_t n = m.size();
  const uint64_t row = shape.size() >= 2 ? n / shape[0] : n;
  std::vector<uint8_t> x(n);
  for (uint64_t i = 0; i < n; ++i) x[i] = i < row ? m[i] : m[i] ^ m[i - row];
  return x;
}

constexpr double kFill = -9999;

// Compresses `values` (f32) with interpolation and a fill value, in one
// frame, and checks the fill section's runs against §15.6's X of the mask.
void CheckMaskRuns(const std::vector<uint64_t>& shape, const std::vector<float>& values) {
  const ArraySpec spec{DType::kFloat32, shape};
  CompressOptions o;
  o.bound = 0.01;
  o.fill_value = kFill;
  o.predictor = Predictor::kInterp;
  const auto* p = reinterpret_cast<const uint8_t*>(values.data());
  auto archive = Compress(spec, absl::MakeConstSpan(p, values.size() * 4), o);
  ASSERT_TRUE(archive.ok()) << archive.status();
  auto info = ReadArchiveInfo(*archive);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->frames.size(), 1u);
  const format::FrameHeader& h = info->frame_headers[0];
  ASSERT_EQ(h.fill_coding, format::kFillCodingMask);
  uint64_t at = info->frames[0].offset + format::kFrameHeaderSize;
  for (int s = 0; s < format::kFillRuns; ++s) at += AlignUp(h.sections[s].length, 8);
  const auto section =
      absl::MakeConstSpan(*archive).subspan(at, h.sections[format::kFillRuns].length);
  std::vector<uint8_t> mask(values.size());
  for (size_t i = 0; i < values.size(); ++i) mask[i] = values[i] == static_cast<float>(kFill);
  EXPECT_EQ(Normalize(SpecRunLengths(section, h.fill_run_count)), RunsOf(SpecX(mask, shape)));
  auto decoded = Decompress(*archive);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  for (size_t i = 0; i < values.size(); ++i) {
    const float y = LoadLE<float>(decoded->data.data() + 4 * i);
    if (mask[i]) {
      EXPECT_EQ(y, static_cast<float>(kFill)) << i;
    } else {
      EXPECT_LE(std::fabs(double{y} - values[i]), 0.01) << i;
    }
  }
}

std::vector<float> Smooth(uint64_t n) {
  std::vector<float> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = static_cast<float>(5 * std::sin(0.03 * i));
  return v;
}

// A 1-D frame is one row: its mask is coded as it is (R = n), not XORed
// element by element, which would turn every fill run into two 1-runs.
TEST(FillMask, OneDimensionalMaskIsNotXored) {
  std::vector<float> v = Smooth(3000);
  for (int i = 500; i < 540; ++i) v[i] = kFill;
  for (int i = 1000; i < 1003; ++i) v[i] = kFill;
  for (int i = 2001; i < 2100; ++i) v[i] = kFill;
  v[0] = kFill;  // an anchor
  CheckMaskRuns({3000}, v);
}

TEST(FillMask, RowsAreXoredWithThePreviousRow) {
  const std::vector<uint64_t> shape{40, 30};
  std::vector<float> v = Smooth(40 * 30);
  for (int r = 5; r < 30; ++r) {
    for (int c = 3; c < 12 + r % 3; ++c) v[r * 30 + c] = kFill;  // rows that mostly repeat
  }
  CheckMaskRuns(shape, v);
  const std::vector<uint64_t> shape3{6, 10, 12};
  std::vector<float> w = Smooth(6 * 10 * 12);
  for (size_t i = 0; i < w.size(); ++i) {
    if (i % 120 < 30 || i % 7 == 0) w[i] = kFill;
  }
  CheckMaskRuns(shape3, w);
}

// Runs longer than 8190 (split), more than 4096 tokens (several mask
// chunks), empty masks and full ones, through EncodeFillMask and
// DecodeFillMask, with the runs read back by the decoder above as well.
TEST(FillMask, EncodeDecodeRoundTrip) {
  std::mt19937_64 rng(77);
  struct Case {
    uint64_t n, row;
    int kind;
  };
  const Case cases[] = {{1, 1, 0},         {1, 1, 1},         {20000, 20000, 0},
                        {20000, 20000, 1}, {20000, 20000, 2}, {30000, 100, 3},
                        {30000, 30000, 3}, {50000, 50000, 4}, {9000, 9000, 5}};
  for (const Case& c : cases) {
    std::vector<uint8_t> m(c.n);
    for (uint64_t i = 0; i < c.n; ++i) {
      switch (c.kind) {
        case 0:
          m[i] = 0;
          break;
        case 1:
          m[i] = 1;
          break;
        case 2:
          m[i] = i >= 3 && i < 17000;
          break;  // a run longer than 8190
        case 3:
          m[i] = rng() % 4 == 0;
          break;  // > 4096 tokens
        case 4:
          m[i] = (i / 3) % 2;
          break;  // many short runs
        case 5:
          m[i] = i % 9000 < 8191 || i == 8999;
          break;  // 8191: just over the limit
      }
    }
    const EncodedFillMask enc = EncodeFillMask(m, c.row);
    std::vector<uint8_t> back(c.n, 7);
    auto fill = DecodeFillMask(enc.section, enc.tokens, c.row, absl::MakeSpan(back));
    ASSERT_TRUE(fill.ok()) << fill.status() << " case kind " << c.kind;
    EXPECT_EQ(back, m) << "case kind " << c.kind;
    uint64_t ones = 0;
    for (uint8_t b : m) ones += b;
    EXPECT_EQ(*fill, ones);
    std::vector<uint8_t> x(c.n);
    for (uint64_t i = 0; i < c.n; ++i) x[i] = i < c.row ? m[i] : m[i] ^ m[i - c.row];
    EXPECT_EQ(Normalize(SpecRunLengths(enc.section, enc.tokens)), RunsOf(x)) << "kind " << c.kind;
    for (uint64_t r : SpecRunLengths(enc.section, enc.tokens)) EXPECT_LE(r, 8190u);
  }
}

}  // namespace
}  // namespace ebzip
