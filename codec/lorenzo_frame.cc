#include "codec/lorenzo_frame.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "absl/strings/string_view.h"
#include "codec/byte_io.h"
#include "codec/cancel.h"
#include "codec/frame_box.h"
#include "codec/lorenzo.h"
#include "codec/parallel.h"
#include "codec/quantize_point.h"

namespace ebzip {
namespace {

using format::FrameHeader;
using RangeFindings = LorenzoEncoded::RangeFindings;
using FillRun = LorenzoEncoded::FillRun;

constexpr uint64_t kRange = kLorenzoRange;

uint64_t NumRanges(uint64_t n) { return (n + kRange - 1) / kRange; }

// Frees a vector's storage (assigning {} would keep it).
template <typename V>
void Release(V& v) {
  V().swap(v);
}

template <typename T>
QuantRule MakeRule(const FrameParams& p) {
  QuantRule rule{p.abs_bound, p.quant_step, p.fill_value.has_value(), 0};
  if (p.fill_value) rule.fill_bits = ToBits(static_cast<T>(*p.fill_value));
  return rule;
}

// A frame's Lorenzo blocks (FORMAT.md §8.3), numbered in row-major order of
// their place in the grid of blocks; the last block along a dimension may be
// cut short by the frame's edge.
class BlockTiling {
 public:
  explicit BlockTiling(const BlockGrid& grid) : g_(grid) {
    for (int d = 0; d < kMaxDims; ++d) counts_[d] = (g_.dims[d] + g_.block[d] - 1) / g_.block[d];
    // Divisions are slow enough to dominate when a field has many short
    // fill runs, so each row's first block is looked up, not computed.
    row_first_block_.reserve(g_.dims[0] * g_.dims[1] * g_.dims[2]);
    for (uint64_t x0 = 0; x0 < g_.dims[0]; ++x0) {
      for (uint64_t x1 = 0; x1 < g_.dims[1]; ++x1) {
        for (uint64_t x2 = 0; x2 < g_.dims[2]; ++x2) {
          row_first_block_.push_back(static_cast<uint32_t>(
              ((x0 / g_.block[0] * counts_[1] + x1 / g_.block[1]) * counts_[2] + x2 / g_.block[2]) *
              counts_[3]));
        }
      }
    }
  }

  uint64_t count() const { return counts_[0] * counts_[1] * counts_[2] * counts_[3]; }
  uint64_t max_volume() const { return g_.block[0] * g_.block[1] * g_.block[2] * g_.block[3]; }

  // Splits the C-order range [start, start + length) where it crosses a row
  // (the last dimension) or a block, and calls fn(block, first, count) for
  // each piece in order.
  template <typename Fn>
  void ForEachPiece(uint64_t start, uint64_t length, Fn fn) const {
    const uint64_t width = g_.dims[3];
    const uint64_t end = start + length;
    for (uint64_t i = start; i < end;) {
      const uint64_t row = i / width;
      const uint64_t row_start = row * width;
      const uint64_t row_end = std::min(end, row_start + width);
      for (uint64_t b = (i - row_start) / g_.block[3]; i < row_end; ++b) {
        const uint64_t piece_end = std::min(row_end, row_start + (b + 1) * g_.block[3]);
        fn(row_first_block_[row] + b, i, piece_end - i);
        i = piece_end;
      }
    }
  }

  // The number of elements of block `id`.
  uint64_t Volume(uint64_t id) const {
    std::array<uint64_t, kMaxDims> lo, hi;
    Bounds(id, &lo, &hi);
    return (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]) * (hi[3] - lo[3]);
  }

  // Calls fn(first, count) for each row of block `id` (its elements along
  // the last dimension, consecutive in C order), in row-major order, until
  // fn returns false.
  template <typename Fn>
  void ForEachRow(uint64_t id, Fn fn) const {
    std::array<uint64_t, kMaxDims> lo, hi;
    Bounds(id, &lo, &hi);
    for (uint64_t x0 = lo[0]; x0 < hi[0]; ++x0) {
      for (uint64_t x1 = lo[1]; x1 < hi[1]; ++x1) {
        for (uint64_t x2 = lo[2]; x2 < hi[2]; ++x2) {
          const uint64_t first = ((x0 * g_.dims[1] + x1) * g_.dims[2] + x2) * g_.dims[3] + lo[3];
          if (!fn(first, hi[3] - lo[3])) return;
        }
      }
    }
  }

