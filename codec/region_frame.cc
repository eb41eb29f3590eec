#include "codec/region_frame.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "codec/byte_io.h"
#include "codec/cancel.h"
#include "codec/chunk_layout.h"
#include "codec/fill_mask.h"
#include "codec/frame_box.h"
#include "codec/frame_codec.h"
#include "codec/frame_content.h"
#include "codec/huffman_code.h"
#include "codec/huffman_decoder.h"
#include "codec/interp_predictor.h"
#include "codec/lorenzo_frame.h"
#include "codec/special_sections.h"
#include "codec/types.h"

namespace ebzip {
namespace {

using format::FrameHeader;
using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

constexpr absl::string_view kDecoding = "region decoding";

absl::Status Corrupt(absl::string_view what) { return format::CorruptArchive(what); }

// Each chunk that holds needed positions, with how many of its first
// positions cover them. `ranges` are ascending.
std::vector<ChunkPrefix> PrefixesOf(const Ranges& ranges, uint64_t chunk_symbols) {
  std::vector<ChunkPrefix> prefixes;
  for (const auto& [begin, end] : ranges) {
    for (uint64_t c = begin / chunk_symbols; c * chunk_symbols < end; ++c) {
      const uint64_t count = std::min(end, (c + 1) * chunk_symbols) - c * chunk_symbols;
      if (!prefixes.empty() && prefixes.back().chunk == c) {
        prefixes.back().count = std::max(prefixes.back().count, count);
      } else {
        prefixes.push_back({c, count});
      }
    }
  }
  return prefixes;
}

// The symbols of `ranges` at their positions in scratch->symbols.
absl::Status DecodeNeededSymbols(const FrameHeader& h, const FrameSections& sec,
                                 const Ranges& ranges, RegionScratch* scratch,
                                 const std::atomic<bool>* cancel) {
  auto lengths = ParseCodeLengths(sec[format::kCodeLengths], h.alphabet(), h.max_code_length);
  if (!lengths.ok()) return lengths.status();
  // The bitstream is read in place when it is aligned for words (it is
  // 8-aligned in the archive), else from a copy.
  const auto& bitstream = sec[format::kBitstream];
  std::vector<uint32_t> copy;
  absl::Span<const uint32_t> words;
  if (reinterpret_cast<uintptr_t>(bitstream.data()) % alignof(uint32_t) == 0) {
    words = {reinterpret_cast<const uint32_t*>(bitstream.data()), bitstream.size() / 4};
  } else {
    copy.resize(bitstream.size() / 4);
    if (!bitstream.empty()) std::memcpy(copy.data(), bitstream.data(), bitstream.size());
    words = copy;
  }
  auto layout =
      ParseChunkIndex(sec[format::kChunkIndex], h.num_chunks(), h.chunk_group, h.subsequence_bits,
                      uint64_t{h.chunk_symbols} * h.max_code_length, words.size());
  if (!layout.ok()) return layout.status();
  if (h.has_gap_array && sec[format::kGapArray].size() != layout->total_gap_entries) {
    return Corrupt("gap array size disagrees with chunk lengths");
  }
  if (scratch->symbols_size < h.positions) {
    scratch->symbols.reset(new (std::nothrow) uint16_t[h.positions]);
    scratch->symbols_size = scratch->symbols ? h.positions : 0;
    if (!scratch->symbols) {
      return absl::ResourceExhaustedError("region: cannot allocate a frame's symbols");
    }
  }
  const HuffmanTable table(*lengths);
  const BitstreamView view{words,
                           &*layout,
                           sec[format::kGapArray],
                           h.chunk_symbols,
                           h.subsequence_bits,
                           RunTokens::ForStage(h.lossless, h.radius)};
  const std::vector<ChunkPrefix> prefixes = PrefixesOf(ranges, h.chunk_symbols);
  return HuffmanDecodePrefixes(table, view, prefixes,
                               absl::MakeSpan(scratch->symbols.get(), h.positions), cancel);
}

// DecodeContent's last step (§8.5) on the box: fill elements, then verbatim
// values, overwrite. Entries outside the box are checked for order and
// range only.
template <typename T>
absl::Status OverwriteSpecials(const FrameHeader& h, const FrameSections& sec, const uint8_t* mask,
                               const FrameBox& box, T* out, const std::atomic<bool>* cancel) {
  const uint64_t n = h.num_elements();
  const T fill = static_cast<T>(h.fill_value.value_or(0));
  if (h.fill_coding == format::kFillCodingMask) {
    if (mask != nullptr) {
      box.ForEach([&](uint64_t first, uint64_t count) {
        for (uint64_t i = first; i < first + count; ++i) {
          if (mask[i]) out[i] = fill;
        }
      });
    }
  } else if (h.fill_run_count > 0) {
    std::vector<std::pair<uint64_t, uint64_t>> list;  // [start, end)
    list.reserve(h.fill_run_count);
    if (absl::Status s = ForEachFillRun(
            sec[format::kFillRuns].data(), h.fill_run_count, n, cancel, kDecoding,
            [&](uint64_t start, uint64_t length) { list.push_back({start, start + length}); });
        !s.ok()) {
      return s;
    }
    // Runs are disjoint and ascending, so their ends ascend too.
    box.ForEach([&](uint64_t first, uint64_t count) {
      auto it = std::upper_bound(list.begin(), list.end(), first,
                                 [](uint64_t i, const auto& run) { return i < run.second; });
      for (; it != list.end() && it->first < first + count; ++it) {
        const uint64_t from = std::max(first, it->first);
        const uint64_t to = std::min(first + count, it->second);
        std::fill(out + from, out + to, fill);
      }
    });
  }
  return ForEachVerbatim<T>(sec[format::kVerbatim].data(), h.verbatim_count, n, cancel, kDecoding,
                            [&](uint32_t index, T value) {
                              if (box.Contains(index)) out[index] = value;
                            });
}

absl::Status DecodeInterpRegion(const FrameHeader& h, const FrameSections& sec,
                                absl::Span<const uint64_t> lo, absl::Span<const uint64_t> hi,
                                const uint8_t* mask, uint8_t* out, RegionScratch* scratch,
                                const std::atomic<bool>* cancel) {
  const InterpParams params = InterpParamsFor(h);
  absl::StatusOr<InterpRegion> region = PlanInterpRegion(params, mask, h.positions, lo, hi, cancel);
  if (!region.ok()) return region.status();
  if (absl::Status s = DecodeNeededSymbols(h, sec, region->positions, scratch, cancel); !s.ok()) {
    return s;
  }
  const uint64_t n = h.num_elements();
  const uint64_t count = h.outlier_count;
  const uint8_t* outliers = sec[format::kOutliers].data();
  std::vector<uint32_t> index(count);
  std::vector<int32_t> residual(count);
  for (uint64_t k = 0; k < count; ++k) {
    index[k] = LoadLE<uint32_t>(outliers + 4 * k);
    residual[k] = LoadLE<int32_t>(outliers + 4 * count + 4 * k);
    if (index[k] >= n || (k > 0 && index[k] <= index[k - 1])) {
      return Corrupt("outlier index out of order");
    }
  }
  return InterpDecodeRegion(params, *region, absl::MakeConstSpan(scratch->symbols.get(), h.positions),
                            index, residual, mask, out, cancel);
}

absl::Status DecodeLorenzoRegion(const FrameHeader& h, const FrameSections& sec,
                                 absl::Span<const uint64_t> lo, absl::Span<const uint64_t> hi,
                                 uint8_t* out, RegionScratch* scratch,
                                 const std::atomic<bool>* cancel) {
  if (h.positions != h.num_elements()) return Corrupt("symbol positions differ from elements");
  std::vector<uint64_t> blocks_lo, blocks_hi;
  LorenzoRegionBlocks(h, lo, hi, &blocks_lo, &blocks_hi);
  const Ranges ranges = LorenzoBoxPositions(h, blocks_lo, blocks_hi);
  if (absl::Status s = DecodeNeededSymbols(h, sec, ranges, scratch, cancel); !s.ok()) return s;
  return LorenzoDecodeRegion(h, blocks_lo, blocks_hi,
                             absl::MakeConstSpan(scratch->symbols.get(), h.positions),
                             sec[format::kOutliers], out, cancel);
}

}  // namespace

absl::Status DecodeFrameRegion(absl::Span<const uint8_t> frame, const FrameHeader& h,
                               absl::Span<const uint64_t> lo, absl::Span<const uint64_t> hi,
                               uint8_t* out, RegionScratch* scratch,
                               const std::atomic<bool>* cancel) {
  if (lo.size() != static_cast<size_t>(h.ndim) || hi.size() != lo.size()) {
    return absl::InvalidArgumentError("region: box of another rank than the frame");
  }
  for (int d = 0; d < h.ndim; ++d) {
    if (!(lo[d] < hi[d] && hi[d] <= h.shape[d])) {
      return absl::InvalidArgumentError("region: empty box or one past the frame");
    }
  }
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);
  absl::StatusOr<FrameSections> sec = CheckedSections(frame, h);
  if (!sec.ok()) return sec.status();
  // The mask first (the whole frame's): it says which elements have symbols.
  const uint8_t* mask = nullptr;
  if (h.fill_coding == format::kFillCodingMask) {
    auto runs = DecodeFillRuns((*sec)[format::kFillRuns], h.fill_run_count, h.num_elements());
    if (!runs.ok()) return runs.status();
    if (AnyFill(*runs)) {
      try {
        scratch->mask.resize(h.num_elements());
      } catch (const std::bad_alloc&) {
        return absl::ResourceExhaustedError("region: cannot allocate a frame's fill mask");
      }
      const uint64_t row = h.ndim == 1 ? h.num_elements() : h.num_elements() / h.shape[0];
      ExpandFillRuns(*runs, row, absl::MakeSpan(scratch->mask));
      mask = scratch->mask.data();
    }
  }
  absl::Status status =
      h.predictor == format::kPredictorLorenzo
          ? DecodeLorenzoRegion(h, *sec, lo, hi, out, scratch, cancel)
          : DecodeInterpRegion(h, *sec, lo, hi, mask, out, scratch, cancel);
  if (!status.ok()) return status;
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);
  const FrameBox box(h, lo, hi);
  if (h.dtype == DType::kFloat32) {
    return OverwriteSpecials(h, *sec, mask, box, reinterpret_cast<float*>(out), cancel);
  }
  return OverwriteSpecials(h, *sec, mask, box, reinterpret_cast<double*>(out), cancel);
}

}  // namespace ebzip
