// Version 2's token rules as per-thread steps, shared by the GPU kernels
// (gpu/run_kernels.cu, gpu/fill_mask_kernels.cu, gpu/decode_kernels.cu) and
// the CPU test that simulates their blocks (tests/codec/run_steps_test.cc):
// plain C++ outside nvcc, so that test runs without a GPU.
//
// Zero-run tokens (FORMAT.md §15.4, §15.8). A chunk's positions are cut into
// slices, one per thread. A run of the zero symbol belongs to the slice
// where it ends (its last zero, or the symbol after it, is in that slice), so
// a slice needs one number from the slices before it: how many zeros
// directly precede it. The counters kernel finds it for every slice from
// positions (ZerosBefore: a block max-scan of the last non-zero position)
// and leaves it in the slice's state for the walks after it.
//
// Run-value tokens (§15.4.1) change only where a run ends: a run followed
// by a residual of -2, -1, +1 or +2 ends at that position, whose symbol it
// takes. So a run whose last zero ends a slice, with such a value first in
// the next slice, belongs to that next slice (RunContinues), which merges it
// with its first symbol; the zeros before a slice are the same.
//
// Fill mask (§15.6). X (each row XORed with the previous) changes value at
// its run boundaries; the kernels keep them as a bitmap, bit k of word w for
// element 64w + k. A run ends at the next boundary (or at n), so a word's
// runs need the last boundary before the word: an exclusive max-scan, since
// boundaries only grow (0 stands for "none yet": the first run starts at 0).
// Decoding goes the other way: each token's end toggles a bit, and X is the
// prefix XOR of the toggles.
#ifndef EBZIP_GPU_RUN_STEPS_H_
#define EBZIP_GPU_RUN_STEPS_H_

#include <cstdint>

#include "codec/format.h"
#include "codec/host_device.h"
#include "codec/run_tokens.h"

