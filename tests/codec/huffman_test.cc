#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "codec/chunk_layout.h"
#include "codec/entropy_coder.h"
#include "codec/format.h"
#include "codec/huffman_code.h"
#include "codec/huffman_decoder.h"
#include "codec/huffman_encoder.h"
#include "codec/run_tokens.h"
#include "gtest/gtest.h"
#include "tests/run_streams.h"

namespace ebzip {
namespace {

double Kraft(const std::vector<uint8_t>& lengths) {
  double k = 0;
  for (uint8_t l : lengths) {
    if (l) k += std::ldexp(1.0, -l);
  }
  return k;
}

TEST(HuffmanCode, TextbookLengths) {
  // Frequencies 1,1,2,4: the optimal code has lengths 3,3,2,1.
  EXPECT_EQ(BuildCodeLengths(std::vector<uint32_t>{1, 1, 2, 4}, 20),
            (std::vector<uint8_t>{3, 3, 2, 1}));
  // Unused symbols get no code; one used symbol gets one bit.
  EXPECT_EQ(BuildCodeLengths(std::vector<uint32_t>{0, 5, 0}, 20), (std::vector<uint8_t>{0, 1, 0}));
}

TEST(HuffmanCode, LengthLimitHolds) {
  // Fibonacci weights make the deepest possible tree.
  std::vector<uint32_t> fib(30);
  fib[0] = fib[1] = 1;
  for (size_t i = 2; i < fib.size(); ++i) fib[i] = fib[i - 1] + fib[i - 2];
  for (int limit : {5, 8, 12, 20}) {
    auto lengths = BuildCodeLengths(fib, limit);
    EXPECT_LE(*std::max_element(lengths.begin(), lengths.end()), limit);
    EXPECT_LE(Kraft(lengths), 1.0);
    EXPECT_DOUBLE_EQ(Kraft(lengths), 1.0) << "a Huffman code is complete";
  }
}

// The rule archives depend on, written as plainly as possible: used symbols
// stably sorted by weight (ties by symbol), a two-queue Huffman tree that
// prefers the leaf on ties, and all weights halved (rounding up) until the
// tree fits. GPU and CPU archives are the same bytes only while
// BuildCodeLengths keeps to it exactly.
std::vector<uint8_t> ReferenceLengths(const std::vector<uint32_t>& histogram, int max_length) {
  std::vector<uint8_t> lengths(histogram.size(), 0);
  std::vector<uint32_t> used;
  for (uint32_t s = 0; s < histogram.size(); ++s) {
    if (histogram[s]) used.push_back(s);
  }
  if (used.size() == 1) lengths[used[0]] = 1;
  if (used.size() <= 1) return lengths;
  std::vector<uint64_t> weights(histogram.begin(), histogram.end());
  for (;;) {
    std::vector<uint32_t> order = used;
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return weights[a] < weights[b]; });
    const size_t m = order.size();
    std::vector<uint64_t> w(2 * m - 1);
    std::vector<size_t> parent(2 * m - 1);
    for (size_t i = 0; i < m; ++i) w[i] = weights[order[i]];
    size_t leaf = 0, internal = m;
    for (size_t next = m; next < 2 * m - 1; ++next) {
      size_t pick[2];
      for (size_t& p : pick) {
        p = leaf < m && (internal >= next || w[leaf] <= w[internal]) ? leaf++ : internal++;
      }
      w[next] = w[pick[0]] + w[pick[1]];
      parent[pick[0]] = parent[pick[1]] = next;
    }
    std::vector<int> depth(2 * m - 1, 0);
    for (size_t i = 2 * m - 2; i-- > 0;) depth[i] = depth[parent[i]] + 1;
    if (*std::max_element(depth.begin(), depth.begin() + m) <= max_length) {
      for (size_t i = 0; i < m; ++i) lengths[order[i]] = static_cast<uint8_t>(depth[i]);
      return lengths;
    }
    for (uint32_t s : used) weights[s] = (weights[s] + 1) / 2;
  }
}