 private:
  // Block `id` covers [lo[d], hi[d]) along each dimension d.
  void Bounds(uint64_t id, std::array<uint64_t, kMaxDims>* lo,
              std::array<uint64_t, kMaxDims>* hi) const {
    for (int d = kMaxDims - 1; d >= 0; --d) {
      (*lo)[d] = id % counts_[d] * g_.block[d];
      (*hi)[d] = std::min(g_.dims[d], (*lo)[d] + g_.block[d]);
      id /= counts_[d];
    }
  }

  const BlockGrid& g_;
  std::array<uint64_t, kMaxDims> counts_;
  std::vector<uint32_t> row_first_block_;  // blocks < elements < 2^32
};

// Gives every fill and verbatim element its placeholder q (FORMAT.md §10.2):
// the q of the first quantized element of its own Lorenzo block in
// row-major order, or 0 if the block has none. The decoder overwrites these
// elements, so any q is valid; one near the data keeps the predictor from
// seeing a cliff at every coastline, and taking it from the block alone
// keeps blocks independent, so the GPU writer needs no frame-wide pass.
//
// QuantizePoint has already set their q to 0, so only blocks that mix
// quantized and other elements need any work.
void ApplyPlaceholders(const BlockGrid& grid, const std::vector<LorenzoEncoded::RangeFindings>& found, int32_t* q,
                       const std::atomic<bool>* cancel) {
  bool any = false;
  for (const LorenzoEncoded::RangeFindings& f : found) any |= !f.verbatim_index.empty() || !f.fill_runs.empty();
  if (!any) return;  // most frames: nothing to allocate or scan

  // Which elements are fill or verbatim, and how many each block holds.
  const BlockTiling tiling(grid);
  std::vector<uint8_t> special(grid.size(), 0);
  std::vector<uint32_t> specials_per_block(tiling.count(), 0);  // a frame has < 2^32 elements
  auto mark = [&](uint64_t start, uint64_t length) {
    std::fill_n(special.begin() + start, length, 1);
    tiling.ForEachPiece(start, length, [&](uint64_t block, uint64_t, uint64_t count) {
      specials_per_block[block] += static_cast<uint32_t>(count);
    });
  };
  for (const LorenzoEncoded::RangeFindings& f : found) {
    for (uint32_t i : f.verbatim_index) mark(i, 1);
    for (const LorenzoEncoded::FillRun& run : f.fill_runs) mark(run.start, run.length);
  }
  // Counted, then listed: the list is allocated once at its size.
  auto is_mixed = [&](uint64_t b) {
    return specials_per_block[b] != 0 && specials_per_block[b] != tiling.Volume(b);
  };
  uint64_t mixed_count = 0;
  for (uint64_t b = 0; b < specials_per_block.size(); ++b) mixed_count += is_mixed(b);
  std::vector<uint64_t> mixed;
  mixed.reserve(mixed_count);
  for (uint64_t b = 0; b < specials_per_block.size(); ++b) {
    if (is_mixed(b)) mixed.push_back(b);
  }
  Release(specials_per_block);

  // Each mixed block's placeholder. Blocks are disjoint, so they are
  // searched in parallel, in batches of about kRange elements.
  std::vector<int32_t> placeholder(tiling.count(), 0);
  const uint64_t per_task = std::max<uint64_t>(1, kRange / tiling.max_volume());
  ParallelFor((mixed.size() + per_task - 1) / per_task, [&](uint64_t t) {
    if (Cancelled(cancel)) return;
    const uint64_t end = std::min<uint64_t>(mixed.size(), (t + 1) * per_task);
    for (uint64_t k = t * per_task; k < end; ++k) {
      tiling.ForEachRow(mixed[k], [&](uint64_t first, uint64_t count) {
        const void* hit = std::memchr(special.data() + first, 0, count);
        if (hit == nullptr) return true;
        placeholder[mixed[k]] = q[static_cast<const uint8_t*>(hit) - special.data()];
        return false;
      });
    }
  });

  // Written run by run in index order, which is kinder to the cache than
  // block by block. Each range's elements are its own, so ranges run in
  // parallel.
  ParallelFor(found.size(), [&](uint64_t r) {
    if (Cancelled(cancel)) return;
    auto place = [&](uint64_t start, uint64_t length) {
      tiling.ForEachPiece(start, length, [&](uint64_t block, uint64_t first, uint64_t count) {
        if (placeholder[block] != 0) std::fill_n(q + first, count, placeholder[block]);
      });
    };
    for (uint32_t i : found[r].verbatim_index) place(i, 1);
    for (const LorenzoEncoded::FillRun& run : found[r].fill_runs) place(run.start, run.length);
  });
}

#if defined(__x86_64__)
// QuantizePoint for floats x[0, count), four at a time with AVX2 (checked
// at run time): lane for lane the same operations. Double to float
// conversion rounds as Narrow does (to nearest, overflowing to infinity),
// and rounding to an integer uses the current mode as rint does. The
// remainder is left to the caller; returns how many were done.
[[gnu::target("avx2")]] uint64_t QuantizeAvx2(const float* x, uint64_t count,
                                              const QuantRule& rule, int32_t* q,
                                              PointKind* kinds) {
  const __m256d step = _mm256_set1_pd(rule.step);
  const __m256d bound = _mm256_set1_pd(rule.abs_bound);
  const __m256d limit = _mm256_set1_pd(kQuantLimit);
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  const __m128i exponent = _mm_set1_epi32(0x7F800000);
  const __m128i zero = _mm_setzero_si128();
  const __m128i fill_bits = _mm_set1_epi32(static_cast<int32_t>(rule.fill_bits));
  const __m128i has_fill = rule.has_fill ? _mm_set1_epi32(-1) : zero;
  uint64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const __m128 xv = _mm_loadu_ps(x + i);
    const __m128i bits = _mm_castps_si128(xv);
    const __m128i exp = _mm_and_si128(bits, exponent);
    const __m128i fill = _mm_and_si128(has_fill, _mm_cmpeq_epi32(bits, fill_bits));
    const __m128i special =
        _mm_or_si128(_mm_cmpeq_epi32(exp, exponent),
                     _mm_andnot_si128(_mm_cmpeq_epi32(bits, zero), _mm_cmpeq_epi32(exp, zero)));
    const __m256d xd = _mm256_cvtps_pd(xv);
    const __m256d r = _mm256_div_pd(xd, step);
    const __m256d rounded = _mm256_round_pd(r, _MM_FROUND_CUR_DIRECTION);
    const __m128 y = _mm256_cvtpd_ps(_mm256_mul_pd(rounded, step));
    const __m256d error = _mm256_and_pd(_mm256_sub_pd(_mm256_cvtps_pd(y), xd), abs_mask);
    const __m256d fits = _mm256_and_pd(_mm256_cmp_pd(_mm256_and_pd(r, abs_mask), limit, _CMP_LT_OQ),
                                       _mm256_cmp_pd(error, bound, _CMP_LE_OQ));
    // The 64-bit lane masks narrowed to 32 bits (each lane's low half).
    const __m128i fits32 = _mm_castps_si128(_mm256_castps256_ps128(_mm256_permutevar8x32_ps(
        _mm256_castpd_ps(fits), _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7))));
    const __m128i ok = _mm_andnot_si128(_mm_or_si128(fill, special), fits32);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i),
                     _mm_and_si128(_mm256_cvttpd_epi32(rounded), ok));
    // PointKind: 1 where not quantized, minus the fill mask (-1): kFill 2,
    // kVerbatim 1, kQuantized 0.
    const __m128i kind = _mm_sub_epi32(_mm_andnot_si128(ok, _mm_set1_epi32(1)), fill);
    const __m128i bytes = _mm_packus_epi16(_mm_packus_epi32(kind, zero), zero);
    const int32_t packed = _mm_cvtsi128_si32(bytes);
    std::memcpy(kinds + i, &packed, 4);
  }
  return i;
}

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}
#endif