namespace ebzip::gpu::run_steps {

// ---------------------------------------------------------------------------
// Zero-run tokens.

// The zero symbol of a frame coded without run tokens: no symbol is.
inline constexpr uint32_t kNoZero = 0xFFFFFFFFu;

EBZIP_HD inline uint32_t ZeroSymbol(bool runs, uint32_t radius) { return runs ? radius : kNoZero; }

// The tokens of a run of k >= 1 zero symbols (radius), in order (§15.8: while
// k >= 8192, a class-12 token of 8191 positions; then one token of class
// floor(log2 k) for k >= 2, or the symbol itself for k = 1). With `value`
// (the index j of a run-value token's residual, -1 for none) that last token
// is instead the run-value token of class floor(log2 k) and value j, which
// covers the position after the run too (§15.4.1). Calls
// token(symbol, extra_bits, extra_value, positions).
template <class F>
EBZIP_HD void ForEachRunToken(uint32_t k, uint32_t radius, int value, F&& token) {
  constexpr uint32_t kMax = format::kMaxRunPositions;
  constexpr int kTop = format::kRunClasses;
  const uint32_t base = 2 * radius;
  const uint32_t q = (k - 1) / kMax;  // k = q * 8191 + r, 1 <= r <= 8191
  for (uint32_t i = 0; i < q; ++i) token(base + kTop - 1, kTop, (1u << kTop) - 1, kMax);
  const uint32_t r = k - q * kMax;
  const int c = RunClass(r);
  if (value >= 0) {
    token(RunValueToken(radius, c, value), c, r - (1u << c), r + 1);
  } else if (r >= 2) {
    token(base + c - 1, c, r - (1u << c), r);
  } else {
    token(radius, 0, 0u, 1u);
  }
}

// The index of the residual a run takes when `next` follows it (-1: none,
// and always without run values; kNoRunValue, a chunk's end, is none).
EBZIP_HD inline int TakenValue(bool values, uint32_t next, uint32_t radius) {
  return values && next != kNoRunValue ? RunValueIndex(next, radius) : -1;
}

// The tokens of k >= 0 zeros followed by the symbol `next` (kNoRunValue at a
// chunk's end): the run's tokens, then `next`'s own unless the run took it.
template <class F>
EBZIP_HD void RunThen(uint32_t k, uint32_t next, uint32_t radius, bool values, F&& token) {
  const int j = k == 0 ? -1 : TakenValue(values, next, radius);
  if (k != 0) ForEachRunToken(k, radius, j, token);
  if (next != kNoRunValue && j < 0) token(next, 0, 0u, 1u);
}

// RunThen's tokens in a fixed form, for walks that handle every symbol the
// same way whatever the tokens (a warp's lanes meet run ends at different
// symbols; branching on each kind of token ran every kind's code in turn):
// `long_runs` class-12 tokens of 8191 positions, then the run's last token
// where there is one, then `next`'s own token where there is one.
struct TokensAt {
  uint32_t long_runs = 0;
  bool has_run = false;
  uint32_t run_symbol = 0;  // a valid table index even without a run
  uint32_t run_extra_bits = 0;
  uint32_t run_extra = 0;
  bool has_own = false;
};
EBZIP_HD inline TokensAt TokensOf(uint32_t k, uint32_t next, uint32_t radius, bool values) {
  constexpr uint32_t kMax = format::kMaxRunPositions;
  TokensAt t;
  const int j = k == 0 ? -1 : TakenValue(values, next, radius);
  t.long_runs = k > kMax ? (k - 1) / kMax : 0;
  const uint32_t r = k - t.long_runs * kMax;  // 1 <= r <= 8191 when k != 0
  const int c = RunClass(r);
  t.has_run = k != 0;
  t.run_symbol = j >= 0 ? RunValueToken(radius, c, j) : r >= 2 ? 2 * radius + c - 1 : radius;
  t.run_extra_bits = static_cast<uint32_t>(c);
  t.run_extra = k != 0 ? r - (1u << c) : 0;
  t.has_own = next != kNoRunValue && j < 0;
  return t;
}

// Whether a run in progress at the end of a slice goes on into the next
// slice, whose first symbol is `next`: it does when `next` is a zero, or,
// with run values, a residual the run takes (the next slice then emits it).
EBZIP_HD inline bool RunContinues(uint32_t zero, uint32_t radius, bool values, uint32_t next) {
  return next == zero || (zero != kNoZero && TakenValue(values, next, radius) >= 0);
}

// What a walk over a slice carries: the zeros of the run in progress.
struct SliceWalk {
  uint32_t zero;  // the zero symbol, or kNoZero
  uint32_t radius;
  bool values;  // run-value tokens: a run takes the residual after it
  uint32_t run = 0;
};

// Starts a walk at the slice's first symbol `first`, given `before`, the
// zeros directly before the slice (ZerosBefore): they are this slice's run
// when the run went on into it (RunContinues).
EBZIP_HD inline SliceWalk BeginSlice(uint32_t zero, uint32_t radius, bool values, uint32_t first,
                                     uint32_t before) {
  SliceWalk w{zero, radius, values, 0};
  w.run = RunContinues(zero, radius, values, first) ? before : 0;
  return w;
}

// One symbol of the slice, by the runs it ends: a symbol other than the zero
// ends the run in progress, calling ended(k, s) for its k >= 0 zeros and s.
template <class F>
EBZIP_HD void StepRuns(SliceWalk& w, uint32_t s, F&& ended) {
  if (s == w.zero) {
    ++w.run;
    return;
  }
  ended(w.run, s);
  w.run = 0;
}

// After the slice's last symbol: its run ends here, before kNoRunValue,
// unless it goes on into the next slice (`continues`, RunContinues).
template <class F>
EBZIP_HD void EndRuns(SliceWalk& w, bool continues, F&& ended) {
  if (w.run != 0 && !continues) ended(w.run, kNoRunValue);
  w.run = 0;
}

// StepRuns and EndRuns as tokens (codec/run_tokens.h's ForEachToken's).
template <class F>
EBZIP_HD void StepSymbol(SliceWalk& w, uint32_t s, F&& token) {
  StepRuns(w, s, [&](uint32_t k, uint32_t next) { RunThen(k, next, w.radius, w.values, token); });
}
template <class F>
EBZIP_HD void EndSlice(SliceWalk& w, bool continues, F&& token) {
  EndRuns(w, continues,
          [&](uint32_t k, uint32_t next) { RunThen(k, next, w.radius, w.values, token); });
}

// Counters of a chunk's or frame's runs from which both token histograms
// (lossless 1 and 2) follow from its symbol histogram, as codec/run_tokens.h's
// SymbolCounts: [0] the zeros lossless 1 leaves as symbols (runs of one), [c]
// its run tokens of class c (1..12), then from kRunValueCounters on the
// run-value tokens, class c and value j at 4c + j. Lossless 2 emits the same
// tokens but for a run's last one where a run-value token replaces it, a
// token of the same class and extra bits (class 0: the lone zero), so its
// counts and both stages' extra bits follow from these.
inline constexpr int kZeroRunCounters = format::kRunClasses + 1;
inline constexpr int kRunValueCounters = kZeroRunCounters;  // where they start
inline constexpr int kRunCounters = kZeroRunCounters + format::kRunValueTokens;

// Counts a run of k >= 1 zeros followed by `next` (kNoRunValue at a chunk's
// end) with add(counter, amount).
template <class Add>
EBZIP_HD void CountRun(uint32_t k, uint32_t next, uint32_t radius, Add&& add) {
  constexpr uint32_t kMax = format::kMaxRunPositions;
  const uint32_t q = (k - 1) / kMax;
  if (q != 0) add(format::kRunClasses, q);
  const int c = RunClass(k - q * kMax);
  add(c, 1u);  // class 0: a lone zero
  const int j = TakenValue(true, next, radius);
  if (j >= 0) add(kRunValueCounters + format::kRunValues * c + j, 1u);
}

// Runs by position, for the counters kernel: each thread takes 8
// consecutive symbols of a chunk at a time, and one block max-scan of the
// threads' last non-zero positions tells each thread where the run in
// progress at its first symbol began, so every lane does the same steps for
// its 8 symbols (a walk per slice split a warp's lanes at every run end).
// Positions are within the chunk; -1 stands for "none yet" (a run from the
// chunk's start).
inline constexpr int kGroupSymbols = 8;

// The index of x's highest set bit (x != 0): RunClass's one
// count-leading-zeros.
EBZIP_HD inline int HighestBit(uint32_t x) { return RunClass(x); }

// The group's last non-zero position, given `nz` (bit e: symbol e is not the
// zero) and `prev`, the last one before the group at p0.
EBZIP_HD inline int32_t LastNonZero(uint32_t nz, int32_t p0, int32_t prev) {
  return nz != 0 ? p0 + HighestBit(nz) : prev;
}

// Zeros directly before position s of the group (p0 <= s <= p0 + 8): a
// slice's state (run_kernels.h).
EBZIP_HD inline uint32_t ZerosBefore(int32_t s, uint32_t nz, int32_t p0, int32_t prev) {
  const uint32_t below = nz & ((1u << (s - p0)) - 1);  // s - p0 <= 8
  return static_cast<uint32_t>(s - LastNonZero(below, p0, prev) - 1);
}

// Calls ended(k, e) for each run of k >= 1 zeros that symbol e of the group
// (a non-zero) ends, in order.
template <class F>
EBZIP_HD void ForEachRunEnd(uint32_t nz, int32_t p0, int32_t prev, F&& ended) {
  // Non-zeros whose symbol before is a zero (prev == p0 - 1: it is not).
  uint32_t ends = nz & ~(nz << 1 | (prev == p0 - 1 ? 1u : 0u));
  while (ends != 0) {
    const int e = HighestBit(ends & (~ends + 1));  // the lowest
    ends &= ends - 1;
    const int32_t last = LastNonZero(nz & ((1u << e) - 1), p0, prev);
    ended(static_cast<uint32_t>(p0 + e - last - 1), e);
  }
}

// Turns `hist`, a copy of a frame's symbol histogram (over 2 * radius + 64
// bins with run values, 2 * radius + 12 without), into its token histogram
// for lossless 1 (`values` false) or 2 from its counters; returns the
// tokens' extra bits.
template <class Hist>  // uint32_t*, or anything indexed as one
EBZIP_HD uint64_t PatchTokenHistogram(const uint32_t* counters, uint32_t radius, bool values,
                                      Hist&& hist) {
  constexpr int kValues = format::kRunValues;
  const uint32_t* taken = counters + kRunValueCounters;  // [4c + j]
  const uint32_t base = 2 * radius;
  uint64_t extra = 0;
  uint32_t lone = counters[0];
  for (int c = 1; c <= format::kRunClasses; ++c) {
    uint32_t n = counters[c];
    extra += uint64_t{n} * static_cast<uint32_t>(c);
    for (int j = 0; values && j < kValues; ++j) n -= taken[kValues * c + j];
    hist[base + c - 1] = n;
  }
  for (int c = 0; values && c < format::kRunValueClasses; ++c) {
    for (int j = 0; j < kValues; ++j) {
      const uint32_t n = taken[kValues * c + j];
      hist[RunValueToken(radius, c, j)] = n;
      if (c == 0) lone -= n;
      // The residual's symbol (no count where the radius leaves it none).
      if (n != 0) hist[ShapeOf(RunValueToken(radius, c, j), radius).value] -= n;
    }
  }
  hist[radius] = lone;
  return extra;
}

// ---------------------------------------------------------------------------
// Packing (both bitstreams).

// Packs one thread's tokens MSB-first into 32-bit words, from bit `bit` of
// word `word` on, as encode_kernels.cu does: a token (at most 32 bits) goes
// into a 64-bit register, and each word leaves it once full. Words the
// thread fills alone go out with store(i, w); the first (when an earlier
// thread has bits in it) and the last (when a later one may) with merge(i, w),
// an OR into words that were zero.
// Index: the words' index type (a chunk's shared-memory words take 32 bits).
template <typename Index = uint64_t>
struct WordPacker {
  uint64_t acc = 0;
  Index at;       // the word being filled
  uint32_t have;  // its bits so far (the first ones perhaps another's)
  bool shared_word;