TEST(HuffmanCode, LengthsFollowTheReferenceRule) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    const uint32_t size = 1 + rng() % 20000;
    std::vector<uint32_t> hist(size, 0);
    switch (trial % 4) {
      case 0:  // a peaked, Laplace-like residual histogram
        for (uint32_t s = 0; s < size; ++s) {
          const double x = (static_cast<double>(s) - size / 2.0) / (1 + size / 50.0);
          hist[s] = static_cast<uint32_t>(1e6 * std::exp(-std::abs(x))) * (rng() % 8 != 0);
        }
        break;
      case 1:  // many ties: weights from a handful of values
        for (uint32_t& h : hist) h = rng() % 5;
        break;
      case 2:  // skewed enough to need flattening at small limits
        for (uint32_t s = 0; s < size && s < 40; ++s) hist[s] = 1u << std::min<uint32_t>(s, 31);
        break;
      default:  // weights across the whole 32-bit range
        for (uint32_t& h : hist) h = rng() % 3 == 0 ? static_cast<uint32_t>(rng()) : 0;
    }
    for (int limit : {12, 16, 24}) {
      if (std::count_if(hist.begin(), hist.end(), [](uint32_t h) { return h != 0; }) >
          (1 << limit)) {
        continue;
      }
      ASSERT_EQ(BuildCodeLengths(hist, limit), ReferenceLengths(hist, limit))
          << "trial " << trial << ", limit " << limit;
    }
  }
}

TEST(HuffmanCode, CanonicalCodesArePrefixFree) {
  std::mt19937 rng(1);
  std::vector<uint32_t> hist(300);
  for (auto& h : hist) h = rng() % 1000;
  auto lengths = BuildCodeLengths(hist, 12);
  auto codes = CanonicalCodes(lengths);
  for (size_t a = 0; a < hist.size(); ++a) {
    for (size_t b = 0; b < hist.size(); ++b) {
      if (a == b || !lengths[a] || !lengths[b] || lengths[a] > lengths[b]) continue;
      EXPECT_NE(codes[b] >> (lengths[b] - lengths[a]), codes[a]) << a << " prefixes " << b;
    }
  }
}

// Sparse alphabets of every size around the 8-length steps the zero runs are
// skipped in, a code at the very end included: the codes are the canonical
// ones (counted here the plain way, symbol by symbol), and the decode table
// gives each symbol back from its code.
TEST(HuffmanCode, SparseAlphabetsOfAnySizeGetCanonicalCodesAndDecode) {
  std::mt19937 rng(7);
  for (uint32_t size = 2; size <= 70; ++size) {
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<uint32_t> hist(size, 0);
      for (uint32_t& h : hist) h = rng() % 5 == 0 ? 1 + rng() % 100 : 0;
      hist[size - 1] = 1 + rng() % 100;  // the last symbol is coded
      hist[rng() % size] += 1;           // and at least two are, mostly
      const std::vector<uint8_t> lengths = BuildCodeLengths(hist, 12);
      const std::vector<uint32_t> codes = CanonicalCodes(lengths);
      ASSERT_EQ(codes.size(), size);

      std::vector<uint32_t> next(14, 0);
      uint32_t code = 0;
      for (int l = 1; l <= 12; ++l) {
        uint32_t shorter = 0;
        for (uint8_t x : lengths) shorter += x == l - 1 ? 1 : 0;
        code = (code + (l == 1 ? 0 : shorter)) << 1;
        next[l] = code;
      }
      const HuffmanTable table(lengths);
      for (uint32_t s = 0; s < size; ++s) {
        if (lengths[s] == 0) continue;
        ASSERT_EQ(codes[s], next[lengths[s]]++) << "size " << size << ", symbol " << s;
        uint16_t decoded = 0;
        const uint32_t window = codes[s] << (32 - lengths[s]);
        ASSERT_EQ(table.Decode(window, &decoded), lengths[s])
            << "size " << size << ", symbol " << s;
        ASSERT_EQ(decoded, s);
      }
    }
  }
}

