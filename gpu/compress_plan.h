// The compressor's private parts (gpu/compressor.cu and the steps it calls):
// a batch's plan, fixed from shapes and options alone before any launch, and
// the call's arrays carved from the caller's workspaces for it. Not part of
// the public API (gpu/gpu_codec.h).
#ifndef EBZIP_GPU_COMPRESS_PLAN_H_
#define EBZIP_GPU_COMPRESS_PLAN_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codec/frame_codec.h"
#include "codec/frame_content.h"
#include "gpu/gpu_codec.h"
#include "gpu/interp_kernels.h"
#include "gpu/kernels.h"
#include "gpu/predictor_survey.h"
#include "gpu/segment.h"
#include "gpu/segment_plan.h"

namespace ebzip::gpu::compress {

inline constexpr uint64_t kAlphabet = 65536;  // histogram and code-table stride per segment
inline uint64_t Align16(uint64_t n) { return (n + 15) & ~uint64_t{15}; }

struct AddCounts {
  __host__ __device__ SpecialCounts operator()(const SpecialCounts& a,
                                               const SpecialCounts& b) const {
    return a + b;
  }
};

// Version 2, per segment: what the choice of predictor (FORMAT.md §15.9)
// needs, and what it chose.
struct FrameV2 {
  FrameParams params;  // with the resolved bound once the device has it
  std::vector<PredictorConfig> candidates;
  int32_t surveyed = -1;  // its place in the survey's frames; -1: one candidate
  uint64_t fill_workspace_at = 0;
  size_t fill_workspace_bytes = 0;  // 0: no candidate codes a fill mask
  Geometry lorenzo{};               // the Lorenzo candidate's geometry
  PredictorConfig config;
  InterpPlan interp;  // when config is interpolation
};

// Everything fixed before launch, from shapes and options alone.
struct Plan {
  int elem_size = 0;
  std::vector<Segment> segments;
  std::vector<Item> items;
  std::vector<uint8_t> frame_templates;
  std::vector<uint8_t> file_templates;
  BatchTotals totals;
  uint64_t max_crc_pieces = 0;
  bool any_relative = false;
  CodeBuilder builder = CodeBuilder::kDevice;
  // Room for every segment's used symbols (at most its symbols and its
  // alphabet, at most 65536), listed one segment after another.
  uint64_t listed_capacity = 0;
  uint32_t max_used = 0;       // of any segment
  uint64_t section_bytes = 0;  // device-built codes: every segment's section room
  // Version 2: the predictor is chosen on the device's survey of the
  // frames' samples and the stage picked on the host (two synchronizations
  // besides the bound's), codes are built there, and the workspace has room
  // for whichever candidate wins. Interpolation frames are encoded in
  // batches of consecutive frames of one shape, tile, order, radius and fill
  // coding, of one array or several (InterpBatchCap).
  bool v2 = false;
  std::vector<FrameV2> frames;  // per segment
  PredictorSurvey survey;       // of the frames with several candidates
  size_t interp_scratch = 0;    // the largest batch's
  uint64_t interp_outliers = 0; // the most anchors of any batch
  uint64_t fill_mask_elements = 0;  // the largest batch that may code fill masks
  uint64_t fill_workspace = 0;
};

// Interpolation frames per batch: frames with a fill mask take a byte per
// element of scratch each, so their batches stop at kFillBatchElements.
inline constexpr uint32_t kMaxInterpBatch = 1024;
inline constexpr uint64_t kFillBatchElements = uint64_t{1} << 26;
inline uint32_t InterpBatchCap(uint64_t n, bool fill) {
  if (!fill) return kMaxInterpBatch;
  return static_cast<uint32_t>(std::clamp<uint64_t>(kFillBatchElements / n, 1, kMaxInterpBatch));
}

// Frame `f` of a task's archive plan, its first row the task's own when the
// task is one frame of a larger array (CompressTask::first_row).
FrameParams TaskFrameParams(const CompressTask& task, const ArchivePlan& archive, uint64_t f);

// A frame's geometry for the kernels that see it: its Lorenzo blocks, or,
// for an interpolation frame (which those kernels skip), blocks of one
// element, so that only the range pass's tiles follow from it.
Geometry GeometryFor(const FrameParams& p, const PredictorConfig& config);

// The batch's plan. UNIMPLEMENTED for what the GPU codec does not take.
absl::StatusOr<Plan> MakePlan(absl::Span<const CompressTask> tasks, CodeBuilder builder);

// The call's arrays, carved from the workspaces.
struct Buffers {
  // Device.
  Segment* segments;
  Item* items;
  FrameLayout* layouts;
  CrcJob* crc_jobs;
  uint64_t* crc_job_pieces;
  uint64_t* crc_piece_prefix;
  uint8_t* frame_templates;
  uint8_t* file_templates;
  uint16_t* symbols;
  int32_t* deltas;
  uint32_t* histogram;
  uint32_t* used;     // per segment: its histogram's non-zero bins
  UsedSymbols* info;  // followed by the used-symbol list: one copy down
  SymbolCount* list;
  // Device-built codes.
  CodeBuildScratch build;
  Codebook* codebooks;
  uint8_t* sections;
  // Host-built codes: codebooks, lengths, codes, sections: one copy up.
  uint8_t* upload;
  uint32_t* masks;  // outliers, verbatim, fill
  SpecialCounts* tile_counts;
  SpecialCounts* tile_prefix;
  uint32_t* chunk_bits;
  uint64_t* chunk_words;
  uint64_t* chunk_gaps;
  uint64_t* word_prefix;
  uint64_t* gap_prefix;
  uint8_t* lengths;  // 65536 per segment, indexed by symbol
  uint32_t* codes;
  void* cub_temp;
  size_t cub_temp_bytes;
  // Version 2.
  uint32_t* run_counters;  // kRunCountersPerSegment per segment
  uint32_t* slice_states;  // kSliceStatesPerChunk per chunk (gpu/run_kernels.h)
  uint64_t slice_state_chunks;
  uint64_t* extra_bits;    // per segment: its tokens' extra bits (both stages')
  uint32_t* interp_counts;  // per segment: S and outliers of an interpolation frame
  uint8_t* interp_scratch;  // one batch of frames at a time
  uint32_t* outlier_index;  // one batch's anchors that are outliers
  int32_t* outlier_residual;
  uint8_t* fill_bytes;      // one batch's fill, a byte per element
  uint8_t* fill_workspace;  // each fill-mask frame's, kept from sizes to writing
  uint64_t* fill_sizes;     // per segment: fill-mask section bytes and tokens
  uint8_t** fill_mask_at;   // per segment: where LaunchLayout puts the mask
  uint32_t* host_counts;
  uint64_t* host_extra_bits;
  // Host (pinned).
  UsedSymbols* host_info;  // followed by the list, room for every bin
  SymbolCount* host_list;
  uint8_t* host_upload;
  Segment* host_segments;
  Item* host_items;
  uint8_t* host_frame_templates;
  uint8_t* host_file_templates;
};

// The CUB scratch the call's scans (and the device build's sort) share.
absl::StatusOr<size_t> CubTempBytes(const Plan& plan);

// The call's arrays in the device and pinned host workspaces; with null
// bases, only measures them into `size` (WorkspaceCarver). Also carves the
// plan's survey.
Buffers Carve(Plan& plan, size_t cub_temp_bytes, void* device, void* host, WorkspaceSize* size);

// The plan's segment table and frame header templates to the device, on
// `st`, through their pinned copies.
absl::Status UploadSegments(const Plan& plan, const Buffers& b, cudaStream_t st);

}  // namespace ebzip::gpu::compress

#endif  // EBZIP_GPU_COMPRESS_PLAN_H_