  EBZIP_HD WordPacker(Index word, uint32_t bit) : at(word), have(bit), shared_word(bit != 0) {}

  template <class Store, class Merge>
  EBZIP_HD void Put(uint64_t value, uint32_t length, Store&& store, Merge&& merge) {
    acc = acc << length | value;  // have < 32 and length <= 32: 63 bits at most
    have += length;
    if (have >= 32) {
      have -= 32;
      const uint32_t w = static_cast<uint32_t>(acc >> have);
      if (shared_word) {
        merge(at, w);
        shared_word = false;
      } else {
        store(at, w);
      }
      ++at;
    }
  }
  // Continues at the start of word `word` (a new chunk), the partial word
  // before it padded with zeros.
  template <class Merge>
  EBZIP_HD void Restart(Index word, Merge&& merge) {
    Finish(merge);
    at = word;
    have = 0;
    shared_word = false;
  }
  template <class Merge>
  EBZIP_HD void Finish(Merge&& merge) {
    if (have > 0) merge(at, static_cast<uint32_t>(acc << (32 - have)));
    have = 0;
  }
};

// The gap-array entries (FORMAT.md §5.4, §15.4) of the subsequence starts in
// a thread's tokens: each start's distance to the first token start at or
// after it. Tokens are at most 32 bits, no longer than a subsequence, so a
// token holds at most one start besides its first bit.
struct GapWriter {
  uint32_t pos;       // the next token's first bit within the chunk
  uint32_t boundary;  // the first subsequence start at or after it
  uint32_t sub;

