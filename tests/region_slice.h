// The slice of a whole decoded array that a region names, element by
// element: the independent reference the region decoder is checked against
// (tests/codec/region_test.cc, tests/gpu/gpu_region_test.cc,
// tests/fuzz/archive_reader_fuzzer.cc), and the regions they try.
#ifndef EBZIP_TESTS_REGION_SLICE_H_
#define EBZIP_TESTS_REGION_SLICE_H_

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "codec/region.h"

namespace ebzip::testing {

// Index (i_0, ..., i_n-1) of the region is element
// (start_d + i_d * step_d) of the array.
inline std::vector<uint8_t> SliceOf(const std::vector<uint8_t>& full,
                                    const std::vector<uint64_t>& shape, const Hyperslab& r,
                                    size_t elem) {
  std::vector<uint8_t> out;
  const size_t ndim = shape.size();
  std::vector<uint64_t> idx(ndim, 0);
  for (uint64_t k = 0; k < r.NumElements(); ++k) {
    uint64_t at = 0;
    for (size_t d = 0; d < ndim; ++d) at = at * shape[d] + r.start[d] + idx[d] * r.step[d];
    out.insert(out.end(), full.begin() + at * elem, full.begin() + (at + 1) * elem);
    for (size_t d = ndim; d-- > 0;) {
      if (++idx[d] < r.count[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Random regions of `shape`, plus the edge cases every shape gets.
inline std::vector<Hyperslab> RegionsOf(const std::vector<uint64_t>& shape, std::mt19937_64& rng) {
  std::vector<Hyperslab> out;
  out.push_back(WholeArray(shape));
  Hyperslab one, last, empty;
  for (uint64_t s : shape) {
    one.start.push_back(0), one.count.push_back(1), one.step.push_back(1);
    last.start.push_back(s - 1), last.count.push_back(1), last.step.push_back(1);
    empty.start.push_back(s / 2), empty.count.push_back(0), empty.step.push_back(1);
  }
  out.push_back(one);
  out.push_back(last);
  out.push_back(empty);
  for (int k = 0; k < 12; ++k) {
    Hyperslab h;
    for (uint64_t s : shape) {
      const uint64_t start = rng() % s;
      const uint64_t step = 1 + rng() % 4;
      const uint64_t most = (s - 1 - start) / step + 1;
      h.start.push_back(start);
      h.step.push_back(step);
      h.count.push_back(1 + rng() % most);
    }
    out.push_back(h);
  }
  // Small boxes, which a frame decodes in part: anywhere, and against the
  // far edges (the last tiles and blocks, cut short).
  for (int k = 0; k < 12; ++k) {
    Hyperslab h;
    for (uint64_t s : shape) {
      const uint64_t count = 1 + rng() % std::min<uint64_t>(s, 9);
      const uint64_t start = k % 3 == 0 ? s - count : rng() % (s - count + 1);
      h.start.push_back(start);
      h.count.push_back(count);
      h.step.push_back(1);
    }
    out.push_back(h);
  }
  return out;
}

}  // namespace ebzip::testing

#endif  // EBZIP_TESTS_REGION_SLICE_H_
