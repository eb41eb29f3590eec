// Moving many host ranges to and from a worker's pool slice in as few DMAs
// as it takes, through the worker's pinned staging memory.
#ifndef EBZIP_GPU_RUNTIME_STAGED_COPY_H_
#define EBZIP_GPU_RUNTIME_STAGED_COPY_H_

#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "gpu/runtime/cuda_stream.h"
#include "gpu/runtime/run_result.h"

namespace ebzip::gpu::runtime {

// Bytes that go up from the host to a place on the device.
struct UploadPiece {
  const uint8_t* host;
  uint8_t* device;
  uint64_t bytes;
  bool pinned = false;  // `host` is page-locked (the caller's, say a pool block)
};

// Enqueues the pieces' copies. A pinned piece goes by DMA from where it is.
// The others go through `staging` when their device places, in ascending
// order, span no more than it and hold no pinned piece's place (the span's
// DMA would overwrite it): one host memcpy each and one DMA for them all,
// instead of a pageable copy each (which the driver stages through its own
// pinned buffer and finishes before returning). Otherwise they go directly,
// pageable. Staging is in use until the stream has passed the copies.
RunResult StagedUpload(CudaStream& stream, absl::Span<const UploadPiece> pieces,
                       absl::Span<uint8_t> staging);

// Results on their way down, in two steps so that their copies can be
// enqueued before the stream is waited for anyway (decompression waits for
// the device's verdict). Start enqueues them: each straight into page-locked
// memory of the caller's when it has some to give, which then holds the
// result, with no copy on the worker; the others through `staging` when they
// all fit in it, else straight into their result vectors. Once the stream
// has been synchronized, Finish hands the results over, those in staging
// copied out once (no zero-filled vector first).
class StagedDownload {
 public:
  struct Source {
    const uint8_t* device;
    uint64_t bytes;
  };
  // Page-locked memory of at least `bytes` for source `index` to come down
  // into, or nullptr for none.
  using Destination = absl::FunctionRef<uint8_t*(size_t index, uint64_t bytes)>;

  StagedDownload() = default;
  StagedDownload(const StagedDownload&) = delete;
  StagedDownload& operator=(const StagedDownload&) = delete;
  // Left without Finish (an error on the way): waits for the stream, so that
  // staging is free again (see Abort).
  ~StagedDownload() { Abort(); }

  RunResult Start(CudaStream& stream, std::vector<Source> sources, absl::Span<uint8_t> staging,
                  Destination destination);
  RunResult Start(CudaStream& stream, std::vector<Source> sources, absl::Span<uint8_t> staging) {
    return Start(stream, std::move(sources), staging, [](size_t, uint64_t) -> uint8_t* {
      return nullptr;
    });
  }

  // After the stream has been synchronized: each source's bytes, empty for
  // those that came down into the caller's destination.
  std::vector<std::vector<uint8_t>> Finish();

  // Gives up on a started download: waits for the stream. False when it
  // cannot (the device is lost): copies into the caller's destinations may
  // still run, and that memory must never be reused.
  bool Abort();

 private:
  CudaStream* stream_ = nullptr;  // between Start and Finish or Abort
  std::vector<Source> sources_;
  std::vector<bool> in_destination_;
  uint8_t* staging_ = nullptr;
  std::vector<std::vector<uint8_t>> results_;
};

}  // namespace ebzip::gpu::runtime

#endif  // EBZIP_GPU_RUNTIME_STAGED_COPY_H_
