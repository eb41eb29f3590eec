// Chunked Huffman encoding (FORMAT.md §10.5): each chunk's bit length, then
// one block per chunk packs its codewords in shared memory, records the gap
// array entries of its subsequences, and writes the words out coalesced.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "gpu/device_util.cuh"
#include "gpu/kernels.h"

namespace ebzip::gpu {
namespace {

// Threads per chunk. A small array has a handful of chunks, and each thread
// walks its share of the chunk's symbols with dependent loads (symbol, then
// its length): more threads per chunk, shorter walks.
constexpr int kBitsThreads = 256;
constexpr int kEncodeThreads = 1024;

// Calls f(symbol) for sym[begin, end) in order, 8 symbols to a 16-byte load
// where the address allows.
template <class F>
__device__ void ForEachSymbol(const uint16_t* sym, uint32_t begin, uint32_t end, F f) {
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

__global__ void __launch_bounds__(kBitsThreads)
    ChunkBitsKernel(const Segment* segments, uint32_t num_segments, const uint16_t* symbols,
                    const uint8_t* lengths, uint32_t* chunk_bits, uint64_t* chunk_words,
                    uint64_t* chunk_gaps) {
  using Reduce = cub::BlockReduce<uint32_t, kBitsThreads>;
  __shared__ typename Reduce::TempStorage temp;
  const uint64_t chunk = blockIdx.x;
  const uint32_t s = SegmentOfChunk(segments, num_segments, chunk);
  const Segment& seg = segments[s];
  const uint64_t c = chunk - seg.chunk_base;
  const uint64_t begin = c * seg.chunk_symbols;
  const uint32_t count = static_cast<uint32_t>(min(seg.positions - begin, uint64_t{seg.chunk_symbols}));
  const uint16_t* sym = symbols + seg.symbol_base + begin;
  const uint8_t* len = lengths + uint64_t{s} * 65536;
  uint32_t bits = 0;
  const auto add = [&](uint32_t symbol) { bits += len[symbol]; };
  if (reinterpret_cast<uintptr_t>(sym) % 16 == 0) {
    // Lanes take 8 neighbouring symbols each: a warp reads 512 bytes at once.
    const uint32_t whole = count / 8 * 8;
    for (uint32_t i = threadIdx.x * 8; i < whole; i += kBitsThreads * 8) {
      ForEachSymbol(sym, i, i + 8, add);
    }
    if (threadIdx.x < count - whole) add(sym[whole + threadIdx.x]);
  } else {
    for (uint32_t i = threadIdx.x; i < count; i += kBitsThreads) add(sym[i]);
  }
  bits = Reduce(temp).Sum(bits);
  if (threadIdx.x == 0) {
    chunk_bits[chunk] = bits;
    chunk_words[chunk] = (bits + 31) / 32;
    chunk_gaps[chunk] =
        seg.gap_array ? (bits + seg.subsequence_bits - 1) / seg.subsequence_bits : 0;
  }
}

__global__ void __launch_bounds__(kEncodeThreads)
    EncodeKernel(const Segment* segments, uint32_t num_segments, const Item* items,
                 const FrameLayout* layouts, const uint16_t* symbols, const uint8_t* lengths,
                 const uint32_t* codes, const uint32_t* chunk_bits, const uint64_t* word_prefix,
                 const uint64_t* gap_prefix) {
  using Scan = cub::BlockScan<uint32_t, kEncodeThreads>;
  __shared__ typename Scan::TempStorage temp;
  extern __shared__ uint32_t words[];

  const uint64_t chunk = blockIdx.x;
  const uint32_t s = SegmentOfChunk(segments, num_segments, chunk);
  const Segment& seg = segments[s];
  const FrameLayout& layout = layouts[s];
  if (items[seg.item].overflow) return;
  uint8_t* archive = items[seg.item].archive;
  const uint64_t c = chunk - seg.chunk_base;
  const uint64_t begin = c * seg.chunk_symbols;
  const uint32_t count = static_cast<uint32_t>(min(seg.positions - begin, uint64_t{seg.chunk_symbols}));
  const uint16_t* sym = symbols + seg.symbol_base + begin;
  const uint8_t* len = lengths + uint64_t{s} * 65536;
  const uint32_t* code = codes + uint64_t{s} * 65536;
  const uint32_t total_bits = chunk_bits[chunk];
  const uint32_t total_words = (total_bits + 31) / 32;

  for (uint32_t w = threadIdx.x; w < total_words; w += kEncodeThreads) words[w] = 0;
  // Each thread packs a contiguous run of symbols.
  const uint32_t per = (count + kEncodeThreads - 1) / kEncodeThreads;
  const uint32_t my_begin = min(count, threadIdx.x * per);
  const uint32_t my_end = min(count, my_begin + per);
  uint32_t my_bits = 0;
  ForEachSymbol(sym, my_begin, my_end, [&](uint32_t symbol) { my_bits += len[symbol]; });
  uint32_t pos;
  Scan(temp).ExclusiveSum(my_bits, pos);
  __syncthreads();  // words[] zeroed

  // The run's codewords gather in a 64-bit register and leave it a word at a
  // time. Only the run's first and last words can hold a neighbour's bits
  // too: they take an atomicOr, the words between a plain store.
  const uint32_t sub = seg.subsequence_bits;
  uint8_t* gaps = seg.gap_array ? archive + layout.section_offset[format::kGapArray] +
                                      (gap_prefix[chunk] - gap_prefix[seg.chunk_base])
                                : nullptr;
  // Carrying `boundary` assumes a codeword crosses at most one subsequence
  // start: codes are shorter than the shortest subsequence (32 bits).
  static_assert(format::kMaxCodeLength < 32);
  uint64_t acc = 0;
  uint32_t have = pos % 32;  // bits of word w so far (the first ones: the previous run's)
  uint32_t w = pos / 32;
  bool shared_word = have != 0;
  // The first subsequence start at or after pos.
  uint32_t boundary = (pos + sub - 1) / sub * sub;
  ForEachSymbol(sym, my_begin, my_end, [&](uint32_t symbol) {
    const uint32_t l = len[symbol];
    acc = acc << l | code[symbol];
    have += l;
    if (have >= 32) {
      have -= 32;
      const uint32_t word = static_cast<uint32_t>(acc >> have);
      if (shared_word) {
        atomicOr(&words[w], word);
        shared_word = false;
      } else {
        words[w] = word;
      }
      ++w;
    }
    if (gaps) {
      // Every subsequence start lies in exactly one codeword; the gap is the
      // distance to the next codeword start (or to the chunk's end).
      if (boundary == pos) {
        gaps[boundary / sub] = 0;
        boundary += sub;
      }
      if (boundary < pos + l) {  // then also below total_bits
        gaps[boundary / sub] = static_cast<uint8_t>(pos + l - boundary);
        boundary += sub;
      }
    }
    pos += l;
  });
  if (have > 0) atomicOr(&words[w], static_cast<uint32_t>(acc << (32 - have)));
  __syncthreads();

  uint32_t* out = reinterpret_cast<uint32_t*>(archive + layout.section_offset[format::kBitstream]) +
                  (word_prefix[chunk] - word_prefix[seg.chunk_base]);
  for (uint32_t w = threadIdx.x; w < total_words; w += kEncodeThreads) out[w] = words[w];
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

cudaError_t LaunchChunkBits(const Segment* segments, uint32_t num_segments, uint64_t num_chunks,
                            const uint16_t* symbols, const uint8_t* lengths, uint32_t* chunk_bits,
                            uint64_t* chunk_words, uint64_t* chunk_gaps, cudaStream_t stream) {
  ChunkBitsKernel<<<num_chunks, kBitsThreads, 0, stream>>>(segments, num_segments, symbols, lengths,
                                                           chunk_bits, chunk_words, chunk_gaps);
  return cudaGetLastError();
}

cudaError_t LaunchEncode(const Segment* segments, uint32_t num_segments, uint64_t num_chunks,
                         uint32_t max_chunk_symbols, uint32_t max_code_length, const Item* items,
                         const FrameLayout* layouts, const uint16_t* symbols,
                         const uint8_t* lengths, const uint32_t* codes, const uint32_t* chunk_bits,
                         const uint64_t* word_prefix, const uint64_t* gap_prefix,
                         cudaStream_t stream) {
  const size_t smem = (uint64_t{max_chunk_symbols} * max_code_length + 31) / 32 * 4;
  cudaError_t e = cudaFuncSetAttribute(EncodeKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(smem));
  if (e != cudaSuccess) return e;
  EncodeKernel<<<num_chunks, kEncodeThreads, smem, stream>>>(segments, num_segments, items, layouts,
                                                             symbols, lengths, codes, chunk_bits,
                                                             word_prefix, gap_prefix);
  return cudaGetLastError();
}

}  // namespace ebzip::gpu
