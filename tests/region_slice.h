// The slice of a whole decoded array that a region names, element by
// element: the independent reference the region decoder is checked against
// (tests/codec/region_test.cc, tests/fuzz/archive_reader_fuzzer.cc).
#ifndef EBZIP_TESTS_REGION_SLICE_H_
#define EBZIP_TESTS_REGION_SLICE_H_

#include <cstdint>
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

}  // namespace ebzip::testing

#endif  // EBZIP_TESTS_REGION_SLICE_H_
