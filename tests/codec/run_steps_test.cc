// Version 2's GPU kernels (gpu/run_kernels.cu, gpu/fill_mask_kernels.cu and
// the block decoder of gpu/decode_kernels.cu) simulated on the CPU with their
// own per-thread steps (gpu/run_steps.h, gpu/decode_steps.h): threads are
// loop iterations, block scans are serial scans, barriers the gaps between
// loops. Each simulation must give the CPU codec's bytes (codec/run_tokens.h,
// huffman_encoder.cc, huffman_decoder.cc, fill_mask.cc), and reject what it
// rejects. Needs no GPU: both headers are plain C++ outside nvcc.
#include "gpu/run_steps.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codec/byte_io.h"
#include "codec/chunk_layout.h"
#include "codec/fill_mask.h"
#include "codec/format.h"
#include "codec/huffman_code.h"
#include "codec/huffman_decoder.h"
#include "codec/huffman_encoder.h"
#include "codec/run_tokens.h"
#include "gpu/decode_steps.h"
#include "gtest/gtest.h"
#include "tests/run_streams.h"

namespace ebzip::gpu {
namespace {

using testing::MaskCases;
using testing::SymbolStreams;

struct Token {
  uint32_t symbol;
  int extra_bits;
  uint32_t extra;
  uint32_t positions;
  bool operator==(const Token& o) const {
    return symbol == o.symbol && extra_bits == o.extra_bits && extra == o.extra &&
           positions == o.positions;
  }
};

std::string Show(const Token& t) {
  return "{symbol " + std::to_string(t.symbol) + ", extra " + std::to_string(t.extra_bits) + ":" +
         std::to_string(t.extra) + ", positions " + std::to_string(t.positions) + "}";
}

// First index where two vectors differ, or -1 (and the sizes).
template <typename T>
std::string FirstDifference(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size()) {
    return "sizes " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(got[i] == want[i])) {
      return "index " + std::to_string(i) + ": " + std::to_string(got[i]) + " vs " +
             std::to_string(want[i]);
    }
  }
  return "";
}

// ---------------------------------------------------------------------------
// Tokens: PrepareSlice and Slice::Walk of gpu/run_kernels.cu.

// The streams of tests/run_streams.h, and more for run-value tokens
// (FORMAT.md §15.4.1): runs ending exactly at a slice's end with a residual
// a run takes (or not) first in the next slice, at every slice boundary of
// the thread counts the tests use; residuals -3 .. +3 after runs of every
// length; radius 1 and 2, where the residuals -1 and -2 are symbol 0 (an
// outlier), which a run takes too.
std::vector<testing::SymbolStream> Streams() {
  std::vector<testing::SymbolStream> v = SymbolStreams(1);
  // Slices of 16 (4096 positions, 256 threads), 4 (1024 threads) and 13
  // (4096 / 313 ...): runs of up to 40 zeros placed to end at multiples of
  // 4, then a residual of -3 .. +3 (0 being a zero that lengthens the run).
  for (uint32_t radius : {512u, 2u, 1u}) {
    std::mt19937 rng(radius);
    // What comes before a run: a residual of +3 (with radius 1 and 2 every
    // residual but 0 is one a run takes: the outlier symbol 0).
    const uint16_t other = static_cast<uint16_t>(radius >= 4 ? radius + 3 : 0);
    std::vector<uint16_t> sym;
    while (sym.size() < 60000) {
      const uint64_t end = (sym.size() / 4 + 1 + rng() % 6) * 4;  // the run's end
      const uint64_t k = std::min<uint64_t>(end - sym.size(), 1 + rng() % 40);
      while (sym.size() + k < end) sym.push_back(other);
      sym.insert(sym.end(), k, static_cast<uint16_t>(radius));
      const int residual = static_cast<int>(rng() % 7) - 3;
      sym.push_back(static_cast<uint16_t>(std::clamp<int>(static_cast<int>(radius) + residual, 0,
                                                          2 * static_cast<int>(radius) - 1)));
    }
    const std::string r = std::to_string(radius);
    v.push_back({"slice_ends_radius_" + r, sym, radius, 4096});
    v.push_back({"slice_ends_odd_chunks_radius_" + r, sym, radius, 1000});
  }
  // Long runs (the split at 8191) ended by each residual, and chunk ends
  // inside and right after runs, before a residual a run would take.
  std::vector<uint16_t> lng;
  for (uint64_t k : {8190, 8191, 8192, 8193, 16382, 16383, 16384, 24574, 4096, 4095}) {
    for (int residual : {-3, -2, -1, 1, 2, 3}) {
      lng.insert(lng.end(), k, uint16_t{512});
      lng.push_back(static_cast<uint16_t>(512 + residual));
    }
  }
  v.push_back({"long_runs_then_values", lng, 512, 65536});
  v.push_back({"long_runs_then_values_chunks_4096", lng, 512, 4096});
  v.push_back({"long_runs_then_values_chunks_8193", lng, 512, 8193});
  // Runs ending at a chunk's end, a takable residual first in the next.
  std::vector<uint16_t> edge;
  for (uint32_t c = 0; c < 40; ++c) {
    const uint32_t k = 1 + c * 37 % 300;
    edge.insert(edge.end(), 1000 - k, uint16_t{400});
    edge.insert(edge.end(), k, uint16_t{512});
  }
  for (size_t i = 1000; i < edge.size(); i += 1000) edge[i] = static_cast<uint16_t>(511 + i % 3);
  v.push_back({"runs_to_chunk_ends", edge, 512, 1000});
  return v;
}

// Each stream's stages: plain, zero-run tokens, and run-value tokens where
// the radius allows them (FORMAT.md §15.2).
std::vector<RunTokens> StagesOf(uint32_t radius) {
  std::vector<RunTokens> v;
  for (uint8_t id :
       {format::kLosslessHuffman, format::kLosslessZeroRuns, format::kLosslessRunValues}) {
    if (id == format::kLosslessRunValues && radius > format::kMaxRadiusWithRunValues) continue;
    v.push_back(RunTokens::ForStage(id, radius));
  }
  return v;
}

struct Slices {
  std::vector<uint32_t> begin, end, before;
  std::vector<bool> continues;
};

