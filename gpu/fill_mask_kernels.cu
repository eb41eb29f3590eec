// The fill mask of one frame (FORMAT.md §15.6) on the GPU, bit-identical to
// codec/fill_mask.cc.
//
// Encoding. X's run boundaries go to a bitmap, a thread per 64 elements (a
// "word"), 256 words to a block's tile. A run belongs to the word where it
// ends, so each word needs where the run in progress began: the last
// boundary before it, an exclusive max-scan over tiles and then within the
// tile (gpu/run_steps.h). Walks over each word's boundaries then count the
// tokens and their class histogram; one thread builds the 13-symbol code
// (run_steps::MaskCodeLengths, the host's BuildCodeLengths); walks sum each
// word's bits, note the bit offset of every 4096th token (a mask chunk's
// start), and pack the tokens at their chunk's words. Every count lives on
// the device: kernels over chunks loop over the most the frame can have.
//
// Decoding. A thread per mask chunk decodes its 4096 tokens' lengths; a
// block per chunk scans them to their ends, and each end toggles a bit of a
// bitmap; X is the bitmap's prefix XOR (within words, then a scan of the
// words' parities); the rows' XOR is undone by a prefix XOR down each column,
// cut into groups of rows so that groups and columns run in parallel.
#include <algorithm>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include "gpu/device_util.cuh"
#include "gpu/run_kernels.h"
#include "gpu/run_steps.h"
#include "gpu/workspace_carver.h"

