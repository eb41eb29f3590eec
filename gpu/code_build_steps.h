// The Huffman code built by a thread block instead of the host: the same code
// lengths codec/huffman_code.cc's BuildCodeLengths gives, found with steps
// that many threads can take at once. These are the per-thread steps, shared
// by BuildCodesKernel (gpu/code_build_kernels.cu) and the CPU test that
// simulates the block (tests/codec/code_build_steps_test.cc).
//
// The host's two-queue method takes, one pair at a time, the two lightest of
// the sorted leaves and the internal nodes made so far (a FIFO whose weights
// never decrease), preferring the leaf on equal weights. Its takes can be
// batched into rounds: merge the two queues (leaves first on ties) and let t
// be the sum of the two lightest. Every item weighing at most t is taken
// before any node made from now on (those weigh t or more, and on a tie the
// leaf, or the older node, goes first), in merge order, two at a time: the
// first 2p of the c such items (p = c / 2) pair up as a serial walk would
// pair them; an odd one waits for the next round. Each item finds its place
// in the merge by a binary search in the other queue, so a round is a few
// barriers. The threshold at least doubles every two rounds, so a tree over
// weights below 2^32 takes at most 66 rounds.
//
// Depths then come top-down, a round at a time in reverse (a node's parent
// is made in a later round). When the deepest leaf exceeds the length limit,
// the host halves every weight (rounding up) and builds again; the block does
// the same, re-sorting by the host's rule: halving maps weights 2h-1 and 2h
// to h, so each new run of equal weight is two old runs merged by symbol.
#ifndef EBZIP_GPU_CODE_BUILD_STEPS_H_
#define EBZIP_GPU_CODE_BUILD_STEPS_H_

#include <cstdint>

#include "codec/host_device.h"

