#include "codec/frame_codec.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "codec/byte_io.h"
#include "codec/cancel.h"
#include "codec/chunk_layout.h"
#include "codec/crc32c.h"
#include "codec/huffman_code.h"
#include "codec/huffman_encoder.h"
#include "codec/lorenzo.h"
#include "codec/parallel.h"
#include "codec/quantize_point.h"

namespace ebzip {
namespace {

using format::FrameHeader;

constexpr uint64_t kRange = 1 << 16;  // elements per parallel task

uint64_t NumRanges(uint64_t n) { return (n + kRange - 1) / kRange; }

struct FillRun {
  uint32_t start;
  uint32_t length;
};

// What the element-wise passes find, per range of kRange elements, so the
// ranges can run in parallel and still concatenate in index order.
template <typename T>
struct RangeFindings {
  std::vector<uint32_t> verbatim_index;
  std::vector<T> verbatim_value;
  std::vector<FillRun> fill_runs;
  std::vector<uint32_t> outlier_index;
  std::vector<int32_t> outlier_delta;
};

template <typename T>
QuantRule MakeRule(const FrameParams& p) {
  QuantRule rule{p.abs_bound, p.quant_step, p.fill_value.has_value(), 0};
  if (p.fill_value) rule.fill_bits = ToBits(static_cast<T>(*p.fill_value));
  return rule;
}

template <typename T>
void PutArray(ByteWriter& w, const std::vector<T>& v) {
  w.PutBytes({reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)});
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
template <typename T>
void ApplyPlaceholders(const BlockGrid& grid, const std::vector<RangeFindings<T>>& found,
                       int32_t* q, const std::atomic<bool>* cancel) {
  bool any = false;
  for (const RangeFindings<T>& f : found) any |= !f.verbatim_index.empty() || !f.fill_runs.empty();
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
  for (const RangeFindings<T>& f : found) {
    for (uint32_t i : f.verbatim_index) mark(i, 1);
    for (const FillRun& run : f.fill_runs) mark(run.start, run.length);
  }
  std::vector<uint64_t> mixed;
  for (uint64_t b = 0; b < specials_per_block.size(); ++b) {
    if (specials_per_block[b] != 0 && specials_per_block[b] != tiling.Volume(b)) mixed.push_back(b);
  }

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
    for (const FillRun& run : found[r].fill_runs) place(run.start, run.length);
  });
}

constexpr absl::string_view kEncoding = "frame encoding";
constexpr absl::string_view kDecoding = "frame decoding";

