// The Huffman code built on the device (FORMAT.md §10): the lengths the
// host's BuildCodeLengths gives (gpu/code_build_steps.h says how a block
// finds them), canonical codes, and the code-length section, with no trip
// to the host. Each frame's used symbols are sorted by (count, symbol) with
// CUB's segmented sort (one launch per 256 frames: a block, or a warp, per
// frame, sorting in shared memory when the frame's symbols fit); then one
// block per frame builds the tree in rounds, flattens it as the host does
// when it is too deep, and writes the encoder's tables and the section.
#include <atomic>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <type_traits>

#include "codec/huffman_code.h"
#include "codec/zero_run.h"
#include "gpu/code_build_steps.h"
#include "gpu/kernels.h"

namespace ebzip::gpu {
namespace {

namespace cb = code_build;

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxLength = format::kMaxCodeLength;
// Frames per sort call: CUB's segmented sort partitions more segments than
// this by size first, which waits for the partition on the host.
constexpr uint32_t kSortSegmentsPerCall = 256;
// Dynamic shared memory a tree may take at most: on an H100 (227 KiB a
// block) what the kernel's static arrays leave, rounded down: a whole tree
// up to ~7,200 symbols, the arrays every round searches up to ~24,000.
// GPUs with less take less (TreeSharedLimit).
constexpr uint32_t kMaxSharedTreeBytes = 192 * 1024;

// Blocks (segment, part): a frame's list is too long for one block to copy
// quickly (16 blocks took 13 us for a 1 GiB field's 16 frames).
constexpr uint32_t kKeyBlocksPerSegment = 16;
__global__ void MakeKeysKernel(const UsedSymbols* info, const SymbolCount* list, uint64_t* keys,
                               int* sort_begin, int* sort_end) {
  const UsedSymbols u = info[blockIdx.x];
  for (uint32_t i = blockIdx.y * blockDim.x + threadIdx.x; i < u.count;
       i += blockDim.x * gridDim.y) {
    keys[u.offset + i] = cb::Key(list[u.offset + i].count, i);
  }
  if (blockIdx.y == 0 && threadIdx.x == 0) {
    sort_begin[blockIdx.x] = static_cast<int>(u.offset);
    sort_end[blockIdx.x] = static_cast<int>(u.offset + u.count);
  }
}

// First index in [lo, hi) of ascending `w` heavier than `t`, as
// code_build::FirstHeavier finds it, by a whole warp: each step probes 32
// places and keeps the gap between the last light one and the first heavy
// one, so a search over m weights takes log32(m) dependent loads, not log2(m).
__device__ uint32_t WarpFirstHeavier(const uint32_t* w, uint32_t lo, uint32_t hi, uint64_t t) {
  const uint32_t lane = threadIdx.x % 32;
  while (hi - lo > 32) {
    const uint32_t step = (hi - lo + 31) / 32;
    const uint32_t at = lo + lane * step;
    const uint32_t light = __popc(__ballot_sync(~0u, at < hi && w[at] <= t));
    const uint32_t new_lo = light == 0 ? lo : lo + (light - 1) * step + 1;
    hi = min(hi, lo + light * step);
    lo = new_lo;
  }
  return lo + __popc(__ballot_sync(~0u, lo + lane < hi && w[lo + lane] <= t));
}

// One frame's tree. Its arrays go to shared memory in the order their
// latency matters (the searches of every round first, the depth pass's
// last) as far as it reaches, the rest at the frame's place in the global
// scratch.
struct Tree {
  uint32_t m;
  uint32_t* leaf_weight;      // of the sorted leaves
  uint32_t* internal_weight;  // of nodes m.. in the order made
  uint32_t* merged_weight;    // a round's taken items in merge order
  uint32_t* merged_node;
  uint8_t* height;   // of every node
  uint32_t* parent;  // of leaves 0..m-1 and internal nodes m..2m-2
  uint8_t* depth;    // of internal nodes
};
// All of them, per symbol, and the arrays' alignment.
constexpr uint32_t kSharedBytesPerSymbol = 4 * 4 + 2 + 2 * 4 + 1;
constexpr uint32_t kSharedAlignment = 16;

struct Shared {
  cb::Queues queues;
  cb::Round round;
  uint32_t too_deep;
  uint32_t rounds;
  uint32_t round_start[cb::kMaxRounds + 1];
};

// One round's takes and new nodes, by `threads` threads of which this is
// `id`, `sync` between the two steps: each taken item's parent and place in
// merge order, then each new node's weight and height.
template <typename Sync>
__device__ void TakeRound(const Tree& t, cb::Queues q, const cb::Round& r, uint32_t id,
                          uint32_t threads, uint32_t limit, uint32_t* too_deep, Sync sync) {
  const uint32_t m = t.m;
  const uint32_t taken = 2 * r.pairs;
  auto take = [&](uint32_t node, uint32_t rank, uint32_t weight) {
    if (rank >= taken) return;
    t.parent[node] = m + q.made + rank / 2;
    t.merged_weight[rank] = weight;
    t.merged_node[rank] = node;
  };
  for (uint32_t i = q.leaf + id; i < q.leaf + r.leaves; i += threads) {
    take(i, cb::LeafRank(t.leaf_weight, t.internal_weight, q, r, i), t.leaf_weight[i]);
  }
  for (uint32_t j = q.internal + id; j < q.internal + r.internals; j += threads) {
    take(m + j, cb::NodeRank(t.leaf_weight, t.internal_weight, q, r, j), t.internal_weight[j]);
  }
  sync();
  for (uint32_t p = id; p < r.pairs; p += threads) {
    t.internal_weight[q.made + p] = t.merged_weight[2 * p] + t.merged_weight[2 * p + 1];
    const uint32_t h = max(t.height[t.merged_node[2 * p]], t.height[t.merged_node[2 * p + 1]]) + 1;
    t.height[m + q.made + p] = h;
    if (h > limit) *too_deep = 1;
  }
}

__device__ void EndRound(Shared& sh, cb::Queues q, const cb::Round& r) {
  // (At most kMaxRounds by the threshold's doubling; the guard keeps shared
  // memory safe regardless.)
  if (sh.rounds < cb::kMaxRounds) sh.round_start[sh.rounds++] = q.made;
  sh.queues = cb::AfterRound(q, r);
}

// Rounds of at most this many items are taken by one warp, whose barriers
// cost a few cycles, while the block waits: most rounds of most trees, as a
// frame's alphabet is small and the late rounds of any tree are.
constexpr uint32_t kWarpRoundItems = 128;

// Builds the tree over t.leaf_weight in rounds: parents, internal weights
// and heights. Returns whether its height is within `limit` (uniform across
// the block), giving up as soon as a node is deeper: no later node can be
// shallower than its children.
__device__ bool BuildTree(const Tree& t, uint32_t limit, Shared& sh) {
  const uint32_t m = t.m;
  if (threadIdx.x == 0) {
    sh.queues = {0, 0, 0};
    sh.rounds = 0;
    sh.too_deep = 0;
  }
  __syncthreads();
  for (;;) {
    if (threadIdx.x < 32) {  // warp 0: small rounds, then the next large one's plan
      const uint32_t lane = threadIdx.x;
      for (;;) {
        const cb::Queues q = sh.queues;
        if (q.made == m - 1 || sh.too_deep) break;
        const cb::Round r = cb::PlanRound(t.leaf_weight, m, t.internal_weight, q, WarpFirstHeavier);
        if (r.leaves + r.internals > kWarpRoundItems) {
          if (lane == 0) sh.round = r;
          break;
        }
        TakeRound(t, q, r, lane, 32, limit, &sh.too_deep, [] { __syncwarp(); });
        __syncwarp();
        if (lane == 0) EndRound(sh, q, r);
        __syncwarp();
      }
    }
    __syncthreads();
    const cb::Queues q = sh.queues;
    const cb::Round r = sh.round;
    const bool too_deep = sh.too_deep;
    __syncthreads();  // all have read before any thread writes again
    if (too_deep) return false;
    if (q.made == m - 1) return true;
    TakeRound(t, q, r, threadIdx.x, kThreads, limit, &sh.too_deep, [] { __syncthreads(); });
    if (threadIdx.x == 0) EndRound(sh, q, r);
    __syncthreads();
  }
}

// The same tree built by one warp alone, every round its own (so that warps
// can try several halvings at once).
__device__ bool WarpBuildTree(const Tree& t, uint32_t limit, Shared& sh) {
  const uint32_t m = t.m;
  const uint32_t lane = threadIdx.x % 32;
  if (lane == 0) {
    sh.queues = {0, 0, 0};
    sh.rounds = 0;
    sh.too_deep = 0;
  }
  __syncwarp();
  for (;;) {
    // Lane 0 writes these only after the barriers in TakeRound.
    const cb::Queues q = sh.queues;
    if (sh.too_deep) return false;
    if (q.made == m - 1) return true;
    const cb::Round r = cb::PlanRound(t.leaf_weight, m, t.internal_weight, q, WarpFirstHeavier);
    TakeRound(t, q, r, lane, 32, limit, &sh.too_deep, [] { __syncwarp(); });
    __syncwarp();
    if (lane == 0) EndRound(sh, q, r);
    __syncwarp();
  }
}

// Depths from the root down, a round at a time (a node's parent is made in
// a later round), by `threads` threads with `sync` between rounds; then each
// leaf's, by its position.
template <typename Sync>
__device__ void Depths(const Tree& t, const Shared& sh, uint8_t* leaf_depth, uint32_t id,
                       uint32_t threads, Sync sync) {
  const uint32_t m = t.m;
  const uint32_t rounds = sh.rounds;
  for (uint32_t k = rounds; k-- > 0;) {
    const uint32_t end = k + 1 < rounds ? sh.round_start[k + 1] : m - 1;
    for (uint32_t j = sh.round_start[k] + id; j < end; j += threads) {
      t.depth[j] = j == m - 2 ? 0 : t.depth[t.parent[m + j] - m] + 1;
    }
    sync();
  }
  for (uint32_t i = id; i < m; i += threads) leaf_depth[i] = t.depth[t.parent[i] - m] + 1;
}

// Trees up to this many symbols take their depths from one warp.
constexpr uint32_t kWarpDepthSymbols = 2048;
// Frames of up to this many symbols try several halvings at once, a warp
// each, as far as their trees fit in shared memory side by side: most
// frames need a few halvings, and a small tree's rounds are latency, not
// work (about a microsecond each, ~20 per tree).
constexpr uint32_t kParallelTrialSymbols = 1024;
__host__ __device__ constexpr uint32_t TreeBytes(uint32_t m) {
  return (kSharedBytesPerSymbol * m + 8 * kSharedAlignment) & ~(kSharedAlignment - 1);
}

struct BuildArgs {
  const Segment* segments;
  const UsedSymbols* info;
  const SymbolCount* list;
  uint64_t* keys;
  uint64_t* spare;
  CodeBuildScratch scratch;
  uint32_t shared_bytes;  // dynamic shared memory
  uint8_t* lengths;       // 65536 per segment, by symbol
  uint32_t* codes;
  Codebook* codebooks;
  uint8_t* sections;
};

__device__ Tree PlaceTree(const BuildArgs& a, uint32_t m, uint64_t offset, uint8_t* shared,
                          uint64_t left) {
  // `count` elements in shared memory if they fit, else `global`'s.
  auto place = [&](auto* global, uint64_t count) {
    using T = std::remove_pointer_t<decltype(global)>;
    const uint64_t bytes = (count * sizeof(T) + kSharedAlignment - 1) & ~(kSharedAlignment - 1);
    if (bytes > left) return global;
    T* p = reinterpret_cast<T*>(shared);
    shared += bytes;
    left -= bytes;
    return p;
  };
  const CodeBuildScratch& x = a.scratch;
  Tree t;
  t.m = m;
  t.leaf_weight = place(x.leaf_weight + offset, m);
  t.internal_weight = place(x.internal_weight + offset, m);
  t.merged_weight = place(x.merged_weight + offset, m);
  t.merged_node = place(x.merged_node + offset, m);
  t.height = place(x.height + 2 * offset, 2 * m);
  t.parent = place(x.parent + 2 * offset, 2 * m);
  t.depth = place(x.depth + offset, m);
  return t;
}

// The host's `halvings` re-sorts of the keys (code_build_steps.h), in shared
// memory when both copies fit, then each leaf's depth to its symbol's place.
__device__ void LengthsByPlace(const BuildArgs& a, uint32_t m, uint64_t offset, uint32_t halvings,
                               uint8_t* shared, uint8_t* place_length) {
  uint64_t* keys = a.keys + offset;
  uint64_t* spare = a.spare + offset;
  const bool in_shared = halvings > 0 && uint64_t{16} * m <= a.shared_bytes;
  if (in_shared) {
    uint64_t* s0 = reinterpret_cast<uint64_t*>(shared);
    for (uint32_t i = threadIdx.x; i < m; i += kThreads) s0[i] = keys[i];
    keys = s0;
    spare = s0 + m;
    __syncthreads();
  }
  for (uint32_t k = 0; k < halvings; ++k) {
    for (uint32_t i = threadIdx.x; i < m; i += kThreads) {
      spare[cb::HalvedIndex(keys, m, i)] = cb::Halved(keys[i]);
    }
    uint64_t* halved = spare;
    spare = keys;
    keys = halved;
    __syncthreads();
  }
  const uint8_t* leaf_depth = a.scratch.leaf_depth + offset;
  for (uint32_t i = threadIdx.x; i < m; i += kThreads) {
    place_length[cb::PlaceOf(keys[i])] = leaf_depth[i];
  }
}
// The kernel's shared memory besides the trees.
struct BlockShared {
  typename cub::BlockScan<uint32_t, kThreads>::TempStorage scan;
  Shared tree;          // the block's own rounds
  Shared warp[kWarps];  // each warp's, when warps try halvings side by side
  uint32_t fits;        // which of them fit
  uint32_t length_count[kMaxLength + 1];
  uint32_t next_code[kMaxLength + 1];
  uint32_t warp_count[kWarps][kMaxLength + 1];
  uint32_t carry;
};

// Each used symbol's code length, by place: the fewest halvings whose tree
// fits the limit, tried a warp each at once for small frames, else one
// after another by the whole block; then the fitting tree's depths.
__device__ void CodeLengths(const BuildArgs& a, const Segment& seg, const UsedSymbols& u,
                            uint8_t* dynamic_shared, BlockShared& bs, uint8_t* place_length) {
  const uint32_t m = u.count;
  if (m == 1 && threadIdx.x == 0) place_length[0] = 1;
  if (m < 2) return;
  const uint64_t* keys = a.keys + u.offset;
  const uint32_t limit = seg.max_code_length;
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const uint32_t parallel =
      m <= kParallelTrialSymbols ? min(kWarps, a.shared_bytes / TreeBytes(m)) : 1;
  // The limit admits the alphabet (MakePlan checks), so halving ends by the
  // time every weight is 1; the bound on trials is only a guard.
  constexpr uint32_t kMaxTrials = 40;
  uint32_t halvings = 0;
  Tree t;
  const Shared* built = &bs.tree;
  if (parallel >= 2) {
    // Warp w tries base + w halvings; the fewest that fit win.
    for (uint32_t base = 0; base < kMaxTrials; base += parallel) {
      if (threadIdx.x == 0) bs.fits = 0;
      __syncthreads();
      if (warp < parallel) {
        const Tree mine =
            PlaceTree(a, m, u.offset, dynamic_shared + warp * TreeBytes(m), TreeBytes(m));
        for (uint32_t i = lane; i < m; i += 32) {
          mine.leaf_weight[i] = cb::HalvedWeight(cb::WeightOf(keys[i]), base + warp);
          mine.height[i] = 0;
        }
        __syncwarp();
        if (WarpBuildTree(mine, limit, bs.warp[warp]) && lane == 0) atomicOr(&bs.fits, 1u << warp);
      }
      __syncthreads();
      const uint32_t fitting = bs.fits;
      __syncthreads();  // all have read it before it is cleared
      if (fitting != 0) {
        const uint32_t winner = __ffs(fitting) - 1;
        halvings = base + winner;
        t = PlaceTree(a, m, u.offset, dynamic_shared + winner * TreeBytes(m), TreeBytes(m));
        built = &bs.warp[winner];
        break;
      }
    }
  } else {
    t = PlaceTree(a, m, u.offset, dynamic_shared, a.shared_bytes);
    for (; halvings < kMaxTrials; ++halvings) {
      for (uint32_t i = threadIdx.x; i < m; i += kThreads) {
        t.leaf_weight[i] = cb::HalvedWeight(cb::WeightOf(keys[i]), halvings);
        t.height[i] = 0;
      }
      __syncthreads();
      if (BuildTree(t, limit, bs.tree)) break;
    }
  }
  uint8_t* leaf_depth = a.scratch.leaf_depth + u.offset;
  if (m <= kWarpDepthSymbols) {
    if (threadIdx.x < 32) Depths(t, *built, leaf_depth, threadIdx.x, 32, [] { __syncwarp(); });
  } else {
    Depths(t, *built, leaf_depth, threadIdx.x, kThreads, [] { __syncthreads(); });
  }
  __syncthreads();  // the tree's shared memory is free again
  LengthsByPlace(a, m, u.offset, halvings, dynamic_shared, place_length);
}

// Canonical codes (as codec/huffman_code.cc's CanonicalCodes) into the
// segment's tables: first codes per length, then each symbol's rank among
// those of its length in symbol order, a tile of 1024 places at a time,
// within the warp and then across warps.
__device__ void AssignCodes(const BuildArgs& a, uint32_t s, const UsedSymbols& u,
                            const uint8_t* place_length, BlockShared& bs) {
  const uint32_t m = u.count;
  const SymbolCount* list = a.list + u.offset;
  if (threadIdx.x <= kMaxLength) bs.length_count[threadIdx.x] = 0;
  __syncthreads();
  for (uint32_t i = threadIdx.x; i < m; i += kThreads) {
    atomicAdd(&bs.length_count[place_length[i]], 1);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t code = 0;
    bs.length_count[0] = 0;
    for (int l = 1; l <= kMaxLength; ++l) {
      code = (code + bs.length_count[l - 1]) << 1;
      bs.next_code[l] = code;
    }
  }
  __syncthreads();
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const uint64_t table = uint64_t{s} * kHistogramBins;
  for (uint32_t base = 0; base < m; base += kThreads) {
    const uint32_t i = base + threadIdx.x;
    const uint32_t len = i < m ? place_length[i] : 0;
    const uint32_t same = __match_any_sync(0xFFFFFFFFu, len);
    const uint32_t rank = __popc(same & ((1u << lane) - 1));
    for (uint32_t x = threadIdx.x; x < kWarps * (kMaxLength + 1); x += kThreads) {
      bs.warp_count[x / (kMaxLength + 1)][x % (kMaxLength + 1)] = 0;
    }
    __syncthreads();
    if (rank == 0) bs.warp_count[warp][len] = __popc(same);
    __syncthreads();
    if (threadIdx.x >= 1 && threadIdx.x <= kMaxLength) {  // per length, over warps
      const uint32_t l = threadIdx.x;
      uint32_t next = bs.next_code[l];
      for (int w = 0; w < kWarps; ++w) {
        const uint32_t n = bs.warp_count[w][l];
        bs.warp_count[w][l] = next;
        next += n;
      }
      bs.next_code[l] = next;
    }
    __syncthreads();
    if (i < m) {
      const uint32_t symbol = list[i].symbol;
      a.lengths[table + symbol] = static_cast<uint8_t>(len);
      a.codes[table + symbol] = bs.warp_count[warp][len] + rank;
    }
    __syncthreads();
  }
}

// The code-length section (FORMAT.md §5.1): each used symbol's zero run (if
// any) and length, placed by a scan, then the run to the alphabet's end.
__device__ void WriteSection(const BuildArgs& a, uint32_t s, const Segment& seg,
                             const UsedSymbols& u, const uint8_t* place_length, BlockShared& bs) {
  using Scan = cub::BlockScan<uint32_t, kThreads>;
  const uint32_t m = u.count;
  const SymbolCount* list = a.list + u.offset;
  uint8_t* section = a.sections + seg.code_section_at;
  if (threadIdx.x == 0) bs.carry = 0;
  __syncthreads();
  for (uint32_t base = 0; base < m; base += kThreads) {
    const uint32_t i = base + threadIdx.x;
    uint32_t gap = 0, bytes = 0;
    if (i < m) {
      gap = list[i].symbol - (i ? list[i - 1].symbol + 1 : 0);
      bytes = ZeroRunBytes(gap) + 1;
    }
    uint32_t at, total;
    Scan(bs.scan).ExclusiveSum(bytes, at, total);
    if (i < m) {
      uint8_t* out = WriteZeroRun(gap, section + bs.carry + at);
      *out = place_length[i];
    }
    __syncthreads();
    if (threadIdx.x == 0) bs.carry += total;
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const uint32_t alphabet = 2 * seg.radius;
    const uint32_t tail = alphabet - (m ? list[m - 1].symbol + 1 : 0);
    const uint8_t* end = WriteZeroRun(tail, section + bs.carry);
    a.codebooks[s] = {seg.code_section_at, static_cast<uint64_t>(end - section)};
  }
}

// One block per segment: lengths, codes, section.
__global__ void __launch_bounds__(kThreads) BuildCodesKernel(BuildArgs a) {
  extern __shared__ __align__(16) uint8_t dynamic_shared[];
  __shared__ BlockShared bs;
  const uint32_t s = blockIdx.x;
  const Segment& seg = a.segments[s];
  const UsedSymbols u = a.info[s];
  uint8_t* place_length = a.scratch.place_length + u.offset;
  CodeLengths(a, seg, u, dynamic_shared, bs, place_length);
  AssignCodes(a, s, u, place_length, bs);
  WriteSection(a, s, seg, u, place_length, bs);
}

// The dynamic shared memory BuildCodesKernel may use on the current device:
// what a block may opt into, less the kernel's static arrays, at most
// kMaxSharedTreeBytes. Asked once per device; the kernel's attribute is set
// to it then, and every launch on that device asks for at most as much, so
// threads launching on other streams never race on the attribute.
cudaError_t TreeSharedLimit(uint32_t* limit) {
  constexpr int kDevices = 64;
  static std::atomic<uint32_t> known[kDevices];  // 0: not asked yet
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  if (device < kDevices && (*limit = known[device].load()) != 0) return cudaSuccess;
  int optin = 0;
  if (cudaError_t e =
          cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
      e != cudaSuccess) {
    return e;
  }
  cudaFuncAttributes attributes{};
  if (cudaError_t e = cudaFuncGetAttributes(&attributes, BuildCodesKernel); e != cudaSuccess) {
    return e;
  }
  const uint64_t room =
      optin > static_cast<int>(attributes.sharedSizeBytes) ? optin - attributes.sharedSizeBytes : 0;
  *limit = static_cast<uint32_t>(std::min<uint64_t>(room, kMaxSharedTreeBytes)) &
           ~(kSharedAlignment - 1);
  if (cudaError_t e = cudaFuncSetAttribute(BuildCodesKernel,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, *limit);
      e != cudaSuccess) {
    return e;
  }
  if (device < kDevices) known[device].store(*limit);
  return cudaSuccess;
}

}  // namespace

cudaError_t CodeBuildSortBytes(uint64_t listed_capacity, uint32_t num_segments, size_t* bytes) {
  cub::DoubleBuffer<uint64_t> keys(nullptr, nullptr);
  return cub::DeviceSegmentedSort::SortKeys(nullptr, *bytes, keys, listed_capacity,
                                            std::min(num_segments, kSortSegmentsPerCall),
                                            static_cast<int*>(nullptr), static_cast<int*>(nullptr));
}

cudaError_t LaunchBuildCodes(const Segment* segments, uint32_t num_segments,
                             uint64_t listed_capacity, uint32_t max_symbols,
                             const UsedSymbols* info, const SymbolCount* list,
                             const CodeBuildScratch& scratch, uint8_t* lengths, uint32_t* codes,
                             Codebook* codebooks, uint8_t* sections, cudaStream_t stream) {
  MakeKeysKernel<<<dim3(num_segments, kKeyBlocksPerSegment), 256, 0, stream>>>(
      info, list, scratch.keys[0], scratch.sort_begin, scratch.sort_end);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  // Every call sorts the same key type the same way, so each leaves its
  // output in the same one of the two buffers.
  cub::DoubleBuffer<uint64_t> keys(scratch.keys[0], scratch.keys[1]);
  for (uint32_t first = 0; first < num_segments; first += kSortSegmentsPerCall) {
    keys = cub::DoubleBuffer<uint64_t>(scratch.keys[0], scratch.keys[1]);
    size_t bytes = scratch.sort_temp_bytes;
    if (cudaError_t e = cub::DeviceSegmentedSort::SortKeys(
            scratch.sort_temp, bytes, keys, listed_capacity,
            std::min(num_segments - first, kSortSegmentsPerCall), scratch.sort_begin + first,
            scratch.sort_end + first, stream);
        e != cudaSuccess) {
      return e;
    }
  }
  // Shared memory for the largest tree of the launch (a tree a warp for
  // small ones), as far as the device allows.
  uint32_t limit = 0;
  if (cudaError_t e = TreeSharedLimit(&limit); e != cudaSuccess) return e;
  const uint64_t wanted = max_symbols <= kParallelTrialSymbols
                              ? uint64_t{kWarps} * TreeBytes(max_symbols)
                              : uint64_t{TreeBytes(max_symbols)};
  const uint32_t shared_bytes = static_cast<uint32_t>(std::min<uint64_t>(wanted, limit));
  const BuildArgs a{segments,     info,    list,  keys.Current(), keys.Alternate(), scratch,
                    shared_bytes, lengths, codes, codebooks,      sections};
  BuildCodesKernel<<<num_segments, kThreads, shared_bytes, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace ebzip::gpu
