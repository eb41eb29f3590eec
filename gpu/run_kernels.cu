// Zero-run and run-value tokens, encode side (FORMAT.md §15.4, §15.4.1,
// §15.8): a block per chunk. The counters kernel counts the chunk's runs by
// position (gpu/run_steps.h's ForEachRunEnd: a block max-scan of the last
// non-zero position tells each thread's 8 symbols where the run in progress
// began), for both token histograms, and leaves each of the chunk's slices
// (a thread each in the next two kernels) the zeros directly before it.
// Then every slice walks its own tokens as codec/run_tokens.h's
// ForEachToken would: a run belongs to the slice where it ends (with run
// values, where the residual it takes is). The walks sum the chunk's bits,
// then pack the bitstream and gap array as encode_kernels.cu does for
// version 1; the bits kernel's per-slice sums (the slice states,
// run_kernels.h) spare the encoder a walk of its own before it packs. Each
// kernel reads its symbols once.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "gpu/device_util.cuh"
#include "gpu/kernels.h"
#include "gpu/run_kernels.h"
#include "gpu/run_steps.h"

namespace ebzip::gpu {
namespace {

using run_steps::kRunCounters;
static_assert(kRunCounters == kRunCountersPerSegment);

// Every kernel here cuts a chunk into this many slices (CutSlice): a thread
// each in the bits and encode kernels, a state each that the counters
// kernel leaves them.
constexpr int kSliceThreads = 1024;
static_assert(kSliceThreads == kSliceStatesPerChunk);

// A slice's state (run_kernels.h): the zeros directly before it (< a chunk,
// <= 65535) in the low half, its bits (<= 64 positions * 32 bits) in the
// high one.
static_assert(kMaxGpuChunkSymbols <= 65536 &&
              (kMaxGpuChunkSymbols + kSliceThreads - 1) / kSliceThreads * 32 < 65536);
template <typename State>  // uint32_t or const uint32_t
__device__ inline State& StateOf(State* states, const Segment& seg, uint64_t c,
                                 uint32_t slice = threadIdx.x) {
  return states[(seg.slice_chunk_base + c) * kSliceThreads + slice];
}
__device__ inline uint32_t BeforeOf(uint32_t state) { return state & 0xFFFFu; }
__device__ inline uint32_t BitsOf(uint32_t state) { return state >> 16; }

// The positions of segment `seg`: S (FORMAT.md §15.3).
__device__ inline uint64_t ChunkPositions(const Segment& seg) { return seg.positions; }

// Calls f(symbol) for sym[begin, end) in order, 8 symbols to a 16-byte load
// where the address allows (encode_kernels.cu's ForEachSymbol).
template <class F>
__device__ void ForEachSymbol(const uint16_t* sym, uint32_t begin, uint32_t end, F&& f) {
  uint32_t i = begin;
  for (; i < end && reinterpret_cast<uintptr_t>(sym + i) % 16 != 0; ++i) f(sym[i]);
  for (; i + 8 <= end; i += 8) {
    const uint4 v = *reinterpret_cast<const uint4*>(sym + i);
    const uint32_t pairs[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      f(pairs[k] & 0xFFFFu);
      f(pairs[k] >> 16);
    }
  }
  for (; i < end; ++i) f(sym[i]);
}

// A long run's class-12 token (FORMAT.md §15.8: 8191 positions, 12 extra
// bits all ones).
__device__ inline uint32_t LongRunSymbol(uint32_t radius) {
  return 2 * radius + format::kRunClasses - 1;
}
constexpr uint32_t kLongRunBits = format::kRunClasses;

// One thread's slice of one chunk, and what it needs to know of the slices
// before and after it.
struct Slice {
  const uint16_t* sym;  // the chunk's first position
  uint32_t count;       // positions in the chunk
  uint32_t begin, end;  // this thread's slice
  uint32_t zero;        // the zero symbol, or run_steps::kNoZero
  uint32_t radius;
  bool values;             // run-value tokens: a run takes the residual after it
  uint32_t before = 0;     // zeros directly before the slice
  bool continues = false;  // the run at the slice's end goes on into the next

