// The Huffman code built on the device (FORMAT.md §10): the lengths the
// host's BuildCodeLengths gives (gpu/code_build_steps.h says how a block
// finds them), canonical codes, and the code-length section, with no trip
// to the host. Each frame's used symbols are sorted by (count, symbol) with
// CUB's segmented radix sort; then one block per frame builds the tree in
// rounds, flattens it as the host does when it is too deep, and writes the
// encoder's tables and the section.
#include <cub/block/block_scan.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include "codec/huffman_code.h"
#include "gpu/code_build_steps.h"
#include "gpu/kernels.h"

namespace ebzip::gpu {
namespace {

namespace cb = code_build;

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxLength = format::kMaxCodeLength;
// Sort keys hold a count (below 2^32) above a 16-bit place.
constexpr int kKeyBits = 32 + cb::kPlaceBits;

__global__ void MakeKeysKernel(const UsedSymbols* info, const SymbolCount* list, uint64_t* keys,
                               int* sort_begin, int* sort_end) {
  const UsedSymbols u = info[blockIdx.x];
  for (uint32_t i = threadIdx.x; i < u.count; i += blockDim.x) {
    keys[u.offset + i] = cb::Key(list[u.offset + i].count, i);
  }
  if (threadIdx.x == 0) {
    sort_begin[blockIdx.x] = static_cast<int>(u.offset);
    sort_end[blockIdx.x] = static_cast<int>(u.offset + u.count);
  }
}

// The tree's arrays for one frame, at its place among the listed symbols.
struct Tree {
  uint32_t m;
  uint64_t* keys;  // sorted leaves; `spare` takes them halved
  uint64_t* spare;
  uint32_t* internal_weight;
  uint32_t* merged;   // a round's taken items' weights, in merge order
  uint32_t* parent;   // of leaves 0..m-1 and internal nodes m..2m-2
  uint8_t* depth;     // of internal nodes
};

struct Shared {
  cb::Queues queues;
  cb::Round round;
  uint32_t rounds;
  uint32_t round_start[cb::kMaxRounds + 1];
  uint32_t height;
};

// Builds the tree over t.keys: parents and internal depths; returns its
// height (uniform across the block).
__device__ uint32_t BuildTree(const Tree& t, Shared& sh) {
  const uint32_t m = t.m;
  if (threadIdx.x == 0) {
    sh.queues = {0, 0, 0};
    sh.rounds = 0;
    sh.height = 0;
  }
  __syncthreads();
  while (sh.queues.made < m - 1) {
    if (threadIdx.x == 0) sh.round = cb::PlanRound(t.keys, m, t.internal_weight, sh.queues);
    __syncthreads();
    const cb::Queues q = sh.queues;
    const cb::Round r = sh.round;
    const uint32_t taken = 2 * r.pairs;
    for (uint32_t i = q.leaf + threadIdx.x; i < q.leaf + r.leaves; i += kThreads) {
      const uint32_t rank = cb::LeafRank(t.keys, t.internal_weight, q, r, i);
      if (rank < taken) {
        t.parent[i] = m + q.made + rank / 2;
        t.merged[rank] = cb::WeightOf(t.keys[i]);
      }
    }
    for (uint32_t j = q.internal + threadIdx.x; j < q.internal + r.internals; j += kThreads) {
      const uint32_t rank = cb::NodeRank(t.keys, t.internal_weight, q, r, j);
      if (rank < taken) {
        t.parent[m + j] = m + q.made + rank / 2;
        t.merged[rank] = t.internal_weight[j];
      }
    }
    __syncthreads();
    for (uint32_t p = threadIdx.x; p < r.pairs; p += kThreads) {
      t.internal_weight[q.made + p] = t.merged[2 * p] + t.merged[2 * p + 1];
    }
    if (threadIdx.x == 0) {
      sh.round_start[sh.rounds++] = q.made;
      sh.queues = cb::AfterRound(q, r);
    }
    __syncthreads();
  }
  // Depths from the root down, a round at a time (parents come later).
  const uint32_t rounds = sh.rounds;
  for (uint32_t k = rounds; k-- > 0;) {
    const uint32_t end = k + 1 < rounds ? sh.round_start[k + 1] : m - 1;
    for (uint32_t j = sh.round_start[k] + threadIdx.x; j < end; j += kThreads) {
      t.depth[j] = j == m - 2 ? 0 : t.depth[t.parent[m + j] - m] + 1;
    }
    __syncthreads();
  }
  uint32_t deepest = 0;
  for (uint32_t i = threadIdx.x; i < m; i += kThreads) {
    deepest = max(deepest, t.depth[t.parent[i] - m] + 1u);
  }
  atomicMax(&sh.height, deepest);
  __syncthreads();
  return sh.height;
}

struct BuildArgs {
  const Segment* segments;
  const UsedSymbols* info;
  const SymbolCount* list;
  uint64_t* keys;
  uint64_t* spare;
  uint32_t* internal_weight;
  uint32_t* merged;
  uint32_t* parent;
  uint8_t* depth;
  uint8_t* place_length;
  uint8_t* lengths;  // 65536 per segment, by symbol
  uint32_t* codes;
  Codebook* codebooks;
  uint8_t* sections;
};

__global__ void __launch_bounds__(kThreads) BuildCodesKernel(BuildArgs a) {
  using Scan = cub::BlockScan<uint32_t, kThreads>;
  __shared__ typename Scan::TempStorage scan;
  __shared__ Shared sh;
  __shared__ uint32_t length_count[kMaxLength + 1];
  __shared__ uint32_t next_code[kMaxLength + 1];
  __shared__ uint32_t warp_count[kWarps][kMaxLength + 1];
  __shared__ uint32_t carry;

  const uint32_t s = blockIdx.x;
  const Segment& seg = a.segments[s];
  const UsedSymbols u = a.info[s];
  const uint32_t m = u.count;
  const SymbolCount* list = a.list + u.offset;
  uint8_t* place_length = a.place_length + u.offset;

  // Lengths, by place.
  if (m == 1 && threadIdx.x == 0) place_length[0] = 1;
  if (m >= 2) {
    Tree t{m,
           a.keys + u.offset,
           a.spare + u.offset,
           a.internal_weight + u.offset,
           a.merged + u.offset,
           a.parent + 2 * u.offset,
           a.depth + u.offset};
    // The limit admits the alphabet (2^20 >= 65536 symbols), so halving ends
    // by the time every weight is 1; the bound on trials is only a guard.
    for (int trial = 0; trial < 40; ++trial) {
      if (BuildTree(t, sh) <= seg.max_code_length) break;
      for (uint32_t i = threadIdx.x; i < m; i += kThreads) {
        t.spare[cb::HalvedIndex(t.keys, m, i)] = cb::Halved(t.keys[i]);
      }
      uint64_t* halved = t.spare;
      t.spare = t.keys;
      t.keys = halved;
      __syncthreads();
    }
    for (uint32_t i = threadIdx.x; i < m; i += kThreads) {
      place_length[cb::PlaceOf(t.keys[i])] = t.depth[t.parent[i] - m] + 1;
    }
  }
  if (threadIdx.x <= kMaxLength) length_count[threadIdx.x] = 0;
  __syncthreads();
  for (uint32_t i = threadIdx.x; i < m; i += kThreads) atomicAdd(&length_count[place_length[i]], 1);
  __syncthreads();
  if (threadIdx.x == 0) {  // canonical first codes, as CanonicalCodes
    uint32_t code = 0;
    length_count[0] = 0;
    for (int l = 1; l <= kMaxLength; ++l) {
      code = (code + length_count[l - 1]) << 1;
      next_code[l] = code;
    }
  }
  __syncthreads();

  // Codes in symbol order within each length: a tile of 1024 places at a
  // time, ranked among equal lengths in the warp, then across warps.
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const uint64_t table = uint64_t{s} * kHistogramBins;
  for (uint32_t base = 0; base < m; base += kThreads) {
    const uint32_t i = base + threadIdx.x;
    const uint32_t len = i < m ? place_length[i] : 0;
    const uint32_t same = __match_any_sync(0xFFFFFFFFu, len);
    const uint32_t rank = __popc(same & ((1u << lane) - 1));
    for (uint32_t x = threadIdx.x; x < kWarps * (kMaxLength + 1); x += kThreads) {
      warp_count[x / (kMaxLength + 1)][x % (kMaxLength + 1)] = 0;
    }
    __syncthreads();
    if (rank == 0) warp_count[warp][len] = __popc(same);
    __syncthreads();
    if (threadIdx.x >= 1 && threadIdx.x <= kMaxLength) {  // per length, over warps
      const uint32_t l = threadIdx.x;
      uint32_t next = next_code[l];
      for (int w = 0; w < kWarps; ++w) {
        const uint32_t n = warp_count[w][l];
        warp_count[w][l] = next;
        next += n;
      }
      next_code[l] = next;
    }
    __syncthreads();
    if (i < m) {
      const uint32_t symbol = list[i].symbol;
      a.lengths[table + symbol] = static_cast<uint8_t>(len);
      a.codes[table + symbol] = warp_count[warp][len] + rank;
    }
    __syncthreads();
  }

  // The code-length section: each used symbol's zero run (if any) and
  // length, placed by a scan, then the run to the alphabet's end.
  uint8_t* section = a.sections + seg.code_section_at;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (uint32_t base = 0; base < m; base += kThreads) {
    const uint32_t i = base + threadIdx.x;
    uint32_t gap = 0, bytes = 0;
    if (i < m) {
      gap = list[i].symbol - (i ? list[i - 1].symbol + 1 : 0);
      bytes = cb::ZeroRunBytes(gap) + 1;
    }
    uint32_t at, total;
    Scan(scan).ExclusiveSum(bytes, at, total);
    if (i < m) {
      uint8_t* out = cb::WriteZeroRun(gap, section + carry + at);
      *out = place_length[i];
    }
    __syncthreads();
    if (threadIdx.x == 0) carry += total;
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const uint32_t alphabet = 2 * seg.radius;
    const uint32_t tail = alphabet - (m ? list[m - 1].symbol + 1 : 0);
    const uint8_t* end = cb::WriteZeroRun(tail, section + carry);
    a.codebooks[s] = {seg.code_section_at, static_cast<uint32_t>(end - section)};
  }
}

}  // namespace

cudaError_t CodeBuildSortBytes(uint64_t listed_capacity, uint32_t num_segments, size_t* bytes) {
  cub::DoubleBuffer<uint64_t> keys(nullptr, nullptr);
  return cub::DeviceSegmentedRadixSort::SortKeys(
      nullptr, *bytes, keys, static_cast<int>(listed_capacity), static_cast<int>(num_segments),
      static_cast<int*>(nullptr), static_cast<int*>(nullptr), 0, kKeyBits);
}

cudaError_t LaunchBuildCodes(const Segment* segments, uint32_t num_segments,
                             uint64_t listed_capacity, const UsedSymbols* info,
                             const SymbolCount* list, const CodeBuildScratch& scratch,
                             uint8_t* lengths, uint32_t* codes, Codebook* codebooks,
                             uint8_t* sections, cudaStream_t stream) {
  MakeKeysKernel<<<num_segments, 256, 0, stream>>>(info, list, scratch.keys[0], scratch.sort_begin,
                                                   scratch.sort_end);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  cub::DoubleBuffer<uint64_t> keys(scratch.keys[0], scratch.keys[1]);
  size_t bytes = scratch.sort_temp_bytes;
  if (cudaError_t e = cub::DeviceSegmentedRadixSort::SortKeys(
          scratch.sort_temp, bytes, keys, static_cast<int>(listed_capacity),
          static_cast<int>(num_segments), scratch.sort_begin, scratch.sort_end, 0, kKeyBits,
          stream);
      e != cudaSuccess) {
    return e;
  }
  const BuildArgs a{segments,       info,           list,          keys.Current(),
                    keys.Alternate(), scratch.internal_weight, scratch.merged, scratch.parent,
                    scratch.depth,  scratch.place_length, lengths, codes,
                    codebooks,      sections};
  BuildCodesKernel<<<num_segments, kThreads, 0, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace ebzip::gpu