namespace ebzip::gpu {
namespace {

using run_steps::MaskCode;
static_assert(run_steps::kCheckInvalidToken == kMaskInvalidToken &&
              run_steps::kCheckChunkLength == kMaskChunkLength);
using run_steps::kMaskClasses;
using run_steps::kMaxMaskRun;
using run_steps::MaskRun;

constexpr int kMaskThreads = 256;  // words per tile, a thread each
constexpr uint32_t kChunkTokens = format::kMaskChunkTokens;
constexpr uint64_t kHeaderBytes = format::kMaskHeaderBytes;
constexpr uint32_t kLoopBlocks = 1024;  // grid of the kernels over device-known counts
constexpr int kTokenThreads = 128;      // decode: a chunk per thread
constexpr int kTokensPerThread = kChunkTokens / kMaskThreads;  // decode: toggles
constexpr int kLookupBits = 10;                         // decode: codes up to 10 bits in one lookup
constexpr uint64_t kColumnThreads = uint64_t{1} << 18;  // row undo: columns x groups

__host__ __device__ uint64_t Words(uint64_t n) { return (n + 63) / 64; }
__host__ __device__ uint64_t Tiles(uint64_t n) {
  return (Words(n) + kMaskThreads - 1) / kMaskThreads;
}
// format::MaskChunks, for the device too.
__host__ __device__ uint64_t MaskChunks(uint64_t tokens) {
  return (tokens + kChunkTokens - 1) / kChunkTokens;
}
// Tokens of n elements at most: n + 1 runs, and a split pair per 8190
// elements of a long run.
__host__ __device__ uint64_t MaxTokens(uint64_t n) { return n + 1 + 2 * (n / kMaxMaskRun); }
__host__ __device__ uint64_t MaxChunks(uint64_t n) { return MaskChunks(MaxTokens(n)); }

struct MaxOp {
  __host__ __device__ uint64_t operator()(uint64_t a, uint64_t b) const { return a > b ? a : b; }
};

// What the encoder learns on the device.
struct EncodeState {
  uint64_t tokens;
  uint64_t chunks;
  uint64_t total_words;
  uint32_t histogram[kMaskClasses];
  MaskCode code;
  uint8_t* section;  // LaunchEncodeFillMask's destination
};

struct EncodeBuffers {
  EncodeState* state;
  uint64_t* boundaries;  // a bit per element
  uint64_t* word_start;  // where the run in progress at each word began
  uint32_t* word_tokens;
  uint32_t* word_bits;
  uint64_t* tile_last;   // last boundary of each tile (0: none)
  uint64_t* tile_start;  // its exclusive max-scan
  uint64_t* tile_tokens;
  uint64_t* tile_token0;
  uint64_t* tile_bits;
  uint64_t* tile_bit0;
  uint64_t* chunk_bit0;  // bit offset (in the chunks' bits laid end to end) of each chunk
  uint32_t* chunk_bits;
  uint64_t* chunk_words;
  uint64_t* chunk_word0;
  void* cub_temp;
  size_t cub_temp_bytes;
};

cudaError_t EncodeCubBytes(uint64_t n, size_t* bytes) {
  size_t a = 0, b = 0, c = 0;
  const uint64_t tiles = Tiles(n);
  if (cudaError_t e = cub::DeviceScan::ExclusiveScan(nullptr, a, static_cast<uint64_t*>(nullptr),
                                                     static_cast<uint64_t*>(nullptr), MaxOp(),
                                                     uint64_t{0}, tiles);
      e != cudaSuccess) {
    return e;
  }
  if (cudaError_t e = cub::DeviceScan::ExclusiveSum(nullptr, b, static_cast<uint64_t*>(nullptr),
                                                    static_cast<uint64_t*>(nullptr), tiles);
      e != cudaSuccess) {
    return e;
  }
  if (cudaError_t e = cub::DeviceScan::ExclusiveSum(nullptr, c, static_cast<uint64_t*>(nullptr),
                                                    static_cast<uint64_t*>(nullptr), MaxChunks(n));
      e != cudaSuccess) {
    return e;
  }
  *bytes = std::max({a, b, c});
  return cudaSuccess;
}

EncodeBuffers CarveEncode(uint64_t n, size_t cub_bytes, void* base, size_t* size) {
  const uint64_t words = Words(n), tiles = Tiles(n), chunks = MaxChunks(n);
  WorkspaceCarver d(base);
  EncodeBuffers b{};
  b.state = d.Take<EncodeState>(1);
  b.boundaries = d.Take<uint64_t>(words);
  b.word_start = d.Take<uint64_t>(words);
  b.word_tokens = d.Take<uint32_t>(words);
  b.word_bits = d.Take<uint32_t>(words);
  b.tile_last = d.Take<uint64_t>(tiles);
  b.tile_start = d.Take<uint64_t>(tiles);
  b.tile_tokens = d.Take<uint64_t>(tiles);
  b.tile_token0 = d.Take<uint64_t>(tiles);
  b.tile_bits = d.Take<uint64_t>(tiles);
  b.tile_bit0 = d.Take<uint64_t>(tiles);
  b.chunk_bit0 = d.Take<uint64_t>(chunks + 1);
  b.chunk_bits = d.Take<uint32_t>(chunks);
  b.chunk_words = d.Take<uint64_t>(chunks);
  b.chunk_word0 = d.Take<uint64_t>(chunks);
  b.cub_temp = d.Take<uint8_t>(cub_bytes);
  b.cub_temp_bytes = cub_bytes;
  if (size) *size = d.size();
  return b;
}

// Sums `v` over the block into *out (one thread's atomicAdd per warp).
template <typename T>
__device__ void WarpSumInto(T v, T* out) {
  for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xFFFFFFFFu, v, d);
  if (threadIdx.x % 32 == 0 && v != 0) atomicAdd(out, v);
}

// --- Encoding.

__global__ void __launch_bounds__(kMaskThreads)
    BoundaryKernel(const uint8_t* mask, uint64_t n, uint64_t row, uint64_t* boundaries,
                   uint64_t* tile_last) {
  using Reduce = cub::BlockReduce<uint64_t, kMaskThreads>;
  __shared__ typename Reduce::TempStorage temp;
  const uint64_t w = uint64_t{blockIdx.x} * kMaskThreads + threadIdx.x;
  uint64_t bits = 0;
  if (w < Words(n)) {
    bits = run_steps::BoundaryWord([&](uint64_t i) { return mask[i]; }, w, n, row);
    boundaries[w] = bits;
  }
  const uint64_t last = Reduce(temp).Reduce(run_steps::LastBoundary(bits, w, 0), MaxOp());
  if (threadIdx.x == 0) tile_last[blockIdx.x] = last;
}

// Each word's start (the run in progress at its first element) from its
// tile's and the block's max-scans; also stores it for the later walks.
__device__ uint64_t WordStart(uint64_t bits, uint64_t w, uint64_t tile_start) {
  using Scan = cub::BlockScan<uint64_t, kMaskThreads>;
  __shared__ typename Scan::TempStorage temp;
  uint64_t before;
  Scan(temp).ExclusiveScan(run_steps::LastBoundary(bits, w, 0), before, uint64_t{0}, MaxOp());
  return before > tile_start ? before : tile_start;
}

__global__ void __launch_bounds__(kMaskThreads)
    CountKernel(uint64_t n, const uint64_t* boundaries, const uint64_t* tile_start,
                uint64_t* word_start, uint32_t* word_tokens, uint64_t* tile_tokens,
                EncodeState* state) {
  using Reduce = cub::BlockReduce<uint64_t, kMaskThreads>;
  __shared__ typename Reduce::TempStorage temp;
  __shared__ uint32_t histogram[kMaskClasses];
  if (threadIdx.x < kMaskClasses) histogram[threadIdx.x] = 0;
  const uint64_t w = uint64_t{blockIdx.x} * kMaskThreads + threadIdx.x;
  const bool active = w < Words(n);
  const uint64_t bits = active ? boundaries[w] : 0;
  const uint64_t start = WordStart(bits, w, tile_start[blockIdx.x]);
  uint32_t tokens = 0;
  uint32_t mine[kMaskClasses] = {};
  if (active) {
    word_start[w] = start;
    tokens = run_steps::CountWordTokens(bits, w, n, start, mine);
    word_tokens[w] = tokens;
  }
  __syncthreads();  // histogram zeroed
#pragma unroll
  for (int c = 0; c < kMaskClasses; ++c) WarpSumInto(mine[c], &histogram[c]);
  const uint64_t sum = Reduce(temp).Sum(uint64_t{tokens});
  if (threadIdx.x == 0) tile_tokens[blockIdx.x] = sum;
  __syncthreads();
  if (threadIdx.x < kMaskClasses && histogram[threadIdx.x] != 0) {
    atomicAdd(&state->histogram[threadIdx.x], histogram[threadIdx.x]);
  }
}

__global__ void CodeKernel(uint64_t tiles, const uint64_t* tile_tokens, const uint64_t* tile_token0,
                           EncodeState* state) {
  if (threadIdx.x != 0) return;
  const uint64_t tokens = tile_token0[tiles - 1] + tile_tokens[tiles - 1];
  state->tokens = tokens;
  state->chunks = MaskChunks(tokens);
  MaskCode code;
  run_steps::MaskCodeLengths(state->histogram, code.lengths);
  run_steps::FinishMaskCode(&code);
  state->code = code;
}

__global__ void __launch_bounds__(kMaskThreads)
    BitsKernel(uint64_t n, const uint64_t* boundaries, const uint64_t* word_start,
               uint32_t* word_bits, uint64_t* tile_bits, const EncodeState* state) {
  using Reduce = cub::BlockReduce<uint64_t, kMaskThreads>;
  __shared__ typename Reduce::TempStorage temp;
  __shared__ MaskCode code;
  if (threadIdx.x == 0) code = state->code;
  __syncthreads();
  const uint64_t w = uint64_t{blockIdx.x} * kMaskThreads + threadIdx.x;
  uint64_t bits = 0;
  if (w < Words(n)) {
    bits = run_steps::WordBits(code, boundaries[w], w, n, word_start[w]);
    word_bits[w] = static_cast<uint32_t>(bits);
  }
  const uint64_t sum = Reduce(temp).Sum(bits);
  if (threadIdx.x == 0) tile_bits[blockIdx.x] = sum;
}

// A word's first token and its bit offset (chunks laid end to end): the
// tile's, plus the block's exclusive sums.
__device__ void WordOffsets(bool active, uint64_t w, const uint32_t* word_tokens,
                            const uint32_t* word_bits, uint64_t tile_token0, uint64_t tile_bit0,
                            uint64_t* token, uint64_t* bit) {
  using Scan = cub::BlockScan<uint64_t, kMaskThreads>;
  __shared__ typename Scan::TempStorage temp;
  uint64_t t, b;
  Scan(temp).ExclusiveSum(active ? uint64_t{word_tokens[w]} : 0, t);
  __syncthreads();
  Scan(temp).ExclusiveSum(active ? uint64_t{word_bits[w]} : 0, b);
  *token = tile_token0 + t;
  *bit = tile_bit0 + b;
}

__global__ void __launch_bounds__(kMaskThreads)
    ChunkStartKernel(uint64_t n, const uint64_t* boundaries, const uint64_t* word_start,
                     const uint32_t* word_tokens, const uint32_t* word_bits,
                     const uint64_t* tile_token0, const uint64_t* tile_bit0,
                     const EncodeState* state, uint64_t* chunk_bit0) {
  __shared__ MaskCode code;
  if (threadIdx.x == 0) code = state->code;
  const uint64_t w = uint64_t{blockIdx.x} * kMaskThreads + threadIdx.x;
  const bool active = w < Words(n);
  uint64_t t, g;
  WordOffsets(active, w, word_tokens, word_bits, tile_token0[blockIdx.x], tile_bit0[blockIdx.x], &t,
              &g);  // its barriers publish `code`
  if (!active) return;
  run_steps::WordChunkStarts(code, boundaries[w], w, n, word_start[w], t, g,
                             [&](uint64_t c, uint64_t bit) { chunk_bit0[c] = bit; });
}

__global__ void ChunkBitsKernel(uint64_t tiles, uint64_t max_chunks, const uint64_t* tile_bits,
                                const uint64_t* tile_bit0, const EncodeState* state,
                                const uint64_t* chunk_bit0, uint32_t* chunk_bits,
                                uint64_t* chunk_words) {
  const uint64_t chunks = state->chunks;
  const uint64_t total = tile_bit0[tiles - 1] + tile_bits[tiles - 1];
  for (uint64_t c = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; c < max_chunks;
       c += uint64_t{gridDim.x} * blockDim.x) {
    if (c < chunks) {
      const uint64_t end = c + 1 < chunks ? chunk_bit0[c + 1] : total;
      const uint64_t bits = end - chunk_bit0[c];
      chunk_bits[c] = static_cast<uint32_t>(bits);
      chunk_words[c] = (bits + 31) / 32;
    } else {
      chunk_words[c] = 0;
    }
  }
}

// The section's length and token count, once the chunks' words are known.
__global__ void SizesKernel(uint64_t max_chunks, const uint64_t* chunk_words,
                            const uint64_t* chunk_word0, EncodeState* state,
                            uint64_t* section_bytes, uint64_t* tokens) {
  if (threadIdx.x != 0) return;
  const uint64_t total = chunk_word0[max_chunks - 1] + chunk_words[max_chunks - 1];
  state->total_words = total;
  *section_bytes = kHeaderBytes + 4 * state->chunks + 4 * total;
  *tokens = state->tokens;
}

__global__ void DestinationKernel(EncodeState* state, uint8_t* section) {
  if (threadIdx.x == 0) state->section = section;
}

// Writes the section's fixed part (code lengths, zeros, chunk lengths) and
// zeroes its bitstream's words (packing ORs into the words it shares).
__global__ void FixedPartKernel(const EncodeState* state, uint8_t* const* destination,
                                const uint32_t* chunk_bits) {
  uint8_t* section = *destination;
  if (section == nullptr) return;  // the archive overflowed: nothing is written
  const uint64_t chunks = state->chunks, total = state->total_words;
  const uint64_t first = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const uint64_t stride = uint64_t{gridDim.x} * blockDim.x;
  if (first < kHeaderBytes) {
    section[first] = first < kMaskClasses ? state->code.lengths[first] : 0;
  }
  for (uint64_t c = first; c < chunks; c += stride) {
    StoreBytes<uint32_t>(section + kHeaderBytes + 4 * c, chunk_bits[c]);
  }
  uint32_t* words = reinterpret_cast<uint32_t*>(section + kHeaderBytes + 4 * chunks);
  for (uint64_t i = first; i < total; i += stride) words[i] = 0;
}

__global__ void __launch_bounds__(kMaskThreads)
    PackKernel(uint64_t n, const uint64_t* boundaries, const uint64_t* word_start,
               const uint32_t* word_tokens, const uint32_t* word_bits, const uint64_t* tile_token0,
               const uint64_t* tile_bit0, const EncodeState* state, const uint64_t* chunk_bit0,
               const uint64_t* chunk_word0, uint8_t* const* destination) {
  __shared__ MaskCode code;
  if (threadIdx.x == 0) code = state->code;
  const uint64_t w = uint64_t{blockIdx.x} * kMaskThreads + threadIdx.x;
  const bool active = w < Words(n);
  uint64_t t, g;
  WordOffsets(active, w, word_tokens, word_bits, tile_token0[blockIdx.x], tile_bit0[blockIdx.x], &t,
              &g);
  if (!active || word_tokens[w] == 0 || *destination == nullptr) return;
  uint32_t* words = reinterpret_cast<uint32_t*>(*destination + kHeaderBytes + 4 * state->chunks);
  auto store = [&](uint64_t i, uint32_t v) { words[i] = v; };
  auto merge = [&](uint64_t i, uint32_t v) { atomicOr(&words[i], v); };
  run_steps::PackWord(
      code, boundaries[w], w, n, word_start[w], t, g, [&](uint64_t c) { return chunk_bit0[c]; },
      [&](uint64_t c) { return chunk_word0[c]; }, store, merge);
}

// --- Decoding.

struct DecodeState {
  MaskCode code;
  uint64_t total_words;
};

struct DecodeBuffers {
  DecodeState* state;
  uint64_t* chunk_words;
  uint64_t* chunk_word0;
  uint64_t* chunk_elems;
  uint64_t* chunk_elem0;
  uint16_t* lengths;  // each token's
  uint64_t* toggles;  // a bit per element
  uint32_t* parity;
  uint32_t* parity0;
  uint8_t* group_xor;  // row undo: per group of rows and column
  void* cub_temp;
  size_t cub_temp_bytes;
};

using run_steps::RowGroups;
RowGroups GroupsOf(uint64_t n, uint64_t row) { return run_steps::GroupsOf(n, row, kColumnThreads); }

cudaError_t DecodeCubBytes(uint64_t n, uint64_t tokens, size_t* bytes) {
  size_t a = 0, b = 0;
  if (cudaError_t e =
          cub::DeviceScan::ExclusiveSum(nullptr, a, static_cast<uint64_t*>(nullptr),
                                        static_cast<uint64_t*>(nullptr), MaskChunks(tokens));
      e != cudaSuccess) {
    return e;
  }
  if (cudaError_t e = cub::DeviceScan::ExclusiveSum(nullptr, b, static_cast<uint32_t*>(nullptr),
                                                    static_cast<uint32_t*>(nullptr), Words(n));
      e != cudaSuccess) {
    return e;
  }
  *bytes = std::max(a, b);
  return cudaSuccess;
}

DecodeBuffers CarveDecode(uint64_t n, uint64_t row, uint64_t tokens, size_t cub_bytes, void* base,
                          size_t* size) {
  const uint64_t chunks = MaskChunks(tokens), words = Words(n);
  const RowGroups g = GroupsOf(n, row);
  WorkspaceCarver d(base);
  DecodeBuffers b{};
  b.state = d.Take<DecodeState>(1);
  b.chunk_words = d.Take<uint64_t>(chunks);
  b.chunk_word0 = d.Take<uint64_t>(chunks);
  b.chunk_elems = d.Take<uint64_t>(chunks);
  b.chunk_elem0 = d.Take<uint64_t>(chunks);
  b.lengths = d.Take<uint16_t>(tokens);
  b.toggles = d.Take<uint64_t>(words);
  b.parity = d.Take<uint32_t>(words);
  b.parity0 = d.Take<uint32_t>(words);
  b.group_xor = d.Take<uint8_t>(g.groups > 1 ? g.groups * row : 0);
  b.cub_temp = d.Take<uint8_t>(cub_bytes);
  b.cub_temp_bytes = cub_bytes;
  if (size) *size = d.size();
  return b;
}

__device__ void MaskError(DeviceStatus* status, uint32_t segment, MaskCheck check) {
  ReportError(status, kErrFillMask, segment, check);
}

// The section's fixed part (codec/fill_mask.cc's checks, in its order).
__global__ void HeaderKernel(const uint8_t* section, uint64_t section_bytes, uint64_t tokens,
                             DecodeState* state, DeviceStatus* status, uint32_t segment) {
  if (threadIdx.x != 0 || status->error != kNoError) return;
  const uint64_t chunks = MaskChunks(tokens);
  if (tokens == 0 || section_bytes < kHeaderBytes + 4 * chunks) {
    return MaskError(status, segment, kMaskTooShort);
  }
  for (uint64_t i = kMaskClasses; i < kHeaderBytes; ++i) {
    if (section[i] != 0) return MaskError(status, segment, kMaskPadding);
  }
  MaskCode code;
  for (int c = 0; c < kMaskClasses; ++c) code.lengths[c] = section[c];
  if (!run_steps::ValidMaskCode(code.lengths)) return MaskError(status, segment, kMaskBadCode);
  const uint64_t words_bytes = section_bytes - kHeaderBytes - 4 * chunks;
  if (words_bytes % 4 != 0) return MaskError(status, segment, kMaskNotWords);
  run_steps::FinishMaskCode(&code);
  state->code = code;
  state->total_words = words_bytes / 4;
}

__global__ void ChunkWordsKernel(const uint8_t* section, uint64_t chunks, uint64_t* chunk_words,
                                 const DeviceStatus* status) {
  const uint64_t c = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (c >= chunks || status->error != kNoError) return;
  chunk_words[c] = (uint64_t{LoadBytes<uint32_t>(section + kHeaderBytes + 4 * c)} + 31) / 32;
}

// A chunk's tokens, a thread each: their lengths, and their checks.
__global__ void __launch_bounds__(kTokenThreads)
    TokensKernel(const uint8_t* section, uint64_t tokens, const DecodeState* state,
                 const uint64_t* chunk_words, const uint64_t* chunk_word0, uint16_t* lengths,
                 uint64_t* chunk_elems, DeviceStatus* status, uint32_t segment) {
  // Codes up to kLookupBits long in one lookup: (class << 8) | length, 0 for
  // longer (or no) codes, which take the canonical search.
  __shared__ uint16_t lookup[1u << kLookupBits];
  __shared__ MaskCode code;
  __shared__ bool skip;
  if (threadIdx.x == 0) {
    skip = status->error != kNoError;
    if (!skip) code = state->code;
  }
  __syncthreads();
  if (skip) return;
  for (uint32_t e = threadIdx.x; e < (1u << kLookupBits); e += blockDim.x) {
    lookup[e] = run_steps::MaskLookupEntry(code, e, kLookupBits);
  }
  __syncthreads();
  const uint64_t chunks = MaskChunks(tokens);
  const uint64_t c = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (c >= chunks) return;
  const uint64_t total_words = state->total_words;
  const uint64_t start = chunk_word0[c];
  const uint64_t num_words = chunk_words[c];
  if (start + num_words > total_words) return MaskError(status, segment, kMaskChunkPastEnd);
  const uint32_t bits = LoadBytes<uint32_t>(section + kHeaderBytes + 4 * c);
  const uint8_t* words = section + kHeaderBytes + 4 * chunks + 4 * start;
  // Words past the chunk read as zero (codec/fill_mask.cc reads on: no token
  // that the checks accept depends on them).
  auto word = [&](uint64_t i) -> uint32_t {
    return i < num_words ? LoadBytes<uint32_t>(words + 4 * i) : 0u;
  };
  const uint32_t count =
      static_cast<uint32_t>(min(uint64_t{kChunkTokens}, tokens - c * kChunkTokens));
  uint16_t* out = lengths + c * kChunkTokens;
  uint64_t elements = 0;
  const uint32_t check = run_steps::DecodeMaskChunk(
      code, lookup, kLookupBits, word, count, bits, &elements,
      [&](uint32_t t, uint32_t length) { out[t] = static_cast<uint16_t>(length); });
  if (check != 0) return MaskError(status, segment, static_cast<MaskCheck>(check));
  chunk_elems[c] = elements;
  if (c + 1 == chunks && start + num_words != total_words) {
    MaskError(status, segment, kMaskBitstreamLength);
  }
}

// A block per chunk: each token's end toggles X there (ends at n do not).
__global__ void __launch_bounds__(kMaskThreads)
    ToggleKernel(uint64_t n, uint64_t tokens, const uint16_t* lengths, const uint64_t* chunk_elems,
                 const uint64_t* chunk_elem0, uint64_t* toggles, DeviceStatus* status,
                 uint32_t segment) {
  using Scan = cub::BlockScan<uint32_t, kMaskThreads>;
  __shared__ typename Scan::TempStorage temp;
  __shared__ bool skip;
  if (threadIdx.x == 0) skip = status->error != kNoError;
  __syncthreads();
  if (skip) return;
  const uint64_t chunks = MaskChunks(tokens);
  const uint64_t c = blockIdx.x;
  if (c == 0 && threadIdx.x == 0) {
    const uint64_t total = chunk_elem0[chunks - 1] + chunk_elems[chunks - 1];
    if (total > n) MaskError(status, segment, kMaskRunsTooLong);
    if (total < n) MaskError(status, segment, kMaskRunsTooShort);
  }
  const uint64_t count = min(uint64_t{kChunkTokens}, tokens - c * kChunkTokens);
  const uint64_t first = c * kChunkTokens + threadIdx.x * kTokensPerThread;
  uint32_t mine[kTokensPerThread];
  uint32_t sum = 0;
#pragma unroll
  for (int k = 0; k < kTokensPerThread; ++k) {
    const uint64_t t = threadIdx.x * kTokensPerThread + k;
    mine[k] = t < count ? lengths[first + k] : 0;
    sum += mine[k];
  }
  uint32_t before;
  Scan(temp).ExclusiveSum(sum, before);
  uint64_t end = chunk_elem0[c] + before;
#pragma unroll
  for (int k = 0; k < kTokensPerThread; ++k) {
    if (threadIdx.x * kTokensPerThread + k >= count) break;
    end += mine[k];
    if (end < n) {
      atomicXor(reinterpret_cast<unsigned long long*>(&toggles[end / 64]), 1ull << (end % 64));
    }
  }
}

__global__ void ParityKernel(uint64_t words, const uint64_t* toggles, uint32_t* parity,
                             const DeviceStatus* status) {
  const uint64_t w = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (w >= words || status->error != kNoError) return;
  parity[w] = __popcll(toggles[w]) & 1;
}

// X from the toggles: a word's prefix XOR, flipped where the words before it
// toggled an odd number of times. Writes a byte per element; with one row
// (nothing to undo) also counts the fill elements.
__global__ void __launch_bounds__(kMaskThreads)
    ExpandKernel(uint64_t n, const uint64_t* toggles, const uint32_t* parity0, uint8_t* mask,
                 bool count, uint64_t* fill_count, const DeviceStatus* status) {
  __shared__ bool skip;
  if (threadIdx.x == 0) skip = status->error != kNoError;
  __syncthreads();
  if (skip) return;
  const uint64_t w = uint64_t{blockIdx.x} * kMaskThreads + threadIdx.x;
  uint64_t fill = 0;
  if (w < Words(n)) {
    uint64_t x = run_steps::XWord(toggles[w], parity0[w]);
    const uint64_t begin = 64 * w;
    const uint32_t valid = static_cast<uint32_t>(min(uint64_t{64}, n - begin));
    if (valid < 64) x &= (uint64_t{1} << valid) - 1;
    fill = __popcll(x);
    uint8_t* out = mask + begin;
    if (valid == 64 && reinterpret_cast<uintptr_t>(out) % 8 == 0) {
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        reinterpret_cast<uint64_t*>(out)[k] = run_steps::SpreadByte(x >> (8 * k));
      }
    } else {
      for (uint32_t k = 0; k < valid; ++k) out[k] = (x >> k) & 1;
    }
  }
  if (count)
    WarpSumInto<unsigned long long>(fill, reinterpret_cast<unsigned long long*>(fill_count));
}