  // Calls token(symbol, extra_bits, extra_value, positions) for the tokens
  // this slice owns, in order.
  template <class F>
  __device__ void Walk(F&& token) const {
    if (begin >= end) return;
    run_steps::SliceWalk w = run_steps::BeginSlice(zero, radius, values, sym[begin], before);
    ForEachSymbol(sym, begin, end, [&](uint32_t s) { run_steps::StepSymbol(w, s, token); });
    run_steps::EndSlice(w, continues, token);
  }
  // Calls tokens(t, next) at every symbol, with t the tokens it ends
  // (run_steps::TokensAt: none at a zero symbol), and once more at the
  // slice's end for a run that stops there, with next kNoRunValue: Walk's
  // tokens in a form a warp handles in step, whatever each lane's symbols.
  // The encoder packs them so: with Walk its lanes split on every kind of
  // token, each kind's packing running in turn. The bits kernel, whose token
  // costs one addition, keeps Walk: in step every symbol would load two code
  // lengths, which measured slower (bench/GPU_NOTES.md, session 33).
  template <class F>
  __device__ void WalkInStep(F&& tokens) const {
    if (begin >= end) return;
    uint32_t run = run_steps::BeginSlice(zero, radius, values, sym[begin], before).run;
    ForEachSymbol(sym, begin, end, [&](uint32_t s) {
      const bool ends = s != zero;
      run_steps::TokensAt t = run_steps::TokensOf(ends ? run : 0, s, radius, values);
      t.has_own = t.has_own && ends;
      tokens(t, s);
      run = ends ? 0 : run + 1;
    });
    if (run != 0 && !continues) {
      tokens(run_steps::TokensOf(run, kNoRunValue, radius, values), kNoRunValue);
    }
  }
};

// The positions of chunk c of segment `seg` (a chunk past S, planned for n
// before S was known, has none).
__device__ uint32_t ChunkCount(const Segment& seg, uint64_t c) {
  const uint64_t first = c * seg.chunk_symbols;
  const uint64_t positions = ChunkPositions(seg);
  return positions > first
             ? static_cast<uint32_t>(min(positions - first, uint64_t{seg.chunk_symbols}))
             : 0;
}

// Positions per slice of a chunk of `count`: slice t starts at
// min(count, t * per).
__device__ uint32_t SlicePositions(uint32_t count) {
  return (count + kSliceThreads - 1) / kSliceThreads;
}

// Cuts chunk c of segment `seg` into kSliceThreads slices and picks this
// thread's, without its neighbours' part (the slice state, then
// FinishSlice). The slices own their runs as the segment's stage has it.
__device__ Slice CutSlice(const Segment& seg, const uint16_t* symbols, uint64_t c) {
  Slice sl;
  sl.count = ChunkCount(seg, c);
  sl.sym = symbols + seg.symbol_base + c * seg.chunk_symbols;
  sl.zero = run_steps::ZeroSymbol(seg.lossless != 0, seg.radius);
  sl.radius = seg.radius;
  sl.values = seg.lossless == format::kLosslessRunValues;
  const uint32_t per = SlicePositions(sl.count);
  sl.begin = min(sl.count, threadIdx.x * per);
  sl.end = min(sl.count, (threadIdx.x + 1) * per);
  return sl;
}

// With sl.before known: whether the run at the slice's end goes on.
__device__ void FinishSlice(Slice& sl) {
  sl.continues = sl.end < sl.count &&
                 run_steps::RunContinues(sl.zero, sl.radius, sl.values, sl.sym[sl.end]);
}

// The counters kernel: a block per chunk, each thread kGroupSymbols
// consecutive positions of each tile of kCountTile.
constexpr int kCountThreads = 256;
constexpr int kGroup = run_steps::kGroupSymbols;
constexpr int32_t kCountTile = kCountThreads * kGroup;
static_assert(kGroup == 8);  // one 16-byte load

// A group's 8 symbols as two words, symbol e at bits 16e.
struct SymbolGroup {
  uint64_t lo = 0, hi = 0;
  __device__ uint32_t operator[](int e) const {
    return static_cast<uint32_t>((e < 4 ? lo >> (16 * e) : hi >> (16 * (e - 4))) & 0xFFFFu);
  }
};

// Positions p0 .. p0 + 7 of the chunk, those at or past `count` as 0.
__device__ SymbolGroup LoadGroup(const uint16_t* sym, int32_t p0, int32_t count, bool aligned) {
  SymbolGroup g;
  if (aligned && p0 + kGroup <= count) {
    const uint4 v = *reinterpret_cast<const uint4*>(sym + p0);
    g.lo = uint64_t{v.y} << 32 | v.x;
    g.hi = uint64_t{v.w} << 32 | v.z;
    return g;
  }
#pragma unroll
  for (int e = 0; e < kGroup; ++e) {
    const uint64_t v = p0 + e < count ? sym[p0 + e] : 0;
    if (e < 4) {
      g.lo |= v << (16 * e);
    } else {
      g.hi |= v << (16 * (e - 4));
    }
  }
  return g;
}

struct MaxOp {
  __device__ int32_t operator()(int32_t a, int32_t b) const { return a > b ? a : b; }
};

// Counts the runs of every segment with a token stage allowed as lossless 2
// owns them (lossless 1's counts do not depend on which position counts a
// run), and leaves each slice the zeros directly before it.
__global__ void __launch_bounds__(kCountThreads)
    RunCountersKernel(const Segment* segments, uint32_t num_segments, const uint16_t* symbols,
                      uint32_t* counters, uint32_t* slice_states) {
  using Scan = cub::BlockScan<int32_t, kCountThreads>;
  constexpr int kWarps = kCountThreads / 32;
  __shared__ typename Scan::TempStorage temp;
  // A warp's own counters: a run's count is one shared add (registers
  // indexed by the run's class would cost a select per counter).
  __shared__ uint32_t warp_counts[kWarps][kRunCounters];
  for (uint32_t i = threadIdx.x; i < kWarps * kRunCounters; i += kCountThreads) {
    (&warp_counts[0][0])[i] = 0;
  }
  const uint32_t s = SegmentOfChunk(segments, num_segments, blockIdx.x);
  const Segment& seg = segments[s];
  const uint64_t c = blockIdx.x - seg.chunk_base;
  const int32_t count = static_cast<int32_t>(ChunkCount(seg, c));
  const uint16_t* sym = symbols + seg.symbol_base + c * seg.chunk_symbols;
  // Counted up to the highest stage allowed, before the pick.
  const uint32_t zero = run_steps::ZeroSymbol(seg.highest_lossless != 0, seg.radius);
  const int32_t per = static_cast<int32_t>(SlicePositions(count));  // CutSlice's slices
  uint32_t* states = slice_states ? &StateOf(slice_states, seg, c, 0) : nullptr;
  int32_t last = -1;  // the last non-zero position of the tiles so far
  if (zero != run_steps::kNoZero) {  // uniform across the block
    __syncthreads();                 // warp_counts zeroed
    uint32_t* mine = warp_counts[threadIdx.x / 32];
    auto count_run = [&](uint32_t k, uint32_t next) {
      run_steps::CountRun(k, next, seg.radius,
                          [&](int counter, uint32_t amount) { atomicAdd(&mine[counter], amount); });
    };
    // (A chunk that starts off a 16-byte boundary, which only an odd
    // --chunk_symbols or a segment placed so gives, loads symbol by symbol.)
    const bool aligned = reinterpret_cast<uintptr_t>(sym) % 16 == 0;
    for (int32_t base = 0; base < count; base += kCountTile) {
      const int32_t p0 = base + static_cast<int32_t>(threadIdx.x) * kGroup;
      const SymbolGroup g = LoadGroup(sym, p0, count, aligned);
      uint32_t nz = 0;
#pragma unroll
      for (int e = 0; e < kGroup; ++e) nz |= uint32_t{p0 + e < count && g[e] != zero} << e;
      int32_t prev, tile_last;
      Scan(temp).ExclusiveScan(run_steps::LastNonZero(nz, p0, -1), prev, -1, MaxOp(), tile_last);
      __syncthreads();  // temp is reused
      prev = max(prev, last);
      last = max(last, tile_last);
      if (states != nullptr && per != 0) {
        const int32_t end = min(p0 + kGroup, count);
        for (int32_t t = (p0 + per - 1) / per; t < kSliceThreads && t * per < end; ++t) {
          states[t] = run_steps::ZerosBefore(t * per, nz, p0, prev);
        }
      }
      run_steps::ForEachRunEnd(nz, p0, prev, [&](uint32_t k, int e) { count_run(k, g[e]); });
    }
    // The run at the chunk's end.
    if (threadIdx.x == 0 && last < count - 1) {
      count_run(static_cast<uint32_t>(count - 1 - last), kNoRunValue);
    }
  }
  // The empty slices past the chunk's end; without runs, every slice.
  for (int32_t t = threadIdx.x; states != nullptr && t < kSliceThreads; t += kCountThreads) {
    if (zero == run_steps::kNoZero) {
      states[t] = 0;
    } else if (t * per >= count) {
      states[t] = static_cast<uint32_t>(count - 1 - last);
    }
  }
  if (zero == run_steps::kNoZero) return;
  __syncthreads();
  if (threadIdx.x < kRunCounters) {
    uint32_t sum = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) sum += warp_counts[w][threadIdx.x];
    if (sum != 0) atomicAdd(&counters[uint64_t{s} * kRunCounters + threadIdx.x], sum);
  }
}

__global__ void TokenHistogramKernel(const Segment* segments, uint32_t num_segments,
                                     const uint32_t* counters, uint32_t* zero_runs,
                                     uint32_t* run_values, uint64_t* extra_bits) {
  const uint32_t s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= num_segments) return;
  const Segment& seg = segments[s];
  const uint32_t* count = counters + uint64_t{s} * kRunCounters;
  uint64_t extra = 0;
  if (zero_runs && seg.highest_lossless != 0) {
    extra = run_steps::PatchTokenHistogram(count, seg.radius, false,
                                           zero_runs + uint64_t{s} * kHistogramBins);
  }
  // (The radius check only keeps a wrong table inside its histogram.)
  if (run_values && seg.highest_lossless == format::kLosslessRunValues &&
      seg.radius <= format::kMaxRadiusWithRunValues) {
    extra = run_steps::PatchTokenHistogram(count, seg.radius, true,
                                           run_values + uint64_t{s} * kHistogramBins);
  }
  extra_bits[s] = extra;
}

