// DecompressBatch: the host reads the (already parsed) headers into the
// segment table; the device checks every CRC and section padding, decodes
// the fill masks (version 2), builds decode tables, reads the chunk index and
// decodes; then each frame's predictor inverts (Lorenzo: outliers scattered,
// inverse Lorenzo; interpolation: outlier lists, gpu/interp_kernels.h's
// decoder), and fill (runs or mask) and verbatim values are restored,
// recording the first inconsistency it meets. Format versions 1 and 2 mix
// freely in a batch: each frame is read by its own header.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <cub/device/device_scan.cuh>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codec/format.h"
#include "codec/frame_content.h"
#include "gpu/cuda_status.h"
#include "gpu/gpu_codec.h"
#include "gpu/interp_frame_kernels.h"
#include "gpu/interp_kernels.h"
#include "gpu/kernels.h"
#include "gpu/run_kernels.h"
#include "gpu/segment_plan.h"
#include "gpu/workspace_carver.h"

namespace ebzip::gpu {
namespace {

// A frame with a fill mask (fill coding 1).
struct MaskFrame {
  uint32_t segment;
  uint64_t row;  // elements per index along dimension 0 (n in 1-D: FORMAT.md §15.6)
};

// An interpolation frame (predictor 1).
struct InterpFrame {
  uint32_t segment;
  InterpPlan plan;
  int mask = -1;  // its MaskFrame, if it has one
  interp::TileSpan tiles;  // the tiles its task wants
  // Plan::chunk_list [list_begin, + list_count): the chunks a partial
  // frame decodes (Segment::partial); none: every chunk.
  uint64_t list_begin = 0;
  uint64_t list_count = 0;
  int batch = -1;  // its InterpBatch, if it decodes in one
};

// Interpolation frames of one geometry decoded together
// (LaunchInterpDecodeBatch), a batch of small arrays costing then about
// what one frame does. `frames` sizes its scratch and frame table whatever
// the tasks want (DecompressWorkspaceSize does not see `wanted`); `decoded`
// are those it decodes, the others (a region's part of a frame) decoding
// alone. Their chunks are Plan::chunk_list [list_begin, + list_count).
struct InterpBatch {
  std::vector<size_t> frames;   // into Plan::interp
  std::vector<size_t> decoded;  // of them
  uint64_t list_begin = 0;
  uint64_t list_count = 0;
  uint64_t max_outliers = 0;
  uint64_t table_begin = 0;
  size_t scratch = 0;
};

// Frames of up to this many elements batch: larger ones fill the GPU alone
// and gain more from their own streams (the 1 GiB pipeline's 16 frames of
// 16 Mi elements decoded 7 % slower in one batch on the H100).
constexpr uint64_t kInterpBatchMaxElements = uint64_t{1} << 22;

struct Plan {
  int elem_size = 0;
  GpuDecoder decoder = GpuDecoder::kGapArray;
  std::vector<Segment> segments;
  std::vector<Item> items;
  std::vector<CrcJob> crc_jobs;
  std::vector<uint64_t> piece_prefix;  // jobs + 1
  BatchTotals totals;
  // Outliers and verbatim values of every frame; fill runs of the frames
  // with fill coding 0 (a fill mask's fill_run_count counts its tokens).
  uint64_t outliers = 0, verbatim = 0, fill_runs = 0;
  bool runs = false;  // some frame has tokens (zero-run or run-value)
  std::vector<MaskFrame> masks;
  size_t mask_workspace = 0;  // the largest mask's: they decode one after another
  std::vector<InterpFrame> interp;
  std::vector<uint64_t> chunk_list;  // batch chunk indices
  std::vector<InterpBatch> batches;
  uint64_t batch_frames = 0;  // entries of the batches' frame table
};

// The interpolation decoder's plan for a frame, from the parameters the CPU
// decoder derives from its header. UNIMPLEMENTED for tiles the GPU kernels
// cannot hold (the service then decodes on the CPU).
absl::StatusOr<InterpPlan> PlanInterpFrame(const format::FrameHeader& h) {
  absl::StatusOr<InterpPlan> plan =
      PlanInterp(InterpParamsFor(h), h.fill_coding == format::kFillCodingMask);
  // Parameters ReadArchiveInfo let through but the predictor refuses: the
  // CPU decoder refuses them too.
  if (plan.status().code() == absl::StatusCode::kInvalidArgument) {
    return format::CorruptArchive(plan.status().message());
  }
  return plan;
}

// The tiles of frame `f` of `info` that own elements of `wanted` (every
// tile without one).
interp::TileSpan WantedTiles(const interp::Geometry& g, const ArchiveInfo& info, uint64_t f,
                             const Hyperslab* wanted) {
  const format::FrameHeader& h = info.frame_headers[f];
  if (wanted == nullptr || wanted->start.size() != static_cast<size_t>(h.ndim)) {
    return interp::AllTiles(g);
  }
  const int pad = interp::kIDims - h.ndim;
  uint64_t lo[interp::kIDims], hi[interp::kIDims];
  for (int d = 0; d < interp::kIDims; ++d) {
    lo[d] = 0;
    hi[d] = 1;
  }
  const uint64_t first_row = f * info.header.frame_rows;
  for (int i = 0; i < h.ndim; ++i) {
    const uint64_t count = wanted->count[i];
    if (count == 0) return interp::TileSpan{};  // nothing wanted
    uint64_t begin = wanted->start[i];
    uint64_t end = begin + (count - 1) * wanted->step[i] + 1;
    if (i == 0) {  // the frame's rows of the array
      begin = std::max(begin, first_row) - first_row;
      end = std::min(end, first_row + h.shape[0]);
      if (end <= first_row + begin) return interp::TileSpan{};
      end -= first_row;
    }
    lo[pad + i] = begin;
    hi[pad + i] = end;
  }
  return interp::TilesMeeting(g, lo, hi);
}

// The chunks a frame without a fill mask needs for `tiles`, as the CPU
// chooses its symbols (codec/region_frame.cc): those of the tiles and of the
// next ones along each interpolated dimension (whose lower faces are the
// tiles' far faces), and the anchor (a tile's first symbol) of every tile
// from the start of the anchor blocks they lie in (§15.5.1: an anchor is the
// sum of its block's residuals up to it). The GPU decodes chunks whole, not
// their prefixes as the CPU does: a thread decoding one chunk's prefix alone
// measured slower than the parallel decoders on the whole frame. Appended
// to `out`; false (nothing appended) where they are over half the frame's
// chunks, when decoding all of them costs about as much.
bool AppendRegionChunks(const interp::Geometry& g, const interp::TileSpan& tiles,
                        const Segment& seg, std::vector<uint64_t>* out) {
  uint64_t lo[interp::kIDims], hi[interp::kIDims], first[interp::kIDims];
  uint64_t anchors = 1;
  for (int d = 0; d < interp::kIDims; ++d) {
    lo[d] = tiles.lo[d];
    hi[d] = lo[d] + tiles.count[d];
    if (interp::IsInterpolated(g, d) && hi[d] < g.tiles[d]) ++hi[d];
    first[d] = lo[d] / g.ablock[d] * g.ablock[d];
    anchors *= hi[d] - first[d];
  }
  if (tiles.total == 0 || 2 * anchors > g.num_tiles) return false;
  const uint64_t cs = seg.chunk_symbols;
  std::vector<bool> need(seg.num_chunks, false);
  auto want = [&](uint64_t begin, uint64_t end) {
    for (uint64_t c = begin / cs; c < need.size() && c * cs < end; ++c) need[c] = true;
  };
  uint64_t k[interp::kIDims];
  for (k[0] = first[0]; k[0] < hi[0]; ++k[0]) {
    for (k[1] = first[1]; k[1] < hi[1]; ++k[1]) {
      for (k[2] = first[2]; k[2] < hi[2]; ++k[2]) {
        for (k[3] = first[3]; k[3] < hi[3]; ++k[3]) {
          uint64_t t = 0;
          bool whole = true;  // a tile whose symbols are read, not only its anchor
          for (int d = 0; d < interp::kIDims; ++d) {
            t += k[d] * g.astride[d];
            whole &= k[d] >= lo[d];
          }
          const uint64_t at = interp::TileStartWithoutFill(g, t);
          want(at, whole ? interp::TileStartWithoutFill(g, t + 1) : at + 1);
        }
      }
    }
  }
  const uint64_t count = std::count(need.begin(), need.end(), true);
  if (2 * count > need.size()) return false;
  for (uint64_t c = 0; c < need.size(); ++c) {
    if (need[c]) out->push_back(seg.chunk_base + c);
  }
  return true;
}

// Whether two frames' plans differ in their bound alone.
bool SameGeometry(const interp::Geometry& a, const interp::Geometry& b) {
  for (int d = 0; d < interp::kIDims; ++d) {
    if (a.dims[d] != b.dims[d]) return false;
  }
  if (a.k != b.k || a.E != b.E || a.radius != b.radius || a.cubic != b.cubic ||
      a.tile_threads != b.tile_threads || a.tiles_per_block != b.tiles_per_block) {
    return false;
  }
  for (uint32_t e = 0; e < a.k; ++e) {
    if (a.idim[e] != b.idim[e]) return false;
  }
  return true;
}

// Small frames without a fill mask, decoded directly, join the others of
// their geometry in a batch (of two frames or more).
absl::Status PlanInterpBatches(Plan* plan) {
  auto batchable = [](const InterpFrame& f) {
    return f.plan.decode_direct && !f.plan.has_fill && f.plan.geo.n <= kInterpBatchMaxElements;
  };
  std::vector<bool> taken(plan->interp.size(), false);
  for (size_t i = 0; i < plan->interp.size(); ++i) {
    if (taken[i] || !batchable(plan->interp[i])) continue;
    InterpBatch batch;
    batch.frames.push_back(i);
    for (size_t j = i + 1; j < plan->interp.size() && batch.frames.size() < kMaxInterpBatchFrames;
         ++j) {
      if (!taken[j] && batchable(plan->interp[j]) &&
          SameGeometry(plan->interp[i].plan.geo, plan->interp[j].plan.geo)) {
        batch.frames.push_back(j);
        taken[j] = true;
      }
    }
    if (batch.frames.size() < 2) continue;
    absl::StatusOr<size_t> scratch = InterpDecodeBatchScratch(
        plan->interp[i].plan, static_cast<uint32_t>(batch.frames.size()));
    if (!scratch.ok()) return scratch.status();
    batch.scratch = *scratch;
    batch.table_begin = plan->batch_frames;
    plan->batch_frames += batch.frames.size();
    batch.list_begin = plan->chunk_list.size();
    for (size_t k : batch.frames) {
      InterpFrame& f = plan->interp[k];
      if (f.list_count > 0 || !f.tiles.whole) continue;  // a region's: alone
      const Segment& seg = plan->segments[f.segment];
      for (uint64_t c = 0; c < seg.num_chunks; ++c) plan->chunk_list.push_back(seg.chunk_base + c);
      batch.max_outliers = std::max(batch.max_outliers, seg.outlier_count);
      f.batch = static_cast<int>(plan->batches.size());
      batch.decoded.push_back(k);
    }
    batch.list_count = plan->chunk_list.size() - batch.list_begin;
    plan->batches.push_back(std::move(batch));
  }
  return absl::OkStatus();
}

absl::StatusOr<Plan> MakePlan(absl::Span<const DecompressTask> tasks, DecoderKind kind) {
  if (tasks.empty()) return absl::InvalidArgumentError("no archives to decompress");
  Plan plan;
  bool all_gaps = true;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const ArchiveInfo& info = *tasks[i].info;
    if (info.header.dtype != tasks[0].info->header.dtype) {
      return absl::InvalidArgumentError("a GPU batch takes one dtype");
    }
    plan.elem_size = static_cast<int>(DTypeSize(info.header.dtype));
    Item item{};
    item.archive = const_cast<uint8_t*>(tasks[i].archive);
    item.first_segment = plan.segments.size();
    item.num_segments = info.frames.size();
    plan.items.push_back(item);
    const uint64_t row_bytes = info.spec().num_bytes() / info.header.shape[0];
    for (uint64_t f = 0; f < info.frames.size(); ++f) {
      const format::FrameHeader& h = info.frame_headers[f];
      const uint32_t index = static_cast<uint32_t>(plan.segments.size());
      const bool interp = h.predictor == format::kPredictorInterp;
      // An interpolation frame has no Lorenzo blocks: blocks of one element
      // keep the Lorenzo kernels' limits off its tiles (those kernels skip it).
      static constexpr std::array<uint16_t, kDims> kOnes = {1, 1, 1, 1};
      Segment seg{};
      seg.geo = MakeGeometry({h.shape.data(), static_cast<size_t>(h.ndim)},
                             {interp ? kOnes.data() : h.block.data(), static_cast<size_t>(h.ndim)});
      if (auto s = CheckGpuLimits(seg.geo, h.chunk_symbols, h.max_code_length); !s.ok()) return s;
      seg.output = static_cast<uint8_t*>(tasks[i].output) + f * info.header.frame_rows * row_bytes;
      seg.item = static_cast<uint32_t>(i);
      seg.radius = h.radius;
      seg.chunk_symbols = h.chunk_symbols;
      seg.subsequence_bits = h.subsequence_bits;
      seg.chunk_group = h.chunk_group;
      seg.gap_array = h.has_gap_array;
      seg.max_code_length = h.max_code_length;
      seg.frame_index = static_cast<uint32_t>(f);
      seg.frame_offset = info.frames[f].offset;
      uint64_t at = seg.frame_offset + format::kFrameHeaderSize;
      for (int k = 0; k < kSections; ++k) {
        seg.section_offset[k] = at;
        seg.section_length[k] = h.sections[k].length;
        seg.section_crc[k] = h.sections[k].crc;
        at += Align8(h.sections[k].length);
      }
      seg.outlier_count = h.outlier_count;
      seg.verbatim_count = h.verbatim_count;
      seg.fill_run_count = h.fill_run_count;
      seg.outlier_base = plan.outliers;
      seg.verbatim_base = plan.verbatim;
      seg.fill_run_base = plan.fill_runs;
      plan.outliers += h.outlier_count;
      plan.verbatim += h.verbatim_count;
      if (h.fill_coding == format::kFillCodingRuns) plan.fill_runs += h.fill_run_count;
      seg.quant_step = h.quant_step;
      seg.fill_value = h.fill_value.value_or(0.0);
      seg.predictor = h.predictor;
      seg.lossless = h.lossless;
      seg.fill_coding = h.fill_coding;
      seg.order = h.order;
      seg.positions = h.positions;
      plan.runs |= h.lossless != format::kLosslessHuffman;
      all_gaps &= h.has_gap_array;
      PlaceSegment(&seg, &plan.totals);
      int mask = -1;
      if (h.fill_coding == format::kFillCodingMask) {
        const uint64_t n = seg.geo.n;
        const uint64_t row = h.ndim == 1 ? n : n / h.shape[0];
        size_t bytes = 0;
        CUDA_RETURN_IF_ERROR(FillMaskDecodeWorkspace(n, row, h.fill_run_count, &bytes));
        plan.mask_workspace = std::max(plan.mask_workspace, bytes);
        mask = static_cast<int>(plan.masks.size());
        plan.masks.push_back({index, row});
      }
      if (interp) {
        absl::StatusOr<InterpPlan> ip = PlanInterpFrame(h);
        if (!ip.ok()) return ip.status();
        const interp::TileSpan tiles = WantedTiles(ip->geo, info, f, tasks[i].wanted);
        InterpFrame frame{index, *std::move(ip), mask, tiles};
        // Part of a frame without a fill mask: only the chunks its tiles
        // need (with a mask their positions are the device's to count).
        frame.list_begin = plan.chunk_list.size();
        if (!frame.tiles.whole && !frame.plan.has_fill &&
            AppendRegionChunks(frame.plan.geo, frame.tiles, seg, &plan.chunk_list)) {
          seg.partial = 1;
          frame.list_count = plan.chunk_list.size() - frame.list_begin;
        }
        plan.interp.push_back(std::move(frame));
      }
      for (int k = 0; k < kSections; ++k) {
        CrcJob job{};
        job.data = tasks[i].archive + seg.section_offset[k];
        job.length = seg.section_length[k];
        job.expected = seg.section_crc[k];
        job.segment = index;
        plan.crc_jobs.push_back(job);
      }
      plan.segments.push_back(seg);
    }
  }
  if (absl::Status s = PlanInterpBatches(&plan); !s.ok()) return s;
  plan.piece_prefix.push_back(0);
  for (const CrcJob& job : plan.crc_jobs) {
    plan.piece_prefix.push_back(plan.piece_prefix.back() +
                                (job.length + kCrcPieceBytes - 1) / kCrcPieceBytes);
  }
  switch (kind) {
    case DecoderKind::kAuto:
      plan.decoder = all_gaps ? GpuDecoder::kGapArray : GpuDecoder::kSelfSync;
      break;
    case DecoderKind::kGapArray:
      if (!all_gaps) return absl::InvalidArgumentError("archive has frames without a gap array");
      plan.decoder = GpuDecoder::kGapArray;
      break;
    case DecoderKind::kSelfSync:
      plan.decoder = GpuDecoder::kSelfSync;
      break;
    case DecoderKind::kChunkParallel:
      plan.decoder = GpuDecoder::kChunkParallel;
      break;
  }
  return plan;
}

struct Buffers {
  Segment* segments;
  Item* items;
  CrcJob* crc_jobs;
  uint64_t* piece_prefix;
  uint32_t* job_crcs;
  DecodeTables tables;
  uint32_t* chunk_bits;
  uint64_t* chunk_words;
  uint64_t* chunk_gaps;
  uint64_t* word_prefix;
  uint64_t* gap_prefix;
  uint16_t* symbols;
  int32_t* deltas;
  uint64_t* zero_symbols;
  DeviceStatus* status;  // the decoders' first error
  DeviceStatus* checks;  // the checksums' and padding's, which run beside them
  void* cub_temp;
  size_t cub_temp_bytes;
  Segment* host_segments;
  Item* host_items;
  CrcJob* host_crc_jobs;
  uint64_t* host_piece_prefix;
  // Version 2.
  std::vector<uint8_t*> masks;  // per MaskFrame: n bytes, 1 for fill
  uint64_t* fill_counts;        // per MaskFrame
  void* mask_workspace;
  uint32_t* outlier_index;      // interpolation frames' outliers, at Segment::outlier_base
  int32_t* outlier_residual;
  uint32_t* interp_errors;      // per segment: interp::DecodeError bits
  std::vector<void*> interp_scratch;  // per InterpFrame
  std::vector<void*> batch_scratch;   // per InterpBatch
  InterpDecodeFrame* batch_frames;    // the batches' frame table
  InterpDecodeFrame* host_batch_frames;
  uint64_t* chunk_list;               // Plan::chunk_list
  uint64_t* host_chunk_list;
};

// The two statuses live at the start of both workspaces, so
// FinishDecompress finds them without the plan.
Buffers Carve(const Plan& plan, size_t cub_temp_bytes, void* device, void* host,
              WorkspaceSize* size) {
  const uint64_t S = plan.segments.size();
  Buffers b{};
  WorkspaceCarver d(device);
  b.status = d.Take<DeviceStatus>(2);
  b.checks = b.status + 1;
  b.segments = d.Take<Segment>(S);
  b.items = d.Take<Item>(plan.items.size());
  b.crc_jobs = d.Take<CrcJob>(plan.crc_jobs.size());
  b.piece_prefix = d.Take<uint64_t>(plan.piece_prefix.size());
  b.job_crcs = d.Take<uint32_t>(plan.crc_jobs.size());
  b.tables.lookup = d.Take<uint32_t>(S * 4096);
  const bool by_warps = DecodesByWarps(plan.decoder, plan.totals.chunks);
  b.tables.multi = by_warps ? d.Take<uint64_t>(S * 2048) : nullptr;
  b.tables.spans = by_warps ? d.Take<uint32_t>(S * 2048) : nullptr;
  b.tables.sorted = d.Take<uint16_t>(S * 65536);
  b.tables.first_code = d.Take<uint32_t>(S * 32);
  b.tables.count = d.Take<uint32_t>(S * 32);
  b.tables.offset = d.Take<uint32_t>(S * 32);
  b.chunk_bits = d.Take<uint32_t>(plan.totals.chunks);
  b.chunk_words = d.Take<uint64_t>(plan.totals.chunks);
  b.chunk_gaps = d.Take<uint64_t>(plan.totals.chunks);
  b.word_prefix = d.Take<uint64_t>(plan.totals.chunks);
  b.gap_prefix = d.Take<uint64_t>(plan.totals.chunks);
  b.symbols = d.Take<uint16_t>(plan.totals.symbols);
  b.deltas = d.Take<int32_t>(plan.totals.symbols);
  b.zero_symbols = d.Take<uint64_t>(S);
  b.cub_temp = d.Take<uint8_t>(cub_temp_bytes);
  b.cub_temp_bytes = cub_temp_bytes;
  for (const MaskFrame& m : plan.masks) {
    b.masks.push_back(d.Take<uint8_t>(plan.segments[m.segment].geo.n));
  }
  b.fill_counts = d.Take<uint64_t>(plan.masks.size());
  b.mask_workspace = d.Take<uint8_t>(plan.mask_workspace);
  const uint64_t interp_outliers = plan.interp.empty() ? 0 : plan.outliers;
  b.outlier_index = d.Take<uint32_t>(interp_outliers);
  b.outlier_residual = d.Take<int32_t>(interp_outliers);
  b.interp_errors = d.Take<uint32_t>(plan.interp.empty() ? 0 : S);
  for (const InterpFrame& f : plan.interp) {
    b.interp_scratch.push_back(d.Take<uint8_t>(f.plan.decode_scratch));
  }
  for (const InterpBatch& batch : plan.batches) {
    b.batch_scratch.push_back(d.Take<uint8_t>(batch.scratch));
  }
  b.batch_frames = d.Take<InterpDecodeFrame>(plan.batch_frames);
  // Room for any region's lists, so that the size does not depend on
  // DecompressTask::wanted.
  b.chunk_list = d.Take<uint64_t>(plan.interp.empty() ? 0 : plan.totals.chunks);
  WorkspaceCarver h(host);
  h.Take<DeviceStatus>(2);
  b.host_segments = h.Take<Segment>(S);
  b.host_items = h.Take<Item>(plan.items.size());
  b.host_crc_jobs = h.Take<CrcJob>(plan.crc_jobs.size());
  b.host_piece_prefix = h.Take<uint64_t>(plan.piece_prefix.size());
  b.host_chunk_list = h.Take<uint64_t>(plan.interp.empty() ? 0 : plan.totals.chunks);
  b.host_batch_frames = h.Take<InterpDecodeFrame>(plan.batch_frames);
  if (size) *size = {d.size(), h.size()};
  return b;
}

absl::StatusOr<size_t> CubTempBytes(const Plan& plan) {
  size_t bytes = 0;
  CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(nullptr, bytes,
                                                     static_cast<uint64_t*>(nullptr),
                                                     static_cast<uint64_t*>(nullptr),
                                                     plan.totals.chunks));
  return bytes;
}

