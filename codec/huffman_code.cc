#include "codec/huffman_code.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "codec/format.h"

namespace ebzip {
namespace {

// A used symbol's weight and its place among the used symbols (which ascend)
// in one sortable word, so that ascending order is by weight and then by
// symbol: the order that makes the tree the same on every platform.
uint64_t Key(uint64_t weight, uint32_t place) { return weight << 32 | place; }
uint64_t WeightOf(uint64_t key) { return key >> 32; }
uint32_t PlaceOf(uint64_t key) { return static_cast<uint32_t>(key); }

// LSD radix sort, a byte at a time, skipping bytes that no key differs in:
// for the few thousand symbols of a frame, a few times faster than a
// comparison sort (a frame's code is built on the compressor's critical
// path, once per batch on the GPU codec).
void SortKeys(std::vector<uint64_t>* keys, std::vector<uint64_t>* scratch) {
  uint64_t all_or = 0, all_and = ~uint64_t{0};
  for (uint64_t k : *keys) all_or |= k, all_and &= k;
  const uint64_t varying = all_or ^ all_and;
  scratch->resize(keys->size());
  for (int shift = 0; shift < 64; shift += 8) {
    if (((varying >> shift) & 0xFF) == 0) continue;
    size_t count[257] = {};
    for (uint64_t k : *keys) ++count[((k >> shift) & 0xFF) + 1];
    for (int d = 0; d < 256; ++d) count[d + 1] += count[d];
    for (uint64_t k : *keys) (*scratch)[count[(k >> shift) & 0xFF]++] = k;
    keys->swap(*scratch);
  }
}

// Depth of each leaf of the Huffman tree over `sorted` (keys in ascending
// order, weights > 0), built with the two-queue method; the deepest one.
int HuffmanDepths(const std::vector<uint64_t>& sorted, std::vector<uint64_t>* weight,
                  std::vector<uint32_t>* parent, std::vector<uint8_t>* depth) {
  const size_t m = sorted.size();
  // Nodes 0..m-1 are leaves in sorted order, m.. are internal nodes.
  weight->resize(2 * m - 1);
  parent->resize(2 * m - 1);
  depth->resize(2 * m - 1);
  uint64_t* w = weight->data();
  uint32_t* up = parent->data();
  for (size_t i = 0; i < m; ++i) w[i] = WeightOf(sorted[i]);
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
    up[a] = up[b] = static_cast<uint32_t>(next);
    ++next;
  }
  uint8_t* d = depth->data();
  d[2 * m - 2] = 0;
  int deepest = 0;
  for (size_t i = 2 * m - 2; i-- > 0;) {
    // Depths beyond 255 only say "too deep": the caller flattens and retries.
    d[i] = static_cast<uint8_t>(std::min(255, d[up[i]] + 1));
    if (i < m) deepest = std::max<int>(deepest, d[i]);
  }
  return deepest;
}

// A run of zero lengths: a 0, then the run's length in LEB128.
void AppendZeroRun(uint64_t run, std::vector<uint8_t>* out) {
  out->push_back(0);
  do {
    uint8_t byte = run & 0x7F;
    run >>= 7;
    out->push_back(byte | (run ? 0x80 : 0));
  } while (run);
}

}  // namespace

std::vector<uint8_t> BuildCodeLengths(absl::Span<const uint32_t> histogram, int max_length) {
  std::vector<SymbolCount> used;
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
  std::vector<uint32_t> parent;
  std::vector<uint8_t> depth;
  // Flattening the weights until the tree fits is simple, deterministic and
  // costs little: only rare symbols get longer codes than max_length allows.
  for (;;) {
    SortKeys(&keys, &scratch);
    if (HuffmanDepths(keys, &weight, &parent, &depth) <= max_length) {
      for (size_t i = 0; i < m; ++i) lengths[PlaceOf(keys[i])] = depth[i];
      return lengths;
    }
    for (uint64_t& k : keys) k = Key((WeightOf(k) + 1) / 2, PlaceOf(k));
  }
}

std::vector<uint32_t> CanonicalCodes(absl::Span<const uint8_t> lengths) {
  int max_len = 0;
  for (uint8_t l : lengths) max_len = std::max<int>(max_len, l);
  std::vector<uint32_t> count(max_len + 2, 0), next(max_len + 2, 0);
  for (uint8_t l : lengths) {
    if (l) ++count[l];
  }
  uint32_t code = 0;
  for (int l = 1; l <= max_len; ++l) {
    code = (code + count[l - 1]) << 1;
    next[l] = code;
  }
  std::vector<uint32_t> codes(lengths.size(), 0);
  for (size_t s = 0; s < lengths.size(); ++s) {
    if (lengths[s]) codes[s] = next[lengths[s]]++;
  }
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
