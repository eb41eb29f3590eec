// A scheduler worker's share of one device: its own stream, slice of the
// device's pool and pinned memory, so that the workers of one device never
// wait for each other and one's copies and host work overlap another's
// kernels. On them it runs rounds of the GPU codec's batches (gpu_codec.h)
// from host memory to host memory: the inputs go up, the kernels run, the
// results come down; each round says what became of it (run_result.h).
//
// A round must fit: CompressFits/DecompressFits say whether the buffers and
// the codec's workspace of its tasks do. The pinned memory holds the codec's
// host workspace first, then (compression) the archives' sizes, then staging
// for the copies (staged_copy.h).
#ifndef EBZIP_GPU_RUNTIME_WORKER_H_
#define EBZIP_GPU_RUNTIME_WORKER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codec/region_plan.h"
#include "gpu/gpu_codec.h"
#include "gpu/runtime/cuda_stream.h"
#include "gpu/runtime/device.h"
#include "gpu/runtime/pinned_buffer.h"
#include "gpu/runtime/pool_slice.h"
#include "gpu/runtime/run_result.h"
#include "gpu/runtime/staged_copy.h"

namespace ebzip::gpu::runtime {

class Worker {
 public:
  // A stream and `pinned_bytes` of pinned memory on `device` (which must
  // outlive the worker), working in `pool`, a slice of the device's pool.
  static absl::StatusOr<std::unique_ptr<Worker>> Create(const Device& device, PoolSlice pool,
                                                        uint64_t pinned_bytes);

  const Device& device() const { return device_; }
  uint64_t pool_bytes() const { return pool_.bytes(); }
  uint64_t pinned_bytes() const { return pinned_.bytes(); }
  // The worker's own resources, for work other than whole rounds.
  CudaStream& stream() { return stream_; }
  PoolSlice pool() const { return pool_; }
  PinnedBuffer& pinned() { return pinned_; }

  // Makes the worker's device the calling thread's current one; every round
  // needs it.
  RunResult MakeCurrent() const { return device_.MakeCurrent(); }

  // One array to compress: the task's spec, options and capacity (the worker
  // fills in the device places) and its bytes in host memory.
  struct CompressJob {
    CompressTask task;
    absl::Span<const uint8_t> input;
    bool input_pinned = false;  // page-locked: goes up by DMA from where it is
  };
  struct CompressRound {
    RunResult result = RunResult::Ran();
    // Per job, once it ran: its archive; empty for a job `admit` refused.
    std::vector<std::vector<uint8_t>> archives;
  };
  // Device bytes a compression's own buffers take (input, archive, size).
  static uint64_t CompressBufferBytes(const CompressTask& task);
  bool CompressFits(uint64_t buffer_bytes, const WorkspaceSize& workspace, size_t tasks) const;
  // Compresses the jobs in one set of launches (`workspace` is theirs, from
  // CompressWorkspaceSize). An archive's size is known only once the kernels
  // are done; admit(job, size) says whether it may come down (the caller
  // takes host memory for it first).
  CompressRound Compress(absl::Span<const CompressJob> jobs, const WorkspaceSize& workspace,
                         absl::FunctionRef<bool(size_t job, uint64_t archive_bytes)> admit);

  // One archive to decompress: what ReadArchiveInfo found in it, its bytes
  // in host memory. For a region, `info` and `archive` are a
  // WholeFramesPlan's part and byte range (codec/region_plan.h) and
  // `pieces` its pieces: only they come down, gathered in the region's
  // order (region_bytes in all).
  struct DecompressJob {
    const ArchiveInfo* info;
    absl::Span<const uint8_t> archive;
    absl::Span<const WholeFramesPlan::Piece> pieces = {};
    uint64_t region_bytes = 0;
    bool region() const { return !pieces.empty(); }
  };
  struct DecompressRound {
    RunResult result = RunResult::Ran();
    // Per job, once it ran: its array; empty for a job that came down into
    // the caller's destination.
    std::vector<std::vector<uint8_t>> arrays;
    // Set when a lost device may still write into the destinations given
    // (its stream could not be waited for): that memory must never be
    // reused.
    bool destinations_in_flight = false;
  };
  static uint64_t DecompressBufferBytes(uint64_t archive_bytes, uint64_t array_bytes,
                                        uint64_t region_bytes = 0);
  bool DecompressFits(uint64_t buffer_bytes, const WorkspaceSize& workspace) const;
  // Decompresses the jobs in one set of launches (DecoderKind::kAuto), each
  // array coming down into destination(job, bytes) when that gives
  // page-locked memory, else into the round's vectors (a region job's
  // array is its region). A corrupt archive
  // makes the round kUnsupported: the device cannot say whose it is.
  DecompressRound Decompress(absl::Span<const DecompressJob> jobs, const WorkspaceSize& workspace,
                             StagedDownload::Destination destination);

 private:
  Worker(const Device& device, PoolSlice pool) : device_(device), pool_(pool) {}
  // The codec's workspace: on the device after the buffers carved so far, in
  // pinned memory at its start.
  Workspace PlaceWorkspace(PoolCarver& pool, const WorkspaceSize& size) const;

  const Device& device_;
  PoolSlice pool_;
  CudaStream stream_;
  PinnedBuffer pinned_;
};

}  // namespace ebzip::gpu::runtime

#endif  // EBZIP_GPU_RUNTIME_WORKER_H_