constexpr absl::string_view kEncoding = "frame encoding";
constexpr absl::string_view kDecoding = "frame decoding";

absl::Status Corrupt(absl::string_view what) { return format::CorruptArchive(what); }

template <typename T>
absl::Status EncodeT(const FrameParams& p, const T* data, LorenzoEncoded* e,
                     const std::atomic<bool>* cancel) {
  uint64_t n = 1;
  for (uint64_t d : p.shape) n *= d;
  const QuantRule rule = MakeRule<T>(p);
  const uint64_t ranges = NumRanges(n);
  std::vector<RangeFindings>& found = e->found;
  found.assign(ranges, {});
  e->radius = p.radius;

  // Dual quantization: every element independently.
  std::vector<int32_t>& q = e->residuals;
  q.assign(n, 0);
  ParallelFor(ranges, [&](uint64_t r) {
    if (Cancelled(cancel)) return;
    const uint64_t begin = r * kRange;
    const uint64_t end = std::min(n, begin + kRange);
    // Kinds are noted and counted first, and the lists allocated at their
    // size: grown by doubling they would hold up to three times their
    // contents at once. The kinds stay on the stack (64 KiB).
    std::array<PointKind, kRange> kinds;
    uint64_t done = 0;
#if defined(__x86_64__)
    if constexpr (std::is_same_v<T, float>) {
      if (HasAvx2()) {
        done = QuantizeAvx2(data + begin, end - begin, rule, q.data() + begin, kinds.data());
      }
    }
#endif
    for (uint64_t i = begin + done; i < end; ++i) {
      kinds[i - begin] = QuantizePoint(data[i], rule, &q[i]);
    }
    // Kinds are mostly long stretches of quantized elements or of fill,
    // looked at eight at a time.
    const uint64_t count = end - begin;
    auto word = [&](uint64_t j) {
      uint64_t w;
      std::memcpy(&w, kinds.data() + j, sizeof(w));
      return w;
    };
    constexpr uint64_t kAllFill = 0x0202020202020202ull;
    static_assert(static_cast<int>(PointKind::kQuantized) == 0 &&
                  static_cast<int>(PointKind::kFill) == 2);
    uint64_t verbatim = 0, runs = 0;
    bool in_run = false;
    for (uint64_t j = 0; j < count;) {
      if (j + 8 <= count) {
        const uint64_t w = word(j);
        if (w == 0 || w == kAllFill) {
          runs += w == kAllFill && !in_run;
          in_run = w == kAllFill;
          j += 8;
          continue;
        }
      }
      const PointKind kind = kinds[j++];
      verbatim += kind == PointKind::kVerbatim;
      runs += kind == PointKind::kFill && !in_run;
      in_run = kind == PointKind::kFill;
    }
    if (verbatim == 0 && runs == 0) return;
    RangeFindings& f = found[r];
    f.verbatim_index.reserve(verbatim);
    f.fill_runs.reserve(runs);
    auto add_fill = [&](uint64_t i, uint32_t length) {
      if (!f.fill_runs.empty() && f.fill_runs.back().start + f.fill_runs.back().length == i) {
        f.fill_runs.back().length += length;
      } else {
        f.fill_runs.push_back({static_cast<uint32_t>(i), length});
      }
    };
    for (uint64_t j = 0; j < count;) {
      if (j + 8 <= count) {
        const uint64_t w = word(j);
        if (w == 0 || w == kAllFill) {
          if (w == kAllFill) add_fill(begin + j, 8);
          j += 8;
          continue;
        }
      }
      const uint64_t i = begin + j;
      switch (kinds[j++]) {
        case PointKind::kQuantized:
          break;
        case PointKind::kVerbatim:
          f.verbatim_index.push_back(static_cast<uint32_t>(i));
          break;
        case PointKind::kFill:
          add_fill(i, 1);
          break;
      }
    }
  });
  if (Cancelled(cancel)) return CancelledStatus(kEncoding);

  const BlockGrid grid = BlockGrid::Make(p.shape, {p.block.data(), p.shape.size()});
  ApplyPlaceholders(grid, found, q.data(), cancel);

  // Lorenzo residuals, then symbols; residuals outside the radius are
  // outliers, counted here and written from the residuals at the end.
  LorenzoForward(grid, q.data(), cancel);
  if (Cancelled(cancel)) return CancelledStatus(kEncoding);
  std::vector<uint16_t>& symbols = e->symbols;
  symbols.assign(n, 0);
  const int64_t radius = p.radius;
  auto is_outlier = [radius](int64_t delta) { return delta <= -radius || delta >= radius; };
  ParallelFor(ranges, [&](uint64_t r) {
    if (Cancelled(cancel)) return;
    const uint64_t end = std::min(n, (r + 1) * kRange);
    uint64_t outliers = 0;
    for (uint64_t i = r * kRange; i < end; ++i) {
      const int64_t delta = q[i];
      if (is_outlier(delta)) {
        symbols[i] = 0;
        ++outliers;
      } else {
        symbols[i] = static_cast<uint16_t>(delta + radius);
      }
    }
    found[r].outlier_count = outliers;
  });
  if (Cancelled(cancel)) return CancelledStatus(kEncoding);

  return absl::OkStatus();
}

