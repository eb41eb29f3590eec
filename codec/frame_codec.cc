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
// ranges can run in parallel and still concatenate in index order. Only
// what cannot be found again later is kept: verbatim values are reread from
// the input, and outliers from the residuals, when the sections are written.
struct RangeFindings {
  std::vector<uint32_t> verbatim_index;
  std::vector<FillRun> fill_runs;
  uint64_t outlier_count = 0;
};

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
void ApplyPlaceholders(const BlockGrid& grid, const std::vector<RangeFindings>& found, int32_t* q,
                       const std::atomic<bool>* cancel) {
  bool any = false;
  for (const RangeFindings& f : found) any |= !f.verbatim_index.empty() || !f.fill_runs.empty();
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
  for (const RangeFindings& f : found) {
    for (uint32_t i : f.verbatim_index) mark(i, 1);
    for (const FillRun& run : f.fill_runs) mark(run.start, run.length);
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
    for (const FillRun& run : found[r].fill_runs) place(run.start, run.length);
  });
}

constexpr absl::string_view kEncoding = "frame encoding";
constexpr absl::string_view kDecoding = "frame decoding";

// The number of fill runs once runs that meet at a range boundary are
// joined, as the fill-run section lists them.
uint64_t JoinedFillRuns(const std::vector<RangeFindings>& found) {
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

// Writes the joined fill runs at `out`.
void WriteFillRuns(const std::vector<RangeFindings>& found, uint8_t* out) {
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

// Offsets of each range's first entry in a section that lists the ranges'
// entries in order, and the total.
template <typename Count>
uint64_t RangeOffsets(const std::vector<RangeFindings>& found, Count count,
                      std::vector<uint64_t>* offsets) {
  offsets->resize(found.size());
  uint64_t total = 0;
  for (size_t r = 0; r < found.size(); ++r) {
    (*offsets)[r] = total;
    total += count(found[r]);
  }
  return total;
}

template <typename T>
absl::Status EncodeFrameT(const FrameParams& p, const T* data, std::vector<uint8_t>* out,
                          const std::atomic<bool>* cancel) {
  uint64_t n = 1;
  for (uint64_t d : p.shape) n *= d;
  const QuantRule rule = MakeRule<T>(p);
  const uint64_t ranges = NumRanges(n);
  std::vector<RangeFindings> found(ranges);

  // Dual quantization: every element independently.
  std::vector<int32_t> q(n);
  ParallelFor(ranges, [&](uint64_t r) {
    if (Cancelled(cancel)) return;
    const uint64_t begin = r * kRange;
    const uint64_t end = std::min(n, begin + kRange);
    // Kinds are noted and counted first, and the lists allocated at their
    // size: grown by doubling they would hold up to three times their
    // contents at once. The kinds stay on the stack (64 KiB).
    std::array<PointKind, kRange> kinds;
    uint64_t verbatim = 0, runs = 0;
    bool in_run = false;
    for (uint64_t i = begin; i < end; ++i) {
      const PointKind kind = QuantizePoint(data[i], rule, &q[i]);
      kinds[i - begin] = kind;
      verbatim += kind == PointKind::kVerbatim;
      runs += kind == PointKind::kFill && !in_run;
      in_run = kind == PointKind::kFill;
    }
    if (verbatim == 0 && runs == 0) return;
    RangeFindings& f = found[r];
    f.verbatim_index.reserve(verbatim);
    f.fill_runs.reserve(runs);
    for (uint64_t i = begin; i < end; ++i) {
      switch (kinds[i - begin]) {
        case PointKind::kQuantized:
          break;
        case PointKind::kVerbatim:
          f.verbatim_index.push_back(static_cast<uint32_t>(i));
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

  // Lorenzo residuals, then symbols; residuals outside the radius are
  // outliers, counted here and written from the residuals at the end.
  LorenzoForward(grid, q.data(), cancel);
  if (Cancelled(cancel)) return CancelledStatus(kEncoding);
  std::vector<uint16_t> symbols(n);
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

  const uint32_t alphabet = 2 * p.radius;
  std::vector<uint8_t> lengths = BuildCodeLengths(Histogram(symbols, alphabet), p.max_code_length);
  std::vector<uint32_t> codes = CanonicalCodes(lengths);
  EncodedSymbols encoded = HuffmanEncode(symbols, lengths, codes, p.chunk_symbols,
                                         p.subsequence_bits, p.gap_array, cancel);
  Release(symbols);
  Release(codes);
  if (Cancelled(cancel)) return CancelledStatus(kEncoding);

  // Every section's size is known now, so the frame is written in place:
  // no section is built apart and copied.
  std::vector<uint8_t> code_lengths;
  code_lengths.reserve(MaxCodeLengthBytes(alphabet));
  AppendCodeLengths(lengths, &code_lengths);
  Release(lengths);
  std::vector<uint64_t> outlier_offsets, verbatim_offsets;
  FrameHeader h = FrameHeaderFor(p);
  h.outlier_count = RangeOffsets(
      found, [](const RangeFindings& f) { return f.outlier_count; }, &outlier_offsets);
  h.verbatim_count = RangeOffsets(
      found, [](const RangeFindings& f) { return f.verbatim_index.size(); }, &verbatim_offsets);
  h.fill_run_count = JoinedFillRuns(found);
  h.sections[format::kCodeLengths].length = code_lengths.size();
  h.sections[format::kChunkIndex].length = format::ChunkIndexBytes(h);
  h.sections[format::kGapArray].length = encoded.gaps.size();
  h.sections[format::kBitstream].length = encoded.words.size() * sizeof(uint32_t);
  h.sections[format::kOutliers].length = format::OutlierBytes(h);
  h.sections[format::kVerbatim].length = format::VerbatimBytes(h);
  h.sections[format::kFillRuns].length = format::FillRunBytes(h);
  std::array<uint8_t*, format::kSectionCount> at;
  const size_t start = out->size();
  out->reserve(start + h.frame_size());
  out->resize(start + h.frame_size(), 0);
  {
    uint8_t* next = out->data() + start + format::kFrameHeaderSize;
    for (int s = 0; s < format::kSectionCount; ++s) {
      at[s] = next;
      next += AlignUp(h.sections[s].length, format::kAlignment);
    }
  }

  std::memcpy(at[format::kCodeLengths], code_lengths.data(), code_lengths.size());
  Release(code_lengths);
  WriteChunkIndex(encoded.layout, p.chunk_group, at[format::kChunkIndex]);
  if (!encoded.gaps.empty()) {
    std::memcpy(at[format::kGapArray], encoded.gaps.data(), encoded.gaps.size());
  }
  Release(encoded.gaps);
  if (!encoded.words.empty()) {
    std::memcpy(at[format::kBitstream], encoded.words.data(), encoded.words.size() * 4);
  }
  Release(encoded.words);

  // Outliers: all indices, then all deltas. Verbatim: all indices, then
  // (aligned) all values. Each range writes its own entries.
  uint8_t* const outlier_index = at[format::kOutliers];
  uint8_t* const outlier_delta = outlier_index + 4 * h.outlier_count;
  uint8_t* const verbatim_index = at[format::kVerbatim];
  uint8_t* const verbatim_value =
      verbatim_index + AlignUp(4 * h.verbatim_count, format::kAlignment);
  ParallelFor(ranges, [&](uint64_t r) {
    uint64_t k = outlier_offsets[r];
    const uint64_t end = std::min(n, (r + 1) * kRange);
    for (uint64_t i = r * kRange; i < end && k < outlier_offsets[r] + found[r].outlier_count; ++i) {
      if (!is_outlier(q[i])) continue;
      StoreLE<uint32_t>(outlier_index + 4 * k, static_cast<uint32_t>(i));
      StoreLE<int32_t>(outlier_delta + 4 * k, q[i]);
      ++k;
    }
    k = verbatim_offsets[r];
    for (uint32_t i : found[r].verbatim_index) {
      StoreLE<uint32_t>(verbatim_index + 4 * k, i);
      std::memcpy(verbatim_value + sizeof(T) * k, data + i, sizeof(T));
      ++k;
    }
  });
  WriteFillRuns(found, at[format::kFillRuns]);

  for (int s = 0; s < format::kSectionCount; ++s) {
    h.sections[s].crc = Crc32c(at[s], h.sections[s].length);
  }
  std::vector<uint8_t> header;
  header.reserve(format::kFrameHeaderSize);
  format::AppendFrameHeader(h, &header);
  std::memcpy(out->data() + start, header.data(), header.size());
  return absl::OkStatus();
}

absl::Status Corrupt(absl::string_view what) { return format::CorruptArchive(what); }

using Sections = std::array<absl::Span<const uint8_t>, format::kSectionCount>;

// The frame's symbols. What decoding them takes (code lengths, tables, chunk
// index, the bitstream's copy) is freed on return, before the frame's
// largest buffer is allocated.
absl::StatusOr<std::vector<uint16_t>> DecodeSymbols(const FrameHeader& h, const Sections& sec,
                                                    DecoderKind decoder,
                                                    const std::atomic<bool>* cancel) {
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

  std::vector<uint16_t> symbols(h.num_elements());
  HuffmanTable table(*lengths);
  BitstreamView view{words, &*layout, sec[format::kGapArray], h.chunk_symbols, h.subsequence_bits};
  if (auto s = HuffmanDecode(decoder, table, view, absl::MakeSpan(symbols), cancel); !s.ok()) {
    return s;
  }
  return symbols;
}

template <typename T>
absl::Status DecodeFrameT(const FrameHeader& h, const Sections& sec, DecoderKind decoder, T* out,
                          const std::atomic<bool>* cancel) {
  const uint64_t n = h.num_elements();
  absl::StatusOr<std::vector<uint16_t>> decoded = DecodeSymbols(h, sec, decoder, cancel);
  if (!decoded.ok()) return decoded.status();
  std::vector<uint16_t>& symbols = *decoded;

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

  // Fill runs, then verbatim values, overwrite what dequantization produced.
  const uint8_t* runs = sec[format::kFillRuns].data();
  uint64_t covered = 0;
  for (uint64_t k = 0; k < h.fill_run_count; ++k) {
    if (stop(k)) return CancelledStatus(kDecoding);
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
    if (stop(k)) return CancelledStatus(kDecoding);
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