TEST(HuffmanCode, CodeLengthSectionRoundTrips) {
  std::vector<uint8_t> lengths(65536, 0);
  lengths[7] = 3;
  lengths[32768] = 1;
  lengths[32769] = 2;
  lengths[65535] = 3;
  std::vector<uint8_t> bytes;
  AppendCodeLengths(lengths, &bytes);
  EXPECT_LT(bytes.size(), 20u);
  auto parsed = ParseCodeLengths(bytes, 65536, 20);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, lengths);
}

// The GPU codec writes the section from the used symbols alone; the bytes
// must be those of the whole alphabet: zero runs first, last, between, none,
// and long enough to need several LEB128 bytes.
TEST(HuffmanCode, SparseCodeLengthsAreTheWholeAlphabetsBytes) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    const uint32_t alphabet = 1 + rng() % 65536;
    std::vector<uint8_t> lengths(alphabet, 0);
    const int density = 1 + rng() % 4;  // 1: every symbol used, 4: a quarter
    // Some trials use the first or the last symbol; some use none.
    const uint32_t first = trial % 4 == 0 ? 0 : rng() % alphabet;
    const uint32_t end = trial % 3 == 0 ? alphabet : first + rng() % (alphabet - first + 1);
    for (uint32_t i = first; i < end; ++i) {
      if (rng() % density == 0) lengths[i] = 1 + rng() % 20;
    }
    std::vector<uint32_t> symbols;
    std::vector<uint8_t> used;
    for (uint32_t i = 0; i < alphabet; ++i) {
      if (lengths[i]) symbols.push_back(i), used.push_back(lengths[i]);
    }
    std::vector<uint8_t> whole, sparse;
    AppendCodeLengths(lengths, &whole);
    AppendCodeLengths(symbols, used, alphabet, &sparse);
    ASSERT_EQ(sparse, whole) << "alphabet " << alphabet << ", used " << symbols.size();
    // Their size from the used symbols alone (counts do not matter).
    std::vector<SymbolCount> listed;
    for (uint32_t s : symbols) listed.push_back({s, 1 + static_cast<uint32_t>(rng() % 1000)});
    ASSERT_EQ(CodeLengthBytes(listed, alphabet), whole.size())
        << "alphabet " << alphabet << ", used " << symbols.size();
  }
}

TEST(HuffmanCode, CodeLengthSectionRejectsNonsense) {
  auto code = [](std::vector<uint8_t> bytes, uint32_t alphabet) {
    return ParseCodeLengths(bytes, alphabet, 20).status().code();
  };
  EXPECT_EQ(code({1, 1, 1}, 3), absl::StatusCode::kDataLoss);     // Kraft > 1
  EXPECT_EQ(code({1, 1}, 3), absl::StatusCode::kDataLoss);        // too few
  EXPECT_EQ(code({1, 1, 0, 2}, 3), absl::StatusCode::kDataLoss);  // run past the end
  EXPECT_EQ(code({21, 0, 2}, 3), absl::StatusCode::kDataLoss);    // too long
  EXPECT_EQ(code({0, 3}, 3), absl::StatusCode::kDataLoss);        // no code at all
  EXPECT_EQ(code({0, 0x80}, 3), absl::StatusCode::kDataLoss);     // unterminated varint
  EXPECT_EQ(code({}, 3), absl::StatusCode::kDataLoss);
  EXPECT_EQ(code({1, 1, 0}, 3), absl::StatusCode::kDataLoss);  // dangling zero run
}

struct CodedStream {
  std::vector<uint16_t> symbols;
  std::vector<uint8_t> lengths;
  EncodedSymbols encoded;
};

CodedStream MakeStream(uint64_t n, uint32_t alphabet, double skew, uint32_t chunk, uint32_t subseq,
                       int seed) {
  std::mt19937 rng(seed);
  std::geometric_distribution<int> g(skew);
  CodedStream s;
  s.symbols.resize(n);
  for (auto& x : s.symbols) x = static_cast<uint16_t>(std::min<uint32_t>(g(rng), alphabet - 1));
  auto hist = Histogram(s.symbols, alphabet);
  s.lengths = BuildCodeLengths(hist, 20);
  s.encoded = HuffmanEncode(s.symbols, s.lengths, CanonicalCodes(s.lengths), chunk, subseq, true);
  return s;
}

