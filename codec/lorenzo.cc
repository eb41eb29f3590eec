#include "codec/lorenzo.h"

#include <algorithm>

#include "codec/cancel.h"
#include "codec/parallel.h"

namespace ebzip {
namespace {

// One separable pass along dimension d. The array is [outer][dims[d]][inner];
// within each block along d, row i combines with row i-1. Forward passes
// subtract, walking each block backwards so they read unmodified rows.
template <bool kForward>
void Pass(const BlockGrid& g, int d, int32_t* v, const std::atomic<bool>* cancel) {
  const uint64_t len = g.dims[d];
  const uint64_t b = g.block[d];
  if (len <= 1 || b <= 1) return;
  uint64_t outer = 1, inner = 1;
  for (int i = 0; i < d; ++i) outer *= g.dims[i];
  for (int i = d + 1; i < kMaxDims; ++i) inner *= g.dims[i];
  const uint64_t blocks = (len + b - 1) / b;
  if (inner == 1) {
    // Along the last dimension a "row" is one element: the general loop
    // below would spend three divisions on each. Whole lines instead, in
    // tasks of ~64K elements.
    const uint64_t lines_per_task = std::max<uint64_t>(1, (uint64_t{1} << 16) / len);
    ParallelFor((outer + lines_per_task - 1) / lines_per_task, [&](uint64_t t) {
      if (Cancelled(cancel)) return;
      const uint64_t end = std::min(outer, (t + 1) * lines_per_task);
      for (uint64_t o = t * lines_per_task; o < end; ++o) {
        int32_t* line = v + o * len;
        for (uint64_t i0 = 0; i0 < len; i0 += b) {
          const uint64_t i1 = std::min(len, i0 + b);
          if (kForward) {
            for (uint64_t i = i1 - 1; i > i0; --i) line[i] -= line[i - 1];
          } else {
            for (uint64_t i = i0 + 1; i < i1; ++i) {
              line[i] = static_cast<int32_t>(static_cast<uint32_t>(line[i]) +
                                             static_cast<uint32_t>(line[i - 1]));
            }
          }
        }
      }
    });
    return;
  }
  // Split long rows so a task touches ~64K elements whatever the shape.
  constexpr uint64_t kPiece = 1 << 16;
  const uint64_t pieces = (inner + kPiece - 1) / kPiece;
  const uint64_t units = outer * blocks * pieces;
  const uint64_t units_per_task = std::max<uint64_t>(1, kPiece / (b * std::min(inner, kPiece)));
  const uint64_t tasks = (units + units_per_task - 1) / units_per_task;
  ParallelFor(tasks, [&](uint64_t t) {
    if (Cancelled(cancel)) return;
    const uint64_t end = std::min(units, (t + 1) * units_per_task);
    for (uint64_t u = t * units_per_task; u < end; ++u) {
      const uint64_t piece = u % pieces;
      const uint64_t blk = (u / pieces) % blocks;
      const uint64_t o = u / (pieces * blocks);
      const uint64_t j0 = piece * kPiece;
      const uint64_t j1 = std::min(inner, j0 + kPiece);
      const uint64_t i0 = blk * b;
      const uint64_t i1 = std::min(len, i0 + b);
      int32_t* base = v + o * len * inner;
      if (kForward) {
        for (uint64_t i = i1 - 1; i > i0; --i) {
          int32_t* row = base + i * inner;
          const int32_t* prev = row - inner;
          for (uint64_t j = j0; j < j1; ++j) row[j] -= prev[j];
        }
      } else {
        for (uint64_t i = i0 + 1; i < i1; ++i) {
          int32_t* row = base + i * inner;
          const int32_t* prev = row - inner;
          // Unsigned arithmetic: corrupt residuals may overflow, which must
          // wrap rather than be undefined behaviour.
          for (uint64_t j = j0; j < j1; ++j) {
            row[j] = static_cast<int32_t>(static_cast<uint32_t>(row[j]) +
                                          static_cast<uint32_t>(prev[j]));
          }
        }
      }
    }
  });
}

}  // namespace

BlockGrid BlockGrid::Make(absl::Span<const uint64_t> shape, absl::Span<const uint16_t> block) {
  BlockGrid g;
  const int pad = kMaxDims - static_cast<int>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    g.dims[pad + i] = shape[i];
    g.block[pad + i] = block[i];
  }
  return g;
}

void LorenzoForward(const BlockGrid& grid, int32_t* values, const std::atomic<bool>* cancel) {
  for (int d = 0; d < kMaxDims; ++d) Pass<true>(grid, d, values, cancel);
}

void LorenzoInverse(const BlockGrid& grid, int32_t* values, const std::atomic<bool>* cancel) {
  for (int d = kMaxDims - 1; d >= 0; --d) Pass<false>(grid, d, values, cancel);
}

std::array<uint16_t, kMaxDims> DefaultBlock(int ndim) {
  switch (ndim) {
    case 1:
      return {256, 0, 0, 0};
    case 2:
      return {16, 16, 0, 0};
    case 3:
      return {8, 8, 8, 0};
    default:
      return {1, 8, 8, 8};
  }
}

}  // namespace ebzip