__global__ void __launch_bounds__(kSliceThreads)
    RunChunkBitsKernel(const Segment* segments, uint32_t num_segments, const uint16_t* symbols,
                       const uint8_t* lengths, uint32_t* slice_states, uint32_t* chunk_bits,
                       uint64_t* chunk_words, uint64_t* chunk_gaps) {
  using Reduce = cub::BlockReduce<uint32_t, kSliceThreads>;
  __shared__ typename Reduce::TempStorage temp;
  const uint32_t s = SegmentOfChunk(segments, num_segments, blockIdx.x);
  const Segment& seg = segments[s];
  const uint64_t c = blockIdx.x - seg.chunk_base;
  Slice sl = CutSlice(seg, symbols, c);
  uint32_t& state = StateOf(slice_states, seg, c);
  if (sl.zero != run_steps::kNoZero) {
    sl.before = BeforeOf(state);
    FinishSlice(sl);
  }
  const uint8_t* len = lengths + uint64_t{s} * kHistogramBins;
  uint32_t bits = 0;
  sl.Walk([&](uint32_t sym, int extra, uint32_t, uint32_t) { bits += len[sym] + extra; });
  state = sl.before | bits << 16;
  bits = Reduce(temp).Sum(bits);
  if (threadIdx.x == 0) {
    chunk_bits[blockIdx.x] = bits;
    chunk_words[blockIdx.x] = (bits + 31) / 32;
    chunk_gaps[blockIdx.x] =
        seg.gap_array ? (bits + seg.subsequence_bits - 1) / seg.subsequence_bits : 0;
  }
}