template <typename T>
absl::Status DecodeT(const FrameHeader& h, std::vector<uint16_t> symbols,
                     absl::Span<const uint8_t> outlier_section, T* out,
                     const std::atomic<bool>* cancel) {
  const uint64_t n = h.num_elements();
  // Outliers: ascending indices, exactly the elements whose symbol is 0.
  const uint8_t* outliers = outlier_section.data();
  const uint64_t outlier_count = h.outlier_count;
  std::vector<int32_t> q(n);
  std::atomic<uint64_t> zeros{0};
  const int32_t radius = static_cast<int32_t>(h.radius);
  ParallelFor(NumRanges(n), [&](uint64_t r) {
    if (Cancelled(cancel)) return;
    const uint64_t end = std::min(n, (r + 1) * kRange);
    uint64_t z = 0;
    for (uint64_t i = r * kRange; i < end; ++i) {
      q[i] = static_cast<int32_t>(symbols[i]) - radius;
      z += symbols[i] == 0;
    }
    zeros += z;
  });
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);
  if (zeros != outlier_count) return Corrupt("outlier count disagrees with the bitstream");
  // The sequential loops below look at the flag once per kRange entries.
  auto stop = [&](uint64_t k) { return k % kRange == 0 && Cancelled(cancel); };
  for (uint64_t k = 0; k < outlier_count; ++k) {
    if (stop(k)) return CancelledStatus(kDecoding);
    const uint32_t index = LoadLE<uint32_t>(outliers + 4 * k);
    if (index >= n || (k > 0 && index <= LoadLE<uint32_t>(outliers + 4 * (k - 1))) ||
        symbols[index] != 0) {
      return Corrupt("outlier index out of order or not an outlier symbol");
    }
    q[index] = LoadLE<int32_t>(outliers + 4 * outlier_count + 4 * k);
  }
  Release(symbols);

  LorenzoInverse(BlockGrid::Make({h.shape.data(), static_cast<size_t>(h.ndim)},
                                 {h.block.data(), static_cast<size_t>(h.ndim)}),
                 q.data(), cancel);
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);
  const double step = h.quant_step;
  ParallelFor(NumRanges(n), [&](uint64_t r) {
    if (Cancelled(cancel)) return;
    const uint64_t end = std::min(n, (r + 1) * kRange);
    for (uint64_t i = r * kRange; i < end; ++i) out[i] = Dequantize<T>(q[i], step);
  });
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);

  return absl::OkStatus();
}