namespace ebzip::gpu::code_build {

// A leaf's sort key: weight above its place among the frame's used symbols
// (ascending symbol order, below 65536), so keys ascend by weight, then by
// symbol: the host's order.
inline constexpr int kPlaceBits = 16;
EBZIP_HD inline uint64_t Key(uint64_t weight, uint32_t place) {
  return weight << kPlaceBits | place;
}
EBZIP_HD inline uint32_t WeightOf(uint64_t key) { return static_cast<uint32_t>(key >> kPlaceBits); }
EBZIP_HD inline uint32_t PlaceOf(uint64_t key) {
  return static_cast<uint32_t>(key & ((1u << kPlaceBits) - 1));
}

// Rounds a tree can take (see above: 2 per doubling of the threshold, from 2
// to below 2^32, and one to spare), and the depth a leaf can reach (a leaf at
// depth d weighs at most total / Fibonacci(d + 1), so under 2^32: below 48).
inline constexpr uint32_t kMaxRounds = 68;
inline constexpr uint32_t kMaxDepth = 48;

// First index in [lo, hi) whose weight is >= w (Strict) or > w (!Strict).
template <bool kStrict, typename WeightAt>
EBZIP_HD inline uint32_t Search(uint32_t lo, uint32_t hi, uint64_t w, WeightAt weight_at) {
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    const uint64_t x = weight_at(mid);
    if (kStrict ? x < w : x <= w) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The queues between rounds: leaves [leaf, m) of the sorted keys, internal
// nodes [internal, made) of the weights made so far.
struct Queues {
  uint32_t leaf;
  uint32_t internal;
  uint32_t made;
};

// One round's batch of takes: the first `leaves` leaves and `internals`
// internal nodes weigh at most the threshold; the first 2 * pairs of them in
// merge order pair up, `leaves_taken` of those being leaves.
struct Round {
  uint32_t leaves;
  uint32_t internals;
  uint32_t pairs;
  uint32_t leaves_taken;
};

// One thread's work before a round: the threshold and the counts.
EBZIP_HD inline Round PlanRound(const uint64_t* keys, uint32_t m, const uint32_t* internal_weight,
                                Queues q) {
  auto leaf_w = [&](uint32_t i) { return WeightOf(keys[i]); };
  auto node_w = [&](uint32_t j) { return internal_weight[j]; };
  // The two lightest, as two takes would find them.
  uint32_t l = q.leaf, n = q.internal;
  uint64_t threshold = 0;  // below 2^32: two disjoint parts of the total
  for (int take = 0; take < 2; ++take) {
    const bool from_leaf = l < m && (n >= q.made || leaf_w(l) <= node_w(n));
    threshold += from_leaf ? leaf_w(l++) : node_w(n++);
  }
  Round r;
  r.leaves = Search<false>(q.leaf, m, threshold, leaf_w) - q.leaf;
  r.internals = Search<false>(q.internal, q.made, threshold, node_w) - q.internal;
  const uint32_t c = r.leaves + r.internals;
  r.pairs = c / 2;
  r.leaves_taken = r.leaves;
  if (c % 2 == 1) {
    // The one left over is the last in merge order: an internal node unless
    // a leaf weighs more (on a tie the leaf goes first).
    const bool last_is_node =
        r.internals > 0 &&
        (r.leaves == 0 ||
         node_w(q.internal + r.internals - 1) >= leaf_w(q.leaf + r.leaves - 1));
    if (!last_is_node) --r.leaves_taken;
  }
  return r;
}

// Where leaf `i` (of the round's leaves) falls in the round's merge order:
// after the round's internal nodes lighter than it.
EBZIP_HD inline uint32_t LeafRank(const uint64_t* keys, const uint32_t* internal_weight, Queues q,
                                  const Round& r, uint32_t i) {
  const uint32_t w = WeightOf(keys[i]);
  const uint32_t lighter = Search<true>(q.internal, q.internal + r.internals, w,
                                        [&](uint32_t j) { return internal_weight[j]; });
  return (i - q.leaf) + (lighter - q.internal);
}
// Where internal node `j` falls: after the round's leaves no heavier than it.
EBZIP_HD inline uint32_t NodeRank(const uint64_t* keys, const uint32_t* internal_weight, Queues q,
                                  const Round& r, uint32_t j) {
  const uint32_t w = internal_weight[j];
  const uint32_t no_heavier = Search<false>(q.leaf, q.leaf + r.leaves, w,
                                            [&](uint32_t i) { return WeightOf(keys[i]); });
  return (j - q.internal) + (no_heavier - q.leaf);
}

EBZIP_HD inline Queues AfterRound(Queues q, const Round& r) {
  return {q.leaf + r.leaves_taken, q.internal + 2 * r.pairs - r.leaves_taken, q.made + r.pairs};
}

// Where the key at sorted index `i` goes when every weight is halved
// (rounded up): into the run of its new weight h, merged by place with the
// other old run that becomes h.
EBZIP_HD inline uint32_t HalvedIndex(const uint64_t* keys, uint32_t m, uint32_t i) {
  auto weight_at = [&](uint32_t x) { return WeightOf(keys[x]); };
  const uint32_t w = WeightOf(keys[i]);
  const uint64_t h = w / 2 + w % 2;
  const uint32_t odd_run = Search<true>(0, m, 2 * h - 1, weight_at);  // weight 2h - 1
  const uint32_t even_run = Search<true>(odd_run, m, 2 * h, weight_at);
  const uint32_t end = Search<false>(even_run, m, 2 * h, weight_at);
  const uint32_t place = PlaceOf(keys[i]);
  auto place_at = [&](uint32_t x) { return PlaceOf(keys[x]); };
  // Places are distinct: count the other run's smaller ones.
  const bool odd = w % 2 == 1;
  const uint32_t own_start = odd ? odd_run : even_run;
  const uint32_t other_lo = odd ? even_run : odd_run;
  const uint32_t other_hi = odd ? end : even_run;
  const uint32_t before = Search<true>(other_lo, other_hi, place, place_at) - other_lo;
  return odd_run + (i - own_start) + before;
}
EBZIP_HD inline uint64_t Halved(uint64_t key) {
  const uint32_t w = WeightOf(key);
  return Key(w / 2 + w % 2, PlaceOf(key));
}

// The code-length section (FORMAT.md §5.1) item by item: before used symbol
// `symbol`, whose predecessor in the list ends at `next` (its symbol + 1, or
// 0), a zero run if there is a gap; then its length.
EBZIP_HD inline uint32_t LebBytes(uint64_t v) {
  uint32_t n = 1;
  while (v >= 0x80) v >>= 7, ++n;
  return n;
}
EBZIP_HD inline uint32_t ZeroRunBytes(uint64_t run) { return run ? 1 + LebBytes(run) : 0; }
EBZIP_HD inline uint8_t* WriteZeroRun(uint64_t run, uint8_t* out) {
  if (run == 0) return out;
  *out++ = 0;
  do {
    const uint8_t b = run & 0x7F;
    run >>= 7;
    *out++ = b | (run ? 0x80 : 0);
  } while (run);
  return out;
}

}  // namespace ebzip::gpu::code_build

#endif  // EBZIP_GPU_CODE_BUILD_STEPS_H_
