// What a predictor makes of a frame, whichever predictor it is: the symbols
// in symbol order and the contents of the outlier, verbatim and fill
// sections (FORMAT.md §5.6-§5.8, §15.6). The entropy stage and the section
// writer (codec/frame_codec.cc) and the per-frame choice
// (codec/predictor_choice.h) see frames only through this.
#ifndef EBZIP_CODEC_FRAME_CONTENT_H_
#define EBZIP_CODEC_FRAME_CONTENT_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codec/fill_mask.h"
#include "codec/format.h"
#include "codec/frame_codec.h"
#include "codec/interp_predictor.h"
#include "codec/lorenzo_frame.h"

namespace ebzip {

// A frame's predictor and its parameters (FORMAT.md §15.2).
struct PredictorConfig {
  uint8_t predictor = format::kPredictorLorenzo;
  std::array<uint16_t, kMaxDims> block{};  // Lorenzo block or interpolation tile
  uint8_t order = 0;                       // interpolation: 1 linear, 3 cubic
};

// Which elements of a frame are fill (FORMAT.md §15.6), worked out once per
// frame and shared by every interpolation candidate that runs on it.
struct FrameFill {
  // One byte per element, 1 for fill; empty when no element is fill, which
  // codes exactly as a mask of zeros does and spares the per-element tests.
  std::vector<uint8_t> mask;
  EncodedFillMask encoded;
};

// The frame's fill, for a frame with a fill value.
FrameFill FindFill(const FrameParams& p, const uint8_t* data);
// The fill of stripes of `rows` rows of frame `p`, starting at each of
// first_rows, taken together as a frame (predictor_choice.h's sample),
// given the frame's.
FrameFill FillOfStripes(const FrameParams& p, const FrameFill& frame,
                        absl::Span<const uint64_t> first_rows, uint64_t rows);

class FrameContent {
 public:
  // Runs the predictor of `config` over the frame. `fill`, for a frame with
  // a fill value, is FindFill's for this frame (null: computed here).
  static absl::StatusOr<FrameContent> Predict(const FrameParams& p, const PredictorConfig& config,
                                              const uint8_t* data,
                                              const std::atomic<bool>* cancel,
                                              const FrameFill* fill = nullptr);

  const PredictorConfig& config() const { return config_; }
  absl::Span<const uint16_t> symbols() const;
  void ReleaseSymbols();
  uint8_t fill_coding() const { return fill_coding_; }
  uint64_t outlier_count() const;
  uint64_t verbatim_count() const;
  uint64_t fill_run_count() const;  // fill coding 1: mask tokens
  uint64_t fill_bytes() const;
  void WriteOutliers(uint8_t* index_at, uint8_t* residual_at) const;
  void WriteVerbatim(const uint8_t* data, size_t element_size, uint8_t* index_at,
                     uint8_t* value_at) const;
  void WriteFill(uint8_t* at) const;

 private:
  PredictorConfig config_;
  uint8_t fill_coding_ = format::kFillCodingRuns;
  LorenzoEncoded lorenzo_;
  InterpEncoded interp_;
  EncodedFillMask mask_;
};

// The interpolation parameters of a frame (the writer's or a header's).
InterpParams InterpParamsFor(const FrameParams& p, const PredictorConfig& config);
InterpParams InterpParamsFor(const format::FrameHeader& h);

}  // namespace ebzip

#endif  // EBZIP_CODEC_FRAME_CONTENT_H_