template <typename T>
absl::Status EncodeFrameT(const FrameParams& p, const T* data, std::vector<uint8_t>* out,
                          const std::atomic<bool>* cancel) {
  uint64_t n = 1;
  for (uint64_t d : p.shape) n *= d;
  const QuantRule rule = MakeRule<T>(p);
  const uint64_t ranges = NumRanges(n);
  std::vector<RangeFindings<T>> found(ranges);

  // Dual quantization: every element independently.
  std::vector<int32_t> q(n);
  ParallelFor(ranges, [&](uint64_t r) {
    if (Cancelled(cancel)) return;
    RangeFindings<T>& f = found[r];
    const uint64_t end = std::min(n, (r + 1) * kRange);
    for (uint64_t i = r * kRange; i < end; ++i) {
      switch (QuantizePoint(data[i], rule, &q[i])) {
        case PointKind::kQuantized:
          break;
        case PointKind::kVerbatim:
          f.verbatim_index.push_back(static_cast<uint32_t>(i));
          f.verbatim_value.push_back(data[i]);
          break;
        case PointKind::kFill:
          if (!f.fill_runs.empty() && f.fill_runs.back().start + f.fill_runs.back().length == i) {
            ++f.fill_runs.back().length;
          } else {
            f.fill_runs.push_back({static_cast<uint32_t>(i), 1});
          }
          break;
      }
    }
  });

  if (Cancelled(cancel)) return CancelledStatus(kEncoding);
  const BlockGrid grid = BlockGrid::Make(p.shape, {p.block.data(), p.shape.size()});
  ApplyPlaceholders(grid, found, q.data(), cancel);

  // Lorenzo residuals, then symbols; residuals outside the radius are outliers.
  LorenzoForward(grid, q.data(), cancel);
  if (Cancelled(cancel)) return CancelledStatus(kEncoding);
  std::vector<uint16_t> symbols(n);
  const int64_t radius = p.radius;
  ParallelFor(ranges, [&](uint64_t r) {
    if (Cancelled(cancel)) return;
    RangeFindings<T>& f = found[r];
    const uint64_t end = std::min(n, (r + 1) * kRange);
    for (uint64_t i = r * kRange; i < end; ++i) {
      const int64_t delta = q[i];
      if (delta > -radius && delta < radius) {
        symbols[i] = static_cast<uint16_t>(delta + radius);
      } else {
        symbols[i] = 0;
        f.outlier_index.push_back(static_cast<uint32_t>(i));
        f.outlier_delta.push_back(q[i]);
      }
    }
  });
  q = {};
  if (Cancelled(cancel)) return CancelledStatus(kEncoding);

  const uint32_t alphabet = 2 * p.radius;
  std::vector<uint8_t> lengths = BuildCodeLengths(Histogram(symbols, alphabet), p.max_code_length);
  std::vector<uint32_t> codes = CanonicalCodes(lengths);
  EncodedSymbols encoded = HuffmanEncode(symbols, lengths, codes, p.chunk_symbols,
                                         p.subsequence_bits, p.gap_array, cancel);
  if (Cancelled(cancel)) return CancelledStatus(kEncoding);

  RangeFindings<T> all;
  for (RangeFindings<T>& f : found) {
    auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
    append(all.verbatim_index, f.verbatim_index);
    append(all.verbatim_value, f.verbatim_value);
    append(all.outlier_index, f.outlier_index);
    append(all.outlier_delta, f.outlier_delta);
    for (const FillRun& run : f.fill_runs) {
      FillRun* last = all.fill_runs.empty() ? nullptr : &all.fill_runs.back();
      if (last && last->start + last->length == run.start) {
        last->length += run.length;
      } else {
        all.fill_runs.push_back(run);
      }
    }
  }

  // Sections in format order.
  std::array<std::vector<uint8_t>, format::kSectionCount> sec;
  AppendCodeLengths(lengths, &sec[format::kCodeLengths]);
  AppendChunkIndex(encoded.layout, p.chunk_group, &sec[format::kChunkIndex]);
  sec[format::kGapArray] = std::move(encoded.gaps);
  {
    ByteWriter w(&sec[format::kBitstream]);
    PutArray(w, encoded.words);
  }
  {
    ByteWriter w(&sec[format::kOutliers]);
    PutArray(w, all.outlier_index);
    PutArray(w, all.outlier_delta);
  }
  {
    ByteWriter w(&sec[format::kVerbatim]);
    PutArray(w, all.verbatim_index);
    w.Align(format::kAlignment);
    PutArray(w, all.verbatim_value);
  }
  {
    ByteWriter w(&sec[format::kFillRuns]);
    for (const FillRun& run : all.fill_runs) {
      w.Put<uint32_t>(run.start);
      w.Put<uint32_t>(run.length);
    }
  }

  FrameHeader h = FrameHeaderFor(p);
  h.outlier_count = all.outlier_index.size();
  h.verbatim_count = all.verbatim_index.size();
  h.fill_run_count = all.fill_runs.size();
  for (int s = 0; s < format::kSectionCount; ++s) {
    h.sections[s].length = sec[s].size();
    h.sections[s].crc = Crc32c(sec[s].data(), sec[s].size());
  }
  out->reserve(out->size() + h.frame_size());
  format::AppendFrameHeader(h, out);
  ByteWriter w(out);
  for (const auto& bytes : sec) {
    w.PutBytes(bytes);
    w.Align(format::kAlignment);
  }
  return absl::OkStatus();
}

absl::Status Corrupt(absl::string_view what) { return format::CorruptArchive(what); }

