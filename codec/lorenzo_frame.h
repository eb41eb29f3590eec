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

}  // namespace ebzip

#endif  // EBZIP_CODEC_LORENZO_FRAME_H_
