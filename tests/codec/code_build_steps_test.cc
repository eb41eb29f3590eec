// The GPU's block-parallel Huffman code builder (gpu/code_build_steps.h),
// simulated on the CPU with the kernel's own per-thread steps: threads are
// loop iterations, barriers the gaps between loops. Its lengths must be the
// host's (codec/huffman_code.h) for every histogram, those that need the
// length limit's flattening rounds above all, or GPU and CPU archives differ.
// Needs no GPU: the header is plain C++ outside nvcc.
#include "gpu/code_build_steps.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "codec/huffman_code.h"
#include "codec/zero_run.h"
#include "gtest/gtest.h"

namespace ebzip::gpu::code_build {
namespace {

struct Simulated {
  std::vector<uint8_t> lengths;  // by place
  int trials = 0;                // trees built (1 + halvings)
  uint32_t max_rounds = 0;       // of any tree
};

// BuildCodesKernel's build, a phase at a time in the order its barriers
// allow. The sort stands in for the device's segmented radix sort.
Simulated SimulateBlock(const std::vector<SymbolCount>& used, int max_length) {
  const uint32_t m = static_cast<uint32_t>(used.size());
  Simulated out;
  out.lengths.assign(m, 0);
  if (m == 1) out.lengths[0] = 1;
  if (m < 2) return out;
  std::vector<uint64_t> keys(m), alt(m);
  for (uint32_t i = 0; i < m; ++i) keys[i] = Key(used[i].count, i);
  std::sort(keys.begin(), keys.end());
  std::vector<uint32_t> leaf_weight(m), internal_weight(m), merged_weight(m), merged_node(m),
      parent(2 * m);
  std::vector<uint8_t> height(2 * m), depth(m), leaf_depth(m);
  std::vector<uint32_t> round_start;
  uint32_t halvings = 0;
  for (;; ++halvings) {
    ++out.trials;
    for (uint32_t i = 0; i < m; ++i) {
      leaf_weight[i] = HalvedWeight(WeightOf(keys[i]), halvings);
      height[i] = 0;
    }
    round_start.clear();
    Queues q{0, 0, 0};
    bool too_deep = false;  // as the kernel, give up at the first node over the limit
    while (q.made < m - 1 && !too_deep) {
      const Round r = PlanRound(leaf_weight.data(), m, internal_weight.data(), q, FirstHeavier);
      EXPECT_GE(r.pairs, 1u);
      auto take = [&](uint32_t node, uint32_t rank, uint32_t weight) {
        if (rank >= 2 * r.pairs) return;
        parent[node] = m + q.made + rank / 2;
        merged_weight[rank] = weight;
        merged_node[rank] = node;
      };
      for (uint32_t i = q.leaf; i < q.leaf + r.leaves; ++i) {
        take(i, LeafRank(leaf_weight.data(), internal_weight.data(), q, r, i), leaf_weight[i]);
      }
      for (uint32_t j = q.internal; j < q.internal + r.internals; ++j) {
        take(m + j, NodeRank(leaf_weight.data(), internal_weight.data(), q, r, j),
             internal_weight[j]);
      }
      for (uint32_t t = 0; t < r.pairs; ++t) {
        internal_weight[q.made + t] = merged_weight[2 * t] + merged_weight[2 * t + 1];
        height[m + q.made + t] =
            std::max(height[merged_node[2 * t]], height[merged_node[2 * t + 1]]) + 1;
        too_deep |= height[m + q.made + t] > max_length;
      }
      round_start.push_back(q.made);
      q = AfterRound(q, r);
    }
    out.max_rounds = std::max<uint32_t>(out.max_rounds, round_start.size());
    EXPECT_LE(round_start.size(), kMaxRounds);
    if (!too_deep) {
      EXPECT_LE(height[2 * m - 2], max_length);
      break;
    }
  }
  // Depths of the final tree, from the root down, a round at a time.
  round_start.push_back(m - 1);
  for (size_t r = round_start.size() - 1; r-- > 0;) {
    for (uint32_t j = round_start[r]; j < round_start[r + 1]; ++j) {
      depth[j] = j == m - 2 ? 0 : depth[parent[m + j] - m] + 1;
    }
  }
  int deepest = 0;
  for (uint32_t i = 0; i < m; ++i) {
    leaf_depth[i] = depth[parent[i] - m] + 1;
    deepest = std::max<int>(deepest, leaf_depth[i]);
  }
  EXPECT_EQ(deepest, height[2 * m - 2]);
  // Which symbol the host put at each position: its re-sorts, one per halving.
  for (uint32_t k = 0; k < halvings; ++k) {
    for (uint32_t i = 0; i < m; ++i) alt[HalvedIndex(keys.data(), m, i)] = Halved(keys[i]);
    keys.swap(alt);
  }
  for (uint32_t i = 0; i < m; ++i) {
    EXPECT_EQ(WeightOf(keys[i]), leaf_weight[i]) << "the weights the tree was built on";
  }
  for (uint32_t i = 0; i < m; ++i) out.lengths[PlaceOf(keys[i])] = leaf_depth[i];
  return out;
}

std::vector<SymbolCount> FromCounts(const std::vector<uint64_t>& counts) {
  std::vector<SymbolCount> used;
  for (size_t s = 0; s < counts.size(); ++s) {
    if (counts[s]) used.push_back({static_cast<uint32_t>(s), static_cast<uint32_t>(counts[s])});
  }
  return used;
}

void ExpectSameAsHost(const std::vector<SymbolCount>& used, int max_length, int* trials = nullptr) {
  const Simulated sim = SimulateBlock(used, max_length);
  ASSERT_EQ(sim.lengths, BuildCodeLengths(used, max_length)) << used.size() << " symbols";
  if (trials) *trials = sim.trials;
}

TEST(CodeBuildSteps, TinyAlphabets) {
  ExpectSameAsHost({{7, 5}}, 20);
  ExpectSameAsHost({{0, 1}, {9, 1}}, 20);
  ExpectSameAsHost({{0, 1}, {1, 2}, {2, 3}}, 20);
  ExpectSameAsHost({{0, 3}, {1, 3}, {2, 3}, {3, 3}}, 2);
}

TEST(CodeBuildSteps, TiesBreakAsTheHostBreaksThem) {
  // Equal weights everywhere: every round meets leaves and nodes of one weight.
  for (uint32_t m : {3u, 5u, 6u, 7u, 33u, 100u, 1000u, 4097u}) {
    for (uint32_t w : {1u, 2u, 3u, 7u}) {
      std::vector<SymbolCount> used;
      for (uint32_t s = 0; s < m; ++s) used.push_back({s, w});
      ExpectSameAsHost(used, 20);
    }
  }
  // Weights that make internal nodes equal to later leaves.
  std::mt19937_64 rng(7);
  for (int round = 0; round < 300; ++round) {
    std::vector<SymbolCount> used;
    const uint32_t m = 2 + rng() % 200;
    for (uint32_t s = 0; s < m; ++s) used.push_back({s, 1u << (rng() % 4)});
    ExpectSameAsHost(used, 20);
  }
}

TEST(CodeBuildSteps, RandomHistogramsOfEveryShape) {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 400; ++round) {
    const uint32_t alphabet = 2 + rng() % 5000;
    std::vector<uint64_t> counts(alphabet, 0);
    const int shape = round % 4;
    for (uint32_t s = 0; s < alphabet; ++s) {
      if (rng() % 3 == 0) continue;
      switch (shape) {
        case 0:
          counts[s] = 1 + rng() % 10;
          break;  // flat, many ties
        case 1:
          counts[s] = 1 + rng() % 1000000;
          break;  // wide
        case 2:
          counts[s] = 1 + (rng() >> (rng() % 64)) % 100000;
          break;    // heavy-tailed
        default: {  // Laplacian around the middle, as a quantizer's codes are
          const double x = std::abs(static_cast<double>(s) - alphabet / 2.0);
          counts[s] = static_cast<uint64_t>(1e7 * std::exp(-x / (1 + rng() % 50))) + rng() % 2;
        }
      }
    }
    const auto used = FromCounts(counts);
    if (used.size() < 1) continue;
    ExpectSameAsHost(used, 20);
    ExpectSameAsHost(used, 16 + round % 5);
  }
}

TEST(CodeBuildSteps, FlatteningRoundsAgree) {
  // Fibonacci weights make the deepest tree a total below 2^32 allows, and
  // a long tail of ones under a few huge counts needs several halvings.
  std::vector<uint64_t> fib = {1, 1};
  while (fib.size() < 50) fib.push_back(fib[fib.size() - 1] + fib[fib.size() - 2]);
  uint64_t total = 0;
  std::vector<SymbolCount> used;
  for (size_t i = 0; i < fib.size() && total + fib[i] < (uint64_t{1} << 32); ++i) {
    used.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(fib[i])});
    total += fib[i];
  }
  int trials = 0;
  for (int limit : {20, 24, 12}) {
    ExpectSameAsHost(used, limit, &trials);
    EXPECT_GT(trials, 1) << "limit " << limit << " never flattened";
  }
  // Counts that halve from symbol to symbol (a chain 31 deep) with random
  // jitter, above a random tail of rare symbols.
  std::mt19937_64 rng(3);
  for (int round = 0; round < 50; ++round) {
    std::vector<uint64_t> counts(65536, 0);
    for (uint32_t s = 0; s < 31; ++s) {
      counts[32768 + s] = ((uint64_t{1} << 30) >> s) * (64 + rng() % 32) / 96 + 1;
    }
    for (uint32_t s = 0; s < 65536; ++s) {
      if (counts[s] == 0 && rng() % (4 + round) == 0) counts[s] = 1 + rng() % 3;
    }
    ExpectSameAsHost(FromCounts(counts), 20, &trials);
    EXPECT_GT(trials, 1);
  }
}