const char* MaskCheckText(uint32_t check) {
  switch (check) {
    case kMaskTooShort: return "no tokens, or no room for the chunk lengths";
    case kMaskPadding: return "non-zero bytes after the class lengths";
    case kMaskBadCode: return "bad class code lengths";
    case kMaskNotWords: return "bitstream is not whole words";
    case kMaskChunkPastEnd: return "a chunk runs past the bitstream";
    case kMaskInvalidToken: return "invalid token";
    case kMaskChunkLength: return "a chunk's tokens end before its bits";
    case kMaskBitstreamLength: return "words left after the last chunk";
    case kMaskRunsTooLong: return "runs cover more than the frame";
    case kMaskRunsTooShort: return "runs cover less than the frame";
    default: return "unknown check";
  }
}

std::string InterpErrorText(uint32_t bits) {
  std::vector<const char*> what;
  if (bits & interp::kErrSymbolCount) {
    what.push_back("symbol positions disagree with the frame and its fill mask");
  }
  if (bits & interp::kErrAlphabet) what.push_back("symbol beyond the alphabet");
  if (bits & interp::kErrZeroAtNonAnchor) {
    what.push_back("symbol 0 (an outlier) at an element that is not an anchor");
  }
  if (bits & interp::kErrOutlier) {
    what.push_back("outlier beyond the frame, not at an anchor, or at a symbol that is not 0");
  }
  if (bits & interp::kErrOutlierCount) what.push_back("outlier count disagrees with the symbols");
  return what.empty() ? "unknown error" : absl::StrJoin(what, "; ");
}

