// CRC-32C of many byte ranges at once: every 1 KiB piece on its own thread,
// which XORs its share (Crc32cShift: its CRC moved past the bytes after it)
// into its range's result. No combining pass: a chain of combinations per
// range, however short, cost a small frame more than all its pieces.
#include "codec/crc32c.h"
#include "gpu/device_util.cuh"
#include "gpu/kernels.h"

namespace ebzip::gpu {
namespace {

__global__ void CrcKernel(const CrcJob* jobs, uint32_t num_jobs, const uint64_t* piece_prefix) {
  __shared__ CrcTables tables;
  tables.Build();
  const uint64_t total = piece_prefix[num_jobs];
  // The loop's trip count is uniform across a warp, so that its lanes can
  // pool their shares; lanes past the end contribute nothing.
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  const uint64_t warp_first = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x / 32 * 32;
  for (uint64_t base = warp_first; base < total; base += stride) {
    const uint64_t p = base + threadIdx.x % 32;
    uint32_t j = 0xFFFFFFFFu, share = 0;
    if (p < total) {
      // The last job starting at or before p: empty jobs are passed over.
      j = FindSegment(num_jobs, p, [piece_prefix](uint32_t i) { return piece_prefix[i]; });
      const CrcJob& job = jobs[j];
      const uint64_t begin = (p - piece_prefix[j]) * kCrcPieceBytes;
      const uint64_t length = min(kCrcPieceBytes, job.length - begin);
      share = Crc32cShift(tables.Compute(job.data + begin, length), job.length - begin - length);
    }
    // A warp's pieces nearly always belong to one or two jobs: one atomic
    // per job and warp, not per piece (a large section has 10^5 pieces).
    const unsigned same = __match_any_sync(0xFFFFFFFFu, j);
    share = __reduce_xor_sync(same, share);
    if (j != 0xFFFFFFFFu && threadIdx.x % 32 == __ffs(same) - 1) {
      atomicXor(jobs[j].result, share);
    }
  }
}

__global__ void CheckKernel(const CrcJob* jobs, uint32_t num_jobs, DeviceStatus* status) {
  const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < num_jobs && *jobs[j].result != jobs[j].expected) {
    ReportError(status, kErrChecksum, jobs[j].segment, jobs[j].expected);
  }
}

__global__ void PaddingKernel(const CrcJob* jobs, uint32_t num_jobs, DeviceStatus* status) {
  const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= num_jobs) return;
  const CrcJob& job = jobs[j];
  for (uint64_t i = job.length; i < Align8(job.length); ++i) {
    if (job.data[i] != 0) {
      ReportError(status, kErrPadding, job.segment);
      return;
    }
  }
}

}  // namespace

cudaError_t LaunchCrc(const CrcJob* jobs, uint32_t num_jobs, const uint64_t* piece_prefix,
                      uint64_t max_pieces, cudaStream_t stream) {
  const uint64_t blocks = std::min<uint64_t>((max_pieces + kThreads - 1) / kThreads, 4096);
  CrcKernel<<<std::max<uint64_t>(blocks, 1), kThreads, 0, stream>>>(jobs, num_jobs, piece_prefix);
  return cudaGetLastError();
}

cudaError_t LaunchCrcCheck(const CrcJob* jobs, uint32_t num_jobs, DeviceStatus* status,
                           cudaStream_t stream) {
  CheckKernel<<<(num_jobs + kThreads - 1) / kThreads, kThreads, 0, stream>>>(jobs, num_jobs,
                                                                             status);
  return cudaGetLastError();
}

cudaError_t LaunchPaddingCheck(const CrcJob* jobs, uint32_t num_jobs, DeviceStatus* status,
                               cudaStream_t stream) {
  PaddingKernel<<<(num_jobs + kThreads - 1) / kThreads, kThreads, 0, stream>>>(jobs, num_jobs,
                                                                               status);
  return cudaGetLastError();
}

}  // namespace ebzip::gpu