TEST(HuffmanDecode, AllDecodersAgreeWithTheInput) {
  int seed = 0;
  for (double skew : {0.9, 0.3, 0.01}) {
    for (uint32_t chunk : {1u, 7u, 1000u, 16384u}) {
      for (uint32_t subseq : {32u, 96u, 1024u}) {
        CodedStream s = MakeStream(50000, 4096, skew, chunk, subseq, ++seed);
        HuffmanTable table(s.lengths);
        BitstreamView view{s.encoded.words, &s.encoded.layout, s.encoded.gaps, chunk, subseq, {}};
        for (DecoderKind kind :
             {DecoderKind::kChunkParallel, DecoderKind::kGapArray, DecoderKind::kSelfSync}) {
          std::vector<uint16_t> out(s.symbols.size());
          auto status = HuffmanDecode(kind, table, view, absl::MakeSpan(out));
          ASSERT_TRUE(status.ok()) << DecoderKindName(kind) << status;
          ASSERT_EQ(out, s.symbols) << DecoderKindName(kind) << " skew " << skew << " chunk "
                                    << chunk << " subseq " << subseq;
        }
      }
    }
  }
}

TEST(HuffmanDecode, CorruptBitsAreDetectedOrHarmless) {
  CodedStream s = MakeStream(20000, 512, 0.2, 4096, 128, 42);
  HuffmanTable table(s.lengths);
  std::mt19937 rng(7);
  int detected = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<uint32_t> words = s.encoded.words;
    words[rng() % words.size()] ^= 1u << (rng() % 32);
    BitstreamView view{words, &s.encoded.layout, s.encoded.gaps, 4096, 128, {}};
    for (DecoderKind kind :
         {DecoderKind::kChunkParallel, DecoderKind::kGapArray, DecoderKind::kSelfSync}) {
      std::vector<uint16_t> out(s.symbols.size());
      auto status = HuffmanDecode(kind, table, view, absl::MakeSpan(out));
      if (!status.ok()) {
        EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
        ++detected;
      }
    }
  }
  // A flipped bit usually changes codeword boundaries; the archive's CRC
  // catches the rest before the decoder runs.
  EXPECT_GT(detected, 100);
}

TEST(HuffmanDecode, GapDecoderNeedsGaps) {
  CodedStream s = MakeStream(1000, 64, 0.5, 100, 64, 3);
  HuffmanTable table(s.lengths);
  BitstreamView view{s.encoded.words, &s.encoded.layout, {}, 100, 64, {}};
  std::vector<uint16_t> out(s.symbols.size());
  EXPECT_EQ(HuffmanDecode(DecoderKind::kGapArray, table, view, absl::MakeSpan(out)).code(),
            absl::StatusCode::kFailedPrecondition);
}