// `runs`: how the slices own the runs (run values or not). `before`, each
// slice's state: the zeros directly before it, counted back from it.
Slices PrepareSlices(const uint16_t* sym, uint32_t count, const RunTokens& runs, int threads) {
  Slices s;
  const uint32_t zero = run_steps::ZeroSymbol(runs.enabled, runs.radius);
  const uint32_t per = (count + threads - 1) / threads;
  for (int t = 0; t < threads; ++t) {
    const uint32_t b = std::min(count, t * per), e = std::min(count, b + per);
    s.begin.push_back(b);
    s.end.push_back(e);
    uint32_t zeros = 0;  // directly before the slice, counted back from it
    while (zeros < b && sym[b - 1 - zeros] == zero) ++zeros;
    s.before.push_back(zeros);
    s.continues.push_back(e < count &&
                          run_steps::RunContinues(zero, runs.radius, runs.values, sym[e]));
  }
  return s;
}

run_steps::SliceWalk BeginWalk(const uint16_t* sym, const Slices& s, int t, const RunTokens& runs) {
  return run_steps::BeginSlice(run_steps::ZeroSymbol(runs.enabled, runs.radius), runs.radius,
                               runs.values, sym[s.begin[t]], s.before[t]);
}

template <class F>
void WalkSlice(const uint16_t* sym, const Slices& s, int t, const RunTokens& runs, F&& token) {
  if (s.begin[t] >= s.end[t]) return;
  run_steps::SliceWalk w = BeginWalk(sym, s, t, runs);
  for (uint32_t i = s.begin[t]; i < s.end[t]; ++i) run_steps::StepSymbol(w, sym[i], token);
  run_steps::EndSlice(w, s.continues[t], token);
}

// RunCountersKernel's block on one chunk, its threads' max-scan done in
// turn: calls ended(k, next) for every run of k >= 1 zeros (next
// kNoRunValue at the chunk's end) and gives each of `slices` slices (cut as
// PrepareSlices cuts them) the zeros before it.
template <class F>
std::vector<uint32_t> CountByPosition(const uint16_t* sym, int32_t count, uint32_t zero,
                                      int threads, int slices, F&& ended) {
  constexpr int kGroup = run_steps::kGroupSymbols;
  const int32_t per = (count + slices - 1) / slices;
  std::vector<uint32_t> states(slices, 0xDEADBEEFu);
  int32_t last = -1;
  for (int32_t base = 0; base < count; base += threads * kGroup) {
    std::vector<uint32_t> nz(threads, 0);
    for (int t = 0; t < threads; ++t) {
      const int32_t p0 = base + t * kGroup;
      for (int e = 0; e < kGroup; ++e) {
        if (p0 + e < count && sym[p0 + e] != zero) nz[t] |= 1u << e;
      }
    }
    int32_t scan = -1;  // the exclusive max-scan, the tiles before included
    for (int t = 0; t < threads; ++t) {
      const int32_t p0 = base + t * kGroup;
      const int32_t prev = std::max(scan, last);
      scan = std::max(scan, run_steps::LastNonZero(nz[t], p0, -1));
      for (int32_t j = per == 0 ? slices : (p0 + per - 1) / per;
           j < slices && j * per < std::min(p0 + kGroup, count); ++j) {
        states[j] = run_steps::ZerosBefore(j * per, nz[t], p0, prev);
      }
      run_steps::ForEachRunEnd(nz[t], p0, prev,
                               [&](uint32_t k, int e) { ended(k, uint32_t{sym[p0 + e]}); });
    }
    last = std::max(last, scan);
  }
  if (last < count - 1) ended(static_cast<uint32_t>(count - 1 - last), kNoRunValue);
  for (int j = 0; j < slices; ++j) {
    if (j * per >= count) states[j] = static_cast<uint32_t>(count - 1 - last);
  }
  return states;
}

std::string StageName(const RunTokens& runs) { return " lossless " + std::to_string(runs.stage()); }

// RunClass is one count-leading-zeros instruction: the class is the
// largest c with 2^c <= k, checked by the definition on every run length.
TEST(RunSteps, RunClassIsTheLargestPowerOfTwoInTheRun) {
  EXPECT_EQ(RunClass(0), 0);
  for (uint32_t k = 1; k <= 2 * format::kMaxRunPositions; ++k) {
    const int c = RunClass(k);
    ASSERT_TRUE(c >= 0 && c < 32) << k;
    ASSERT_LE(uint64_t{1} << c, k) << k;
    ASSERT_GT(uint64_t{2} << c, k) << k;
  }
}

// TokensOf gives RunThen's tokens, in order, for runs around the class
// edges and the long-run split, every kind of symbol after them, and the
// chunk's end.
TEST(RunSteps, TokensOfListsRunThensTokens) {
  struct Listed {
    uint32_t symbol, extra_bits, extra;
    bool operator==(const Listed&) const = default;
  };
  for (uint32_t radius : {1u, 2u, 3u, 100u, format::kMaxRadiusWithRunValues}) {
    std::vector<uint32_t> nexts = {kNoRunValue, 0, radius - 1, radius + 1, 2 * radius - 1};
    if (radius >= 2) nexts.push_back(radius - 2);
    if (radius >= 3) {
      nexts.push_back(radius + 2);
      nexts.push_back(radius - 3);
    }
    std::vector<uint32_t> ks;
    for (uint32_t k = 0; k <= 20; ++k) ks.push_back(k);
    for (uint32_t k : {255u, 256u, 4095u, 4096u, 8190u, 8191u, 8192u, 8193u, 16382u, 16383u,
                       16384u, 65535u}) {
      ks.push_back(k);
    }
    for (bool values : {false, true}) {
      for (uint32_t next : nexts) {
        for (uint32_t k : ks) {
          std::vector<Listed> want, got;
          run_steps::RunThen(k, next, radius, values,
                             [&](uint32_t sym, int bits, uint32_t extra, uint32_t) {
                               want.push_back({sym, static_cast<uint32_t>(bits), extra});
                             });
          const run_steps::TokensAt t = run_steps::TokensOf(k, next, radius, values);
          for (uint32_t i = 0; i < t.long_runs; ++i) {
            got.push_back({2 * radius + format::kRunClasses - 1, format::kRunClasses,
                           (1u << format::kRunClasses) - 1});
          }
          if (t.has_run) got.push_back({t.run_symbol, t.run_extra_bits, t.run_extra});
          if (t.has_own) got.push_back({next, 0, 0});
          ASSERT_TRUE(got == want) << "radius " << radius << " values " << values << " k " << k
                                   << " next " << next << ": " << got.size() << " tokens, want "
                                   << want.size();
          if (!t.has_run) {
            EXPECT_EQ(t.run_extra, 0u);  // packed as nothing
          }
        }
      }
    }
  }
}