// Row undo, step 1: each group's XOR down each column (every group but the
// last, whose XOR no later group needs).
__global__ void GroupXorKernel(uint64_t n, uint64_t row, RowGroups g, const uint8_t* mask,
                               uint8_t* group_xor, const DeviceStatus* status) {
  const uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= (g.groups - 1) * row || status->error != kNoError) return;
  const uint64_t group = i / row, column = i % row;
  uint8_t x = 0;
  for (uint64_t r = group * g.per; r < (group + 1) * g.per; ++r) {
    const uint64_t e = r * row + column;
    if (e < n) x ^= mask[e];
  }
  group_xor[i] = x;
}

// Step 2: each column's exclusive XOR scan over the groups, in place.
__global__ void GroupScanKernel(uint64_t row, RowGroups g, uint8_t* group_xor,
                                const DeviceStatus* status) {
  const uint64_t column = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (column >= row || status->error != kNoError) return;
  uint8_t acc = 0;
  for (uint64_t group = 0; group < g.groups; ++group) {
    const uint64_t i = group * row + column;
    const uint8_t x = group + 1 < g.groups ? group_xor[i] : 0;
    group_xor[i] = acc;
    acc ^= x;
  }
}

// Step 3: each group's rows XORed down from the groups' carry; counts fill.
__global__ void __launch_bounds__(kMaskThreads)
    RowUndoKernel(uint64_t n, uint64_t row, RowGroups g, const uint8_t* group_xor, uint8_t* mask,
                  uint64_t* fill_count, const DeviceStatus* status) {
  __shared__ bool skip;
  if (threadIdx.x == 0) skip = status->error != kNoError;
  __syncthreads();
  if (skip) return;
  const uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  uint64_t fill = 0;
  if (i < g.groups * row) {
    const uint64_t group = i / row, column = i % row;
    uint8_t m = g.groups > 1 ? group_xor[i] : 0;
    for (uint64_t r = group * g.per; r < (group + 1) * g.per; ++r) {
      const uint64_t e = r * row + column;
      if (e >= n) break;
      m ^= mask[e];
      mask[e] = m;
      fill += m;
    }
  }
  WarpSumInto<unsigned long long>(fill, reinterpret_cast<unsigned long long*>(fill_count));
}

