// The per-frame choice of predictor (FORMAT.md §15.9) made on the device.
//
// Each candidate of each frame that has several runs on the frame's sample
// (SampleOf: the frame, or stripes of its rows gathered on the device) as a
// frame of its own, a "pseudo-segment" with the sample's shape and the
// candidate's predictor, through the kernels that code real frames:
// LaunchPredict for the Lorenzo candidates, the interpolation encoder (a
// batch per candidate over the frames that share its plan) for the others,
// (on up to four streams at once where the samples are small, each with
// scratch of its own: gpu/stream_fork.h), then each one's symbol histogram,
// both token stages' histograms (over the sample's own chunks) and lists of
// used symbols. One synchronization brings the lists and the counts
// EstimateBits adds (outliers, verbatim values, fill section bytes) to the
// host, which builds the allowed stages' codes exactly as the compressor
// does (gpu/host_code.h), sizes each candidate as EstimateBits does and
// takes the smallest, the first of equal ones: ChooseOnSample's answer
// (codec/predictor_choice.h), the sample never leaving the device.
#ifndef EBZIP_GPU_PREDICTOR_SURVEY_H_
#define EBZIP_GPU_PREDICTOR_SURVEY_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codec/frame_codec.h"
#include "codec/frame_content.h"
#include "codec/predictor_choice.h"
#include "gpu/interp_kernels.h"
#include "gpu/kernels.h"
#include "gpu/segment.h"
#include "gpu/segment_plan.h"
#include "gpu/stage_timer.h"
#include "gpu/workspace_carver.h"

namespace ebzip::gpu {

// A frame to choose for: one with two or more candidates (Candidates(params)).
struct SurveyFrame {
  FrameParams params;  // its bound a placeholder: the device resolves it
  const void* input;   // device: the frame's first element
  uint32_t item;       // in the batch's item table (bound, fill value)
  bool has_fill;       // the item has a fill value
};

class PredictorSurvey {
 public:
  PredictorSurvey() = default;

  // Plans the survey of `frames` from shapes and options alone: the samples,
  // the pseudo-segments and the workspace, the worst case over the data.
  // `elem_size`: 4 or 8. UNIMPLEMENTED for what the kernels do not take.
  static absl::StatusOr<PredictorSurvey> Plan(std::vector<SurveyFrame> frames, int elem_size);

  bool empty() const { return frames_.empty(); }
  uint64_t pseudo_segments() const { return pseudo_.size(); }

  // Takes the survey's device arrays and pinned host arrays; measures when
  // the carvers have no base.
  void Carve(WorkspaceCarver* device, WorkspaceCarver* host);

  // Step 1, enqueued behind the device's bound resolution (`items`, on the
  // device): the samples gathered, their fill bytes and fill-mask sizes, and
  // every Lorenzo candidate. Needs nothing from the host.
  absl::Status LaunchWithoutBounds(const Item* items, cudaStream_t stream);

  // Step 2, given each frame's parameters with the resolved bound (in Plan's
  // order): the interpolation candidates (beside step 1's Lorenzo ones, on
  // lanes of a StreamFork begun at the samples), the histograms and lists,
  // their copies to the host.
  absl::Status LaunchWithBounds(absl::Span<const FrameParams> params, cudaStream_t stream);

  // Step 3: the synchronization (a second one when samples use over 1024
  // symbols each on average), then each frame's winner, in Plan's order.
  // `timer`, when given, notes the host's part.
  absl::StatusOr<std::vector<PredictorConfig>> Finish(cudaStream_t stream, StageTimer* timer);

