#include "codec/huffman_code.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "codec/format.h"
#include "codec/zero_run.h"

namespace ebzip {
namespace {

// A used symbol's weight and its place among the used symbols (which ascend)
// in one sortable word, so that ascending order is by weight and then by
// symbol: the order that makes the tree the same on every platform.
uint64_t Key(uint64_t weight, uint32_t place) { return weight << 32 | place; }
uint64_t WeightOf(uint64_t key) { return key >> 32; }
uint32_t PlaceOf(uint64_t key) { return static_cast<uint32_t>(key); }

// LSD radix sort of keys that arrive in place order, a byte of the weight
// at a time, skipping bytes that no weight differs in: for the few thousand
// symbols of a frame, a few times faster than a comparison sort (a frame's
// codes are built on the compressor's critical path, and the GPU codec's
// host builds several per frame to choose its predictor and stage). Each
// pass is stable, so keys of one weight stay in place order and the place
// bytes need no pass of their own.
void SortKeys(std::vector<uint64_t>* keys, std::vector<uint64_t>* scratch) {
  uint64_t all_or = 0, all_and = ~uint64_t{0};
  for (uint64_t k : *keys) all_or |= k, all_and &= k;
  const uint64_t varying = all_or ^ all_and;
  scratch->resize(keys->size());
  for (int shift = 32; shift < 64; shift += 8) {
    if (((varying >> shift) & 0xFF) == 0) continue;
    size_t count[257] = {};
    for (uint64_t k : *keys) ++count[((k >> shift) & 0xFF) + 1];
    for (int d = 0; d < 256; ++d) count[d + 1] += count[d];
    for (uint64_t k : *keys) (*scratch)[count[(k >> shift) & 0xFF]++] = k;
    keys->swap(*scratch);
  }
}

// Halves every weight of `sorted` (rounding up) and keeps the keys sorted.
// Halving keeps distinct weights in order except that weights 2j-1 and 2j
// become one: two neighbouring runs, each already in symbol order, so a
// merge per pair of runs does what a sort would, in one pass.
void HalveWeights(std::vector<uint64_t>* sorted, std::vector<uint64_t>* scratch) {
  uint64_t* k = sorted->data();
  const size_t m = sorted->size();
  scratch->resize(m);
  for (size_t i = 0; i < m;) {
    const uint64_t half = (WeightOf(k[i]) + 1) / 2;
    size_t second = i;  // where the run of the larger old weight starts
    while (second < m && WeightOf(k[second]) == WeightOf(k[i])) ++second;
    size_t end = second;
    while (end < m && (WeightOf(k[end]) + 1) / 2 == half) ++end;
    for (size_t x = i; x < end; ++x) k[x] = Key(half, PlaceOf(k[x]));
    std::merge(k + i, k + second, k + second, k + end, scratch->data() + i);
    i = end;
  }
  sorted->swap(*scratch);
}

// The Huffman tree over `sorted` (keys in ascending order, weights > 0),
// built with the two-queue method: nodes 0..m-1 are the leaves in sorted
// order, m.. the internal nodes, `parent` links them. Returns the tree's
// height, i.e. its deepest leaf's depth, counted on the way up so that a
// tree too deep for the length limit costs no second pass.
int HuffmanTree(const std::vector<uint64_t>& sorted, std::vector<uint64_t>* weight,
                std::vector<uint32_t>* parent, std::vector<uint32_t>* height) {
  const size_t m = sorted.size();
  weight->resize(2 * m - 1);
  parent->resize(2 * m - 1);
  height->resize(2 * m - 1);
  uint64_t* w = weight->data();
  uint32_t* up = parent->data();
  uint32_t* h = height->data();
  for (size_t i = 0; i < m; ++i) w[i] = WeightOf(sorted[i]), h[i] = 0;
  size_t leaf = 0, internal = m, next = m;
  auto take = [&]() {
    // Prefer the leaf on ties so the tree is the same on every platform.
    // Without branches: which queue wins is a coin toss to the predictor.
    // (Both reads stay inside w: leaf <= m and internal <= next < 2m - 1.)
    const bool from_leaf = leaf < m && (internal >= next || w[leaf] <= w[internal]);
    const size_t node = from_leaf ? leaf : internal;
    leaf += from_leaf;
    internal += !from_leaf;
    return node;
  };
  while (next < 2 * m - 1) {
    const size_t a = take();
    const size_t b = take();
    w[next] = w[a] + w[b];
    h[next] = std::max(h[a], h[b]) + 1;
    up[a] = up[b] = static_cast<uint32_t>(next);
    ++next;
  }
  return static_cast<int>(h[2 * m - 2]);
}

// Each leaf's depth in the tree HuffmanTree linked, into depth[0..m).
void LeafDepths(size_t m, const std::vector<uint32_t>& parent, std::vector<uint32_t>* depth) {
  uint32_t* d = depth->data();  // HuffmanTree's heights, reused
  d[2 * m - 2] = 0;
  for (size_t i = 2 * m - 2; i-- > 0;) d[i] = d[parent[i]] + 1;
}

// A run of zero lengths (codec/zero_run.h) at the end of *out.
void AppendZeroRun(uint64_t run, std::vector<uint8_t>* out) {
  uint8_t bytes[kMaxZeroRunBytes];
  out->insert(out->end(), bytes, WriteZeroRun(run, bytes));
}

}  // namespace

std::vector<uint8_t> BuildCodeLengths(absl::Span<const uint32_t> histogram, int max_length) {
  size_t count = 0;
  for (uint32_t c : histogram) count += c != 0;
  std::vector<SymbolCount> used;
  used.reserve(count);
  for (uint32_t s = 0; s < histogram.size(); ++s) {
    if (histogram[s] != 0) used.push_back({s, histogram[s]});
  }
  std::vector<uint8_t> lengths(histogram.size(), 0);
  const std::vector<uint8_t> used_lengths = BuildCodeLengths(used, max_length);
  for (size_t i = 0; i < used.size(); ++i) lengths[used[i].symbol] = used_lengths[i];
  return lengths;
}

std::vector<uint8_t> BuildCodeLengths(absl::Span<const SymbolCount> used, int max_length) {
  const size_t m = used.size();
  std::vector<uint8_t> lengths(m, 0);
  if (m == 0) return lengths;
  if (m == 1) {
    lengths[0] = 1;
    return lengths;
  }
  std::vector<uint64_t> keys(m);
  for (size_t i = 0; i < m; ++i) keys[i] = Key(used[i].count, static_cast<uint32_t>(i));
  std::vector<uint64_t> scratch, weight;
  std::vector<uint32_t> parent, depth;
  // Flattening the weights until the tree fits is simple, deterministic and
  // costs little: only rare symbols get longer codes than max_length allows.
  SortKeys(&keys, &scratch);
  while (HuffmanTree(keys, &weight, &parent, &depth) > max_length) {
    HalveWeights(&keys, &scratch);
  }
  LeafDepths(m, parent, &depth);
  for (size_t i = 0; i < m; ++i) lengths[PlaceOf(keys[i])] = static_cast<uint8_t>(depth[i]);
  return lengths;
}

std::vector<uint32_t> CanonicalCodes(absl::Span<const uint8_t> lengths) {
  // Locals, not vectors: a length is a uint8_t, which may alias anything, so
  // counting through a vector's pointer would reload it at every symbol.
  uint32_t count[257] = {}, next[257] = {};
  int max_len = 0;
  ForEachCodedSymbol(lengths, [&](uint32_t, uint8_t l) {
    ++count[l];
    max_len = std::max<int>(max_len, l);
  });
  uint32_t code = 0;
  for (int l = 1; l <= max_len; ++l) {
    code = (code + count[l - 1]) << 1;
    next[l] = code;
  }
  std::vector<uint32_t> codes(lengths.size(), 0);
  ForEachCodedSymbol(lengths, [&](uint32_t s, uint8_t l) { codes[s] = next[l]++; });
  return codes;
}

void AppendCodeLengths(absl::Span<const uint8_t> lengths, std::vector<uint8_t>* out) {
  size_t s = 0;
  while (s < lengths.size()) {
    if (lengths[s] != 0) {
      out->push_back(lengths[s++]);
      continue;
    }
    uint64_t run = 0;
    while (s < lengths.size() && lengths[s] == 0) ++run, ++s;
    AppendZeroRun(run, out);
  }
}

void AppendCodeLengths(absl::Span<const uint32_t> symbols, absl::Span<const uint8_t> lengths,
                       uint32_t alphabet, std::vector<uint8_t>* out) {
  uint64_t next = 0;  // the first symbol not yet written
  for (size_t i = 0; i < symbols.size(); ++i) {
    if (symbols[i] > next) AppendZeroRun(symbols[i] - next, out);
    out->push_back(lengths[i]);
    next = symbols[i] + 1;
  }
  if (alphabet > next) AppendZeroRun(alphabet - next, out);
}

uint64_t CodeLengthBytes(absl::Span<const SymbolCount> used, uint32_t alphabet) {
  uint64_t bytes = used.size(), next = 0;  // a length byte each, and the gaps' runs
  for (const SymbolCount& u : used) {
    bytes += ZeroRunBytes(u.symbol - next);
    next = uint64_t{u.symbol} + 1;
  }
  return bytes + (alphabet > next ? ZeroRunBytes(alphabet - next) : 0);
}

absl::StatusOr<std::vector<uint8_t>> ParseCodeLengths(absl::Span<const uint8_t> bytes,
                                                      uint32_t alphabet, int max_length) {
  auto corrupt = [](absl::string_view what) {
    return format::CorruptArchive(absl::StrCat("code lengths: ", what));
  };
  std::vector<uint8_t> lengths;
  lengths.reserve(alphabet);
  size_t p = 0;
  while (p < bytes.size()) {
    uint8_t b = bytes[p++];
    if (b != 0) {
      if (b > max_length) return corrupt("length above the maximum");
      if (lengths.size() >= alphabet) return corrupt("more lengths than symbols");
      lengths.push_back(b);
      continue;
    }
    uint64_t run = 0;
    int shift = 0;
    for (;;) {
      if (p >= bytes.size() || shift > 35) return corrupt("bad zero run");
      uint8_t v = bytes[p++];
      run |= static_cast<uint64_t>(v & 0x7F) << shift;
      shift += 7;
      if (!(v & 0x80)) break;
    }
    if (run == 0 || run > alphabet - lengths.size()) return corrupt("bad zero run");
    lengths.resize(lengths.size() + run, 0);
  }
  if (lengths.size() != alphabet) return corrupt("fewer lengths than symbols");
  // Kraft: sum of 2^-l <= 1, in units of 2^-max_length.
  uint64_t kraft = 0;
  bool any = false;
  for (uint8_t l : lengths) {
    if (l) {
      kraft += uint64_t{1} << (max_length - l);
      any = true;
    }
  }
  if (!any) return corrupt("no symbol has a code");
  if (kraft > (uint64_t{1} << max_length)) return corrupt("lengths over-subscribe the code");
  return lengths;
}

}  // namespace ebzip