template <typename T>
absl::Status DecodeFrameT(const FrameHeader& h,
                          const std::array<absl::Span<const uint8_t>, format::kSectionCount>& sec,
                          DecoderKind decoder, T* out, const std::atomic<bool>* cancel) {
  const uint64_t n = h.num_elements();
  const uint32_t alphabet = 2 * h.radius;
  auto lengths = ParseCodeLengths(sec[format::kCodeLengths], alphabet, h.max_code_length);
  if (!lengths.ok()) return lengths.status();
  const auto& bitstream = sec[format::kBitstream];
  std::vector<uint32_t> words(bitstream.size() / 4);
  if (!bitstream.empty()) std::memcpy(words.data(), bitstream.data(), bitstream.size());
  auto layout =
      ParseChunkIndex(sec[format::kChunkIndex], h.num_chunks(), h.chunk_group, h.subsequence_bits,
                      uint64_t{h.chunk_symbols} * h.max_code_length, words.size());
  if (!layout.ok()) return layout.status();
  if (h.has_gap_array && sec[format::kGapArray].size() != layout->total_gap_entries) {
    return Corrupt("gap array size disagrees with chunk lengths");
  }

  std::vector<uint16_t> symbols(n);
  HuffmanTable table(*lengths);
  BitstreamView view{words, &*layout, sec[format::kGapArray], h.chunk_symbols, h.subsequence_bits};
  if (auto s = HuffmanDecode(decoder, table, view, absl::MakeSpan(symbols), cancel); !s.ok()) {
    return s;
  }
  words = {};

  // Outliers: ascending indices, exactly the elements whose symbol is 0.
  const uint8_t* outliers = sec[format::kOutliers].data();
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
  for (uint64_t k = 0; k < outlier_count; ++k) {
    const uint32_t index = LoadLE<uint32_t>(outliers + 4 * k);
    if (index >= n || (k > 0 && index <= LoadLE<uint32_t>(outliers + 4 * (k - 1))) ||
        symbols[index] != 0) {
      return Corrupt("outlier index out of order or not an outlier symbol");
    }
    q[index] = LoadLE<int32_t>(outliers + 4 * outlier_count + 4 * k);
  }
  symbols = {};

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

  // Fill runs, then verbatim values, overwrite what dequantization produced.
  const uint8_t* runs = sec[format::kFillRuns].data();
  uint64_t covered = 0;
  for (uint64_t k = 0; k < h.fill_run_count; ++k) {
    const uint64_t start = LoadLE<uint32_t>(runs + 8 * k);
    const uint64_t length = LoadLE<uint32_t>(runs + 8 * k + 4);
    if (length == 0 || start < covered || start + length > n) {
      return Corrupt("fill runs overlap or leave the frame");
    }
    std::fill_n(out + start, length, static_cast<T>(*h.fill_value));
    covered = start + length;
  }
  const uint8_t* verbatim = sec[format::kVerbatim].data();
  const uint64_t values_at = AlignUp(4 * h.verbatim_count, format::kAlignment);
  for (uint64_t k = 0; k < h.verbatim_count; ++k) {
    const uint32_t index = LoadLE<uint32_t>(verbatim + 4 * k);
    if (index >= n || (k > 0 && index <= LoadLE<uint32_t>(verbatim + 4 * (k - 1)))) {
      return Corrupt("verbatim index out of order");
    }
    out[index] = LoadLE<T>(verbatim + values_at + sizeof(T) * k);
  }
  return absl::OkStatus();
}

}  // namespace

FrameHeader FrameHeaderFor(const FrameParams& p) {
  FrameHeader h;
  h.dtype = p.dtype;
  h.ndim = static_cast<int>(p.shape.size());
  h.bound_mode = p.bound_mode;
  h.has_gap_array = p.gap_array;
  h.max_code_length = static_cast<uint8_t>(p.max_code_length);
  for (int i = 0; i < h.ndim; ++i) {
    h.shape[i] = p.shape[i];
    h.block[i] = p.block[i];
  }
  h.first_row = p.first_row;
  h.bound_value = p.bound_value;
  h.abs_bound = p.abs_bound;
  h.quant_step = p.quant_step;
  h.fill_value = p.fill_value;
  h.radius = p.radius;
  h.chunk_symbols = p.chunk_symbols;
  h.subsequence_bits = p.subsequence_bits;
  h.chunk_group = p.chunk_group;
  return h;
}

absl::Status EncodeFrame(const FrameParams& params, const uint8_t* data, std::vector<uint8_t>* out,
                         const std::atomic<bool>* cancel) {
  if (Cancelled(cancel)) return CancelledStatus(kEncoding);
  if (params.dtype == DType::kFloat32) {
    return EncodeFrameT(params, reinterpret_cast<const float*>(data), out, cancel);
  }
  return EncodeFrameT(params, reinterpret_cast<const double*>(data), out, cancel);
}

void EncodeFrame(const FrameParams& params, const uint8_t* data, std::vector<uint8_t>* out) {
  // Without a flag nothing can stop it: the status is always OK.
  EncodeFrame(params, data, out, nullptr).IgnoreError();
}

absl::Status DecodeFrame(absl::Span<const uint8_t> frame, const FrameHeader& h, DecoderKind decoder,
                         uint8_t* out, const std::atomic<bool>* cancel) {
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);
  if (frame.size() < h.frame_size()) return Corrupt("truncated frame");
  std::array<absl::Span<const uint8_t>, format::kSectionCount> sec;
  uint64_t offset = format::kFrameHeaderSize;
  for (int s = 0; s < format::kSectionCount; ++s) {
    const uint64_t length = h.sections[s].length;
    sec[s] = frame.subspan(offset, length);
    if (Crc32c(sec[s].data(), length) != h.sections[s].crc) {
      return Corrupt(absl::StrCat(format::SectionName(s), " checksum mismatch"));
    }
    const uint64_t padded = AlignUp(length, format::kAlignment);
    for (uint64_t i = length; i < padded; ++i) {
      if (frame[offset + i] != 0) return Corrupt("non-zero padding");
    }
    offset += padded;
  }
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);
  if (h.dtype == DType::kFloat32) {
    return DecodeFrameT(h, sec, decoder, reinterpret_cast<float*>(out), cancel);
  }
  return DecodeFrameT(h, sec, decoder, reinterpret_cast<double*>(out), cancel);
}

}  // namespace ebzip