// encode_kernels.cu's EncodeKernel, walking tokens: a token is its codeword
// and extra bits as one value of at most 32 bits (20 + 12), and no longer
// than the shortest subsequence (32 bits), so the gap logic is unchanged.
// One block an SM stated: without it ptxas keeps this kernel to 32
// registers and spills the walk's token state.
__global__ void __launch_bounds__(kSliceThreads, 1)
    RunEncodeKernel(const Segment* segments, uint32_t num_segments, const Item* items,
                    const FrameLayout* layouts, const uint16_t* symbols, const uint8_t* lengths,
                    const uint32_t* codes, const uint32_t* slice_states,
                    const uint32_t* chunk_bits, const uint64_t* word_prefix,
                    const uint64_t* gap_prefix) {
  using Scan = cub::BlockScan<uint32_t, kSliceThreads>;
  __shared__ typename Scan::TempStorage temp;
  extern __shared__ uint32_t words[];

  const uint64_t chunk = blockIdx.x;
  const uint32_t s = SegmentOfChunk(segments, num_segments, chunk);
  const Segment& seg = segments[s];
  if (items[seg.item].overflow) return;  // uniform across the block
  const uint64_t c = chunk - seg.chunk_base;
  Slice sl = CutSlice(seg, symbols, c);
  const uint32_t state = StateOf(slice_states, seg, c);
  if (sl.zero != run_steps::kNoZero) {
    sl.before = BeforeOf(state);
    FinishSlice(sl);
  }
  const FrameLayout& layout = layouts[s];
  uint8_t* archive = items[seg.item].archive;
  const uint8_t* len = lengths + uint64_t{s} * kHistogramBins;
  const uint32_t* code = codes + uint64_t{s} * kHistogramBins;
  const uint32_t total_bits = chunk_bits[chunk];
  const uint32_t total_words = (total_bits + 31) / 32;

  for (uint32_t w = threadIdx.x; w < total_words; w += kSliceThreads) words[w] = 0;
  uint32_t pos;
  Scan(temp).ExclusiveSum(BitsOf(state), pos);
  __syncthreads();  // words[] zeroed

  uint8_t* gaps = seg.gap_array ? archive + layout.section_offset[format::kGapArray] +
                                      (gap_prefix[chunk] - gap_prefix[seg.chunk_base])
                                : nullptr;
  static_assert(format::kMaxCodeLengthWithRuns + format::kRunClasses <= 32 &&
                format::kRunValueClasses - 1 <= format::kRunClasses);
  run_steps::WordPacker<uint32_t> packer(pos / 32, pos % 32);
  run_steps::GapWriter gap_writer(pos, seg.subsequence_bits);
  auto store = [&](uint32_t i, uint32_t v) { words[i] = v; };
  auto merge = [&](uint32_t i, uint32_t v) { atomicOr(&words[i], v); };
  auto gap = [&](uint32_t j, uint32_t entry) { gaps[j] = static_cast<uint8_t>(entry); };
  // A token's codeword and extra bits as one value of l <= 32 bits; an
  // absent token packs as nothing (l = 0) from the same call site.
  auto put = [&](bool present, uint64_t value, uint32_t l) {
    packer.Put(present ? value : 0, present ? l : 0, store, merge);
    if (gaps && present) gap_writer.Put(l, gap);
  };
  sl.WalkInStep([&](const run_steps::TokensAt& t, uint32_t next) {
    if (t.long_runs != 0) {
      const uint32_t long_symbol = LongRunSymbol(sl.radius);
      for (uint32_t i = 0; i < t.long_runs; ++i) {
        put(true, uint64_t{code[long_symbol]} << kLongRunBits | ((1u << kLongRunBits) - 1),
            len[long_symbol] + kLongRunBits);
      }
    }
    put(t.has_run, uint64_t{code[t.run_symbol]} << t.run_extra_bits | t.run_extra,
        len[t.run_symbol] + t.run_extra_bits);
    const uint32_t own = next == kNoRunValue ? 0 : next;
    put(t.has_own, code[own], len[own]);
  });
  packer.Finish(merge);
  __syncthreads();

  uint32_t* out = reinterpret_cast<uint32_t*>(archive + layout.section_offset[format::kBitstream]) +
                  (word_prefix[chunk] - word_prefix[seg.chunk_base]);
  for (uint32_t i = threadIdx.x; i < total_words; i += kSliceThreads) out[i] = words[i];
  if (threadIdx.x == 0) {
    uint8_t* index = archive + layout.section_offset[format::kChunkIndex];
    const uint64_t groups = (seg.num_chunks + seg.chunk_group - 1) / seg.chunk_group;
    StoreBytes<uint32_t>(index + groups * 8 + c * 4, total_bits);
    if (c % seg.chunk_group == 0) {
      StoreBytes<uint64_t>(index + (c / seg.chunk_group) * 8,
                           word_prefix[chunk] - word_prefix[seg.chunk_base]);
    }
  }
}

}  // namespace

