// The GPU codec's device API (docs/design.md §1, §4): compress and decompress arrays
// that live in device memory, on a caller's CUDA stream, in caller-provided
// workspace, producing exactly the archive bytes the CPU codec (codec/)
// produces. Built for the service's worker, which owns streams and pools
// buffers: nothing here allocates device memory.
//
// Batches: every call takes a list of arrays and runs one set of launches
// over all their frames (a segment table), so many small requests cost about
// what one large one does.
//
// Synchronization: none inside either call. Compression builds each frame's
// Huffman code on the device (CodeBuilder::kDevice, the same code the host
// builds); CodeBuilder::kHost instead brings each frame's used symbols to
// the host, builds there and sends the codes back, synchronizing once (twice
// when frames use over 1024 symbols each on average): kept to measure one
// against the other (bench/GPU_NOTES.md). Decompression does not
// synchronize: FinishDecompress does, to report what the device found.
#ifndef EBZIP_GPU_GPU_CODEC_H_
#define EBZIP_GPU_GPU_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codec/archive.h"
#include "codec/huffman_decoder.h"
#include "codec/region.h"
#include "codec/types.h"
#include "gpu/stage_timer.h"

struct CUstream_st;

namespace ebzip::gpu {

using Stream = CUstream_st*;  // a cudaStream_t; nullptr is the default stream

// OK when a CUDA device is usable; otherwise why not (tests skip on it).
absl::Status DeviceAvailable();
// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)" for device `ordinal`.
absl::StatusOr<std::string> DeviceDescription(int ordinal = 0);

// Memory a call works in: device memory, and pinned host memory
// (cudaMallocHost) for the few tables that cross the bus. Neither may be
// reused until the stream has passed the call's work.
struct Workspace {
  void* device = nullptr;
  size_t device_bytes = 0;
  void* host = nullptr;
  size_t host_bytes = 0;
};
struct WorkspaceSize {
  size_t device_bytes = 0;
  size_t host_bytes = 0;
};

// One array to compress.
struct CompressTask {
  ArraySpec spec;
  CompressOptions options;
  const void* input = nullptr;      // device: spec.num_bytes(), little-endian
  uint8_t* archive = nullptr;       // device: room for `capacity` bytes
  uint64_t capacity = 0;            // MaxArchiveBytes() can never overflow
  uint64_t* archive_size = nullptr; // device: the archive's length, once written
  // Set for one frame of a larger array (codec/frame_task.h: spec and
  // options are the FrameTask's, this its first_row): `archive` then
  // receives the frame's bytes alone, as they lie in the array's archive,
  // without file header, frame index or trailer.
  std::optional<uint64_t> first_row = std::nullopt;
};

// The largest archive `spec` can compress to under `options`.
uint64_t MaxArchiveBytes(const ArraySpec& spec, const CompressOptions& options);

// Where compression builds the Huffman codes (see Synchronization above).
enum class CodeBuilder { kDevice, kHost };

// Workspace for CompressBatch over these tasks (only spec and options are
// read). All tasks must share one dtype. UNIMPLEMENTED for parameters the GPU
// kernels do not take (Lorenzo blocks over 4096 elements, chunks over 65536
// symbols); the CPU codec takes everything.
absl::StatusOr<WorkspaceSize> CompressWorkspaceSize(absl::Span<const CompressTask> tasks,
                                                    CodeBuilder builder = CodeBuilder::kDevice);

// Compresses every task into its archive buffer. When an archive would exceed
// its capacity, *archive_size says how large it would be and nothing else is
// written (compare once the stream is done).
// `timer`, when given, marks each stage's end (bench/gpu_benchmark.cu).
absl::Status CompressBatch(absl::Span<const CompressTask> tasks, const Workspace& workspace,
                           Stream stream, StageTimer* timer = nullptr,
                           CodeBuilder builder = CodeBuilder::kDevice);

// One archive to decompress. The host parses the headers (ReadArchiveInfo on
// the same bytes); the device reads every section and checks every CRC.
struct DecompressTask {
  const ArchiveInfo* info = nullptr;
  const uint8_t* archive = nullptr;  // device copy of the whole archive
  void* output = nullptr;            // device: info->spec().num_bytes()
  // When set, only this hyperslab of the array is wanted (elements outside
  // it may be left unwritten): interpolation frames then rebuild only the
  // tiles it meets, and without a fill mask Huffman-decode only the chunks
  // those tiles and their anchors need. Every section's CRC is still
  // checked, and every symbol decoded is checked as a full decode checks it.
  const Hyperslab* wanted = nullptr;
};

// kAuto: gap-array decoding where every frame has a gap array, else
// self-synchronizing; kGapArray fails on frames without one.
absl::StatusOr<WorkspaceSize> DecompressWorkspaceSize(absl::Span<const DecompressTask> tasks,
                                                      DecoderKind decoder);
absl::Status DecompressBatch(absl::Span<const DecompressTask> tasks, DecoderKind decoder,
                             const Workspace& workspace, Stream stream,
                             StageTimer* timer = nullptr);
// Waits for the stream and reports the first inconsistency the device found
// (DATA_LOSS "corrupt archive: ...", as the CPU codec says it).
absl::Status FinishDecompress(const Workspace& workspace, Stream stream);

// Regions: the GPU decodes the frames a region meets. codec/region_plan.h
// names them as an archive of their own (decompress it as a task over its
// byte range, with `wanted` the pieces' box so that only the interpolation
// tiles it meets are rebuilt), and the pieces of their rows that hold the
// region; GatherRegion copies each piece from the decoded rows to its place
// in the region's output (gpu/region_reader.h does all of it for host
// memory). `rows` is a hyperslab of `array` (a device array of
// `spec`), `out` room for its elements on the device, in its C order.
// INVALID_ARGUMENT for a hyperslab that does not fit `spec`.
absl::Status GatherRegion(const void* array, const ArraySpec& spec, const Hyperslab& rows,
                          void* out, Stream stream);

// Conveniences over the calls above for host-resident data: they allocate,
// copy, run on the default stream and free. For tests, tools and the CLI.
absl::StatusOr<std::vector<uint8_t>> CompressHost(const ArraySpec& spec,
                                                  absl::Span<const uint8_t> data,
                                                  const CompressOptions& options);
absl::StatusOr<DecompressedArray> DecompressHost(absl::Span<const uint8_t> archive,
                                                 DecoderKind decoder = DecoderKind::kAuto);
// `region` of the archive's array (its C order): the same bytes as the CPU
// codec's DecompressRegion.
absl::StatusOr<std::vector<uint8_t>> DecompressRegionHost(absl::Span<const uint8_t> archive,
                                                          const Hyperslab& region,
                                                          DecoderKind decoder = DecoderKind::kAuto);

}  // namespace ebzip::gpu

#endif  // EBZIP_GPU_GPU_CODEC_H_
