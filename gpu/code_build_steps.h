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
// Each node's height comes with it; the first over the length limit means
// the tree is too deep, as the root is at least as high. Depths then come
// top-down, a round at a time in reverse (a node's parent is made in a later
// round). When the tree is too deep, the host halves every weight (rounding
// up), re-sorts and builds again. A tree depends only on the weights in
// sorted order, and halving k times maps the sorted weights w to ceil(w/2^k)
// in the same order, so the block's trials need no sort: only once a tree
// fits does it learn which symbol the host put at each position, by doing
// the host's k re-sorts. Each is cheap: halving maps weights 2h-1 and 2h to
// h, so each new run of equal weight is two old runs merged by symbol.
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
// to below 2^32, and one to spare).
inline constexpr uint32_t kMaxRounds = 68;

// First index in [lo, hi) of ascending weights `w` whose weight exceeds `t`
// (the kernel's plan uses a warp-wide version of the same search).
EBZIP_HD inline uint32_t FirstHeavier(const uint32_t* w, uint32_t lo, uint32_t hi, uint64_t t) {
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (w[mid] <= t) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}
// First index in [lo, hi) whose weight is at least `t`.
EBZIP_HD inline uint32_t FirstNotLighter(const uint32_t* w, uint32_t lo, uint32_t hi, uint64_t t) {
  return t == 0 ? lo : FirstHeavier(w, lo, hi, t - 1);
}

// The queues between rounds: leaves [leaf, m) of the sorted leaf weights,
// internal nodes [internal, made) of the weights made so far.
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

// The work before a round: the threshold and the counts. `first_heavier`
// searches as FirstHeavier does.
template <typename FirstHeavierFn>
EBZIP_HD inline Round PlanRound(const uint32_t* leaf_weight, uint32_t m,
                                const uint32_t* internal_weight, Queues q,
                                FirstHeavierFn first_heavier) {
  // The two lightest, as two takes would find them.
  uint32_t l = q.leaf, n = q.internal;
  uint64_t threshold = 0;  // below 2^32: two disjoint parts of the total
  for (int take = 0; take < 2; ++take) {
    const bool from_leaf = l < m && (n >= q.made || leaf_weight[l] <= internal_weight[n]);
    threshold += from_leaf ? leaf_weight[l++] : internal_weight[n++];
  }
  Round r;
  r.leaves = first_heavier(leaf_weight, q.leaf, m, threshold) - q.leaf;
  r.internals = first_heavier(internal_weight, q.internal, q.made, threshold) - q.internal;
  const uint32_t c = r.leaves + r.internals;
  r.pairs = c / 2;
  r.leaves_taken = r.leaves;
  if (c % 2 == 1) {
    // The one left over is the last in merge order: an internal node unless
    // a leaf weighs more (on a tie the leaf goes first).
    const bool last_is_node =
        r.internals > 0 && (r.leaves == 0 || internal_weight[q.internal + r.internals - 1] >=
                                                 leaf_weight[q.leaf + r.leaves - 1]);
    if (!last_is_node) --r.leaves_taken;
  }
  return r;
}

// Where leaf `i` (of the round's leaves) falls in the round's merge order:
// after the round's internal nodes lighter than it.
EBZIP_HD inline uint32_t LeafRank(const uint32_t* leaf_weight, const uint32_t* internal_weight,
                                  Queues q, const Round& r, uint32_t i) {
  const uint32_t lighter =
      FirstNotLighter(internal_weight, q.internal, q.internal + r.internals, leaf_weight[i]);
  return (i - q.leaf) + (lighter - q.internal);
}
// Where internal node `j` falls: after the round's leaves no heavier than it.
EBZIP_HD inline uint32_t NodeRank(const uint32_t* leaf_weight, const uint32_t* internal_weight,
                                  Queues q, const Round& r, uint32_t j) {
  const uint32_t no_heavier =
      FirstHeavier(leaf_weight, q.leaf, q.leaf + r.leaves, internal_weight[j]);
  return (j - q.internal) + (no_heavier - q.leaf);
}

EBZIP_HD inline Queues AfterRound(Queues q, const Round& r) {
  return {q.leaf + r.leaves_taken, q.internal + 2 * r.pairs - r.leaves_taken, q.made + r.pairs};
}

// Where the key at sorted index `i` goes when every weight is halved
// (rounded up): into the run of its new weight h, merged by place with the
// other old run that becomes h.
EBZIP_HD inline uint32_t HalvedIndex(const uint64_t* keys, uint32_t m, uint32_t i) {
  // First index in [lo, hi) whose key is at least `key`: keys ascend.
  auto first_at_least = [&](uint32_t lo, uint32_t hi, uint64_t key) {
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo) / 2;
      if (keys[mid] < key) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  };
  const uint32_t w = WeightOf(keys[i]);
  const uint64_t h = w / 2 + w % 2;
  const uint32_t odd_run = first_at_least(0, m, Key(2 * h - 1, 0));  // weight 2h - 1
  const uint32_t even_run = first_at_least(odd_run, m, Key(2 * h, 0));
  const uint32_t end = first_at_least(even_run, m, Key(2 * h + 1, 0));
  // Places are distinct: count the other run's smaller ones, which within a
  // run of one weight is a search for this key's place under that weight.
  const bool odd = w % 2 == 1;
  const uint32_t own_start = odd ? odd_run : even_run;
  const uint32_t before =
      odd ? first_at_least(even_run, end, Key(2 * h, PlaceOf(keys[i]))) - even_run
          : first_at_least(odd_run, even_run, Key(2 * h - 1, PlaceOf(keys[i]))) - odd_run;
  return odd_run + (i - own_start) + before;
}
// A weight halved (rounding up) `times` times: ceil(w / 2^times).
EBZIP_HD inline uint32_t HalvedWeight(uint32_t w, uint32_t times) {
  return times >= 32 ? 1
                     : static_cast<uint32_t>((uint64_t{w} + (uint64_t{1} << times) - 1) >> times);
}
EBZIP_HD inline uint64_t Halved(uint64_t key) {
  const uint32_t w = WeightOf(key);
  return Key(w / 2 + w % 2, PlaceOf(key));
}

}  // namespace ebzip::gpu::code_build

#endif  // EBZIP_GPU_CODE_BUILD_STEPS_H_