  EBZIP_HD GapWriter(uint32_t pos_, uint32_t sub_)
      : pos(pos_), boundary((pos_ + sub_ - 1) / sub_ * sub_), sub(sub_) {}
  // A token of `length` bits at pos; gap(j, entry) sets subsequence j's.
  template <class Gap>
  EBZIP_HD void Put(uint32_t length, Gap&& gap) {
    if (boundary == pos) {
      gap(boundary / sub, 0u);
      boundary += sub;
    }
    if (boundary < pos + length) {
      gap(boundary / sub, pos + length - boundary);
      boundary += sub;
    }
    pos += length;
  }
};

// ---------------------------------------------------------------------------
// Fill mask.

inline constexpr int kMaskClasses = format::kMaskClasses;
inline constexpr int kMaxMaskCodeLength = 20;  // codec/fill_mask.cc
inline constexpr uint32_t kMaxMaskRun = format::kMaxMaskRun;
// A long run's repeated pair: 8190 (class 12, extra 4095) and 0 (class 0).
inline constexpr int kLongClass = 12;

EBZIP_HD inline int MaskClass(uint32_t length) { return length == 0 ? 0 : RunClass(length + 1); }
EBZIP_HD inline uint32_t MaskExtra(uint32_t length, int klass) {
  return length + 1 - (1u << klass);
}

// A run of `length` >= 0 elements as tokens: `pairs` times (8190, 0), then
// `rest` (§15.6's split).
struct MaskRun {
  uint64_t pairs;
  uint32_t rest;
};
EBZIP_HD inline MaskRun SplitMaskRun(uint64_t length) {
  const uint64_t pairs = length > kMaxMaskRun ? (length - 1) / kMaxMaskRun : 0;
  return {pairs, static_cast<uint32_t>(length - pairs * kMaxMaskRun)};
}

// The mask's canonical code: code lengths, codes, and the decoder's tables
// (symbols sorted by (length, class), as codec/huffman_decoder.cc's).
struct MaskCode {
  uint8_t lengths[kMaskClasses];
  uint8_t max_length;
  uint8_t sorted[kMaskClasses];
  uint32_t codes[kMaskClasses];
  uint32_t first[kMaxMaskCodeLength + 1];
  uint32_t count[kMaxMaskCodeLength + 1];
  uint32_t offset[kMaxMaskCodeLength + 1];