TEST(RunSteps, SliceWalksGiveForEachTokensTokens) {
  for (const auto& st : Streams()) {
    for (const RunTokens& runs : StagesOf(st.radius)) {
      const uint64_t n = st.symbols.size();
      for (int threads : {1, 3, 32, 256, 313, 1024}) {
        for (uint64_t c0 = 0; c0 < n; c0 += st.chunk_symbols) {
          const uint32_t count =
              static_cast<uint32_t>(std::min<uint64_t>(st.chunk_symbols, n - c0));
          const uint16_t* sym = st.symbols.data() + c0;
          std::vector<Token> want, got;
          ForEachToken(absl::MakeConstSpan(sym, count), runs,
                       [&](uint32_t s, int b, uint32_t e, uint32_t p) {
                         want.push_back({s, b, e, p});
                       });
          const Slices sl = PrepareSlices(sym, count, runs, threads);
          for (int t = 0; t < threads; ++t) {
            WalkSlice(sym, sl, t, runs, [&](uint32_t s, int b, uint32_t e, uint32_t p) {
              got.push_back({s, b, e, p});
            });
          }
          ASSERT_EQ(got.size(), want.size())
              << st.name << StageName(runs) << " threads " << threads << " chunk at " << c0;
          for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_TRUE(got[i] == want[i])
                << st.name << StageName(runs) << " threads " << threads << " chunk at " << c0
                << " token " << i << ": " << Show(got[i]) << " vs " << Show(want[i]);
          }
        }
      }
    }
  }
}

// RunCountersKernel (both stages' runs, counted by position) and
// TokenHistogramKernel: each stage's copy of the symbol histogram, patched,
// is TokenHistogram's, the counters are CountSymbols's, and each slice's
// state is the zeros before it, counted back from it.
TEST(RunSteps, CountersPatchTheSymbolHistogramIntoTokenHistograms) {
  for (const auto& st : Streams()) {
    const RunTokens counting = RunTokens::ForStage(format::kLosslessRunValues, st.radius);
    for (int threads : {256, 3}) {
      uint32_t counters[run_steps::kRunCounters] = {};
      const uint64_t n = st.symbols.size();
      for (uint64_t c0 = 0; c0 < n; c0 += st.chunk_symbols) {
        const uint32_t count = static_cast<uint32_t>(std::min<uint64_t>(st.chunk_symbols, n - c0));
        const uint16_t* sym = st.symbols.data() + c0;
        for (int slices : {1024, 313}) {
          const Slices want = PrepareSlices(sym, count, counting, slices);
          const std::vector<uint32_t> states = CountByPosition(
              sym, static_cast<int32_t>(count), run_steps::ZeroSymbol(true, st.radius), threads,
              slices, [&](uint32_t k, uint32_t next) {
                EXPECT_GE(k, 1u);
                if (slices != 1024) return;  // counted once
                run_steps::CountRun(k, next, st.radius,
                                    [&](int i, uint32_t amount) { counters[i] += amount; });
              });
          for (int j = 0; j < slices; ++j) {
            ASSERT_EQ(states[j], want.before[j]) << st.name << " threads " << threads
                                                 << " chunk at " << c0 << " slice " << j;
          }
        }
      }
      const std::string where = st.name + " threads " + std::to_string(threads);
      // The counters are SymbolCounts's (its lossless-1 runs and run values).
      const SymbolCounts cpu = CountSymbols(st.symbols, st.chunk_symbols, st.radius);
      EXPECT_EQ(counters[0], cpu.zero_runs.lone_zeros) << where;
      for (int c = 1; c <= format::kRunClasses; ++c) {
        EXPECT_EQ(counters[c], cpu.zero_runs.classes[c - 1]) << where << " class " << c;
      }
      for (int k = 0; k < format::kRunValueTokens; ++k) {
        EXPECT_EQ(counters[run_steps::kRunValueCounters + k], cpu.run_values[k])
            << where << " run-value token " << k;
      }
      for (const RunTokens& runs : StagesOf(st.radius)) {
        if (!runs.enabled) continue;
        const TokenStats want = TokenHistogram(st.symbols, st.chunk_symbols, runs);
        std::vector<uint32_t> hist = Histogram(st.symbols, runs.alphabet());
        const uint64_t extra =
            run_steps::PatchTokenHistogram(counters, st.radius, runs.values, hist.data());
        EXPECT_EQ(FirstDifference(hist, want.histogram), "") << where << StageName(runs);
        EXPECT_EQ(extra, want.extra_bits) << where << StageName(runs);
      }
    }
  }
}

// A bitstream's words as threads write them: plain stores only to words no
// other thread touches, ORs into the rest.
struct WordSink {
  std::vector<uint32_t> words;
  std::vector<int> owner;  // -1 untouched, -2 shared, else the only thread
  std::vector<bool> plain;
  std::string error;

  explicit WordSink(uint64_t n) : words(n, 0), owner(n, -1), plain(n, false) {}
  void Store(uint64_t i, uint32_t v, int thread) {
    if (i >= words.size()) return Fail("store past the end at word " + std::to_string(i));
    if (owner[i] != -1 && owner[i] != thread) {
      return Fail("plain store to word " + std::to_string(i) + " that another thread writes");
    }
    owner[i] = thread;
    plain[i] = true;
    words[i] = v;
  }
  void Merge(uint64_t i, uint32_t v, int thread) {
    if (i >= words.size()) return Fail("merge past the end at word " + std::to_string(i));
    if (plain[i] && owner[i] != thread) {
      return Fail("merge into word " + std::to_string(i) + " stored plainly by another thread");
    }
    owner[i] = owner[i] == -1 || owner[i] == thread ? thread : -2;
    words[i] |= v;
  }
  void Fail(const std::string& e) {
    if (error.empty()) error = e;
  }
};

