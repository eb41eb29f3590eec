// Launchers of the interpolation predictor's kernels (FORMAT.md §15.5,
// §15.8): a frame at a time or a batch of frames of one geometry (the
// encoder's and the decoder's batches), device-resident, producing exactly what
// codec/interp_predictor.h's InterpEncode and InterpDecode produce. They
// enqueue on `stream`, neither allocate nor synchronize, and work in a
// caller-provided scratch block whose size the plan gives.
//
// Encoding: the key tables (gpu/interp_tile.h), each tile's first symbol
// position (closed form without a fill mask; with one, a count per tile and
// an exclusive scan), the anchors (quantize; placeholders per anchor block of
// 8; Lorenzo residuals, symbols, outliers; a scan for the outlier list), then
// the tiles: a sub-block of threads per tile, its closed box in shared memory,
// pass by pass with a barrier between passes, symbols written at their
// positions. Decoding: the anchors (residuals, outliers, prefix sums in
// blocks of 8, dequantization), then the tiles, each reading its symbols
// (and its far faces' from its neighbours) straight from symbol order; with
// a fill mask, the symbols first go to element order (checked).
#ifndef EBZIP_GPU_INTERP_KERNELS_H_
#define EBZIP_GPU_INTERP_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/interp_predictor.h"
#include "gpu/interp_tile.h"