unsigned Blocks(uint64_t threads, unsigned per_block) {
  return static_cast<unsigned>((threads + per_block - 1) / per_block);
}

}  // namespace

uint64_t MaxFillMaskSectionBytes(uint64_t n) {
  // A token takes at most 32 bits, a chunk at most one word of padding.
  return kHeaderBytes + 4 * MaxChunks(n) + 4 * (MaxTokens(n) + MaxChunks(n));
}

cudaError_t FillMaskEncodeWorkspace(uint64_t n, size_t* bytes) {
  size_t cub_bytes = 0;
  if (cudaError_t e = EncodeCubBytes(n, &cub_bytes); e != cudaSuccess) return e;
  CarveEncode(n, cub_bytes, nullptr, bytes);
  return cudaSuccess;
}

cudaError_t LaunchFillMaskEncodeSizes(const uint8_t* mask, uint64_t n, uint64_t row,
                                      void* workspace, size_t workspace_bytes,
                                      uint64_t* section_bytes, uint64_t* tokens,
                                      cudaStream_t stream) {
  if (n == 0 || row == 0 || n > format::kMaxFrameElements) return cudaErrorInvalidValue;
  size_t cub_bytes = 0, need = 0;
  if (cudaError_t e = EncodeCubBytes(n, &cub_bytes); e != cudaSuccess) return e;
  CarveEncode(n, cub_bytes, nullptr, &need);
  if (workspace_bytes < need) return cudaErrorInvalidValue;
  const EncodeBuffers b = CarveEncode(n, cub_bytes, workspace, nullptr);
  const uint64_t tiles = Tiles(n), max_chunks = MaxChunks(n);
  const unsigned tile_blocks = static_cast<unsigned>(tiles);
  cudaError_t e = cudaMemsetAsync(b.state, 0, sizeof(EncodeState), stream);
  if (e != cudaSuccess) return e;
  BoundaryKernel<<<tile_blocks, kMaskThreads, 0, stream>>>(mask, n, row, b.boundaries, b.tile_last);
  size_t temp = b.cub_temp_bytes;
  if ((e = cub::DeviceScan::ExclusiveScan(b.cub_temp, temp, b.tile_last, b.tile_start, MaxOp(),
                                          uint64_t{0}, tiles, stream)) != cudaSuccess) {
    return e;
  }
  CountKernel<<<tile_blocks, kMaskThreads, 0, stream>>>(n, b.boundaries, b.tile_start, b.word_start,
                                                        b.word_tokens, b.tile_tokens, b.state);
  temp = b.cub_temp_bytes;
  if ((e = cub::DeviceScan::ExclusiveSum(b.cub_temp, temp, b.tile_tokens, b.tile_token0, tiles,
                                         stream)) != cudaSuccess) {
    return e;
  }
  CodeKernel<<<1, 32, 0, stream>>>(tiles, b.tile_tokens, b.tile_token0, b.state);
  BitsKernel<<<tile_blocks, kMaskThreads, 0, stream>>>(n, b.boundaries, b.word_start, b.word_bits,
                                                       b.tile_bits, b.state);
  temp = b.cub_temp_bytes;
  if ((e = cub::DeviceScan::ExclusiveSum(b.cub_temp, temp, b.tile_bits, b.tile_bit0, tiles,
                                         stream)) != cudaSuccess) {
    return e;
  }
  ChunkStartKernel<<<tile_blocks, kMaskThreads, 0, stream>>>(
      n, b.boundaries, b.word_start, b.word_tokens, b.word_bits, b.tile_token0, b.tile_bit0,
      b.state, b.chunk_bit0);
  const unsigned loop_blocks =
      static_cast<unsigned>(std::min<uint64_t>(kLoopBlocks, Blocks(max_chunks, kMaskThreads)));
  ChunkBitsKernel<<<loop_blocks, kMaskThreads, 0, stream>>>(tiles, max_chunks, b.tile_bits,
                                                            b.tile_bit0, b.state, b.chunk_bit0,
                                                            b.chunk_bits, b.chunk_words);
  temp = b.cub_temp_bytes;
  if ((e = cub::DeviceScan::ExclusiveSum(b.cub_temp, temp, b.chunk_words, b.chunk_word0, max_chunks,
                                         stream)) != cudaSuccess) {
    return e;
  }
  SizesKernel<<<1, 32, 0, stream>>>(max_chunks, b.chunk_words, b.chunk_word0, b.state,
                                    section_bytes, tokens);
  return cudaGetLastError();
}