 private:
  struct Frame {
    FrameParams params;
    FrameParams sample_params;  // SampleParams(params, sample)
    std::vector<PredictorConfig> candidates;
    std::vector<uint32_t> pseudo;  // each candidate's pseudo-segment
    FrameSample sample;
    const void* input = nullptr;
    uint32_t item = 0;
    bool has_fill = false;
    bool interp = false;        // some candidate is interpolation
    bool fill_mask = false;     // ... and codes a fill mask (has_fill)
    uint64_t n = 0;             // the sample's elements
    uint64_t sample_bytes = 0;
    bool gathered = false;      // stripes copied into samples_
    uint64_t sample_at = 0;     // in samples_, when gathered
    uint64_t fill_at = 0;       // in fill_, when fill_mask
  };
  // One interpolation candidate of consecutive frames with one plan but for
  // the bound (sample shape, radius, fill, candidate): one batch. Samples of
  // one item at a fixed stride take the plan's bound; others each their own.
  struct Group {
    uint32_t first_frame = 0;
    uint32_t frames = 0;
    uint32_t candidate = 0;     // in each frame's list
    uint32_t first_pseudo = 0;  // its frames' pseudo-segments follow
    bool first_interp = false;  // the frames' first interpolation candidate
    bool per_frame = false;     // inputs and bounds from the segment table
    uint64_t stride = 0;        // between the samples, bytes (unless per_frame)
    InterpPlan plan;            // a placeholder bound until Choose
  };
  // A stripe to gather (device pointers once carved).
  struct Stripe {
    const uint8_t* from;
    uint8_t* to;
    uint64_t bytes;
  };

  const uint8_t* SampleOf(const Frame& f) const;

  int elem_size_ = 4;
  std::vector<Frame> frames_;
  std::vector<Group> groups_;
  std::vector<Segment> pseudo_;  // Lorenzo candidates first, then each group's
  std::vector<uint32_t> pseudo_frame_;  // each one's frame
  std::vector<Stripe> stripes_;  // `from` a device pointer, `to` an offset into samples_
  uint32_t lorenzo_ = 0;         // Lorenzo pseudo-segments
  BatchTotals totals_;
  uint64_t lorenzo_tiles_ = 0;
  uint64_t lorenzo_symbols_ = 0;
  uint64_t sample_bytes_ = 0;
  uint64_t fill_bytes_ = 0;
  size_t fill_workspace_ = 0;
  size_t interp_scratch_ = 0;
  uint64_t interp_outliers_ = 0;
  int lanes_ = 1;  // streams the interpolation groups run on (StreamFork)
  uint64_t listed_capacity_ = 0;
  uint64_t results_ = 0;  // 64-bit words of results
  // Where the run counters start among the results (after the specials,
  // the fill sizes and the interpolation counts).
  uint64_t CountersAt() const { return 4 * pseudo_.size() + 2 * frames_.size(); }
  std::vector<FrameParams> params_;  // with the bound, from LaunchWithBounds

  // Device.
  const Item* items_ = nullptr;  // the batch's, from LaunchWithoutBounds
  Segment* segments_ = nullptr;
  Stripe* stripe_table_ = nullptr;
  uint8_t* samples_ = nullptr;
  uint8_t* fill_ = nullptr;
  uint8_t* fill_ws_ = nullptr;
  uint16_t* symbols_ = nullptr;
  int32_t* deltas_ = nullptr;
  uint32_t* masks_ = nullptr;  // outliers, verbatim, fill
  uint32_t* histogram_ = nullptr;  // symbols' for each pseudo-segment, then each token stage's
  uint32_t* used_ = nullptr;
  UsedSymbols* info_ = nullptr;  // followed by the list
  uint32_t* run_counters_ = nullptr;  // in results_dev_, at CountersAt()
  uint64_t* results_dev_ = nullptr;
  uint8_t* scratch_ = nullptr;
  uint32_t* outlier_index_ = nullptr;
  int32_t* outlier_residual_ = nullptr;
  // Host (pinned).
  Segment* host_segments_ = nullptr;
  Stripe* host_stripes_ = nullptr;
  UsedSymbols* host_info_ = nullptr;  // followed by the list
  uint64_t* host_results_ = nullptr;
};

}  // namespace ebzip::gpu

#endif  // EBZIP_GPU_PREDICTOR_SURVEY_H_