std::string ErrorText(const DeviceStatus& status) {
  switch (status.error) {
    case kErrChecksum: return "section checksum mismatch";
    case kErrCodeLengths: return "bad code lengths";
    case kErrChunkIndex: return "chunk index disagrees with the bitstream";
    case kErrBitstream: return "bitstream does not decode to the frame's symbols";
    case kErrGapArray: return "gap array does not match the bitstream";
    case kErrOutliers: return "outlier index out of order or not an outlier symbol";
    case kErrVerbatim: return "verbatim index out of order";
    case kErrFillRuns: return "fill runs overlap or leave the frame";
    case kErrFillMask: return absl::StrCat("fill mask: ", MaskCheckText(status.section));
    case kErrInterp: return absl::StrCat("interpolation: ", InterpErrorText(status.section));
    case kErrPadding: return "non-zero padding";
    default: return "unknown device error";
  }
}

// Version 2's steps of DecompressBatch.

// Each fill mask into its n bytes (FORMAT.md §15.6), one frame after another
// in the shared workspace.
absl::Status DecodeFillMasks(const Plan& plan, const Buffers& b, cudaStream_t st) {
  for (size_t k = 0; k < plan.masks.size(); ++k) {
    const MaskFrame& m = plan.masks[k];
    const Segment& seg = plan.segments[m.segment];
    const uint8_t* section = plan.items[seg.item].archive + seg.section_offset[format::kFillRuns];
    // A decode skipped for an earlier error leaves no fill.
    CUDA_RETURN_IF_ERROR(cudaMemsetAsync(b.masks[k], 0, seg.geo.n, st));
    CUDA_RETURN_IF_ERROR(LaunchDecodeFillMask(section, seg.section_length[format::kFillRuns],
                                              seg.fill_run_count, seg.geo.n, m.row,
                                              b.mask_workspace, plan.mask_workspace, b.masks[k],
                                              b.fill_counts + k, b.status, m.segment, st));
  }
  return absl::OkStatus();
}

