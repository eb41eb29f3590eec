// Each frame's used symbols, listed from its histogram for building the
// Huffman code: behind the previous segment's, so that one copy carries
// them all to the host when the host builds the codes (FORMAT.md §10;
// CodeBuilder::kHost), and the lengths and codes it sends back, in the
// same order, are spread into the tables the encoder indexes by symbol. The
// device build (code_build_kernels.cu) starts from the same list. A frame
// uses a few hundred of its 65536 bins on smooth data, but they are not
// contiguous (outliers take symbol 0), so a list beats a range.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "codec/huffman_code.h"
#include "gpu/kernels.h"

namespace ebzip::gpu {
namespace {

constexpr int kThreads = 1024;
constexpr uint32_t kBinsPerThread = kHistogramBins / kThreads;  // 64: 16 loads of 4

// One block per segment: how many of its bins are non-zero.
__global__ void __launch_bounds__(kThreads)
    CountUsedKernel(const uint32_t* histogram, uint32_t* used) {
  using Reduce = cub::BlockReduce<uint32_t, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  const uint4* h =
      reinterpret_cast<const uint4*>(histogram + uint64_t{blockIdx.x} * kHistogramBins);
  uint32_t n = 0;
  for (uint32_t q = threadIdx.x; q < kHistogramBins / 4; q += kThreads) {
    const uint4 v = h[q];
    n += (v.x != 0) + (v.y != 0) + (v.z != 0) + (v.w != 0);
  }
  n = Reduce(temp).Sum(n);
  if (threadIdx.x == 0) used[blockIdx.x] = n;
}

// One block per segment. Its place in the list is the sum of the counts
// before it: each block adds them up itself, which for the few hundred
// segments of a batch costs less than a scan launch. Each thread lists the
// used bins of 64 consecutive ones, so the list ascends by symbol.
__global__ void __launch_bounds__(kThreads)
    ListUsedKernel(const uint32_t* histogram, const uint32_t* used, UsedSymbols* info,
                   SymbolCount* list) {
  using Reduce = cub::BlockReduce<uint64_t, kThreads>;
  using Scan = cub::BlockScan<uint32_t, kThreads>;
  __shared__ union {
    typename Reduce::TempStorage reduce;
    typename Scan::TempStorage scan;
  } temp;
  const uint32_t s = blockIdx.x;
  uint64_t before = 0;
  for (uint32_t t = threadIdx.x; t < s; t += kThreads) before += used[t];
  before = Reduce(temp.reduce).Sum(before);
  __shared__ uint64_t offset;
  if (threadIdx.x == 0) {
    offset = before;
    info[s] = UsedSymbols{used[s], 0, before};
  }
  __syncthreads();
  const uint32_t first = threadIdx.x * kBinsPerThread;
  const uint4* h = reinterpret_cast<const uint4*>(histogram + uint64_t{s} * kHistogramBins + first);
  uint32_t mine = 0;
  for (uint32_t q = 0; q < kBinsPerThread / 4; ++q) {
    const uint4 v = h[q];
    mine += (v.x != 0) + (v.y != 0) + (v.z != 0) + (v.w != 0);
  }
  uint32_t at;
  Scan(temp.scan).ExclusiveSum(mine, at);
  if (mine == 0) return;
  SymbolCount* out = list + offset + at;
  for (uint32_t q = 0; q < kBinsPerThread / 4; ++q) {
    const uint4 v = h[q];
    const uint32_t bins[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (uint32_t j = 0; j < 4; ++j) {
      if (bins[j] != 0) *out++ = SymbolCount{first + 4 * q + j, bins[j]};
    }
  }
}

constexpr int kUnpackThreads = 256;
__global__ void __launch_bounds__(kUnpackThreads)
    UnpackCodesKernel(const UsedSymbols* info, const SymbolCount* list,
                      const uint8_t* packed_lengths, const uint32_t* packed_codes, uint8_t* lengths,
                      uint32_t* codes) {
  const UsedSymbols u = info[blockIdx.x];
  const uint64_t table = uint64_t{blockIdx.x} * kHistogramBins;
  for (uint32_t i = threadIdx.x; i < u.count; i += kUnpackThreads) {
    const uint32_t symbol = list[u.offset + i].symbol;
    lengths[table + symbol] = packed_lengths[u.offset + i];
    codes[table + symbol] = packed_codes[u.offset + i];
  }
}

}  // namespace

cudaError_t LaunchListUsedSymbols(const uint32_t* histogram, uint32_t num_segments, uint32_t* used,
                                  UsedSymbols* info, SymbolCount* list, cudaStream_t stream) {
  CountUsedKernel<<<num_segments, kThreads, 0, stream>>>(histogram, used);
  ListUsedKernel<<<num_segments, kThreads, 0, stream>>>(histogram, used, info, list);
  return cudaGetLastError();
}

cudaError_t LaunchUnpackCodes(const UsedSymbols* info, const SymbolCount* list,
                              uint32_t num_segments, const uint8_t* packed_lengths,
                              const uint32_t* packed_codes, uint8_t* lengths, uint32_t* codes,
                              cudaStream_t stream) {
  UnpackCodesKernel<<<num_segments, kUnpackThreads, 0, stream>>>(info, list, packed_lengths,
                                                                 packed_codes, lengths, codes);
  return cudaGetLastError();
}

}  // namespace ebzip::gpu