cudaError_t LaunchRunCounters(const Segment* segments, uint32_t num_segments, uint64_t num_chunks,
                              const uint16_t* symbols, uint32_t* counters, uint32_t* slice_states,
                              cudaStream_t stream) {
  if (cudaError_t e = cudaMemsetAsync(
          counters, 0, uint64_t{num_segments} * kRunCounters * sizeof(uint32_t), stream);
      e != cudaSuccess) {
    return e;
  }
  if (num_chunks == 0) return cudaSuccess;
  RunCountersKernel<<<num_chunks, kCountThreads, 0, stream>>>(segments, num_segments, symbols,
                                                              counters, slice_states);
  return cudaGetLastError();
}

cudaError_t LaunchTokenHistogram(const Segment* segments, uint32_t num_segments,
                                 const uint32_t* counters, uint32_t* zero_runs,
                                 uint32_t* run_values, uint64_t* extra_bits,
                                 cudaStream_t stream) {
  TokenHistogramKernel<<<(num_segments + 127) / 128, 128, 0, stream>>>(
      segments, num_segments, counters, zero_runs, run_values, extra_bits);
  return cudaGetLastError();
}

cudaError_t LaunchRunChunkBits(const Segment* segments, uint32_t num_segments, uint64_t num_chunks,
                               const uint16_t* symbols, const uint8_t* lengths,
                               uint32_t* slice_states, uint32_t* chunk_bits, uint64_t* chunk_words,
                               uint64_t* chunk_gaps, cudaStream_t stream) {
  if (num_chunks == 0) return cudaSuccess;
  RunChunkBitsKernel<<<num_chunks, kSliceThreads, 0, stream>>>(
      segments, num_segments, symbols, lengths, slice_states, chunk_bits, chunk_words, chunk_gaps);
  return cudaGetLastError();
}

