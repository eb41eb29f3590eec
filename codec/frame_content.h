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

class FrameContent {
 public:
  // Runs the predictor of `config` over the frame.
  static absl::StatusOr<FrameContent> Predict(const FrameParams& p, const PredictorConfig& config,
                                              const uint8_t* data,
                                              const std::atomic<bool>* cancel);

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

}  // namespace ebzip

#endif  // EBZIP_CODEC_FRAME_CONTENT_H_