template <typename T>
absl::Status DecodeRegionT(const FrameHeader& h, const FrameBox& box,
                           absl::Span<const uint16_t> symbols,
                           absl::Span<const uint8_t> outlier_section, T* out,
                           const std::atomic<bool>* cancel) {
  const uint64_t n = h.num_elements();
  const uint64_t width = box.hi[3] - box.lo[3];
  const uint64_t lines = box.lines();
  BlockGrid grid = BlockGrid::Make({h.shape.data(), static_cast<size_t>(h.ndim)},
                                   {h.block.data(), static_cast<size_t>(h.ndim)});
  for (int d = 0; d < kMaxDims; ++d) grid.dims[d] = box.hi[d] - box.lo[d];
  std::vector<int32_t> q(grid.size());
  const int32_t radius = static_cast<int32_t>(h.radius);
  std::atomic<uint64_t> zeros{0};
  const uint64_t lines_per_task = std::max<uint64_t>(1, kRange / width);
  ParallelFor((lines + lines_per_task - 1) / lines_per_task, [&](uint64_t task) {
    if (Cancelled(cancel)) return;
    uint64_t z = 0;
    for (uint64_t l = task * lines_per_task; l < std::min(lines, (task + 1) * lines_per_task); ++l) {
      const uint16_t* s = symbols.data() + box.LineStart(l);
      int32_t* v = q.data() + l * width;
      for (uint64_t j = 0; j < width; ++j) {
        v[j] = static_cast<int32_t>(s[j]) - radius;
        z += s[j] == 0;
      }
    }
    zeros += z;
  });
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);
  // Outliers: every entry is checked for order and range; those in the box
  // must sit on its symbols 0, and be all of them.
  const uint8_t* outliers = outlier_section.data();
  const uint64_t outlier_count = h.outlier_count;
  uint64_t matched = 0;
  for (uint64_t k = 0; k < outlier_count; ++k) {
    if (k % kRange == 0 && Cancelled(cancel)) return CancelledStatus(kDecoding);
    const uint32_t index = LoadLE<uint32_t>(outliers + 4 * k);
    if (index >= n || (k > 0 && index <= LoadLE<uint32_t>(outliers + 4 * (k - 1)))) {
      return Corrupt("outlier index out of order or not an outlier symbol");
    }
    uint64_t rest = index, local = 0, scale = 1;
    bool inside = true;
    for (int d = kMaxDims - 1; d >= 0; --d) {
      const uint64_t x = rest % box.dims[d];
      rest /= box.dims[d];
      inside = inside && x >= box.lo[d] && x < box.hi[d];
      local += (x - box.lo[d]) * scale;
      scale *= box.hi[d] - box.lo[d];
    }
    if (!inside) continue;
    if (symbols[index] != 0) return Corrupt("outlier index out of order or not an outlier symbol");
    q[local] = LoadLE<int32_t>(outliers + 4 * outlier_count + 4 * k);
    ++matched;
  }
  if (zeros != matched) return Corrupt("outlier count disagrees with the bitstream");
  LorenzoInverse(grid, q.data(), cancel);
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);
  const double step = h.quant_step;
  ParallelFor((lines + lines_per_task - 1) / lines_per_task, [&](uint64_t task) {
    if (Cancelled(cancel)) return;
    for (uint64_t l = task * lines_per_task; l < std::min(lines, (task + 1) * lines_per_task); ++l) {
      T* o = out + box.LineStart(l);
      const int32_t* v = q.data() + l * width;
      for (uint64_t j = 0; j < width; ++j) o[j] = Dequantize<T>(v[j], step);
    }
  });
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);
  return absl::OkStatus();
}

}  // namespace