// Side streams of the calling thread on the current device, kept for the
// thread's life and lent to one StreamFork at a time: creating a stream takes
// host time in the middle of a call, while the device waits for its next
// launch. A stream given back may still run its last fork's work; a new
// fork's work waits behind it, which ordering allows.
class SideStreams {
 public:
  ~SideStreams() {
    for (auto& [device, free] : free_) {
      for (cudaStream_t s : free) cudaStreamDestroy(s);
    }
  }
  static SideStreams& OfThisThread() {
    thread_local SideStreams pool;
    return pool;
  }
  cudaError_t Take(int device, cudaStream_t* s) {
    std::vector<cudaStream_t>& free = free_[device];
    if (free.empty()) return cudaStreamCreateWithFlags(s, cudaStreamNonBlocking);
    *s = free.back();
    free.pop_back();
    return cudaSuccess;
  }
  void Give(int device, cudaStream_t s) { free_[device].push_back(s); }

 private:
  std::map<int, std::vector<cudaStream_t>> free_;
};

// Side streams forked from a caller's stream and joined back to it: work
// enqueued on them runs after what the caller's stream had before Fork, and
// what the caller's stream gets after Join runs after all of it. Events are
// released at destruction (CUDA frees them once their work is done) and the
// streams go back to SideStreams, so no error path leaks them.
class StreamFork {
 public:
  StreamFork() = default;
  StreamFork(const StreamFork&) = delete;
  StreamFork& operator=(const StreamFork&) = delete;
  ~StreamFork() {
    for (cudaStream_t s : streams_) SideStreams::OfThisThread().Give(device_, s);
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }

  absl::Status Fork(cudaStream_t parent, size_t count) {
    CUDA_RETURN_IF_ERROR(cudaGetDevice(&device_));
    cudaEvent_t forked = nullptr;
    CUDA_RETURN_IF_ERROR(NewEvent(&forked));
    CUDA_RETURN_IF_ERROR(cudaEventRecord(forked, parent));
    for (size_t i = 0; i < count; ++i) {
      cudaStream_t s = nullptr;
      CUDA_RETURN_IF_ERROR(SideStreams::OfThisThread().Take(device_, &s));
      streams_.push_back(s);
      CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(s, forked, 0));
    }
    return absl::OkStatus();
  }
  cudaStream_t operator[](size_t i) const { return streams_[i % streams_.size()]; }
  absl::Status Join(cudaStream_t parent) {
    for (size_t i = 0; i < streams_.size(); ++i) {
      if (absl::Status s = Join(parent, i); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
  // Side stream i alone (none if the fork failed).
  absl::Status Join(cudaStream_t parent, size_t i) {
    if (i >= streams_.size()) return absl::OkStatus();
    cudaEvent_t done = nullptr;
    CUDA_RETURN_IF_ERROR(NewEvent(&done));
    CUDA_RETURN_IF_ERROR(cudaEventRecord(done, streams_[i]));
    CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(parent, done, 0));
    return absl::OkStatus();
  }

 private:
  cudaError_t NewEvent(cudaEvent_t* e) {
    const cudaError_t err = cudaEventCreateWithFlags(e, cudaEventDisableTiming);
    if (err == cudaSuccess) events_.push_back(*e);
    return err;
  }
  int device_ = 0;
  std::vector<cudaStream_t> streams_;
  std::vector<cudaEvent_t> events_;
};

// Interpolation frames decoded at once: a frame's launches are a dozen small
// kernels (tables, anchors) and one tile kernel whose last wave leaves most
// of the GPU idle, so frames on side streams fill each other's gaps. Each
// frame has its own scratch. On the H100 (16 frames of 64 MiB, REL 1e-4)
// the frames took 6.2 ms on one stream, 4.7 on 4, 4.5 on 8 and on 16.
constexpr size_t kInterpStreams = 8;

// The chunks of frames [first, last] (consecutive frames own consecutive
// chunks).
ChunkRange ChunksOf(const Plan& plan, size_t first, size_t last) {
  return {plan.segments[first].chunk_base,
          plan.segments[last].chunk_base + plan.segments[last].num_chunks, plan.totals.chunks};
}

// Huffman decode, outliers and each predictor's inverse (§15.7 steps 1-3).
// Each interpolation frame decodes its chunks and then its values on a side
// stream, so one frame's interpolation runs beside another's Huffman decode;
// the other frames' chunks (runs of consecutive frames) and Lorenzo's
// inverse go on `st` meanwhile. The interpolation decoder's checks (S
// against the mask among them) become kErrInterp. `mark` times the stages
// where they run one after another (no interpolation frame).
absl::Status DecodeValues(const Plan& plan, const Buffers& b, cudaStream_t st,
                          absl::FunctionRef<void(const char*)> mark) {
  const uint32_t S = static_cast<uint32_t>(plan.segments.size());
  auto decode = [&](ChunkRange chunks, cudaStream_t stream) {
    return (plan.runs ? LaunchDecodeRuns : LaunchDecode)(
        plan.decoder, b.segments, S, chunks, plan.totals.max_chunk_symbols, b.items, b.tables,
        b.chunk_bits, b.word_prefix, b.gap_prefix, b.symbols, b.zero_symbols, b.status, stream);
  };
  std::vector<bool> interp(S, false);
  for (const InterpFrame& f : plan.interp) interp[f.segment] = true;
  if (!plan.interp.empty()) {
    CUDA_RETURN_IF_ERROR(cudaMemsetAsync(b.interp_errors, 0, S * sizeof(uint32_t), st));
    CUDA_RETURN_IF_ERROR(LaunchUnpackInterpOutliers(
        b.segments, S, plan.outliers, b.items, b.outlier_index, b.outlier_residual, b.status, st));
  }
  // Whatever was enqueued on the side streams is joined back, errors too:
  // the caller's stream must not run ahead of work still using its buffers.
  StreamFork side;
  size_t units = 0;  // batches and frames decoded alone
  for (const InterpBatch& batch : plan.batches) units += !batch.decoded.empty();
  for (const InterpFrame& f : plan.interp) units += f.batch < 0;
  absl::Status launched = side.Fork(st, std::min(kInterpStreams, units));
  size_t lane = 0;
  for (size_t k = 0; launched.ok() && k < plan.batches.size(); ++k) {
    const InterpBatch& batch = plan.batches[k];
    if (batch.decoded.empty()) continue;
    const size_t on = lane++;
    ChunkRange listed{0, batch.list_count, plan.totals.chunks, b.chunk_list + batch.list_begin};
    launched.Update(CudaStatus(decode(listed, side[on]), "decode"));
    if (!launched.ok()) break;
    launched.Update(LaunchInterpDecodeBatch(
        plan.interp[batch.decoded[0]].plan, b.batch_frames + batch.table_begin,
        static_cast<uint32_t>(batch.decoded.size()), batch.max_outliers, b.batch_scratch[k],
        side[on]));
  }
  for (size_t k = 0; launched.ok() && k < plan.interp.size(); ++k) {
    const InterpFrame& f = plan.interp[k];
    if (f.batch >= 0) continue;
    const size_t on = lane++;
    const Segment& seg = plan.segments[f.segment];
    InterpDecodeInputs in;
    in.symbols = b.symbols + seg.symbol_base;
    in.num_symbols = seg.positions;
    in.outlier_index = b.outlier_index + seg.outlier_base;
    in.outlier_residual = b.outlier_residual + seg.outlier_base;
    in.num_outliers = seg.outlier_count;
    in.fill_mask = f.mask >= 0 ? b.masks[f.mask] : nullptr;
    in.tiles = &f.tiles;
    if (f.list_count > 0) {
      launched.Update(CudaStatus(
          LaunchPrepareRegionSymbols(f.plan.geo, b.symbols + seg.symbol_base, seg.positions,
                                     in.outlier_index, seg.outlier_count, side[on]),
          "LaunchPrepareRegionSymbols"));
      ChunkRange listed{0, f.list_count, plan.totals.chunks, b.chunk_list + f.list_begin};
      if (launched.ok()) launched.Update(CudaStatus(decode(listed, side[on]), "decode"));
    } else {
      launched.Update(CudaStatus(decode(ChunksOf(plan, f.segment, f.segment), side[on]), "decode"));
    }
    if (!launched.ok()) break;
    launched.Update(LaunchInterpDecode(f.plan, in, seg.output, b.interp_scratch[k],
                                       b.interp_errors + f.segment, side[on]));
  }
  for (size_t first = 0; launched.ok() && first < S;) {
    if (interp[first]) {
      ++first;
      continue;
    }
    size_t last = first;
    while (last + 1 < S && !interp[last + 1]) ++last;
    launched.Update(CudaStatus(decode(ChunksOf(plan, first, last), st), "decode"));
    first = last + 1;
  }
  if (plan.interp.empty()) mark("huffman decode");
  if (launched.ok() && plan.interp.size() < S) {
    launched.Update(CudaStatus(LaunchScatterOutliers(b.segments, S, plan.outliers, b.items,
                                                     b.symbols, b.deltas, b.status, st),
                               "LaunchScatterOutliers"));
    if (plan.interp.empty()) mark("outlier scatter");
    if (launched.ok()) {
      launched.Update(CudaStatus(LaunchReconstruct(plan.elem_size, b.segments, S, plan.totals.tiles,
                                                   b.symbols, b.deltas, st),
                                 "LaunchReconstruct"));
    }
    if (plan.interp.empty()) mark("inverse lorenzo");
  }
  const absl::Status joined = side.Join(st);
  if (!launched.ok()) return launched;
  if (!joined.ok()) return joined;
  CUDA_RETURN_IF_ERROR(LaunchCheckOutlierCounts(b.segments, S, b.zero_symbols, b.status, st));
  if (!plan.interp.empty()) {
    CUDA_RETURN_IF_ERROR(LaunchReportInterpErrors(b.interp_errors, S, b.status, st));
  }
  return absl::OkStatus();
}

// Each chunk's bits, words and gap entries (§5.3), their prefix sums and
// their checks against the segments' totals.
absl::Status ReadChunkIndex(const Plan& plan, const Buffers& b, cudaStream_t st) {
  const uint32_t S = static_cast<uint32_t>(plan.segments.size());
  const uint64_t chunks = plan.totals.chunks;
  CUDA_RETURN_IF_ERROR(LaunchReadChunkIndex(b.segments, S, chunks, b.items, b.chunk_bits,
                                            b.chunk_words, b.chunk_gaps, b.status, st));
  size_t temp = b.cub_temp_bytes;
  CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(b.cub_temp, temp, b.chunk_words,
                                                     b.word_prefix, chunks, st));
  temp = b.cub_temp_bytes;
  CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(b.cub_temp, temp, b.chunk_gaps,
                                                     b.gap_prefix, chunks, st));
  CUDA_RETURN_IF_ERROR(LaunchCheckChunkIndex(b.segments, S, chunks, b.items, b.chunk_words,
                                             b.chunk_gaps, b.word_prefix, b.gap_prefix, b.status,
                                             st));
  return absl::OkStatus();
}