cudaError_t LaunchFillMaskEncodeWrite(uint64_t n, void* workspace, size_t workspace_bytes,
                                      uint8_t* const* section, cudaStream_t stream) {
  if (n == 0 || n > format::kMaxFrameElements) return cudaErrorInvalidValue;
  size_t cub_bytes = 0, need = 0;
  if (cudaError_t e = EncodeCubBytes(n, &cub_bytes); e != cudaSuccess) return e;
  CarveEncode(n, cub_bytes, nullptr, &need);
  if (workspace_bytes < need) return cudaErrorInvalidValue;
  const EncodeBuffers b = CarveEncode(n, cub_bytes, workspace, nullptr);
  FixedPartKernel<<<kLoopBlocks, kMaskThreads, 0, stream>>>(b.state, section, b.chunk_bits);
  PackKernel<<<static_cast<unsigned>(Tiles(n)), kMaskThreads, 0, stream>>>(
      n, b.boundaries, b.word_start, b.word_tokens, b.word_bits, b.tile_token0, b.tile_bit0,
      b.state, b.chunk_bit0, b.chunk_word0, section);
  return cudaGetLastError();
}

cudaError_t LaunchEncodeFillMask(const uint8_t* mask, uint64_t n, uint64_t row, void* workspace,
                                 size_t workspace_bytes, uint8_t* section, uint64_t* section_bytes,
                                 uint64_t* tokens, cudaStream_t stream) {
  if (cudaError_t e = LaunchFillMaskEncodeSizes(mask, n, row, workspace, workspace_bytes,
                                                section_bytes, tokens, stream);
      e != cudaSuccess) {
    return e;
  }
  // The destination, where the second step reads it: in the workspace.
  size_t cub_bytes = 0;
  if (cudaError_t e = EncodeCubBytes(n, &cub_bytes); e != cudaSuccess) return e;
  EncodeState* state = CarveEncode(n, cub_bytes, workspace, nullptr).state;
  DestinationKernel<<<1, 32, 0, stream>>>(state, section);
  return LaunchFillMaskEncodeWrite(n, workspace, workspace_bytes, &state->section, stream);
}

