// The GPU table kernel's block-parallel code-length parser
// (gpu/code_length_scan.h), simulated on the CPU with the kernel's own
// per-thread steps: threads are loop iterations and block scans plain loops.
// It must accept exactly the sections a serial parser written from
// FORMAT.md §5.1 accepts, with the same lengths, and agree with the codec's
// ParseCodeLengths on everything but the Kraft check that follows. Needs no
// GPU: the header is plain C++ outside nvcc.
#include "gpu/code_length_scan.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "codec/archive.h"
#include "codec/byte_io.h"
#include "codec/format.h"
#include "codec/huffman_code.h"
#include "gtest/gtest.h"

namespace ebzip::gpu::code_lengths {
namespace {

using Bytes = std::vector<uint8_t>;

// The kernel's lengths[] array: one byte per possible symbol.
constexpr uint32_t kMaxAlphabet = 2 * format::kMaxRadius;

// FORMAT.md §5.1 read item by item; nullopt where the section is invalid.
std::optional<Bytes> ReferenceParse(absl::Span<const uint8_t> bytes, uint32_t alphabet,
                                    uint32_t max_length) {
  Bytes lengths;
  size_t p = 0;
  while (p < bytes.size()) {
    const uint8_t item = bytes[p++];
    if (item != 0) {
      if (item > max_length || lengths.size() == alphabet) return std::nullopt;
      lengths.push_back(item);
      continue;
    }
    uint64_t run = 0;
    for (int group = 0;; ++group) {
      if (p == bytes.size() || group == 6) return std::nullopt;
      const uint8_t b = bytes[p++];
      run += uint64_t{b & 0x7Fu} << (7 * group);
      if (!(b & 0x80)) break;
    }
    if (run == 0 || lengths.size() + run > alphabet) return std::nullopt;
    lengths.resize(lengths.size() + run, 0);
  }
  if (lengths.size() != alphabet) return std::nullopt;
  lengths.resize(kMaxAlphabet, 0);
  return lengths;
}

struct BlockShape {
  uint32_t piece;
  uint32_t threads;
};
constexpr BlockShape kKernelShape{kPiece, kThreads};

// BuildTablesKernel's loop over the section, a thread at a time. `staged`
// lives across pieces, as the kernel's shared array does, so a read past a
// short piece's end would see the previous piece's bytes.
std::optional<Bytes> SimulateBlock(absl::Span<const uint8_t> section, uint32_t alphabet,
                                   uint32_t max_length, BlockShape shape) {
  const uint32_t per_thread = shape.piece / shape.threads;
  Bytes lengths(kMaxAlphabet, 0);
  Bytes staged(kHistory + shape.piece, 0xA5);
  std::vector<uint32_t> maps(shape.threads), states(shape.threads), symbols(shape.threads);
  Carry carry;
  bool parsed = true;
  for (uint64_t base = 0; base < section.size() && parsed; base += shape.piece) {
    const uint32_t piece =
        static_cast<uint32_t>(std::min<uint64_t>(section.size() - base, shape.piece));
    for (uint32_t i = 0; i < kHistory + piece; ++i) {
      staged[i] = base + i >= kHistory ? section[base + i - kHistory] : 0;
    }
    auto mine = [&](uint32_t t) {
      return staged.data() + kHistory + ThreadSpan(t, piece, per_thread).begin;
    };
    auto count = [&](uint32_t t) { return ThreadSpan(t, piece, per_thread).count; };
    for (uint32_t t = 0; t < shape.threads; ++t) maps[t] = SpanMap(mine(t), count(t));
    uint32_t piece_map = kIdentityMap;  // the exclusive scan of maps
    for (uint32_t t = 0; t < shape.threads; ++t) {
      states[t] = ApplyMap(piece_map, carry.state);
      piece_map = ThenMap(piece_map, maps[t]);
    }
    for (uint32_t t = 0; t < shape.threads; ++t) {
      symbols[t] = SpanSymbols(mine(t), count(t), states[t], alphabet);
    }
    uint32_t piece_symbols = 0;  // the exclusive sum of symbols
    for (uint32_t t = 0; t < shape.threads; ++t) {
      parsed &= SpanLengths(mine(t), count(t), states[t], carry.n + piece_symbols, alphabet,
                            max_length, lengths.data());
      piece_symbols += symbols[t];
    }
    carry = AfterPiece(carry, piece_map, piece_symbols, alphabet);
  }
  if (!parsed || !Complete(carry, alphabet)) return std::nullopt;
  return lengths;
}

// What ParseCodeLengths checks after parsing.
bool KraftHolds(absl::Span<const uint8_t> lengths, uint32_t max_length) {
  uint64_t kraft = 0;
  bool any = false;
  for (uint8_t l : lengths) {
    if (l != 0) kraft += uint64_t{1} << (max_length - l), any = true;
  }
  return any && kraft <= (uint64_t{1} << max_length);
}

// Small shapes put many thread and piece boundaries in short sections.
const BlockShape kAllShapes[] = {kKernelShape, {64, 8}, {16, 4}, {9, 3}, {6, 6}, {5, 1}, {1, 1}};
// Enough for the many variants of a long section.
const BlockShape kFewShapes[] = {kKernelShape, {24, 8}};

// Each shape against the reference, and ParseCodeLengths against it where
// they correspond. Returns whether the section is accepted.
bool ExpectAgree(absl::Span<const uint8_t> section, uint32_t alphabet, uint32_t max_length,
                 const std::string& what, absl::Span<const BlockShape> shapes = kAllShapes) {
  SCOPED_TRACE(what + ", alphabet " + std::to_string(alphabet) + ", " +
               std::to_string(section.size()) + " bytes");
  const std::optional<Bytes> reference = ReferenceParse(section, alphabet, max_length);
  for (BlockShape shape : shapes) {
    const std::optional<Bytes> simulated = SimulateBlock(section, alphabet, max_length, shape);
    EXPECT_EQ(simulated.has_value(), reference.has_value())
        << "piece " << shape.piece << ", " << shape.threads << " threads";
    if (simulated && reference) {
      EXPECT_TRUE(*simulated == *reference) << "piece " << shape.piece;
    }
  }
  auto parsed = ParseCodeLengths(section, alphabet, static_cast<int>(max_length));
  const bool codec_accepts =
      reference && KraftHolds(absl::MakeConstSpan(*reference).first(alphabet), max_length);
  EXPECT_EQ(parsed.ok(), codec_accepts) << parsed.status();
  if (parsed.ok() && codec_accepts) {
    EXPECT_TRUE(std::equal(parsed->begin(), parsed->end(), reference->begin()));
  }
  return reference.has_value();
}

// A LEB128 of `run` in `bytes` bytes (more than the shortest: high groups 0).
void AppendLeb(uint64_t run, int bytes, Bytes* out) {
  for (int i = 0; i < bytes; ++i) {
    out->push_back(static_cast<uint8_t>((run & 0x7F) | (i + 1 < bytes ? 0x80 : 0)));
    run >>= 7;
  }
}
int ShortestLeb(uint64_t run) {
  int bytes = 1;
  while (run >> (7 * bytes)) ++bytes;
  return bytes;
}

// Lengths as a writer other than ebzip's may encode them: zero runs split
// into consecutive items at random, LEB128s padded up to 6 bytes.
Bytes EncodeLoosely(absl::Span<const uint8_t> lengths, std::mt19937& rng) {
  Bytes out;
  std::uniform_int_distribution<int> coin(0, 3);
  for (size_t s = 0; s < lengths.size();) {
    if (lengths[s] != 0) {
      out.push_back(lengths[s++]);
      continue;
    }
    uint64_t run = 0;
    while (s < lengths.size() && lengths[s] == 0) ++run, ++s;
    while (run > 0) {
      const uint64_t part =
          coin(rng) == 0 ? std::uniform_int_distribution<uint64_t>(1, run)(rng) : run;
      const int shortest = ShortestLeb(part);
      const int bytes =
          coin(rng) == 0 ? std::uniform_int_distribution<int>(shortest, 6)(rng) : shortest;
      out.push_back(0);
      AppendLeb(part, bytes, &out);
      run -= part;
    }
  }
  return out;
}

// Random lengths of varied density: runs of 1, long runs, dense stretches.
Bytes RandomLengths(uint32_t alphabet, uint32_t max_length, std::mt19937& rng) {
  Bytes lengths(alphabet, 0);
  const double density = std::uniform_real_distribution<double>(0, 1)(rng);
  std::uniform_int_distribution<uint32_t> length(1, max_length);
  std::bernoulli_distribution sparse_used(density * density), dense_used(0.9);
  std::bernoulli_distribution switch_mode(0.01);
  bool dense = false;
  for (uint32_t s = 0; s < alphabet; ++s) {
    if (switch_mode(rng)) dense = !dense;
    if (dense ? dense_used(rng) : sparse_used(rng)) lengths[s] = static_cast<uint8_t>(length(rng));
  }
  return lengths;
}

// Kraft-valid lengths from a random histogram, as the codec would build.
Bytes RandomCode(uint32_t alphabet, uint32_t max_length, std::mt19937& rng) {
  std::vector<uint32_t> histogram(alphabet, 0);
  const double spread = std::uniform_real_distribution<double>(1, alphabet / 2.0)(rng);
  std::normal_distribution<double> symbol(alphabet / 2.0, spread);
  const int samples = std::uniform_int_distribution<int>(1, 200000)(rng);
  for (int i = 0; i < samples; ++i) {
    const double x = std::round(symbol(rng));
    if (x >= 0 && x < alphabet) ++histogram[static_cast<uint32_t>(x)];
  }
  if (std::all_of(histogram.begin(), histogram.end(), [](uint32_t c) { return c == 0; })) {
    histogram[alphabet / 2] = 1;
  }
  return BuildCodeLengths(histogram, static_cast<int>(max_length));
}

// Positions worth mutating: all of a short section; in a long one, those
// around every piece boundary of every shape's kernel piece, and a sample.
std::vector<uint64_t> MutationPositions(uint64_t size, std::mt19937& rng) {
  std::vector<uint64_t> at;
  if (size <= 200) {
    for (uint64_t p = 0; p < size; ++p) at.push_back(p);
    return at;
  }
  for (uint64_t boundary = kPiece; boundary < size + 8; boundary += kPiece) {
    for (uint64_t p = boundary - 8; p < std::min(boundary + 8, size); ++p) at.push_back(p);
  }
  for (uint64_t p : {uint64_t{0}, uint64_t{1}, size - 2, size - 1}) at.push_back(p);
  std::uniform_int_distribution<uint64_t> any(0, size - 1);
  for (int i = 0; i < 40; ++i) at.push_back(any(rng));
  return at;
}

// Single-byte mutations, truncations and extensions of a valid section.
void ExpectMutationsAgree(const Bytes& section, uint32_t alphabet, uint32_t max_length,
                          std::mt19937& rng) {
  const absl::Span<const BlockShape> shapes =
      section.size() <= 200 ? absl::MakeConstSpan(kAllShapes) : absl::MakeConstSpan(kFewShapes);
  int accepted = 0, tried = 0;
  for (uint64_t p : MutationPositions(section.size(), rng)) {
    const uint8_t was = section[p];
    for (int v : {0x00, 0x01, 0x7F, 0x80, 0x81, 0xFF, static_cast<int>(max_length),
                  static_cast<int>(max_length) + 1, was ^ 0x80}) {
      if (v == was) continue;
      Bytes bad = section;
      bad[p] = static_cast<uint8_t>(v);
      accepted += ExpectAgree(bad, alphabet, max_length,
                              "byte " + std::to_string(p) + " set to " + std::to_string(v), shapes);
      ++tried;
      if (testing::Test::HasFailure()) return;
    }
  }
  const uint64_t step = section.size() <= 200 ? 1 : section.size() / 50;
  for (uint64_t keep = 0; keep < section.size(); keep += step) {
    ExpectAgree(absl::MakeConstSpan(section).first(keep), alphabet, max_length,
                "cut to " + std::to_string(keep), shapes);
  }
  for (const Bytes& tail : {Bytes{0x00}, Bytes{0x01}, Bytes{0x00, 0x01}, Bytes{0x80},
                            Bytes{0x00, 0x81, 0x00}, Bytes{0x01, 0x01}}) {
    Bytes longer = section;
    longer.insert(longer.end(), tail.begin(), tail.end());
    EXPECT_FALSE(ExpectAgree(longer, alphabet, max_length, "extended", shapes));
  }
  // Some mutations keep a section valid (a length changed, a run's bits
  // moved between items); most must not.
  EXPECT_LT(accepted, tried);
}

TEST(CodeLengthScan, MapsComposeInOrder) {
  for (uint32_t a = 0; a < 4; ++a) {
    EXPECT_EQ(ThenMap(kIdentityMap, a), a);
    EXPECT_EQ(ThenMap(a, kIdentityMap), a);
    for (uint32_t b = 0; b < 4; ++b) {
      for (uint32_t c = 0; c < 4; ++c) {
        EXPECT_EQ(ThenMap(ThenMap(a, b), c), ThenMap(a, ThenMap(b, c)));
      }
      for (uint32_t s : {kAtItem, kInRun}) {
        EXPECT_EQ(ApplyMap(ThenMap(a, b), s), ApplyMap(b, ApplyMap(a, s)));
      }
    }
  }
  // "00 05": a run starting, then ending; the other order is a length, then
  // a run starting.
  const uint8_t bytes[] = {0x00, 0x05};
  EXPECT_EQ(ApplyMap(SpanMap(bytes, 2), kAtItem), kAtItem);
  EXPECT_EQ(ApplyMap(ThenMap(SpanMap(bytes + 1, 1), SpanMap(bytes, 1)), kAtItem), kInRun);
}

TEST(CodeLengthScan, HandMadeSections) {
  struct Case {
    Bytes bytes;
    uint32_t alphabet;
    bool valid;
  };
  const Case cases[] = {
      // FORMAT.md's example: only symbol 32784 used.
      {{0x00, 0x90, 0x80, 0x02, 0x01, 0x00, 0xEF, 0xFF, 0x01}, 65536, true},
      {{}, 2, false},
      {{0x01, 0x01}, 2, true},
      {{0x01, 0x01, 0x01}, 2, false},
      {{0x01}, 2, false},
      {{0x00}, 2, false},
      {{0x00, 0x00}, 2, false},        // a run of 0
      {{0x00, 0x80, 0x00}, 2, false},  // a run of 0, padded
      {{0x00, 0x02}, 2, true},
      {{0x00, 0x01, 0x00, 0x01}, 2, true},                    // consecutive zero items
      {{0x00, 0x03}, 2, false},                               // past the alphabet
      {{0x01, 0x01, 0x00, 0x01}, 2, false},                   // a run after the alphabet is full
      {{0x00, 0x82}, 2, false},                               // ends inside a run
      {{0x00, 0x82, 0x80, 0x80, 0x80, 0x80, 0x00}, 2, true},  // 6 bytes
      {{0x00, 0x82, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 2, false},  // 7 bytes
      {{0x00, 0x82, 0x80, 0x80, 0x80, 0x80, 0x80}, 2, false},
      {{0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F}, 65536, false},  // 2^42 - 1
      {{0x00, 0x80, 0x80, 0x04}, 65536, true},                     // 65536 in 3 bytes
      {{0x01, 0x00, 0xFF, 0xFF, 0x03}, 65536, true},
      {{0x01, 0x00, 0x80, 0x80, 0x04}, 65536, false},  // 65537 symbols
      {{0x18, 0x00, 0x01}, 2, true},                   // max length 24
      {{0x19, 0x00, 0x01}, 2, false},
      {{0x80, 0x00, 0x01}, 2, false},
  };
  for (const Case& c : cases) {
    std::string what = "section";
    for (uint8_t b : c.bytes) what += " " + std::to_string(b);
    EXPECT_EQ(ExpectAgree(c.bytes, c.alphabet, format::kMaxCodeLength, what), c.valid) << what;
  }
}

// The sections ebzip writes, from fields whose codes are narrow and wide
// (noise at a tight bound uses ~20,000 symbols: a section of several pieces).
TEST(CodeLengthScan, SectionsTheCodecWrites) {
  std::mt19937 rng(1);
  struct Field {
    const char* name;
    std::vector<float> values;
    double bound;
    uint32_t radius;
  };
  std::vector<Field> fields;
  std::uniform_real_distribution<float> noise(-1, 1);
  for (double bound : {1e-2, 1e-4, 1e-5}) {
    std::vector<float> v(200000);
    for (float& x : v) x = noise(rng);
    fields.push_back({"noise", std::move(v), bound, 32768});
  }
  {
    std::vector<float> v(150000);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(i * 1e-3));
    fields.push_back({"sine", v, 1e-6, 32768});
    fields.push_back({"sine, radius 64", v, 1e-6, 64});
    fields.push_back({"constant", std::vector<float>(1000, 3.0f), 1e-3, 1});
  }
  uint64_t longest = 0;
  for (const Field& f : fields) {
    const ArraySpec spec{DType::kFloat32, {f.values.size()}};
    CompressOptions options;  // version 1: its code-length sections are what is scanned
    options.predictor = Predictor::kLorenzo;
    options.lossless = Lossless::kHuffman;
    options.bound = f.bound;
    options.radius = f.radius;
    options.frame_elements = 100000;
    auto archive = Compress(
        spec, {reinterpret_cast<const uint8_t*>(f.values.data()), 4 * f.values.size()}, options);
    ASSERT_TRUE(archive.ok()) << archive.status();
    auto info = ReadArchiveInfo(*archive);
    ASSERT_TRUE(info.ok()) << info.status();
    for (size_t i = 0; i < info->frames.size(); ++i) {
      const format::FrameHeader& h = info->frame_headers[i];
      const uint64_t at = info->frames[i].offset + format::kFrameHeaderSize;
      const Bytes section(archive->begin() + at,
                          archive->begin() + at + h.sections[format::kCodeLengths].length);
      longest = std::max<uint64_t>(longest, section.size());
      const std::string what = std::string(f.name) + " frame " + std::to_string(i);
      ASSERT_TRUE(ExpectAgree(section, 2 * h.radius, h.max_code_length, what));
      ExpectMutationsAgree(section, 2 * h.radius, h.max_code_length, rng);
      if (HasFailure()) return;
    }
  }
  EXPECT_GT(longest, 2 * kPiece);
}

// Sections no ebzip writer makes but readers must take: split runs, padded
// LEB128s; with runs and items across threads' spans and pieces.
TEST(CodeLengthScan, RandomValidSections) {
  std::mt19937 rng(2);
  for (int trial = 0; trial < 60; ++trial) {
    const uint32_t alphabet =
        trial % 3 == 0 ? 65536 : 2 * std::uniform_int_distribution<uint32_t>(1, 2000)(rng);
    const uint32_t max_length = std::uniform_int_distribution<uint32_t>(1, 24)(rng);
    const Bytes lengths = trial % 2 ? RandomLengths(alphabet, max_length, rng)
                                    : RandomCode(alphabet, std::max<uint32_t>(max_length, 16), rng);
    const uint32_t max_used = *std::max_element(lengths.begin(), lengths.end());
    const uint32_t limit = std::max<uint32_t>(max_length, std::max<uint32_t>(max_used, 1));
    const Bytes section = EncodeLoosely(lengths, rng);
    SCOPED_TRACE("trial " + std::to_string(trial));
    ASSERT_TRUE(ExpectAgree(section, alphabet, limit, "random"));
    if (trial % 6 == 1 || trial % 6 == 5) ExpectMutationsAgree(section, alphabet, limit, rng);
    if (HasFailure()) return;
  }
}

// Short sections of random bytes biased to the interesting values: mostly
// invalid, at every offset against threads' spans.
TEST(CodeLengthScan, RandomBytes) {
  std::mt19937 rng(3);
  const uint8_t values[] = {0x00, 0x00, 0x01, 0x02, 0x05, 0x7F, 0x80, 0x81, 0xFF, 0x18, 0x19};
  std::uniform_int_distribution<size_t> pick(0, sizeof(values) - 1);
  int accepted = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const uint32_t alphabet = 2 * std::uniform_int_distribution<uint32_t>(1, 8)(rng);
    Bytes section(std::uniform_int_distribution<size_t>(0, 24)(rng));
    for (uint8_t& b : section) b = values[pick(rng)];
    accepted += ExpectAgree(section, alphabet, format::kMaxCodeLength, "random bytes");
    if (HasFailure()) return;
  }
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace ebzip::gpu::code_lengths