// A region decodes chunks' first positions only (HuffmanDecodePrefixes):
// each listed chunk's first `count` symbols as the full decode has them, a
// run token cut where the prefix ends, nothing else of the output written.
TEST(HuffmanDecode, PrefixesAreTheFullDecodesFirstPositions) {
  constexpr uint32_t kRadius = 100;
  std::mt19937 rng(11);
  std::vector<uint16_t> symbols;
  while (symbols.size() < 60000) {
    if (rng() % 3 == 0) {
      symbols.push_back(static_cast<uint16_t>(1 + rng() % (2 * kRadius - 1)));
      // Run-value tokens end on +-1 or +-2: some runs are cut after them.
      if (rng() % 2 == 0) symbols.back() = static_cast<uint16_t>(kRadius - 2 + rng() % 5);
    } else {
      symbols.insert(symbols.end(), 1 + rng() % (rng() % 8 == 0 ? 9000 : 40), kRadius);
    }
  }
  for (uint32_t chunk : {1000u, 16384u}) {
    for (uint8_t stage : {format::kLosslessHuffman, format::kLosslessZeroRuns,
                          format::kLosslessRunValues}) {
      SCOPED_TRACE(::testing::Message() << "chunk " << chunk << ", stage " << int{stage});
      const StageCode code =
          stage == format::kLosslessHuffman
              ? PlainCode(symbols, kRadius, 20)
              : TokenCode(symbols, RunTokens::ForStage(stage, kRadius), chunk, 20);
      const EncodedSymbols encoded = EncodeWith(code, symbols, chunk, 1024, true, nullptr);
      const HuffmanTable table(code.lengths);
      const BitstreamView view{encoded.words, &encoded.layout, encoded.gaps, chunk, 1024,
                               code.runs};
      const uint64_t chunks = encoded.layout.bits.size();
      for (uint64_t c = 0; c < chunks; c += 3) {
        const uint64_t size = std::min<uint64_t>(chunk, symbols.size() - c * chunk);
        for (uint64_t count : {uint64_t{1}, 1 + rng() % size, size - 1, size}) {
          if (count == 0) continue;
          std::vector<uint16_t> out(symbols.size(), 0xFFFF);
          const ChunkPrefix prefix{c, count};
          ASSERT_TRUE(HuffmanDecodePrefixes(table, view, {&prefix, 1}, absl::MakeSpan(out)).ok());
          for (uint64_t i = 0; i < out.size(); ++i) {
            const bool listed = i >= c * chunk && i < c * chunk + count;
            ASSERT_EQ(out[i], listed ? symbols[i] : 0xFFFF) << "chunk " << c << ", count "
                                                            << count << ", position " << i;
          }
        }
      }
    }
  }
}

TEST(SymbolCounts, AgreeWithTheHistogramAndTheTokens) {
  // Runs of the zero symbol of every length around the token limits (8191),
  // the 64-symbol blocks and the chunk ends, between other symbols.
  constexpr uint32_t kRadius = 100;
  std::mt19937 rng(7);
  for (uint32_t chunk : {16384u, 1000u, 64u, 5u}) {
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<uint16_t> symbols;
      const uint64_t n = 40000 + 17 * trial;
      while (symbols.size() < n) {
        const uint32_t kind = rng() % 4;
        uint64_t run = kind == 0 ? rng() % 3 + 1 : kind == 1 ? rng() % 200 : rng() % 20000;
        if (kind == 3) run = 8190 + rng() % 4;
        for (uint64_t k = 0; k < run && symbols.size() < n; ++k) symbols.push_back(kRadius);
        for (uint32_t k = rng() % 4; k > 0 && symbols.size() < n; --k) {
          symbols.push_back(static_cast<uint16_t>(rng() % (2 * kRadius)));
          // Often a residual of -3 .. +3 (run-value tokens take +-1, +-2).
          if (rng() % 2 == 0) symbols.back() = static_cast<uint16_t>(kRadius - 3 + rng() % 7);
        }
      }
      SCOPED_TRACE("chunk " + std::to_string(chunk) + " trial " + std::to_string(trial));
      const SymbolCounts counts = CountSymbols(symbols, chunk, kRadius);
      EXPECT_EQ(counts.histogram, Histogram(symbols, 2 * kRadius));
      for (bool values : {false, true}) {
        const TokenStats expected = TokenHistogram(symbols, chunk, {true, kRadius, values});
        const TokenStats got = counts.Tokens(kRadius, values);
        EXPECT_EQ(got.histogram, expected.histogram) << "values " << values;
        EXPECT_EQ(got.extra_bits, expected.extra_bits) << "values " << values;
      }
    }
  }
}

// With radius 1 or 2 symbol 0 (an outlier) is residual -1 or -2 and is
// taken into run-value tokens like any residual; residuals that are no
// symbol are never counted.
TEST(SymbolCounts, AgreeWithTheTokensAtTheSmallestRadii) {
  std::mt19937 rng(5);
  for (uint32_t radius : {1u, 2u}) {
    std::vector<uint16_t> symbols(30000);
    for (uint16_t& s : symbols) s = static_cast<uint16_t>(rng() % 3 ? radius : rng() % (2 * radius));
    for (uint32_t chunk : {16384u, 7u}) {
      SCOPED_TRACE(::testing::Message() << "radius " << radius << ", chunk " << chunk);
      const SymbolCounts counts = CountSymbols(symbols, chunk, radius);
      for (bool values : {false, true}) {
        const TokenStats expected = TokenHistogram(symbols, chunk, {true, radius, values});
        const TokenStats got = counts.Tokens(radius, values);
        EXPECT_EQ(got.histogram, expected.histogram) << "values " << values;
        EXPECT_EQ(got.extra_bits, expected.extra_bits) << "values " << values;
      }
    }
  }
}

