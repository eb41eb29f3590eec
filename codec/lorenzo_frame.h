// Block Lorenzo on a whole frame (predictor 0, FORMAT.md §8.3, §10.2-§10.3):
// dual quantization, placeholders for fill and verbatim elements, the
// in-block Lorenzo residuals and their symbols; and the way back from
// symbols to values. What the sections need (outliers, verbatim values, fill
// runs) is kept in the compact form the passes find it in and written
// straight into the frame.
#ifndef EBZIP_CODEC_LORENZO_FRAME_H_
#define EBZIP_CODEC_LORENZO_FRAME_H_

#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "codec/format.h"
#include "codec/frame_codec.h"

namespace ebzip {

// Elements per task of the element-wise passes.
inline constexpr uint64_t kLorenzoRange = 1 << 16;

struct LorenzoEncoded {
  struct FillRun {
    uint32_t start;
    uint32_t length;
  };
  // What the element-wise passes find, per range of kLorenzoRange elements,
  // so the ranges run in parallel and still concatenate in index order.
  // Only what cannot be found again is kept: verbatim values are reread
  // from the input, outliers from the residuals.
  struct RangeFindings {
    std::vector<uint32_t> verbatim_index;
    std::vector<FillRun> fill_runs;
    uint64_t outlier_count = 0;
  };

  std::vector<uint16_t> symbols;   // n, in C order
  std::vector<int32_t> residuals;  // n; outliers are read from here
  std::vector<RangeFindings> found;
  uint32_t radius = 0;

  uint64_t outlier_count() const;
  uint64_t verbatim_count() const;
  uint64_t fill_run_count() const;  // runs that meet at range boundaries joined
  // The sections' contents, written at the given places (FORMAT.md §5.6-5.8).
  void WriteOutliers(uint8_t* index_at, uint8_t* residual_at) const;
  void WriteVerbatim(const uint8_t* data, size_t element_size, uint8_t* index_at,
                     uint8_t* value_at) const;
  void WriteFillRuns(uint8_t* at) const;
};

// CANCELLED soon after *cancel is set (codec/cancel.h).
absl::Status LorenzoEncode(const FrameParams& p, const uint8_t* data, LorenzoEncoded* out,
                           const std::atomic<bool>* cancel);

// Values from symbols (consumed and freed early) and the outlier section,
// before fill runs and verbatim values overwrite theirs.
absl::Status LorenzoDecode(const format::FrameHeader& h, std::vector<uint16_t> symbols,
                           absl::Span<const uint8_t> outliers, uint8_t* out,
                           const std::atomic<bool>* cancel);

// Decoding part of a frame (codec/region_frame.h). Blocks are independent,
// so the box [lo, hi) of the frame needs the blocks it meets: the box
// widened to whole blocks, `blocks_lo` and `blocks_hi` (the frame's edge
// cutting the last). Symbols are in C order, one per element.
void LorenzoRegionBlocks(const format::FrameHeader& h, absl::Span<const uint64_t> lo,
                         absl::Span<const uint64_t> hi, std::vector<uint64_t>* blocks_lo,
                         std::vector<uint64_t>* blocks_hi);
// The symbol positions of the elements of the box [lo, hi): [begin, end)
// ranges, ascending and disjoint.
std::vector<std::pair<uint64_t, uint64_t>> LorenzoBoxPositions(const format::FrameHeader& h,
                                                               absl::Span<const uint64_t> lo,
                                                               absl::Span<const uint64_t> hi);

// LorenzoDecode for the whole-block box [blocks_lo, blocks_hi): `symbols`
// spans the frame's n positions, of which only the box's are read; the
// box's elements of `out` (the frame's n) get their values. Checks the
// outlier section's order and range, and the outlier entries against the
// box's symbols.
absl::Status LorenzoDecodeRegion(const format::FrameHeader& h, absl::Span<const uint64_t> blocks_lo,
                                 absl::Span<const uint64_t> blocks_hi,
                                 absl::Span<const uint16_t> symbols,
                                 absl::Span<const uint8_t> outliers, uint8_t* out,
                                 const std::atomic<bool>* cancel);

}  // namespace ebzip

#endif  // EBZIP_CODEC_LORENZO_FRAME_H_