// RunChunkBitsKernel and RunEncodeKernel (threads per chunk as given).
struct SimulatedEncoding {
  std::vector<uint32_t> bits, words;
  std::vector<uint8_t> gaps;
  std::string error;
};
SimulatedEncoding SimulateEncode(const std::vector<uint16_t>& symbols, const RunTokens& runs,
                                 uint32_t chunk_symbols, uint32_t sub,
                                 const std::vector<uint8_t>& lengths,
                                 const std::vector<uint32_t>& codes, int threads) {
  SimulatedEncoding out;
  const uint64_t n = symbols.size();
  const uint64_t chunks = (n + chunk_symbols - 1) / chunk_symbols;
  std::vector<Slices> slices;
  for (uint64_t c = 0; c < chunks; ++c) {
    const uint32_t count =
        static_cast<uint32_t>(std::min<uint64_t>(chunk_symbols, n - c * chunk_symbols));
    const uint16_t* sym = symbols.data() + c * chunk_symbols;
    slices.push_back(PrepareSlices(sym, count, runs, threads));
    uint32_t bits = 0;
    for (int t = 0; t < threads; ++t) {
      WalkSlice(sym, slices.back(), t, runs,
                [&](uint32_t s, int extra, uint32_t, uint32_t) { bits += lengths[s] + extra; });
    }
    out.bits.push_back(bits);
  }
  const ChunkLayout layout = ChunkLayout::FromBits(out.bits, sub);
  WordSink sink(layout.total_words);
  out.gaps.assign(layout.total_gap_entries, 0xEE);
  for (uint64_t c = 0; c < chunks; ++c) {
    const uint16_t* sym = symbols.data() + c * chunk_symbols;
    uint32_t pos = 0;
    for (int t = 0; t < threads; ++t) {
      uint32_t my_bits = 0;
      WalkSlice(sym, slices[c], t, runs,
                [&](uint32_t s, int extra, uint32_t, uint32_t) { my_bits += lengths[s] + extra; });
      run_steps::WordPacker<uint32_t> packer(pos / 32, pos % 32);
      run_steps::GapWriter gap_writer(pos, sub);
      const uint64_t base = layout.start_word[c];
      auto store = [&](uint64_t i, uint32_t v) { sink.Store(base + i, v, t); };
      auto merge = [&](uint64_t i, uint32_t v) { sink.Merge(base + i, v, t); };
      auto gap = [&](uint32_t j, uint32_t e) {
        const uint64_t at = layout.gap_offset[c] + j;
        if (at >= out.gaps.size() || e > 255) {
          sink.Fail("gap entry " + std::to_string(j) + " of chunk " + std::to_string(c));
        } else {
          out.gaps[at] = static_cast<uint8_t>(e);
        }
      };
      WalkSlice(sym, slices[c], t, runs, [&](uint32_t s, int extra_bits, uint32_t extra, uint32_t) {
        const uint32_t l = lengths[s] + static_cast<uint32_t>(extra_bits);
        packer.Put(uint64_t{codes[s]} << extra_bits | extra, l, store, merge);
        gap_writer.Put(l, gap);
      });
      packer.Finish(merge);
      pos += my_bits;
    }
  }
  out.words = std::move(sink.words);
  out.error = sink.error;
  return out;
}

struct Coded {
  std::vector<uint8_t> lengths;
  std::vector<uint32_t> codes;
};
Coded CodeFor(const std::vector<uint16_t>& symbols, const RunTokens& runs, uint32_t chunk_symbols) {
  const TokenStats stats = TokenHistogram(symbols, chunk_symbols, runs);
  Coded c;
  c.lengths = BuildCodeLengths(stats.histogram, runs.enabled ? format::kMaxCodeLengthWithRuns : 20);
  c.codes = CanonicalCodes(c.lengths);
  return c;
}

