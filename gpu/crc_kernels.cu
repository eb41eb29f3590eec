// CRC-32C of many byte ranges at once: every 1 KiB piece on its own thread,
// then each range's pieces combined in order (Crc32cCombine) by one block.
#include <cub/block/block_reduce.cuh>

#include "codec/crc32c.h"
#include "gpu/device_util.cuh"
#include "gpu/kernels.h"

namespace ebzip::gpu {
namespace {

struct PieceCrc {
  uint32_t crc;
  uint64_t length;
};

// Concatenation: associative, not commutative (CUB's reductions keep order).
struct Concat {
  __device__ PieceCrc operator()(const PieceCrc& a, const PieceCrc& b) const {
    return {Crc32cCombine(a.crc, b.crc, b.length), a.length + b.length};
  }
};

__global__ void PiecesKernel(const CrcJob* jobs, uint32_t num_jobs, const uint64_t* piece_prefix,
                             uint32_t* piece_crcs) {
  __shared__ CrcTables tables;
  tables.Build();
  const uint64_t total = piece_prefix[num_jobs];
  for (uint64_t p = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; p < total;
       p += uint64_t{gridDim.x} * blockDim.x) {
    const uint32_t j = FindSegment(num_jobs, p, [piece_prefix](uint32_t i) { return piece_prefix[i]; });
    // The last job starting at or before p: empty jobs are passed over.
    const CrcJob& job = jobs[j];
    const uint64_t begin = (p - piece_prefix[j]) * kCrcPieceBytes;
    const uint64_t length = min(kCrcPieceBytes, job.length - begin);
    piece_crcs[p] = tables.Compute(job.data + begin, length);
  }
}

__global__ void CombineKernel(const CrcJob* jobs, const uint64_t* piece_prefix,
                              const uint32_t* piece_crcs, DeviceStatus* status) {
  using Reduce = cub::BlockReduce<PieceCrc, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  const CrcJob& job = jobs[blockIdx.x];
  const uint64_t first = piece_prefix[blockIdx.x];
  const uint64_t pieces = piece_prefix[blockIdx.x + 1] - first;
  // Each thread folds a contiguous run of pieces, then the block combines runs.
  const uint64_t per = (pieces + kThreads - 1) / kThreads;
  const uint64_t begin = min(pieces, threadIdx.x * per);
  const uint64_t end = min(pieces, begin + per);
  PieceCrc acc{0, 0};
  for (uint64_t p = begin; p < end; ++p) {
    const uint64_t length = min(kCrcPieceBytes, job.length - p * kCrcPieceBytes);
    acc = Concat()(acc, PieceCrc{piece_crcs[first + p], length});
  }
  const PieceCrc crc = Reduce(temp).Reduce(acc, Concat());
  if (threadIdx.x != 0) return;
  if (status == nullptr) {
    *job.result = crc.crc;
  } else if (crc.crc != job.expected) {
    ReportError(status, kErrChecksum, job.segment, job.expected);
  }
}

}  // namespace

cudaError_t LaunchCrcPieces(const CrcJob* jobs, uint32_t num_jobs, const uint64_t* piece_prefix,
                            uint64_t max_pieces, uint32_t* piece_crcs, cudaStream_t stream) {
  const uint64_t blocks = std::min<uint64_t>((max_pieces + kThreads - 1) / kThreads, 4096);
  PiecesKernel<<<std::max<uint64_t>(blocks, 1), kThreads, 0, stream>>>(jobs, num_jobs,
                                                                      piece_prefix, piece_crcs);
  return cudaGetLastError();
}

cudaError_t LaunchCrcCombine(const CrcJob* jobs, uint32_t num_jobs, const uint64_t* piece_prefix,
                             const uint32_t* piece_crcs, DeviceStatus* status,
                             cudaStream_t stream) {
  CombineKernel<<<num_jobs, kThreads, 0, stream>>>(jobs, piece_prefix, piece_crcs, status);
  return cudaGetLastError();
}

}  // namespace ebzip::gpu