namespace ebzip::gpu {

struct Segment;  // gpu/segment.h
struct Item;

// Threads per thread block of the tile kernels (a block takes
// interp::Geometry::tiles_per_block tiles, tile_threads threads each).
inline constexpr uint32_t kInterpBlockThreads = 256;

// The frame's geometry and launch policy, on the host alone (no device is
// needed). INVALID_ARGUMENT where ValidateInterpParams says so; UNIMPLEMENTED
// when a tile's closed box exceeds interp::kMaxBoxVolume elements or the
// shared memory one tile's kernels need exceeds `max_shared_bytes` (the
// device's opt-in limit per block: 232448 on an H100).
absl::StatusOr<interp::Geometry> MakeInterpGeometry(const InterpParams& params, bool has_fill,
                                                    size_t max_shared_bytes);

// Dynamic shared memory per thread block of each tile kernel.
struct InterpSharedBytes {
  size_t encode = 0;
  size_t decode = 0;
  size_t scatter = 0;
  size_t count = 0;
};
InterpSharedBytes InterpShared(const interp::Geometry& g, int elem_size, bool has_fill);

// Everything a frame's launches need, fixed on the host.
struct InterpPlan {
  interp::Geometry geo{};
  int elem_size = 4;
  bool has_fill = false;
  uint64_t table_entries = 0;  // key tables' entries (u32 each)
  uint64_t box_entries = 0;    // box tables' entries (u64 each)
  size_t cub_bytes = 0;        // DeviceScan's temporary storage
  size_t encode_scratch = 0;   // bytes of scratch LaunchInterpEncode needs
  size_t decode_scratch = 0;   // ... and LaunchInterpDecode
  // Decoding reads the symbols in symbol order, tile by tile (no fill mask,
  // and the tile's box with its far-face lookup fits shared memory); else
  // it first scatters them to element order (n u16 more scratch).
  bool decode_direct = false;
};

// Plans a frame for the current device (its shared memory limit; CUB's
// temporary storage): MakeInterpGeometry's errors, or a CUDA error. Plans
// are kept per device and parameters but the bound, so planning a shape
// again costs a lookup.
absl::StatusOr<InterpPlan> PlanInterp(const InterpParams& params, bool has_fill);

// `plan` for a frame of another bound and otherwise the same parameters
// (the bound changes nothing else of a plan), without planning again.
InterpPlan WithBound(InterpPlan plan, double abs_bound, double quant_step);

struct InterpEncodeOutputs {
  uint16_t* symbols = nullptr;          // room for n: S symbols in symbol order
  uint32_t* verbatim_mask = nullptr;    // ceil(n / 32) words: element i is verbatim when
                                        // bit i % 32 of word i / 32 is set (the launcher zeroes it)
  uint32_t* outlier_index = nullptr;    // room for num_tiles: ascending anchors' element indices
  int32_t* outlier_residual = nullptr;  // room for num_tiles
  uint32_t* counts = nullptr;           // 2 words: S, then the number of outliers
};

// Encodes the frame at `input` (n elements of the plan's dtype, C order).
// `fill_mask`: n bytes, 1 where the element is fill, exactly when the plan
// has_fill. `scratch`: plan.encode_scratch bytes.
absl::Status LaunchInterpEncode(const InterpPlan& plan, const void* input, const uint8_t* fill_mask,
                                void* scratch, const InterpEncodeOutputs& out, cudaStream_t stream);

// Several frames of one plan (one geometry, bound and fill flag: frames of
// one array, or the samples of a candidate; or of one geometry and fill
// flag with each frame's own bound: see `segments`), in one set of launches: frame
// f's arrays lie at f times these strides from frame 0's, which `input`,
// `fill_mask` and `out` give. Each frame's results are LaunchInterpEncode's
// for it. The verbatim masks are zeroed here (ceil(n / 32) words each).
inline constexpr uint32_t kMaxInterpBatchFrames = 65535;  // a grid's y extent
struct InterpEncodeBatch {
  uint32_t frames = 1;
  const void* input = nullptr;
  uint64_t input_stride = 0;  // bytes
  const uint8_t* fill_mask = nullptr;
  uint64_t fill_stride = 0;  // bytes
  InterpEncodeOutputs out;
  uint64_t symbols_stride = 0;   // elements
  uint64_t verbatim_stride = 0;  // words, >= ceil(n / 32)
  uint64_t outlier_stride = 0;   // entries, >= num_tiles
  uint64_t counts_stride = 0;    // words, >= 2
  // Frames of several arrays (device tables): when set, frame f's input is
  // segments[f].input and its bound items[segments[f].item]'s abs_bound and
  // quant_step, and `input`, `input_stride` and the plan's bound are unused.
  // The plan's geometry must be every frame's (the compressor's and the
  // survey's batches check shape, tile, order, radius and fill).
  const Segment* segments = nullptr;
  const Item* items = nullptr;
};
// Scratch bytes for a batch of `frames` (1: plan.encode_scratch); the key
// tables are shared, the per-anchor arrays are each frame's.
absl::StatusOr<size_t> InterpEncodeBatchScratch(const InterpPlan& plan, uint32_t frames);
absl::Status LaunchInterpEncodeBatch(const InterpPlan& plan, const InterpEncodeBatch& batch,
                                     void* scratch, cudaStream_t stream);

struct InterpDecodeInputs {
  const uint16_t* symbols = nullptr;  // num_symbols, in symbol order, tokens expanded
  uint64_t num_symbols = 0;
  const uint32_t* outlier_index = nullptr;  // num_outliers, ascending (the caller has checked)
  const int32_t* outlier_residual = nullptr;
  uint64_t num_outliers = 0;
  const uint8_t* fill_mask = nullptr;  // as for encoding
  // Only these tiles' elements are written (interp::TilesMeeting: a region's
  // box); null: every tile. Anchors and every symbol are still read and
  // checked; the skipped tiles' own checks (ScatterTile's, with a fill mask
  // or without the direct decoder, still run on every tile) are not.
  const interp::TileSpan* tiles = nullptr;
};

// Writes the frame's working values to `output` (n elements, or the `tiles`'
// elements; the caller then overwrites fill and verbatim elements). *error (device) gets the
// interp::DecodeError bits of whatever InterpDecode would call corrupt, 0 when
// nothing is (the launcher zeroes it first); nothing is read out of bounds
// on any input. `scratch`: plan.decode_scratch bytes.
absl::Status LaunchInterpDecode(const InterpPlan& plan, const InterpDecodeInputs& in, void* output,
                                void* scratch, uint32_t* error, cudaStream_t stream);

// One frame of a decode batch, in device memory: LaunchInterpDecode's
// inputs, output and error word, and its own quantization step.
struct InterpDecodeFrame {
  const uint16_t* symbols;
  uint64_t num_symbols;
  const uint32_t* outlier_index;
  const int32_t* outlier_residual;
  uint64_t num_outliers;
  void* output;
  uint32_t* error;
  double step;
};

// Several frames of one geometry (the plan's, whatever each frame's bound),
// without a fill mask and decoded directly (plan.decode_direct), every tile,
// in one set of launches: each frame's results are LaunchInterpDecode's for
// it. A batch of small arrays otherwise pays a dozen launches a frame.
// `frames`: `count` entries on the device; `max_outliers`: the most any of
// them has. `scratch`: InterpDecodeBatchScratch bytes.
absl::StatusOr<size_t> InterpDecodeBatchScratch(const InterpPlan& plan, uint32_t count);
absl::Status LaunchInterpDecodeBatch(const InterpPlan& plan, const InterpDecodeFrame* frames,
                                     uint32_t count, uint64_t max_outliers, void* scratch,
                                     cudaStream_t stream);

}  // namespace ebzip::gpu

#endif  // EBZIP_GPU_INTERP_KERNELS_H_