TEST(RunSteps, EncodeSimulationGivesHuffmanEncodesBytes) {
  for (const auto& st : Streams()) {
    for (const RunTokens& runs : StagesOf(st.radius)) {
      const Coded code = CodeFor(st.symbols, runs, st.chunk_symbols);
      for (uint32_t sub : {32u, 96u, 1024u}) {
        const EncodedSymbols want = HuffmanEncode(st.symbols, code.lengths, code.codes,
                                                  st.chunk_symbols, sub, true, nullptr, runs);
        for (int threads : {1, 7, 1024}) {
          const SimulatedEncoding got = SimulateEncode(st.symbols, runs, st.chunk_symbols, sub,
                                                       code.lengths, code.codes, threads);
          const std::string where = st.name + StageName(runs) + " sub " + std::to_string(sub) +
                                    " threads " + std::to_string(threads);
          ASSERT_EQ(got.error, "") << where;
          ASSERT_EQ(FirstDifference(got.bits, want.layout.bits), "") << where << " chunk bits";
          ASSERT_EQ(FirstDifference(got.words, want.words), "") << where << " words";
          ASSERT_EQ(FirstDifference(got.gaps, want.gaps), "") << where << " gaps";
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// The block decoder (BlockDecodeKernel): speculative runs, corrections,
// chain and count checks, then each run decoded into place.

struct ChunkInput {
  std::vector<uint32_t> words;  // the chunk's own words
  uint32_t bits;
  std::vector<uint8_t> gaps;  // the chunk's entries
  uint32_t count;             // positions
};

// DecodeToken of gpu/decode_kernels.cu over HuffmanTable.
struct CpuDecoder {
  const HuffmanTable& table;
  RunTokens runs;
  const ChunkInput& in;
  uint32_t Window(uint32_t pos) const {
    const uint64_t w = pos / 32;
    const uint64_t hi = w < in.words.size() ? in.words[w] : 0;
    const uint64_t lo = w + 1 < in.words.size() ? in.words[w + 1] : 0;
    return static_cast<uint32_t>(((hi << 32 | lo) << (pos % 32)) >> 32);
  }
  // `positions` of `symbol`, the last one `value` unless kNoRunValue.
  int Token(uint32_t pos, uint32_t* symbol, uint32_t* positions, uint32_t* value) const {
    const uint32_t window = Window(pos);
    uint16_t s = 0;
    int l = table.Decode(window, &s);
    *symbol = s;
    *positions = 1;
    *value = kNoRunValue;
    if (l != 0 && runs.IsRun(s)) {
      const RunTokenShape shape = ShapeOf(s, runs.radius);
      const int c = shape.klass;
      *positions =
          (1u << c) + (c == 0 ? 0 : (window << l) >> (32 - c)) + (shape.value != kNoRunValue);
      *symbol = runs.radius;
      *value = shape.value;
      l += c;
    }
    return l;
  }
  int operator()(uint32_t pos, uint32_t* positions) const {
    uint32_t s, value;
    return Token(pos, &s, positions, &value);
  }
};

// Returns "" and the chunk's positions, or what failed.
template <bool kRuns>
std::string SimulateBlockDecode(const HuffmanTable& table, RunTokens runs, const ChunkInput& in,
                                bool self_sync, uint32_t sub, int threads,
                                std::vector<uint16_t>* out) {
  using decode_steps::kNoEnd;
  const CpuDecoder decode{table, runs, in};
  const uint32_t bits = in.bits;
  const uint32_t run_bits = !self_sync && sub % 128 == 0 ? sub / 4 : sub;
  const uint32_t num_runs = (bits + run_bits - 1) / run_bits;
  const uint32_t per = (num_runs + threads - 1) / threads;
  const int T = threads;
  std::vector<uint32_t> boundary(T), stop(T), start(T + 1), end(T), n(T, 0), traced(T, 0);
  std::vector<std::vector<uint32_t>> trace(T, std::vector<uint32_t>(decode_steps::kTrace));
  std::vector<bool> active(T), exact(T), ok(T, true);
  std::string error;
  auto fail = [&](const std::string& e) {
    if (error.empty()) error = e;
  };
  for (int t = 0; t < T; ++t) {
    boundary[t] = std::min<uint32_t>(bits, t * per * run_bits);
    stop[t] = std::min<uint32_t>(bits, (t + 1) * per * run_bits);
    active[t] = boundary[t] < bits;
    exact[t] = active[t] && (t == 0 || (!self_sync && boundary[t] % sub == 0));
    uint32_t pos = boundary[t];
    if (!self_sync && exact[t]) {
      pos = boundary[t] + in.gaps[boundary[t] / sub];
      ok[t] = pos <= bits && (t > 0 || pos == 0);
      if (!ok[t]) fail("gap array (exact start)");
    }
    start[t] = active[t] ? pos : bits;
    const bool valid =
        active[t] && ok[t] &&
        decode_steps::TraceRun<kRuns>(decode, pos, stop[t], bits, n[t], trace[t].data(), traced[t]);
    end[t] = !active[t] ? bits : valid ? pos : kNoEnd;
  }
  for (int round = 0; round <= T; ++round) {
    std::vector<uint32_t> want(T);
    std::vector<bool> redo(T);
    bool any = false;
    for (int t = 0; t < T; ++t) {
      want[t] = t == 0 ? 0 : end[t - 1];
      redo[t] = active[t] && !exact[t] && want[t] != kNoEnd && want[t] != start[t];
      any |= redo[t];
    }
    for (int t = 0; t < T; ++t) {
      if (!redo[t]) continue;
      uint32_t e = end[t];
      decode_steps::Correct<kRuns>(decode, want[t], stop[t], bits, trace[t].data(), traced[t], n[t],
                                   &e);
      end[t] = e;
      start[t] = want[t];
      // The trace must be the path's first starts, ascending.
      for (uint32_t i = 1; i < traced[t]; ++i) {
        if (trace[t][i] <= trace[t][i - 1]) return "trace not ascending";
      }
    }
    if (!any) break;
  }
  for (int t = 0; t < T; ++t) {
    if (active[t] && ok[t]) {
      ok[t] = end[t] != kNoEnd && end[t] == (t + 1 < T ? start[t + 1] : bits);
      if (!ok[t]) fail("runs do not chain");
    }
  }
  uint64_t total = 0;
  std::vector<uint64_t> rank(T);
  for (int t = 0; t < T; ++t) {
    rank[t] = total;
    total += !(active[t] && ok[t]) ? 0 : kRuns ? std::min(n[t], in.count + 1) : n[t];
  }
  const bool chained = end[T - 1] == bits || bits == 0;
  if (total != in.count || !chained) {
    fail("count");
    return error;
  }
  out->assign(in.count, 0xFFFF);
  for (int t = 0; t < T; ++t) {
    if (!(active[t] && ok[t])) continue;
    uint32_t p = start[t], m = 0;
    uint32_t next_sub = (boundary[t] / sub + 1) * sub;
    while (p < stop[t]) {
      if (!self_sync && next_sub < stop[t] && p >= next_sub) {
        if (p != next_sub + in.gaps[next_sub / sub]) fail("gap array (checked)");
        next_sub += sub;
        continue;
      }
      uint32_t sym, positions, value;
      const int l = decode.Token(p, &sym, &positions, &value);
      if (l == 0 || p + l > bits) {
        fail("final pass: invalid token");
        break;
      }
      for (uint32_t k = 0; k < positions && rank[t] + m + k < in.count; ++k) {
        const bool last = k + 1 == positions && value != kNoRunValue;
        (*out)[rank[t] + m + k] = static_cast<uint16_t>(last ? value : sym);
      }
      m += positions;
      p += l;
    }
    // GapCheckedRun checks the starts that the last tokens reach too.
    while (!self_sync && next_sub < stop[t]) {
      if (p != next_sub + in.gaps[next_sub / sub]) fail("gap array (checked)");
      next_sub += sub;
    }
    if (m != n[t])
      return "decoded " + std::to_string(m) + " positions, counted " + std::to_string(n[t]) +
             " (thread " + std::to_string(t) + ")";
  }
  return error;
}

// Chunks of an encoding, for the simulation.
std::vector<ChunkInput> Chunks(const EncodedSymbols& e, uint64_t n, uint32_t chunk_symbols,
                               uint32_t sub) {
  std::vector<ChunkInput> v;
  const uint64_t chunks = e.layout.bits.size();
  for (uint64_t c = 0; c < chunks; ++c) {
    ChunkInput in;
    in.bits = e.layout.bits[c];
    const uint64_t w0 = e.layout.start_word[c];
    in.words.assign(e.words.begin() + w0, e.words.begin() + w0 + (in.bits + 31) / 32);
    const uint64_t g0 = e.layout.gap_offset[c];
    in.gaps.assign(e.gaps.begin() + g0, e.gaps.begin() + g0 + (in.bits + sub - 1) / sub);
    in.count = static_cast<uint32_t>(std::min<uint64_t>(chunk_symbols, n - c * chunk_symbols));
    v.push_back(std::move(in));
  }
  return v;
}

template <bool kRuns>
void CheckBlockDecode(const std::string& name, const std::vector<uint16_t>& symbols,
                      const RunTokens& runs, uint32_t chunk_symbols, uint32_t sub,
                      int corruptions) {
  ASSERT_EQ(kRuns, runs.enabled);
  const Coded code = CodeFor(symbols, runs, chunk_symbols);
  EncodedSymbols e =
      HuffmanEncode(symbols, code.lengths, code.codes, chunk_symbols, sub, true, nullptr, runs);
  const HuffmanTable table(code.lengths);
  std::mt19937 rng(7);
  for (int trial = 0; trial <= corruptions; ++trial) {
    EncodedSymbols x = e;
    std::string what = "intact";
    if (trial > 0) {
      // Flip a few bits of the bitstream, or change a gap entry.
      std::uniform_int_distribution<uint64_t> word(0, x.words.size() - 1);
      if (trial % 3 == 0 && !x.gaps.empty()) {
        std::uniform_int_distribution<uint64_t> g(0, x.gaps.size() - 1);
        x.gaps[g(rng)] ^= 1 + trial % 5;
        what = "gap changed";
      } else {
        for (int k = 0; k < 1 + trial % 3; ++k) x.words[word(rng)] ^= 1u << (rng() % 32);
        what = "bits flipped";
      }
    }
    std::vector<uint16_t> cpu_gap(symbols.size()), cpu_sync(symbols.size());
    BitstreamView view{x.words, &x.layout, x.gaps, chunk_symbols, sub, runs};
    const bool gap_ok =
        HuffmanDecode(DecoderKind::kGapArray, table, view, absl::MakeSpan(cpu_gap)).ok();
    const bool sync_ok =
        HuffmanDecode(DecoderKind::kSelfSync, table, view, absl::MakeSpan(cpu_sync)).ok();
    const std::vector<ChunkInput> chunks = Chunks(x, symbols.size(), chunk_symbols, sub);
    for (bool self_sync : {true, false}) {
      for (int threads : {512, 5}) {
        std::vector<uint16_t> got;
        bool sim_ok = true;
        std::string first_error;
        for (size_t c = 0; c < chunks.size() && sim_ok; ++c) {
          std::vector<uint16_t> part;
          const std::string err =
              SimulateBlockDecode<kRuns>(table, runs, chunks[c], self_sync, sub, threads, &part);
          if (!err.empty()) {
            sim_ok = false;
            first_error = "chunk " + std::to_string(c) + ": " + err;
          }
          got.insert(got.end(), part.begin(), part.end());
        }
        const std::string where = name + StageName(runs) + " (" + what + ", trial " +
                                  std::to_string(trial) + ") " +
                                  (self_sync ? "self-sync" : "gap array") + " threads " +
                                  std::to_string(threads) + " sub " + std::to_string(sub);
        ASSERT_EQ(first_error.find("decoded"), std::string::npos) << where << ": " << first_error;
        ASSERT_EQ(first_error.find("trace"), std::string::npos) << where << ": " << first_error;
        const bool cpu_ok = self_sync ? sync_ok : gap_ok;
        ASSERT_EQ(sim_ok, cpu_ok) << where << ": simulation says '" << first_error << "'";
        if (cpu_ok) {
          ASSERT_EQ(FirstDifference(got, self_sync ? cpu_sync : cpu_gap), "") << where;
        }
      }
    }
  }
}

TEST(RunSteps, BlockDecoderSimulationDecodesWhatTheCpuDecodes) {
  for (const auto& st : Streams()) {
    if (st.symbols.size() > 100000 && st.chunk_symbols < 1000) continue;  // slow, covered
    for (uint32_t sub : {32u, 128u, 512u}) {
      for (const RunTokens& runs : StagesOf(st.radius)) {
        if (runs.enabled) {
          CheckBlockDecode<true>(st.name, st.symbols, runs, st.chunk_symbols, sub, 12);
        } else {
          CheckBlockDecode<false>(st.name, st.symbols, runs, st.chunk_symbols, sub, 3);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Fill mask: the encoder's and decoder's kernels over words and tiles.

struct SimulatedMask {
  std::vector<uint8_t> section;
  uint64_t tokens = 0;
  std::string error;
};

SimulatedMask SimulateMaskEncode(const std::vector<uint8_t>& mask, uint64_t row,
                                 uint64_t tile_words) {
  const uint64_t n = mask.size();
  const uint64_t words = (n + 63) / 64;
  const uint64_t tiles = (words + tile_words - 1) / tile_words;
  std::vector<uint64_t> bnd(words), start(words);
  std::vector<uint32_t> tokens(words), wbits(words);
  // BoundaryKernel, then the tiles' max-scan and each tile's own (CountKernel).
  std::vector<uint64_t> tile_last(tiles, 0);
  for (uint64_t w = 0; w < words; ++w) {
    bnd[w] = run_steps::BoundaryWord([&](uint64_t i) { return mask[i]; }, w, n, row);
    tile_last[w / tile_words] =
        std::max(tile_last[w / tile_words], run_steps::LastBoundary(bnd[w], w, 0));
  }
  uint64_t carry = 0;
  for (uint64_t tile = 0; tile < tiles; ++tile) {
    uint64_t before = 0;
    for (uint64_t w = tile * tile_words; w < std::min(words, (tile + 1) * tile_words); ++w) {
      start[w] = std::max(carry, before);
      before = std::max(before, run_steps::LastBoundary(bnd[w], w, 0));
    }
    carry = std::max(carry, tile_last[tile]);
  }
  uint32_t histogram[run_steps::kMaskClasses] = {};
  uint64_t total_tokens = 0;
  for (uint64_t w = 0; w < words; ++w) {
    tokens[w] = run_steps::CountWordTokens(bnd[w], w, n, start[w], histogram);
    total_tokens += tokens[w];
  }
  SimulatedMask out;
  out.tokens = total_tokens;
  const uint64_t chunks = (total_tokens + format::kMaskChunkTokens - 1) / format::kMaskChunkTokens;
  run_steps::MaskCode code;
  run_steps::MaskCodeLengths(histogram, code.lengths);
  run_steps::FinishMaskCode(&code);
  uint64_t total_bits = 0;
  std::vector<uint64_t> t0(words), g0(words);
  for (uint64_t w = 0; w < words; ++w) {
    wbits[w] = static_cast<uint32_t>(run_steps::WordBits(code, bnd[w], w, n, start[w]));
    t0[w] = w == 0 ? 0 : t0[w - 1] + tokens[w - 1];
    g0[w] = w == 0 ? 0 : g0[w - 1] + wbits[w - 1];
    total_bits += wbits[w];
  }
  std::vector<uint64_t> chunk_bit0(chunks + 1, ~uint64_t{0});
  for (uint64_t w = 0; w < words; ++w) {
    run_steps::WordChunkStarts(
        code, bnd[w], w, n, start[w], t0[w], g0[w], [&](uint64_t c, uint64_t g) {
          if (c >= chunks || chunk_bit0[c] != ~uint64_t{0}) {
            out.error = "chunk start " + std::to_string(c) + " twice or past";
          } else {
            chunk_bit0[c] = g;
          }
        });
  }
  std::vector<uint64_t> chunk_word0(chunks);
  std::vector<uint32_t> chunk_bits(chunks);
  uint64_t total_words = 0;
  for (uint64_t c = 0; c < chunks; ++c) {
    if (chunk_bit0[c] == ~uint64_t{0}) out.error = "chunk " + std::to_string(c) + " has no start";
    const uint64_t end = c + 1 < chunks ? chunk_bit0[c + 1] : total_bits;
    chunk_bits[c] = static_cast<uint32_t>(end - chunk_bit0[c]);
    chunk_word0[c] = total_words;
    total_words += (chunk_bits[c] + 31) / 32;
  }
  if (!out.error.empty()) return out;
  WordSink sink(total_words);
  for (uint64_t w = 0; w < words; ++w) {
    if (tokens[w] == 0) continue;
    const int t = static_cast<int>(w);
    run_steps::PackWord(
        code, bnd[w], w, n, start[w], t0[w], g0[w], [&](uint64_t c) { return chunk_bit0[c]; },
        [&](uint64_t c) { return chunk_word0[c]; },
        [&](uint64_t i, uint32_t v) { sink.Store(i, v, t); },
        [&](uint64_t i, uint32_t v) { sink.Merge(i, v, t); });
  }
  out.error = sink.error;
  out.section.assign(code.lengths, code.lengths + run_steps::kMaskClasses);
  out.section.resize(format::kMaskHeaderBytes, 0);
  ByteWriter bw(&out.section);
  for (uint32_t b : chunk_bits) bw.Put<uint32_t>(b);
  for (uint32_t v : sink.words) bw.Put<uint32_t>(v);
  return out;
}

TEST(RunSteps, MaskCodeLengthsAreBuildCodeLengths) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 20000; ++trial) {
    uint32_t h[run_steps::kMaskClasses];
    bool any = false;
    const int kind = trial % 4;
    for (int c = 0; c < run_steps::kMaskClasses; ++c) {
      uint32_t v = 0;
      if (kind == 0) v = rng() % 5;
      if (kind == 1) v = rng() % 3 == 0 ? 0 : rng();
      if (kind == 2) v = rng() % 2 ? 1u << (rng() % 31) : 0;
      if (kind == 3) v = rng() % 1000;
      h[c] = v;
      any |= v != 0;
    }
    if (!any) h[rng() % run_steps::kMaskClasses] = 1 + rng() % 7;
    const std::vector<uint8_t> want =
        BuildCodeLengths(std::vector<uint32_t>(h, h + run_steps::kMaskClasses), 20);
    run_steps::MaskCode code;
    run_steps::MaskCodeLengths(h, code.lengths);
    run_steps::FinishMaskCode(&code);
    const std::vector<uint32_t> codes = CanonicalCodes(want);
    for (int c = 0; c < run_steps::kMaskClasses; ++c) {
      ASSERT_EQ(code.lengths[c], want[c]) << "trial " << trial << " class " << c;
      ASSERT_EQ(code.codes[c], codes[c]) << "trial " << trial << " class " << c;
    }
    ASSERT_TRUE(run_steps::ValidMaskCode(code.lengths));
  }
}

TEST(RunSteps, MaskEncodeSimulationGivesEncodeFillMasksBytes) {
  for (const auto& mc : MaskCases(1)) {
    const EncodedFillMask want = EncodeFillMask(mc.mask, mc.row);
    for (uint64_t tile_words : {256u, 3u, 1u}) {
      const SimulatedMask got = SimulateMaskEncode(mc.mask, mc.row, tile_words);
      ASSERT_EQ(got.error, "") << mc.name;
      EXPECT_EQ(got.tokens, want.tokens) << mc.name;
      ASSERT_EQ(FirstDifference(got.section, want.section), "")
          << mc.name << " tiles of " << tile_words;
    }
  }
}

// The decoder's kernels: header checks, each chunk's tokens, the toggles,
// the parities' scan, X and the row undo by groups. Returns the MaskCheck
// (0 when accepted) and the mask and fill count.
uint32_t SimulateMaskDecode(const std::vector<uint8_t>& section, uint64_t tokens, uint64_t row,
                            uint64_t n, uint64_t group_threads, std::vector<uint8_t>* mask,
                            uint64_t* fill) {
  const uint64_t chunks = (tokens + format::kMaskChunkTokens - 1) / format::kMaskChunkTokens;
  if (tokens == 0 || section.size() < 16 + 4 * chunks) return 1;
  for (int i = 13; i < 16; ++i) {
    if (section[i] != 0) return 2;
  }
  run_steps::MaskCode code;
  std::copy_n(section.begin(), 13, code.lengths);
  if (!run_steps::ValidMaskCode(code.lengths)) return 3;
  const uint64_t words_bytes = section.size() - 16 - 4 * chunks;
  if (words_bytes % 4 != 0) return 4;
  run_steps::FinishMaskCode(&code);
  const uint64_t total_words = words_bytes / 4;
  std::vector<uint16_t> lookup(1 << 10);
  for (uint32_t e = 0; e < lookup.size(); ++e) lookup[e] = run_steps::MaskLookupEntry(code, e, 10);
  std::vector<uint64_t> word0(chunks), elems(chunks);
  std::vector<uint16_t> lengths(tokens);
  uint64_t at = 0;
  for (uint64_t c = 0; c < chunks; ++c) {
    word0[c] = at;
    at += (uint64_t{LoadLE<uint32_t>(section.data() + 16 + 4 * c)} + 31) / 32;
  }
  uint32_t first_check = 0;
  for (uint64_t c = 0; c < chunks && first_check == 0; ++c) {
    const uint64_t bits = LoadLE<uint32_t>(section.data() + 16 + 4 * c);
    const uint64_t num_words = (bits + 31) / 32;
    if (word0[c] + num_words > total_words) {
      first_check = 5;
      break;
    }
    const uint8_t* words = section.data() + 16 + 4 * chunks + 4 * word0[c];
    auto word = [&](uint64_t i) -> uint32_t {
      return i < num_words ? LoadLE<uint32_t>(words + 4 * i) : 0u;
    };
    const uint32_t count = static_cast<uint32_t>(
        std::min<uint64_t>(format::kMaskChunkTokens, tokens - c * format::kMaskChunkTokens));
    uint32_t checks[2];
    uint64_t sums[2] = {};
    for (int k = 0; k < 2; ++k) {  // with the kernel's lookup, and without
      checks[k] = run_steps::DecodeMaskChunk(
          code, k == 0 ? lookup.data() : nullptr, 10, word, count, bits, &sums[k],
          [&](uint32_t t, uint32_t length) {
            lengths[c * format::kMaskChunkTokens + t] = static_cast<uint16_t>(length);
          });
    }
    EXPECT_EQ(checks[0], checks[1]) << "chunk " << c;
    if (checks[0] == 0) {
      EXPECT_EQ(sums[0], sums[1]) << "chunk " << c;
    }
    if (checks[0] != 0) first_check = checks[0];
    elems[c] = sums[0];
    if (c + 1 == chunks && word0[c] + num_words != total_words && first_check == 0) {
      first_check = 8;
    }
  }
  if (first_check != 0) return first_check;
  uint64_t total = 0;
  for (uint64_t e : elems) total += e;
  if (total > n) return 9;
  if (total < n) return 10;
  const uint64_t words = (n + 63) / 64;
  std::vector<uint64_t> toggles(words, 0);
  uint64_t end = 0;
  for (uint64_t t = 0; t < tokens; ++t) {
    end += lengths[t];
    if (end < n) toggles[end / 64] ^= uint64_t{1} << (end % 64);
  }
  mask->assign(n, 0);
  uint32_t parity = 0;
  for (uint64_t w = 0; w < words; ++w) {
    const uint64_t x = run_steps::XWord(toggles[w], parity);
    parity += __builtin_popcountll(toggles[w]) & 1;
    for (uint64_t k = 0; k < 64 && 64 * w + k < n; ++k) (*mask)[64 * w + k] = (x >> k) & 1;
    if (64 * w + 64 <= n) {  // the 8-byte form
      for (int k = 0; k < 8; ++k) {
        uint64_t v;
        std::memcpy(&v, mask->data() + 64 * w + 8 * k, 8);
        EXPECT_EQ(v, run_steps::SpreadByte(x >> (8 * k)));
      }
    }
  }
  const run_steps::RowGroups g = run_steps::GroupsOf(n, row, group_threads);
  std::vector<uint8_t> carry(g.groups * row, 0);
  for (uint64_t column = 0; column < row; ++column) {  // GroupXor, GroupScan
    uint8_t acc = 0;
    for (uint64_t group = 0; group < g.groups; ++group) {
      uint8_t x = 0;
      for (uint64_t r = group * g.per; r < (group + 1) * g.per; ++r) {
        if (r * row + column < n) x ^= (*mask)[r * row + column];
      }
      carry[group * row + column] = acc;
      acc ^= x;
    }
  }
  *fill = 0;
  for (uint64_t group = 0; group < g.groups; ++group) {  // RowUndo
    for (uint64_t column = 0; column < row; ++column) {
      uint8_t m = carry[group * row + column];
      for (uint64_t r = group * g.per; r < (group + 1) * g.per; ++r) {
        const uint64_t e = r * row + column;
        if (e >= n) break;
        m ^= (*mask)[e];
        (*mask)[e] = m;
        *fill += m;
      }
    }
  }
  return 0;
}

TEST(RunSteps, MaskDecodeSimulationDecodesWhatDecodeFillMaskDecodes) {
  for (const auto& mc : MaskCases(1)) {
    const EncodedFillMask e = EncodeFillMask(mc.mask, mc.row);
    const uint64_t n = mc.mask.size();
    std::mt19937 rng(11);
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<uint8_t> section = e.section;
      uint64_t tokens = e.tokens;
      std::string what = "intact";
      if (trial > 0) {
        const int kind = trial % 6;
        if (kind == 0) {
          tokens += trial % 2 ? 1 : -1;
          what = "token count";
        } else if (kind == 1 && section.size() > 20) {
          section[16 + rng() % (section.size() - 16)] ^= 1 << (rng() % 8);
          what = "section bit";
        } else if (kind == 2) {
          section[rng() % 16] ^= 1 + rng() % 3;
          what = "header byte";
        } else if (kind == 3) {
          section.resize(section.size() - 4);
          what = "short";
        } else if (kind == 4) {
          section.insert(section.end(), 4, 0);
          what = "long";
        } else {
          const uint64_t c = rng() % ((tokens + 4095) / 4096);
          uint32_t b = LoadLE<uint32_t>(section.data() + 16 + 4 * c);
          b += trial % 2 ? 1 : -1;
          std::memcpy(section.data() + 16 + 4 * c, &b, 4);
          what = "chunk bits";
        }
      }
      std::vector<uint8_t> cpu(n, 7);
      auto cpu_fill = DecodeFillMask(section, tokens, mc.row, absl::MakeSpan(cpu));
      for (uint64_t threads : {uint64_t{1} << 18, uint64_t{1}, uint64_t{5}}) {
        std::vector<uint8_t> got;
        uint64_t fill = 0;
        const uint32_t check = SimulateMaskDecode(section, tokens, mc.row, n, threads, &got, &fill);
        const std::string where = mc.name + " (" + what + ", trial " + std::to_string(trial) +
                                  ") groups for " + std::to_string(threads) + " threads";
        ASSERT_EQ(check == 0, cpu_fill.ok())
            << where << ": simulation check " << check << ", CPU " << cpu_fill.status();
        if (check == 0) {
          ASSERT_EQ(fill, *cpu_fill) << where;
          ASSERT_EQ(FirstDifference(got, cpu), "") << where;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ebzip::gpu