// FORMAT.md §15.8's tokens, written out as the spec words them: per chunk,
// each maximal run of k zeros, class-12 tokens while k >= 8192, then with
// run values the last token takes a following -2, -1, +1 or +2; otherwise a
// run token for k >= 2 or the zero itself. Each token as (symbol, extra
// value, positions).
struct SpecToken {
  uint32_t symbol, extra, positions;
  bool operator==(const SpecToken&) const = default;
};
std::vector<SpecToken> SpecTokens(const std::vector<uint16_t>& symbols, uint32_t chunk,
                                  uint32_t radius, bool values) {
  std::vector<SpecToken> out;
  for (size_t begin = 0; begin < symbols.size(); begin += chunk) {
    const size_t end = std::min(symbols.size(), begin + chunk);
    for (size_t i = begin; i < end;) {
      if (symbols[i] != radius) {
        out.push_back({symbols[i], 0, 1});
        ++i;
        continue;
      }
      size_t k = 0;
      while (i + k < end && symbols[i + k] == radius) ++k;
      i += k;
      while (k >= 8192) {
        out.push_back({2 * radius + 11, 4095, 8191});
        k -= 8191;
      }
      int c = 0;
      while ((size_t{2} << c) <= k) ++c;  // floor(log2 k)
      const int v = i < end ? int{symbols[i]} - static_cast<int>(radius) : 0;
      const int j = v == -2 ? 0 : v == -1 ? 1 : v == 1 ? 2 : v == 2 ? 3 : -1;
      if (values && j >= 0) {
        out.push_back({2 * radius + 12 + 4 * static_cast<uint32_t>(c) + j,
                       static_cast<uint32_t>(k - (size_t{1} << c)), static_cast<uint32_t>(k + 1)});
        ++i;
      } else if (k >= 2) {
        out.push_back({2 * radius + c - 1, static_cast<uint32_t>(k - (size_t{1} << c)),
                       static_cast<uint32_t>(k)});
      } else {
        out.push_back({radius, 0, 1});
      }
    }
  }
  return out;
}

TEST(RunTokens, AreTheSpecsTokensAndDecodeBackByEveryDecoder) {
  for (const testing::SymbolStream& s : testing::SymbolStreams(1)) {
    for (uint8_t stage : {format::kLosslessZeroRuns, format::kLosslessRunValues}) {
      if (stage == format::kLosslessRunValues && s.radius > format::kMaxRadiusWithRunValues) {
        continue;
      }
      SCOPED_TRACE(::testing::Message() << s.name << ", stage " << int{stage});
      const RunTokens runs = RunTokens::ForStage(stage, s.radius);
      std::vector<SpecToken> got;
      for (size_t begin = 0; begin < s.symbols.size(); begin += s.chunk_symbols) {
        const size_t size = std::min<size_t>(s.chunk_symbols, s.symbols.size() - begin);
        ForEachToken(absl::MakeConstSpan(s.symbols).subspan(begin, size), runs,
                     [&](uint32_t symbol, int, uint32_t extra, uint32_t positions) {
                       got.push_back({symbol, extra, positions});
                     });
      }
      ASSERT_EQ(got, SpecTokens(s.symbols, s.chunk_symbols, s.radius, runs.values));

      const StageCode code = TokenCode(s.symbols, runs, s.chunk_symbols, 20);
      const EncodedSymbols encoded = EncodeWith(code, s.symbols, s.chunk_symbols, 96, true,
                                                nullptr);
      const HuffmanTable table(code.lengths);
      const BitstreamView view{encoded.words, &encoded.layout, encoded.gaps, s.chunk_symbols, 96,
                               code.runs};
      for (DecoderKind kind :
           {DecoderKind::kChunkParallel, DecoderKind::kGapArray, DecoderKind::kSelfSync}) {
        std::vector<uint16_t> out(s.symbols.size());
        ASSERT_TRUE(HuffmanDecode(kind, table, view, absl::MakeSpan(out)).ok())
            << DecoderKindName(kind);
        ASSERT_EQ(out, s.symbols) << DecoderKindName(kind);
      }
    }
  }
}