void LorenzoRegionBlocks(const FrameHeader& h, absl::Span<const uint64_t> lo,
                         absl::Span<const uint64_t> hi, std::vector<uint64_t>* blocks_lo,
                         std::vector<uint64_t>* blocks_hi) {
  blocks_lo->resize(h.ndim);
  blocks_hi->resize(h.ndim);
  for (int d = 0; d < h.ndim; ++d) {
    const uint64_t b = h.block[d];
    (*blocks_lo)[d] = lo[d] / b * b;
    (*blocks_hi)[d] = std::min<uint64_t>(h.shape[d], (hi[d] + b - 1) / b * b);
  }
}

std::vector<std::pair<uint64_t, uint64_t>> LorenzoBoxPositions(const FrameHeader& h,
                                                               absl::Span<const uint64_t> lo,
                                                               absl::Span<const uint64_t> hi) {
  const FrameBox box(h, lo, hi);
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  const uint64_t width = box.hi[3] - box.lo[3];
  for (uint64_t l = 0; l < box.lines(); ++l) {
    const uint64_t first = box.LineStart(l);
    if (!ranges.empty() && ranges.back().second == first) {
      ranges.back().second += width;
    } else {
      ranges.push_back({first, first + width});
    }
  }
  return ranges;
}

absl::Status LorenzoDecodeRegion(const FrameHeader& h, absl::Span<const uint64_t> blocks_lo,
                                 absl::Span<const uint64_t> blocks_hi,
                                 absl::Span<const uint16_t> symbols,
                                 absl::Span<const uint8_t> outliers, uint8_t* out,
                                 const std::atomic<bool>* cancel) {
  const FrameBox box(h, blocks_lo, blocks_hi);
  if (h.dtype == DType::kFloat32) {
    return DecodeRegionT(h, box, symbols, outliers, reinterpret_cast<float*>(out), cancel);
  }
  return DecodeRegionT(h, box, symbols, outliers, reinterpret_cast<double*>(out), cancel);
}

