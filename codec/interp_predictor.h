// The interpolation predictor of archive format version 2 (FORMAT.md §15.5,
// predictor 1): the anchors, one element per tile, are coded as a version-1
// Lorenzo frame of the anchor grid would be; every other element is predicted
// by linear or cubic interpolation from elements already known, level by
// level, and carries the quantized difference. This module maps a frame's
// values to symbols, outliers and verbatim indices and back; the Huffman,
// zero-run and fill-mask stages around it belong to the frame codec.
//
// Every floating-point operation is the one FORMAT.md §15.5.2 and §15.8
// write, in binary64 and in that order (the build has -ffp-contract=off): a
// GPU writer must produce the same symbols bit for bit.
#ifndef EBZIP_CODEC_INTERP_PREDICTOR_H_
#define EBZIP_CODEC_INTERP_PREDICTOR_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codec/types.h"

namespace ebzip {

// The frame header's `order` field.
enum class InterpOrder : uint8_t { kLinear = 1, kCubic = 3 };

struct InterpParams {
  DType dtype = DType::kFloat32;
  std::vector<uint64_t> shape;            // the frame's shape, rank 1..4
  std::array<uint16_t, kMaxDims> tile{};  // per dim: 1 (batch) or T (interpolated); unused dims 0
  InterpOrder order = InterpOrder::kCubic;
  uint32_t radius = 32768;
  double abs_bound = 0;
  double quant_step = 0;
  // Informational: which elements are fill is the caller's fill mask, which
  // it computes from this value (bit-equal to narrow_T(fill_value)).
  std::optional<double> fill_value;
};

// INVALID_ARGUMENT unless the parameters are ones a writer may use: dtype
// f32 or f64; rank 1..4 with every extent >= 1 and at most 2^32 - 1
// elements; tile[d] 1 or one common power of two T in [2, 32768] for
// d < rank, at least one of them T, and 0 beyond the rank (FORMAT.md §15.2);
// order 1 or 3; radius 1..32768; quant_step finite and > 0; abs_bound
// finite and >= 0. InterpEncode and InterpDecode check them too.
absl::Status ValidateInterpParams(const InterpParams& params);

struct InterpEncoded {
  std::vector<uint16_t> symbols;          // the S symbols, in symbol order (§15.3, §15.5.3)
  std::vector<uint32_t> verbatim_index;   // ascending element indices (anchors and others)
  std::vector<uint32_t> outlier_index;    // ascending element indices (anchors only)
  std::vector<int32_t> outlier_residual;  // in the same order
};

// Encodes a frame (`data`: its elements, of params.dtype, in C order) as
// FORMAT.md §15.8 prescribes. `fill_mask` is null when the frame has no fill
// value, else n bytes, 1 where the element is fill: fill anchors get a
// placeholder (§10.2) and a symbol, other fill elements no symbol. *out is
// replaced. CANCELLED soon after *cancel is set (codec/cancel.h).
absl::Status InterpEncode(const InterpParams& params, const uint8_t* data, const uint8_t* fill_mask,
                          InterpEncoded* out, const std::atomic<bool>* cancel = nullptr);

// Writes the frame's working values (§15.5.4; the caller then overwrites
// fill and verbatim elements) to `out`: n elements of params.dtype.
// `symbols` are the S symbols in symbol order, zero-run tokens already
// expanded; `outlier_index` (ascending, < n, as the caller has checked) and
// `outlier_residual` are the outlier section's; `fill_mask` is as for
// InterpEncode. DATA_LOSS (format::CorruptArchive) when symbols.size() is
// not the S the mask implies, a symbol is beyond the alphabet (>= 2 radius),
// a non-anchor has symbol 0, an outlier index is not an anchor or its
// symbol is not 0, or the outlier count differs from the number of symbols
// 0; nothing is read out of bounds on any input. CANCELLED soon after
// *cancel is set, with `out` partly written.
absl::Status InterpDecode(const InterpParams& params, absl::Span<const uint16_t> symbols,
                          absl::Span<const uint32_t> outlier_index,
                          absl::Span<const int32_t> outlier_residual, const uint8_t* fill_mask,
                          uint8_t* out, const std::atomic<bool>* cancel = nullptr);

// Decoding part of a frame (codec/region_frame.h): the elements of a box,
// [lo[d], hi[d]) along each dimension of the frame, and whatever else the
// same pages hold. A box meets tiles; each of them reads its window's far
// faces, which belong to the next tiles along the interpolated dimensions
// (the box's "ring": their lower faces only are computed), and the anchors
// of all of them, which are Lorenzo-coded over the anchor grid in blocks of
// 8 (§15.5.1): the anchors from each such block's first corner on.
struct InterpRegion {
  std::array<uint64_t, kMaxDims> tile_lo{}, tile_hi{};  // tiles met, ring included (inclusive)
  std::array<uint64_t, kMaxDims> ring{};                // per dim: tiles >= ring[d] are ring tiles
  std::array<uint64_t, kMaxDims> anchor_lo{};           // anchors from here to tile_hi
  std::vector<uint32_t> tile_start;                     // each tile's first position, then S
  // The symbol positions the decode reads, [begin, end), ascending and
  // disjoint.
  std::vector<std::pair<uint64_t, uint64_t>> positions;
};

// The plan for the box [lo, hi) (each lo[d] < hi[d] <= shape[d]) of a frame
// with `positions` symbol positions (S). DATA_LOSS when the fill mask
// implies another S.
absl::StatusOr<InterpRegion> PlanInterpRegion(const InterpParams& params, const uint8_t* fill_mask,
                                              uint64_t positions, absl::Span<const uint64_t> lo,
                                              absl::Span<const uint64_t> hi,
                                              const std::atomic<bool>* cancel = nullptr);

// InterpDecode for a region: `symbols` spans the frame's S positions, of
// which only region.positions are read; `out` spans the frame's n elements,
// of which the box's get their working values (other elements of the tiles
// met may be written too). Checks, as InterpDecode does, every symbol and
// outlier it reads, the outlier entries of the anchors it reads (and that
// every outlier entry is at an anchor).
absl::Status InterpDecodeRegion(const InterpParams& params, const InterpRegion& region,
                                absl::Span<const uint16_t> symbols,
                                absl::Span<const uint32_t> outlier_index,
                                absl::Span<const int32_t> outlier_residual,
                                const uint8_t* fill_mask, uint8_t* out,
                                const std::atomic<bool>* cancel = nullptr);

}  // namespace ebzip

#endif  // EBZIP_CODEC_INTERP_PREDICTOR_H_