  // Bits of a token of `length` elements: codeword and extra bits.
  EBZIP_HD uint32_t TokenBits(uint32_t length) const {
    const int c = MaskClass(length);
    return lengths[c] + static_cast<uint32_t>(c);
  }
  // Its codeword and extra bits as one value of TokenBits bits (<= 32).
  EBZIP_HD uint32_t TokenValue(uint32_t length) const {
    const int c = MaskClass(length);
    return c == 0 ? codes[0] : (codes[c] << c) | MaskExtra(length, c);
  }
  // Decodes the class at the top of `window`: its codeword length, 0 if none.
  EBZIP_HD int Decode(uint32_t window, int* klass) const {
    for (int l = 1; l <= max_length; ++l) {
      const uint32_t code = window >> (32 - l);
      if (code - first[l] < count[l]) {
        *klass = sorted[offset[l] + (code - first[l])];
        return l;
      }
    }
    return 0;
  }
};

// Canonical codes and decode tables from code lengths (codec/huffman_code.cc's
// CanonicalCodes and HuffmanTable on 13 symbols). Lengths must be <= 20.
EBZIP_HD inline void FinishMaskCode(MaskCode* code) {
  uint32_t count[kMaxMaskCodeLength + 1] = {};
  int max_length = 0;
  for (int s = 0; s < kMaskClasses; ++s) {
    if (code->lengths[s] != 0) {
      ++count[code->lengths[s]];
      if (code->lengths[s] > max_length) max_length = code->lengths[s];
    }
  }
  code->max_length = static_cast<uint8_t>(max_length);
  uint32_t next[kMaxMaskCodeLength + 1] = {};
  uint32_t c = 0, at = 0;
  count[0] = 0;
  for (int l = 0; l <= kMaxMaskCodeLength; ++l) {
    if (l >= 1) c = (c + count[l - 1]) << 1;
    next[l] = c;
    code->first[l] = c;
    code->count[l] = count[l];
    code->offset[l] = at;
    at += count[l];
  }
  uint32_t fill[kMaxMaskCodeLength + 1];
  for (int l = 0; l <= kMaxMaskCodeLength; ++l) fill[l] = code->offset[l];
  for (int s = 0; s < kMaskClasses; ++s) {
    code->codes[s] = 0;
    const int l = code->lengths[s];
    if (l == 0) continue;
    code->codes[s] = next[l]++;
    code->sorted[fill[l]++] = static_cast<uint8_t>(s);
  }
}

// The 13 classes' code lengths from their histogram, exactly as
// codec/huffman_code.cc's BuildCodeLengths(histogram, 20) builds them: used
// classes keyed by (weight, place), sorted; the two-queue Huffman tree,
// leaves first on ties; while it is deeper than 20, every weight halved
// (rounding up) and re-sorted. At least one class must be used.
EBZIP_HD inline void MaskCodeLengths(const uint32_t histogram[kMaskClasses],
                                     uint8_t lengths[kMaskClasses]) {
  constexpr int kNodes = 2 * kMaskClasses - 1;
  uint32_t symbol[kMaskClasses];
  uint64_t keys[kMaskClasses];
  int m = 0;
  for (int s = 0; s < kMaskClasses; ++s) {
    lengths[s] = 0;
    if (histogram[s] != 0) {
      symbol[m] = static_cast<uint32_t>(s);
      keys[m] = uint64_t{histogram[s]} << 32 | static_cast<uint32_t>(m);
      ++m;
    }
  }
  if (m == 0) return;
  if (m == 1) {
    lengths[symbol[0]] = 1;
    return;
  }
  auto sort = [&]() {  // insertion sort: keys are distinct
    for (int i = 1; i < m; ++i) {
      const uint64_t k = keys[i];
      int j = i;
      for (; j > 0 && keys[j - 1] > k; --j) keys[j] = keys[j - 1];
      keys[j] = k;
    }
  };
  sort();
  uint64_t w[kNodes] = {};
  uint32_t parent[kNodes] = {};
  uint32_t height[kNodes] = {};
  for (;;) {
    for (int i = 0; i < m; ++i) w[i] = keys[i] >> 32, height[i] = 0;
    int leaf = 0, internal = m, next = m;
    auto take = [&]() {
      const bool from_leaf = leaf < m && (internal >= next || w[leaf] <= w[internal]);
      const int node = from_leaf ? leaf : internal;
      leaf += from_leaf;
      internal += !from_leaf;
      return node;
    };
    while (next < 2 * m - 1) {
      const int a = take();
      const int b = take();
      w[next] = w[a] + w[b];
      height[next] = (height[a] > height[b] ? height[a] : height[b]) + 1;
      parent[a] = parent[b] = static_cast<uint32_t>(next);
      ++next;
    }
    if (height[2 * m - 2] <= static_cast<uint32_t>(kMaxMaskCodeLength)) break;
    for (int i = 0; i < m; ++i) {
      keys[i] = ((keys[i] >> 32) + 1) / 2 << 32 | (keys[i] & 0xFFFFFFFFu);
    }
    sort();
  }
  uint32_t depth[kNodes];
  depth[2 * m - 2] = 0;
  for (int i = 2 * m - 2; i-- > 0;) depth[i] = depth[parent[i]] + 1;
  for (int i = 0; i < m; ++i) {
    lengths[symbol[keys[i] & 0xFFFFFFFFu]] = static_cast<uint8_t>(depth[i]);
  }
}

// What the decoder checks of the 13 code lengths (codec/fill_mask.cc): each
// at most 20, at least one used, Kraft's inequality.
EBZIP_HD inline bool ValidMaskCode(const uint8_t lengths[kMaskClasses]) {
  uint64_t kraft = 0;
  bool any = false;
  for (int c = 0; c < kMaskClasses; ++c) {
    if (lengths[c] > kMaxMaskCodeLength) return false;
    if (lengths[c] != 0) kraft += uint64_t{1} << (kMaxMaskCodeLength - lengths[c]), any = true;
  }
  return any && kraft <= (uint64_t{1} << kMaxMaskCodeLength);
}

// The boundaries of X among elements 64w .. 64w+63 (< n): bit k set where
// X[64w+k] differs from the element before it (X[-1] = 0), X[i] being
// mask[i] ^ mask[i - row] (mask[i] for i < row). Compares bytes as
// codec/fill_mask.cc does, whatever their values.
template <class Mask>
EBZIP_HD uint64_t BoundaryWord(Mask&& mask, uint64_t w, uint64_t n, uint64_t row) {
  auto x = [&](uint64_t i) -> uint8_t {
    return i < row ? mask(i) : static_cast<uint8_t>(mask(i) ^ mask(i - row));
  };
  const uint64_t begin = 64 * w;
  const uint64_t end = begin + 64 < n ? begin + 64 : n;
  uint8_t prev = begin == 0 ? 0 : x(begin - 1);
  uint64_t bits = 0;
  for (uint64_t i = begin; i < end; ++i) {
    const uint8_t v = x(i);
    bits |= uint64_t{v != prev} << (i - begin);
    prev = v;
  }
  return bits;
}

// The last boundary in word w's bitmap, or `none`.
EBZIP_HD inline uint64_t LastBoundary(uint64_t bits, uint64_t w, uint64_t none) {
  if (bits == 0) return none;
  int top = 63;
  while (!((bits >> top) & 1)) --top;
  return 64 * w + static_cast<uint64_t>(top);
}

// Calls run(length) for each run of X that ends in word w: at each boundary
// of `bits`, and at n when the word holds element n - 1. `start` is where the
// run in progress began (the last boundary before the word, or 0).
template <class F>
EBZIP_HD void ForEachRunEnding(uint64_t bits, uint64_t w, uint64_t n, uint64_t start, F&& run) {
  while (bits != 0) {
    int k = 0;
    while (!((bits >> k) & 1)) ++k;
    const uint64_t at = 64 * w + static_cast<uint64_t>(k);
    run(at - start);
    start = at;
    bits &= bits - 1;
  }
  if (64 * w < n && n <= 64 * w + 64) run(n - start);
}

// Token counts and bits of a run, without walking its long-run pairs.
EBZIP_HD inline uint64_t MaskRunTokens(uint64_t length) {
  return 2 * SplitMaskRun(length).pairs + 1;
}
EBZIP_HD inline uint64_t MaskRunBits(const MaskCode& code, uint64_t length) {
  const MaskRun r = SplitMaskRun(length);
  return r.pairs * (code.TokenBits(kMaxMaskRun) + code.TokenBits(0)) + code.TokenBits(r.rest);
}

// The decoder's undo of the rows' XOR, a prefix XOR down each column, cut
// into groups of whole rows so that groups x columns threads share it: about
// `threads` of them (fewer groups where the frame has few rows).
struct RowGroups {
  uint64_t rows;
  uint64_t per;  // rows per group
  uint64_t groups;
};
EBZIP_HD inline RowGroups GroupsOf(uint64_t n, uint64_t row, uint64_t threads) {
  RowGroups g;
  g.rows = (n + row - 1) / row;
  const uint64_t want = (threads + row - 1) / row;
  g.groups = want < 1 ? 1 : want < g.rows ? want : g.rows;
  g.per = (g.rows + g.groups - 1) / g.groups;
  g.groups = (g.rows + g.per - 1) / g.per;
  return g;
}

// Inclusive prefix XOR of a word's bits, lowest bit first.
EBZIP_HD inline uint64_t PrefixXor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

// --- The encoder's walks over a word's runs (fill_mask_kernels.cu), given
// the word's boundary bits, index w, the frame's n and `start`, where the
// run in progress at the word began.

// The word's tokens; adds their classes to `histogram`.
EBZIP_HD inline uint32_t CountWordTokens(uint64_t bits, uint64_t w, uint64_t n, uint64_t start,
                                         uint32_t histogram[kMaskClasses]) {
  uint32_t tokens = 0;
  ForEachRunEnding(bits, w, n, start, [&](uint64_t length) {
    const MaskRun r = SplitMaskRun(length);
    tokens += static_cast<uint32_t>(2 * r.pairs + 1);
    histogram[kLongClass] += static_cast<uint32_t>(r.pairs);
    histogram[0] += static_cast<uint32_t>(r.pairs);
    ++histogram[MaskClass(r.rest)];
  });
  return tokens;
}

// The word's tokens' bits.
EBZIP_HD inline uint64_t WordBits(const MaskCode& code, uint64_t bits, uint64_t w, uint64_t n,
                                  uint64_t start) {
  uint64_t sum = 0;
  ForEachRunEnding(bits, w, n, start, [&](uint64_t length) { sum += MaskRunBits(code, length); });
  return sum;
}

// Calls note(c, g) for each mask chunk c that starts at one of the word's
// tokens, g being that token's bit offset in the chunks' bits laid end to
// end; t and g are the word's first token and its offset. Long runs' pairs
// are stepped over, not walked.
template <class Note>
EBZIP_HD void WordChunkStarts(const MaskCode& code, uint64_t bits, uint64_t w, uint64_t n,
                              uint64_t start, uint64_t t, uint64_t g, Note&& note) {
  constexpr uint64_t kChunk = format::kMaskChunkTokens;
  const uint64_t long_bits = code.TokenBits(kMaxMaskRun);
  const uint64_t pair_bits = long_bits + code.TokenBits(0);
  ForEachRunEnding(bits, w, n, start, [&](uint64_t length) {
    const MaskRun r = SplitMaskRun(length);
    for (uint64_t c = (t + kChunk - 1) / kChunk; c * kChunk < t + 2 * r.pairs; ++c) {
      const uint64_t u = c * kChunk - t;
      note(c, g + u / 2 * pair_bits + (u % 2 ? long_bits : 0));
    }
    t += 2 * r.pairs;
    g += r.pairs * pair_bits;
    if (t % kChunk == 0) note(t / kChunk, g);
    ++t;
    g += code.TokenBits(r.rest);
  });
}

// Packs the word's tokens (t, g as above) into the bitstream's words: chunk
// c starts at word chunk_word0(c), and its first token's offset is
// chunk_bit0(c). A WordPacker's store and merge.
template <class ChunkBit0, class ChunkWord0, class Store, class Merge>
EBZIP_HD void PackWord(const MaskCode& code, uint64_t bits, uint64_t w, uint64_t n, uint64_t start,
                       uint64_t t, uint64_t g, ChunkBit0&& chunk_bit0, ChunkWord0&& chunk_word0,
                       Store&& store, Merge&& merge) {
  constexpr uint64_t kChunk = format::kMaskChunkTokens;
  const uint64_t in_chunk = g - chunk_bit0(t / kChunk);
  WordPacker<uint64_t> packer(chunk_word0(t / kChunk) + in_chunk / 32,
                              static_cast<uint32_t>(in_chunk % 32));
  const uint64_t first = t;
  auto put = [&](uint32_t length) {
    if (t % kChunk == 0 && t != first) packer.Restart(chunk_word0(t / kChunk), merge);
    packer.Put(code.TokenValue(length), code.TokenBits(length), store, merge);
    ++t;
  };
  ForEachRunEnding(bits, w, n, start, [&](uint64_t length) {
    const MaskRun r = SplitMaskRun(length);
    for (uint64_t p = 0; p < r.pairs; ++p) {
      put(kMaxMaskRun);
      put(0);
    }
    put(r.rest);
  });
  packer.Finish(merge);
}

// --- The decoder's.

// Lookup entries for codes of up to `bits` bits: (class << 8) | length, 0
// where the code is longer (or none matches) and Decode must search.
EBZIP_HD inline uint16_t MaskLookupEntry(const MaskCode& code, uint32_t e, int bits) {
  int klass = 0;
  const int l = code.Decode(e << (32 - bits), &klass);
  return l == 0 || l > bits ? 0 : static_cast<uint16_t>(klass << 8 | l);
}

// Decodes a mask chunk of `count` tokens and `bits` bits, its words read by
// word(i) (zero past the chunk's), giving each token's length to
// out(t, length) and their sum to *elements. Returns 0, or the first check
// (run_kernels.h's MaskCheck numbering: 6 an invalid token, 7 a chunk whose
// tokens end before its bits) that fails. `lookup` (MaskLookupEntry's, of
// lookup_bits) may be null.
inline constexpr uint32_t kCheckInvalidToken = 6;
inline constexpr uint32_t kCheckChunkLength = 7;
template <class Word, class Out>
EBZIP_HD uint32_t DecodeMaskChunk(const MaskCode& code, const uint16_t* lookup, int lookup_bits,
                                  Word&& word, uint32_t count, uint64_t bits, uint64_t* elements,
                                  Out&& out) {
  uint64_t pos = 0, sum = 0;
  for (uint32_t t = 0; t < count; ++t) {
    const uint64_t two = uint64_t{word(pos / 32)} << 32 | word(pos / 32 + 1);
    const uint32_t window = static_cast<uint32_t>((two << (pos % 32)) >> 32);
    int klass = 0, l = 0;
    const uint32_t e = lookup ? lookup[window >> (32 - lookup_bits)] : 0;
    if (e != 0) {
      klass = static_cast<int>(e >> 8);
      l = static_cast<int>(e & 0xFF);
    } else {
      l = code.Decode(window, &klass);
    }
    if (l == 0 || pos + static_cast<uint64_t>(l + klass) > bits) return kCheckInvalidToken;
    // l <= 20 and klass <= 12: the extra bits are in the same window.
    const uint32_t extra = klass == 0 ? 0 : (window << l) >> (32 - klass);
    const uint32_t length = (1u << klass) + extra - 1;
    out(t, length);
    sum += length;
    pos += static_cast<uint64_t>(l + klass);
  }
  *elements = sum;
  return pos == bits ? 0 : kCheckChunkLength;
}

// X's word from its toggles and the parity of all toggles before it (bits
// past the frame's end are whatever they are: mask them).
EBZIP_HD inline uint64_t XWord(uint64_t toggles, uint32_t parity_before) {
  const uint64_t x = PrefixXor(toggles);
  return parity_before & 1 ? ~x : x;
}

// 8 bits, lowest first, as 8 bytes of 0 or 1 (little-endian).
EBZIP_HD inline uint64_t SpreadByte(uint64_t bits8) {
  uint64_t v = bits8 & 0xFF;
  v = (v | v << 28) & 0x0000000F0000000Full;
  v = (v | v << 14) & 0x0003000300030003ull;
  v = (v | v << 7) & 0x0101010101010101ull;
  return v;
}

}  // namespace ebzip::gpu::run_steps

#endif  // EBZIP_GPU_RUN_STEPS_H_