uint64_t LorenzoEncoded::outlier_count() const {
  uint64_t total = 0;
  for (const RangeFindings& f : found) total += f.outlier_count;
  return total;
}

uint64_t LorenzoEncoded::verbatim_count() const {
  uint64_t total = 0;
  for (const RangeFindings& f : found) total += f.verbatim_index.size();
  return total;
}

uint64_t LorenzoEncoded::fill_run_count() const {
  uint64_t count = 0;
  uint64_t end = ~uint64_t{0};  // where the last run ended
  for (const RangeFindings& f : found) {
    for (const FillRun& run : f.fill_runs) {
      count += run.start != end;
      end = uint64_t{run.start} + run.length;
    }
  }
  return count;
}

void LorenzoEncoded::WriteFillRuns(uint8_t* out) const {
  uint8_t* last = nullptr;  // the run written last
  uint64_t end = ~uint64_t{0};
  for (const RangeFindings& f : found) {
    for (const FillRun& run : f.fill_runs) {
      if (last != nullptr && run.start == end) {
        StoreLE<uint32_t>(last + 4, LoadLE<uint32_t>(last + 4) + run.length);
      } else {
        last = out;
        StoreLE<uint32_t>(out, run.start);
        StoreLE<uint32_t>(out + 4, run.length);
        out += 8;
      }
      end = uint64_t{run.start} + run.length;
    }
  }
}

// Each range writes its own entries, at offsets from a prefix over ranges.
void LorenzoEncoded::WriteOutliers(uint8_t* index_at, uint8_t* residual_at) const {
  const uint64_t n = residuals.size();
  std::vector<uint64_t> offsets(found.size());
  uint64_t total = 0;
  for (size_t r = 0; r < found.size(); ++r) offsets[r] = total, total += found[r].outlier_count;
  const int64_t limit = radius;
  ParallelFor(found.size(), [&](uint64_t r) {
    uint64_t k = offsets[r];
    const uint64_t stop = offsets[r] + found[r].outlier_count;
    const uint64_t end = std::min(n, (r + 1) * kRange);
    for (uint64_t i = r * kRange; i < end && k < stop; ++i) {
      const int64_t delta = residuals[i];
      if (delta > -limit && delta < limit) continue;
      StoreLE<uint32_t>(index_at + 4 * k, static_cast<uint32_t>(i));
      StoreLE<int32_t>(residual_at + 4 * k, residuals[i]);
      ++k;
    }
  });
}

void LorenzoEncoded::WriteVerbatim(const uint8_t* data, size_t element_size, uint8_t* index_at,
                                   uint8_t* value_at) const {
  std::vector<uint64_t> offsets(found.size());
  uint64_t total = 0;
  for (size_t r = 0; r < found.size(); ++r) {
    offsets[r] = total;
    total += found[r].verbatim_index.size();
  }
  ParallelFor(found.size(), [&](uint64_t r) {
    uint64_t k = offsets[r];
    for (uint32_t i : found[r].verbatim_index) {
      StoreLE<uint32_t>(index_at + 4 * k, i);
      std::memcpy(value_at + element_size * k, data + element_size * i, element_size);
      ++k;
    }
  });
}

absl::Status LorenzoEncode(const FrameParams& p, const uint8_t* data, LorenzoEncoded* out,
                           const std::atomic<bool>* cancel) {
  if (p.dtype == DType::kFloat32) {
    return EncodeT(p, reinterpret_cast<const float*>(data), out, cancel);
  }
  return EncodeT(p, reinterpret_cast<const double*>(data), out, cancel);
}

absl::Status LorenzoDecode(const FrameHeader& h, std::vector<uint16_t> symbols,
                           absl::Span<const uint8_t> outliers, uint8_t* out,
                           const std::atomic<bool>* cancel) {
  if (h.dtype == DType::kFloat32) {
    return DecodeT(h, std::move(symbols), outliers, reinterpret_cast<float*>(out), cancel);
  }
  return DecodeT(h, std::move(symbols), outliers, reinterpret_cast<double*>(out), cancel);
}

}  // namespace ebzip