// With radius 1 the run-value tokens of -2, +1 and +2 name no symbol
// (FORMAT.md §15.4.1): a stream of them is rejected, not decoded to symbols
// past the alphabet; the token of -1 (symbol 0) decodes.
TEST(RunTokens, ValuesThatAreNoSymbolAreRejected) {
  const RunTokens runs{true, 1, true};
  std::vector<uint8_t> lengths(runs.alphabet(), 0);
  const uint32_t good = RunValueToken(1, 0, 1);  // a zero, then symbol 0
  const uint32_t bad = RunValueToken(1, 0, 2);   // a zero, then symbol 2 = 2 * radius
  lengths[good] = 1;                             // codeword 0
  lengths[bad] = 1;                              // codeword 1
  const std::vector<uint16_t> symbols = {1, 0, 1, 0};
  const EncodedSymbols encoded =
      HuffmanEncode(symbols, lengths, CanonicalCodes(lengths), 4, 32, true, nullptr, runs);
  ASSERT_EQ(encoded.layout.bits, std::vector<uint32_t>{2});  // two tokens of one bit
  const HuffmanTable table(lengths);
  for (bool flip : {false, true}) {
    std::vector<uint32_t> words = encoded.words;
    ChunkLayout layout = encoded.layout;
    if (flip) {
      // bad, bad, good: four positions if a bad token were taken for a lone
      // zero, so only rejecting it fails the decode.
      words[0] = 0xC0000000u;
      layout.bits[0] = 3;
    }
    const BitstreamView view{words, &layout, encoded.gaps, 4, 32, runs};
    for (DecoderKind kind :
         {DecoderKind::kChunkParallel, DecoderKind::kGapArray, DecoderKind::kSelfSync}) {
      std::vector<uint16_t> out(4);
      const absl::Status status = HuffmanDecode(kind, table, view, absl::MakeSpan(out));
      if (flip) {
        EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << DecoderKindName(kind);
      } else {
        ASSERT_TRUE(status.ok()) << DecoderKindName(kind) << status;
        EXPECT_EQ(out, symbols) << DecoderKindName(kind);
      }
    }
  }
}

// The stage of fewest bits wins, the lower id on a tie, among those allowed.
TEST(SmallerCode, TakesTheStageOfFewestBits) {
  for (const testing::SymbolStream& s : testing::SymbolStreams(1)) {
    if (s.radius > format::kMaxRadiusWithRunValues) continue;
    SCOPED_TRACE(s.name);
    std::array<uint64_t, 3> bits{};
    bits[0] = PlainCode(s.symbols, s.radius, 20).bits;
    for (uint8_t stage : {format::kLosslessZeroRuns, format::kLosslessRunValues}) {
      bits[stage] =
          TokenCode(s.symbols, RunTokens::ForStage(stage, s.radius), s.chunk_symbols, 20).bits;
    }
    for (uint8_t allowed = 1; allowed < 8; ++allowed) {
      uint8_t best = 0xFF;
      for (uint8_t id = 0; id < 3; ++id) {
        if ((allowed >> id & 1) && (best == 0xFF || bits[id] < bits[best])) best = id;
      }
      const StageCode code = SmallerCode(s.symbols, s.radius, s.chunk_symbols, 20, allowed);
      EXPECT_EQ(code.runs.stage(), best) << "allowed " << int{allowed};
      EXPECT_EQ(code.bits, bits[best]) << "allowed " << int{allowed};
    }
  }
}

}  // namespace
}  // namespace ebzip
