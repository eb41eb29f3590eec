// The GPU codec for a process's own arrays in host memory (the Python
// module's ebzip.compress(..., gpu=True)): the first visible GPU, opened on
// first use with a quarter of its free memory and one worker, calls taken
// one at a time. What the kernels do not take, what does not fit, and any
// call once the device has failed, runs on the CPU codec instead: the bytes
// are the same either way (the GPU codec writes the CPU codec's archives).
#ifndef EBZIP_GPU_RUNTIME_HOST_CODEC_H_
#define EBZIP_GPU_RUNTIME_HOST_CODEC_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codec/archive.h"

namespace ebzip::gpu::runtime {

// Whether a GPU is visible to the process (CUDA's device count; false
// without a driver).
bool GpuVisible();

// Where a call ran.
enum class RanOn { kGpu, kCpu };

// Compress (codec/archive.h) on the GPU where it can.
absl::StatusOr<std::vector<uint8_t>> CompressOnGpu(const ArraySpec& spec,
                                                   absl::Span<const uint8_t> data,
                                                   const CompressOptions& options,
                                                   RanOn* ran_on = nullptr);

// DecompressInto (codec/archive.h) on the GPU where it can.
absl::Status DecompressIntoOnGpu(const ArchiveInfo& info, absl::Span<const uint8_t> archive,
                                 absl::Span<uint8_t> out, RanOn* ran_on = nullptr);

}  // namespace ebzip::gpu::runtime

#endif  // EBZIP_GPU_RUNTIME_HOST_CODEC_H_