TEST(CodeBuildSteps, EverySymbolOfTheAlphabetUsed) {
  std::mt19937_64 rng(11);
  std::vector<uint64_t> counts(65536);
  for (auto& c : counts) c = 1 + rng() % 60000;
  ExpectSameAsHost(FromCounts(counts), 20);
  for (auto& c : counts) c = 1;
  ExpectSameAsHost(FromCounts(counts), 16);
}

TEST(CodeBuildSteps, SectionItemsMatchTheHostWriter) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 200; ++round) {
    const uint32_t alphabet = 1 + rng() % 70000;
    std::vector<uint32_t> symbols;
    std::vector<uint8_t> lengths;
    const uint32_t stride = 1 + rng() % 300;
    for (uint32_t s = rng() % stride; s < alphabet; s += 1 + rng() % stride) {
      symbols.push_back(s);
      lengths.push_back(1 + rng() % 20);
    }
    std::vector<uint8_t> expected;
    AppendCodeLengths(symbols, lengths, alphabet, &expected);
    // The kernel's way: each item's bytes from its gap alone, then the tail.
    std::vector<uint8_t> got(expected.size() + 16);
    uint8_t* out = got.data();
    uint64_t size = 0;
    for (size_t i = 0; i < symbols.size(); ++i) {
      const uint64_t gap = symbols[i] - (i ? symbols[i - 1] + 1 : 0);
      uint8_t* end = WriteZeroRun(gap, out);
      *end++ = lengths[i];
      ASSERT_EQ(end - out, ZeroRunBytes(gap) + 1);
      size += end - out;
      out = end;
    }
    const uint64_t tail = alphabet - (symbols.empty() ? 0 : symbols.back() + 1);
    size += WriteZeroRun(tail, out) - out;
    got.resize(size);
    ASSERT_EQ(got, expected);
    // Both writers share WriteZeroRun: the parser, written apart from it,
    // must read every length back in its place. It rejects a code with no
    // symbol or one over Kraft's sum, which random lengths may be; lengths
    // of 20 for these under 2^20 symbols are neither.
    if (symbols.empty()) continue;
    for (auto& l : lengths) l = 20;
    expected.clear();
    AppendCodeLengths(symbols, lengths, alphabet, &expected);
    auto parsed = ParseCodeLengths(expected, alphabet, 20);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    std::vector<uint8_t> by_symbol(alphabet, 0);
    for (size_t i = 0; i < symbols.size(); ++i) by_symbol[symbols[i]] = lengths[i];
    ASSERT_EQ(*parsed, by_symbol);
  }
}

// The run encoding as FORMAT.md §5.1 defines it: a 0, then LEB128.
TEST(CodeBuildSteps, ZeroRunsAreLeb128) {
  const std::vector<std::pair<uint64_t, std::vector<uint8_t>>> cases = {
      {1, {0, 0x01}},
      {127, {0, 0x7F}},
      {128, {0, 0x80, 0x01}},
      {300, {0, 0xAC, 0x02}},
      {65536, {0, 0x80, 0x80, 0x04}}};
  for (const auto& [run, bytes] : cases) {
    uint8_t out[kMaxZeroRunBytes];
    uint8_t* end = WriteZeroRun(run, out);
    EXPECT_EQ(std::vector<uint8_t>(out, end), bytes) << run;
    EXPECT_EQ(ZeroRunBytes(run), bytes.size()) << run;
  }
  uint8_t out[kMaxZeroRunBytes];
  EXPECT_EQ(WriteZeroRun(0, out), out);
  EXPECT_EQ(ZeroRunBytes(0), 0u);
  EXPECT_EQ(WriteZeroRun(~uint64_t{0}, out) - out, kMaxZeroRunBytes);
}

}  // namespace
}  // namespace ebzip::gpu::code_build
