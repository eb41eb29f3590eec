// The Huffman codes built on the host: version 1's when CodeBuilder::kHost
// asks for them, and version 2's always, where the host also picks each
// frame's stage (plain symbols, zero-run tokens or run-value tokens). Both
// copy the used symbols down and the codes up into the workspace's upload
// area.
#ifndef EBZIP_GPU_COMPRESS_HOST_CODES_H_
#define EBZIP_GPU_COMPRESS_HOST_CODES_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "gpu/compress_plan.h"
#include "gpu/scoped_event.h"
#include "gpu/segment.h"
#include "gpu/stage_timer.h"

namespace ebzip::gpu::compress {

// Where each part of the upload goes, once the used symbols are known:
// codebooks first, then the lengths and codes of the listed symbols in list
// order, then each segment's code-length section.
struct UploadLayout {
  uint64_t lengths = 0;  // byte offsets into the upload
  uint64_t codes = 0;
  uint64_t sections = 0;
  std::vector<uint64_t> section_at;  // into the sections
  uint64_t bytes = 0;                // to copy
};

// The codes built on the host (CodeBuilder::kHost), the call's one
// synchronization (two when frames use many symbols): each histogram's used
// symbols to the host, listed in one copy; their codes back up in one.
// `timer` may be null; given, it notes the host's steps.
absl::StatusOr<UploadLayout> BuildCodesOnHost(const Plan& plan, const Buffers& b, cudaStream_t st,
                                              StageTimer* timer);

// Where BuildStageCodesOnHost left the codes on the device.
struct StageCodes {
  const Codebook* codebooks;
  const uint8_t* sections;
};

// Version 2's stages, in two steps around the compressor's work that needs
// no code (the special elements' counts), which runs while the host builds.
// First, enqueued: both token stages' histograms beside the symbols', the
// three lists of used symbols, S and the extra bits copied to the host, then
// `lists_ready` recorded.
absl::Status LaunchStageLists(const Plan& plan, const Buffers& b, cudaStream_t st,
                              ScopedEvent* lists_ready);
// Then the second synchronization, on `lists_ready` alone: the host builds
// the allowed stages' codes and takes the smallest, the lower stage of equal
// ones (FORMAT.md §15.9, as codec/entropy_coder.h's SmallerCode); the chosen
// codes go up, and the plan's segments are laid out again over their S
// positions with their stage (their mask tiles where they were), on the
// host: the caller uploads them (UploadSegments) once nothing on the device
// reads the table any more. `timer` may be null; given, it notes the host's
// steps.
absl::StatusOr<StageCodes> BuildStageCodesOnHost(Plan* plan, const Buffers& b, cudaStream_t st,
                                                 ScopedEvent* lists_ready, StageTimer* timer);

}  // namespace ebzip::gpu::compress

#endif  // EBZIP_GPU_COMPRESS_HOST_CODES_H_