cudaError_t LaunchRunEncode(const Segment* segments, uint32_t num_segments, uint64_t num_chunks,
                            uint32_t max_chunk_symbols, uint32_t max_code_length, const Item* items,
                            const FrameLayout* layouts, const uint16_t* symbols,
                            const uint8_t* lengths, const uint32_t* codes,
                            const uint32_t* slice_states, const uint32_t* chunk_bits,
                            const uint64_t* word_prefix, const uint64_t* gap_prefix,
                            cudaStream_t stream) {
  if (num_chunks == 0) return cudaSuccess;
  // A chunk's tokens take at most its positions' max_code_length bits each
  // (a token of class c covers 2^c positions, a run-value token 2^c + 1,
  // with at most 20 + c bits).
  const size_t smem = (uint64_t{max_chunk_symbols} * max_code_length + 31) / 32 * 4;
  cudaError_t e = cudaFuncSetAttribute(RunEncodeKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(smem));
  if (e != cudaSuccess) return e;
  RunEncodeKernel<<<num_chunks, kSliceThreads, smem, stream>>>(
      segments, num_segments, items, layouts, symbols, lengths, codes, slice_states, chunk_bits,
      word_prefix, gap_prefix);
  return cudaGetLastError();
}

}  // namespace ebzip::gpu