cudaError_t FillMaskDecodeWorkspace(uint64_t n, uint64_t row, uint64_t tokens, size_t* bytes) {
  if (row == 0) return cudaErrorInvalidValue;
  size_t cub_bytes = 0;
  if (cudaError_t e = DecodeCubBytes(n, tokens, &cub_bytes); e != cudaSuccess) return e;
  CarveDecode(n, row, tokens, cub_bytes, nullptr, bytes);
  return cudaSuccess;
}

cudaError_t LaunchDecodeFillMask(const uint8_t* section, uint64_t section_bytes, uint64_t tokens,
                                 uint64_t n, uint64_t row, void* workspace, size_t workspace_bytes,
                                 uint8_t* mask, uint64_t* fill_count, DeviceStatus* status,
                                 uint32_t segment, cudaStream_t stream) {
  if (n == 0 || row == 0 || n > format::kMaxFrameElements) return cudaErrorInvalidValue;
  size_t cub_bytes = 0, need = 0;
  if (cudaError_t e = DecodeCubBytes(n, tokens, &cub_bytes); e != cudaSuccess) return e;
  CarveDecode(n, row, tokens, cub_bytes, nullptr, &need);
  if (workspace_bytes < need) return cudaErrorInvalidValue;
  const DecodeBuffers b = CarveDecode(n, row, tokens, cub_bytes, workspace, nullptr);
  const uint64_t chunks = MaskChunks(tokens), words = Words(n);
  cudaError_t e = cudaMemsetAsync(fill_count, 0, sizeof(uint64_t), stream);
  if (e != cudaSuccess) return e;
  HeaderKernel<<<1, 32, 0, stream>>>(section, section_bytes, tokens, b.state, status, segment);
  // What the header kernel rejects for sure stops here: nothing to size the
  // other launches by.
  if (tokens == 0 || section_bytes < kHeaderBytes + 4 * chunks) return cudaGetLastError();
  if ((e = cudaMemsetAsync(b.toggles, 0, words * sizeof(uint64_t), stream)) != cudaSuccess) {
    return e;
  }
  ChunkWordsKernel<<<Blocks(chunks, kMaskThreads), kMaskThreads, 0, stream>>>(
      section, chunks, b.chunk_words, status);
  size_t temp = b.cub_temp_bytes;
  if ((e = cub::DeviceScan::ExclusiveSum(b.cub_temp, temp, b.chunk_words, b.chunk_word0, chunks,
                                         stream)) != cudaSuccess) {
    return e;
  }
  TokensKernel<<<Blocks(chunks, kTokenThreads), kTokenThreads, 0, stream>>>(
      section, tokens, b.state, b.chunk_words, b.chunk_word0, b.lengths, b.chunk_elems, status,
      segment);
  temp = b.cub_temp_bytes;
  if ((e = cub::DeviceScan::ExclusiveSum(b.cub_temp, temp, b.chunk_elems, b.chunk_elem0, chunks,
                                         stream)) != cudaSuccess) {
    return e;
  }
  ToggleKernel<<<static_cast<unsigned>(chunks), kMaskThreads, 0, stream>>>(
      n, tokens, b.lengths, b.chunk_elems, b.chunk_elem0, b.toggles, status, segment);
  ParityKernel<<<Blocks(words, kMaskThreads), kMaskThreads, 0, stream>>>(words, b.toggles, b.parity,
                                                                         status);
  temp = b.cub_temp_bytes;
  if ((e = cub::DeviceScan::ExclusiveSum(b.cub_temp, temp, b.parity, b.parity0, words, stream)) !=
      cudaSuccess) {
    return e;
  }
  const RowGroups g = GroupsOf(n, row);
  const bool one_row = g.rows == 1;
  ExpandKernel<<<Blocks(words, kMaskThreads), kMaskThreads, 0, stream>>>(
      n, b.toggles, b.parity0, mask, one_row, fill_count, status);
  if (one_row) return cudaGetLastError();
  if (g.groups > 1) {
    GroupXorKernel<<<Blocks((g.groups - 1) * row, kMaskThreads), kMaskThreads, 0, stream>>>(
        n, row, g, mask, b.group_xor, status);
    GroupScanKernel<<<Blocks(row, kMaskThreads), kMaskThreads, 0, stream>>>(row, g, b.group_xor,
                                                                            status);
  }
  RowUndoKernel<<<Blocks(g.groups * row, kMaskThreads), kMaskThreads, 0, stream>>>(
      n, row, g, b.group_xor, mask, fill_count, status);
  return cudaGetLastError();
}

}  // namespace ebzip::gpu
