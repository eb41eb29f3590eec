#include "codec/huffman_code.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "codec/format.h"

namespace ebzip {
namespace {

// Depths of the leaves of a Huffman tree over `weights` (all > 0), built with
// the two-queue method on leaves sorted by (weight, symbol).
std::vector<int> HuffmanDepths(const std::vector<uint64_t>& weights,
                               const std::vector<uint32_t>& order) {
  const size_t m = order.size();
  // Nodes 0..m-1 are leaves in sorted order, m.. are internal nodes.
  std::vector<uint64_t> w(2 * m - 1);
  std::vector<size_t> parent(2 * m - 1, 0);
  for (size_t i = 0; i < m; ++i) w[i] = weights[order[i]];
  size_t leaf = 0, internal = m, next = m;
  auto take = [&]() {
    // Prefer the leaf on ties so the tree is the same on every platform.
    if (leaf < m && (internal >= next || w[leaf] <= w[internal])) return leaf++;
    return internal++;
  };
  while (next < 2 * m - 1) {
    size_t a = take();
    size_t b = take();
    w[next] = w[a] + w[b];
    parent[a] = parent[b] = next;
    ++next;
  }
  std::vector<int> depth(2 * m - 1, 0);
  for (size_t i = 2 * m - 2; i-- > 0;) depth[i] = depth[parent[i]] + 1;
  depth.resize(m);
  return depth;
}

}  // namespace

std::vector<uint8_t> BuildCodeLengths(absl::Span<const uint32_t> histogram, int max_length) {
  std::vector<uint8_t> lengths(histogram.size(), 0);
  std::vector<uint32_t> used;
  for (uint32_t s = 0; s < histogram.size(); ++s) {
    if (histogram[s] != 0) used.push_back(s);
  }
  if (used.empty()) return lengths;
  if (used.size() == 1) {
    lengths[used[0]] = 1;
    return lengths;
  }
  std::vector<uint64_t> weights(histogram.begin(), histogram.end());
  // Flattening the weights until the tree fits is simple, deterministic and
  // costs little: only rare symbols get longer codes than max_length allows.
  for (;;) {
    std::vector<uint32_t> order = used;
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return weights[a] < weights[b]; });
    std::vector<int> depth = HuffmanDepths(weights, order);
    int deepest = *std::max_element(depth.begin(), depth.end());
    if (deepest <= max_length) {
      for (size_t i = 0; i < order.size(); ++i) lengths[order[i]] = static_cast<uint8_t>(depth[i]);
      return lengths;
    }
    for (uint32_t s : used) weights[s] = (weights[s] + 1) / 2;
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
    out->push_back(0);
    do {  // LEB128
      uint8_t byte = run & 0x7F;
      run >>= 7;
      out->push_back(byte | (run ? 0x80 : 0));
    } while (run);
  }
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