// Fill elements of the frames with a fill mask (§15.7 step 4).
absl::Status FillFromMasks(const Plan& plan, const Buffers& b, cudaStream_t st) {
  for (size_t k = 0; k < plan.masks.size(); ++k) {
    const Segment& seg = plan.segments[plan.masks[k].segment];
    CUDA_RETURN_IF_ERROR(
        LaunchFillFromMask(plan.elem_size, b.masks[k], seg.geo.n, seg.fill_value, seg.output, st));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<WorkspaceSize> DecompressWorkspaceSize(absl::Span<const DecompressTask> tasks,
                                                      DecoderKind decoder) {
  auto plan = MakePlan(tasks, decoder);
  if (!plan.ok()) return plan.status();
  auto cub_bytes = CubTempBytes(*plan);
  if (!cub_bytes.ok()) return cub_bytes.status();
  WorkspaceSize size;
  Carve(*plan, *cub_bytes, nullptr, nullptr, &size);
  return size;
}

absl::Status DecompressBatch(absl::Span<const DecompressTask> tasks, DecoderKind decoder,
                             const Workspace& ws, Stream stream, StageTimer* timer) {
  auto plan_or = MakePlan(tasks, decoder);
  if (!plan_or.ok()) return plan_or.status();
  const Plan& plan = *plan_or;
  auto cub_bytes = CubTempBytes(plan);
  if (!cub_bytes.ok()) return cub_bytes.status();
  WorkspaceSize need;
  Carve(plan, *cub_bytes, nullptr, nullptr, &need);
  if (ws.device_bytes < need.device_bytes || ws.host_bytes < need.host_bytes) {
    return absl::InvalidArgumentError("workspace smaller than DecompressWorkspaceSize");
  }
  const Buffers b = Carve(plan, *cub_bytes, ws.device, ws.host, nullptr);
  const uint32_t S = static_cast<uint32_t>(plan.segments.size());
  const uint32_t jobs = static_cast<uint32_t>(plan.crc_jobs.size());
  const cudaStream_t st = stream;
  auto mark = [&](const char* stage) {
    if (timer) timer->Mark(stage, st);
  };
  if (timer) timer->Start(st);

  std::memcpy(b.host_segments, plan.segments.data(), S * sizeof(Segment));
  std::memcpy(b.host_items, plan.items.data(), plan.items.size() * sizeof(Item));
  std::memcpy(b.host_crc_jobs, plan.crc_jobs.data(), jobs * sizeof(CrcJob));
  for (uint32_t j = 0; j < jobs; ++j) b.host_crc_jobs[j].result = b.job_crcs + j;
  std::memcpy(b.host_piece_prefix, plan.piece_prefix.data(), plan.piece_prefix.size() * 8);
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.segments, b.host_segments, S * sizeof(Segment),
                                       cudaMemcpyHostToDevice, st));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.items, b.host_items, plan.items.size() * sizeof(Item),
                                       cudaMemcpyHostToDevice, st));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.crc_jobs, b.host_crc_jobs, jobs * sizeof(CrcJob),
                                       cudaMemcpyHostToDevice, st));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.piece_prefix, b.host_piece_prefix,
                                       plan.piece_prefix.size() * 8, cudaMemcpyHostToDevice, st));
  if (plan.batch_frames > 0) {
    for (const InterpBatch& batch : plan.batches) {
      for (size_t j = 0; j < batch.decoded.size(); ++j) {
        const InterpFrame& f = plan.interp[batch.decoded[j]];
        const Segment& seg = plan.segments[f.segment];
        b.host_batch_frames[batch.table_begin + j] = {
            b.symbols + seg.symbol_base,        seg.positions,
            b.outlier_index + seg.outlier_base, b.outlier_residual + seg.outlier_base,
            seg.outlier_count,                  seg.output,
            b.interp_errors + f.segment,        seg.quant_step};
      }
    }
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.batch_frames, b.host_batch_frames,
                                         plan.batch_frames * sizeof(InterpDecodeFrame),
                                         cudaMemcpyHostToDevice, st));
  }
  if (!plan.chunk_list.empty()) {
    const size_t bytes = plan.chunk_list.size() * sizeof(uint64_t);
    std::memcpy(b.host_chunk_list, plan.chunk_list.data(), bytes);
    CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(b.chunk_list, b.host_chunk_list, bytes, cudaMemcpyHostToDevice, st));
  }
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(b.status, 0, 2 * sizeof(DeviceStatus), st));
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(b.zero_symbols, 0, S * sizeof(uint64_t), st));
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(b.job_crcs, 0, jobs * sizeof(uint32_t), st));
  mark("upload tables");

  // The checksums run beside the rest (their status is their own), and the
  // chunk index beside the decode tables: each of the three leaves most of
  // the GPU idle alone (the tables have a block per frame), and the decoders
  // check everything they read anyway, as they must for an archive whose
  // checksums a hostile writer made right. The tables, the longest of the
  // three, are launched first and the checksums last: the device would
  // otherwise wait for the host's launches of the others' kernels (0.06 ms
  // of a 1 GiB decode on the H100).
  StreamFork beside;
  absl::Status launched = beside.Fork(st, 2);
  if (launched.ok()) launched.Update(DecodeFillMasks(plan, b, st));
  if (launched.ok()) {
    launched.Update(CudaStatus(
        LaunchBuildDecodeTables(b.segments, S, b.items, b.tables, b.status, st), "tables"));
  }
  if (launched.ok()) launched.Update(ReadChunkIndex(plan, b, beside[1]));
  if (launched.ok()) {
    launched.Update(CudaStatus(
        LaunchCrc(b.crc_jobs, jobs, b.piece_prefix, plan.piece_prefix.back(), beside[0]),
        "LaunchCrc"));
    launched.Update(CudaStatus(LaunchCrcCheck(b.crc_jobs, jobs, b.checks, beside[0]), "crc"));
    launched.Update(
        CudaStatus(LaunchPaddingCheck(b.crc_jobs, jobs, b.checks, beside[0]), "padding"));
  }
  // The chunk index rejoins here; the checksums at the end.
  launched.Update(beside.Join(st, 1));
  if (launched.ok()) mark("decode tables+chunk index, crc32c beside");
  if (launched.ok()) launched.Update(DecodeValues(plan, b, st, mark));
  if (launched.ok() && !plan.interp.empty()) mark("huffman decode and values (overlapped)");
  if (launched.ok()) launched.Update(FillFromMasks(plan, b, st));
  if (launched.ok()) {
    launched.Update(CudaStatus(LaunchRestoreSpecials(plan.elem_size, b.segments, S,
                                                     plan.fill_runs, plan.verbatim, b.items,
                                                     b.status, st),
                               "LaunchRestoreSpecials"));
  }
  const absl::Status joined = beside.Join(st, 0);
  if (!launched.ok()) return launched;
  if (!joined.ok()) return joined;
  mark("fill+verbatim");
  return absl::OkStatus();
}

// A checksum or padding error comes first: it explains whatever the
// decoders, which ran beside the checks, found in the same bytes.
absl::Status FinishDecompress(const Workspace& ws, Stream stream) {
  auto* host = static_cast<DeviceStatus*>(ws.host);
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host, ws.device, 2 * sizeof(DeviceStatus),
                                       cudaMemcpyDeviceToHost, stream));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  const DeviceStatus& found = host[1].error != kNoError ? host[1] : host[0];
  if (found.error == kNoError) return absl::OkStatus();
  return format::CorruptArchive(
      absl::StrCat(ErrorText(found), " (batch frame ", found.segment, ")"));
}

}  // namespace ebzip::gpu
