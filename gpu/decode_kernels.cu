// Decompression's Huffman side: decode tables from the code-length section,
// the chunk index, and the three decoders (docs/design.md §1): chunk-parallel (a
// thread per chunk), gap-array (a thread per run of subsequences starting
// where the gap array says: count, scan, decode; Rivera et al. — a block per
// chunk decoding into shared memory and writing coalesced when chunks are
// few, a warp per chunk decoding into place when they are many) and
// self-synchronizing (the block form without gaps: speculative starts
// corrected until they agree, stopping early where a corrected path meets
// the speculative one; Weißenberger and Schmidt). Every inconsistency is
// reported, never decoded around.
//
// Each decoder is a template on kRuns: LaunchDecode runs the version-1
// instances, LaunchDecodeRuns (gpu/run_kernels.h) those that also take zero-
// run tokens (FORMAT.md §15.4) and run-value tokens (§15.4.1), a codeword and
// its extra bits standing for a run of positions (and the residual after it);
// counts are then positions, not tokens.
#include <cub/block/block_scan.cuh>

#include "gpu/code_length_scan.h"
#include "gpu/decode_steps.h"
#include "gpu/device_util.cuh"
#include "gpu/kernels.h"
#include "gpu/run_kernels.h"
#include "gpu/run_steps.h"

namespace ebzip::gpu {
namespace {

constexpr int kLookupBits = 12;
// Lookup entries of prefixes of longer codes: the flag and the shortest such length.
constexpr uint32_t kLongCode = 0x80;
// Multi-symbol entries, without tokens: every codeword that fits whole in an 11-bit prefix,
// up to 7, whose symbols lie within 256 of a base near the alphabet's middle
// (where a smooth field's symbols crowd): bits 0-3 the bits they take (0:
// none, take the single-symbol path), 4-6 their number, then a byte each,
// the symbol minus the base, first codeword lowest. At REL 1e-4 a codeword
// averages ~3 bits and the single-symbol decoders made a lookup per symbol.
// Only the warp-per-chunk gap-array decoder reads it (see UseMulti).
constexpr int kMultiBits = 11;
constexpr int kMultiMax = 7;
__host__ __device__ constexpr uint32_t MultiBase(uint32_t radius) {
  return radius > 128 ? radius - 128 : 1;  // never symbol 0, an outlier's
}
// With tokens (a segment whose stage is 1 or 2) an entry holds whole tokens,
// their extra bits included, as up to 3 items of a symbol and how many
// positions it fills: bits 0-3 the bits taken, 4-5 the items, then 19 bits
// an item (the symbol minus the base, then the count, 1..2047: a class-c
// run with its c extra bits takes at most 2^(c+1) - 1 positions, and c
// <= 10 leaves a codeword bit in 11). A run-value token is two items, its
// zeros and its value. At REL 1e-4 on a smooth field most runs are short,
// and the entries of symbols alone ended at every run token.
constexpr int kMultiItems = 3;
constexpr int kItemBits = 19;
constexpr int kItemsAt = 6;
__device__ inline uint64_t MultiItem(uint32_t offset, uint32_t count, uint32_t k) {
  return (uint64_t{count} << 8 | offset) << (kItemsAt + kItemBits * k);
}
// The gap-array count pass's entry of an 11-bit prefix with tokens (a
// span): the bits its whole tokens take (0: none), then the positions they
// fill. Counting needs no symbol, so a span goes on where TokensEntry stops
// at its three items or at a symbol far from the base.
constexpr int kSpanPositionsAt = 4;
// Bitstream words a decoding block copies to shared memory: 16 KiB, a chunk
// of 16384 symbols at up to 8 bits each. Longer chunks are read in place.
constexpr uint32_t kStagedWords = 4096;
constexpr uint32_t kSkewedWords = kStagedWords + kStagedWords / 32;
constexpr int kTableThreads = 1024;
// Bytes of a code-length section in shared memory at a time.
constexpr uint32_t kSectionPiece = code_lengths::kPiece;
static_assert(kTableThreads == code_lengths::kThreads && kSectionPiece % kTableThreads == 0);
constexpr int kMaxLength = format::kMaxCodeLength;

// ---------------------------------------------------------------------------
// Decode tables (the device twin of codec/huffman_decoder.cc's HuffmanTable).

// Block-scan operator for the code-length parser's state maps: the scan
// passes the earlier span first, as composition needs.
struct ThenMapOp {
  __device__ uint32_t operator()(uint32_t first, uint32_t second) const {
    return code_lengths::ThenMap(first, second);
  }
};

// The zeros of a token of class c (a run, or a run-value token's run part)
// whose extra bits are the top c bits of `after`: 2^c plus those bits.
__device__ __forceinline__ uint32_t RunZeros(int c, uint32_t after) {
  return (1u << c) + (c == 0 ? 0 : after >> (32 - c));
}

// The multi-symbol entry of an 11-bit prefix `window` (its bits at the top)
// without tokens, read off the lookup table: codes past the prefix's bits,
// long codes (flagged, never <= 11 bits with the flag) and symbols outside
// the base's 256 end it.
__device__ uint64_t SymbolsEntry(const uint32_t* lookup, uint32_t window, uint32_t base) {
  uint64_t symbols = 0;
  uint32_t used = 0, n = 0;
  while (n < kMultiMax) {
    const uint32_t entry = lookup[(window << used) >> (32 - kLookupBits)];
    const uint32_t l = entry & 0xFF;
    const uint32_t sym = entry >> 8;
    if ((entry & kLongCode) || l == 0 || used + l > kMultiBits || sym < base ||
        sym - base > 0xFF) {
      break;
    }
    symbols |= uint64_t{sym - base} << (8 * n);
    used += l;
    ++n;
  }
  return symbols << 8 | n << 4 | used;
}

// The same with tokens (their symbols from run_base on, FORMAT.md §15.4 and
// §15.4.1): whole tokens, extra bits included, as items. Symbols outside the
// base's 256 end it, as does a run-value token without room for both its
// items.
__device__ uint64_t TokensEntry(const uint32_t* lookup, uint32_t window, uint32_t base,
                                uint32_t radius, uint32_t run_base) {
  uint64_t items = 0;
  uint32_t used = 0, n = 0;
  while (n < kMultiItems) {
    const uint32_t entry = lookup[(window << used) >> (32 - kLookupBits)];
    const uint32_t l = entry & 0xFF;
    uint32_t sym = entry >> 8, count = 1, value = kNoRunValue;
    if ((entry & kLongCode) || l == 0 || used + l > kMultiBits) break;
    uint32_t bits = l;
    if (sym >= run_base) {  // DecodeToken's reading of a token
      const RunTokenShape shape = ShapeOf(sym, radius);
      const int c = shape.klass;
      if (!shape.valid || used + l + c > kMultiBits) break;
      count = RunZeros(c, window << (used + l));
      sym = radius;
      value = shape.value;
      bits += c;
    }
    if (sym < base || sym - base > 0xFF ||
        (value != kNoRunValue && (value < base || value - base > 0xFF || n + 2 > kMultiItems))) {
      break;
    }
    items |= MultiItem(sym - base, count, n++);
    if (value != kNoRunValue) items |= MultiItem(value - base, 1, n++);
    used += bits;
  }
  return items | n << 4 | used;
}

// The span of an 11-bit prefix `window` (its bits at the top) with tokens:
// long codes, invalid run-value tokens and tokens past the prefix end it.
__device__ uint32_t TokensSpan(const uint32_t* lookup, uint32_t window, uint32_t radius,
                               uint32_t run_base) {
  uint32_t used = 0, positions = 0;
  while (true) {
    const uint32_t entry = lookup[(window << used) >> (32 - kLookupBits)];
    const uint32_t l = entry & 0xFF;
    if ((entry & kLongCode) || l == 0 || used + l > kMultiBits) break;
    uint32_t bits = l, count = 1;
    if ((entry >> 8) >= run_base) {  // DecodeToken's reading of a token
      const RunTokenShape shape = ShapeOf(entry >> 8, radius);
      const int c = shape.klass;
      if (!shape.valid || used + l + c > kMultiBits) break;
      count = RunZeros(c, window << (used + l)) + (shape.value != kNoRunValue);
      bits += c;
    }
    positions += count;
    used += bits;
  }
  return positions << kSpanPositionsAt | used;
}

// Six code lengths' symbol counts for one block scan: three in 21-bit fields
// of each word (a count is at most 65536).
struct LengthCounts {
  static constexpr int kLengths = 6;
  static constexpr int kField = 21;
  uint64_t word[2];

  __device__ uint32_t Get(int j) const {
    return static_cast<uint32_t>(word[j / 3] >> (kField * (j % 3)) & ((uint64_t{1} << kField) - 1));
  }
};
__device__ LengthCounts operator+(const LengthCounts& a, const LengthCounts& b) {
  return {{a.word[0] + b.word[0], a.word[1] + b.word[1]}};
}

__global__ void __launch_bounds__(kTableThreads)
    BuildTablesKernel(const Segment* segments, const Item* items, DecodeTables t,
                      DeviceStatus* status) {
  using LengthScan = cub::BlockScan<LengthCounts, kTableThreads, cub::BLOCK_SCAN_WARP_SCANS>;
  __shared__ typename LengthScan::TempStorage length_temp;
  // The section's scans: raking ones spilled registers there.
  using PieceScan = cub::BlockScan<uint32_t, kTableThreads, cub::BLOCK_SCAN_WARP_SCANS>;
  __shared__ typename PieceScan::TempStorage piece_temp;
  __shared__ uint32_t count[kMaxLength + 2];
  __shared__ uint32_t first[kMaxLength + 2];
  __shared__ uint32_t offset[kMaxLength + 2];
  __shared__ uint32_t bad;
  __shared__ uint8_t staged[code_lengths::kHistory + kSectionPiece];
  extern __shared__ uint4 length_words[];  // 65536 lengths, parsed from the section
  uint8_t* lengths = reinterpret_cast<uint8_t*>(length_words);
  const uint32_t s = blockIdx.x;
  const Segment& seg = segments[s];
  // With tokens (FORMAT.md §15.4, §15.4.1) the alphabet has the 12 run
  // classes after the residuals (and the 52 run-value tokens after them),
  // and a codeword and its extra bits fit 32 bits.
  const RunTokens tokens = RunTokens::ForStage(seg.lossless, seg.radius);
  const uint32_t alphabet = tokens.alphabet();
  const uint32_t run_base = seg.lossless ? tokens.base() : 0xFFFFFFFFu;
  if (seg.lossless && seg.max_code_length > format::kMaxCodeLengthWithRuns) {
    if (threadIdx.x == 0) ReportError(status, kErrCodeLengths, s);
    return;
  }
  uint32_t* lookup = t.lookup + uint64_t{s} * (1 << kLookupBits);
  for (uint32_t i = threadIdx.x; i < 65536 / 16; i += kTableThreads) length_words[i] = uint4{};
  if (threadIdx.x < kMaxLength + 2) count[threadIdx.x] = 0;
  __syncthreads();

  // The section (FORMAT.md §5.1), parsed by the whole block a staged piece at
  // a time (gpu/code_length_scan.h): one thread walking it took 82 us for a
  // 256 KiB array and most of a millisecond per frame at tight bounds.
  const uint8_t* section = items[seg.item].archive + seg.section_offset[format::kCodeLengths];
  const uint64_t size = seg.section_length[format::kCodeLengths];
  code_lengths::Carry carry;  // the same in every thread
  bool parsed = true;
  for (uint64_t base = 0; base < size && parsed; base += kSectionPiece) {
    const uint32_t piece =
        static_cast<uint32_t>(size - base < kSectionPiece ? size - base : kSectionPiece);
    // The piece, after the bytes before it (zeros before the section).
    for (uint32_t i = threadIdx.x; i < code_lengths::kHistory + piece; i += kTableThreads) {
      staged[i] = base + i >= code_lengths::kHistory ? section[base + i - code_lengths::kHistory]
                                                     : uint8_t{0};
    }
    __syncthreads();
    const code_lengths::Span span =
        code_lengths::ThreadSpan(threadIdx.x, piece, kSectionPiece / kTableThreads);
    const uint8_t* mine = staged + code_lengths::kHistory + span.begin;
    uint32_t map_before, piece_map;
    PieceScan(piece_temp)
        .ExclusiveScan(code_lengths::SpanMap(mine, span.count), map_before,
                       code_lengths::kIdentityMap, ThenMapOp(), piece_map);
    const uint32_t state = code_lengths::ApplyMap(map_before, carry.state);
    __syncthreads();  // piece_temp is reused
    uint32_t symbols_before, piece_symbols;
    PieceScan(piece_temp)
        .ExclusiveSum(code_lengths::SpanSymbols(mine, span.count, state, alphabet), symbols_before,
                      piece_symbols);
    const bool ok = code_lengths::SpanLengths(mine, span.count, state, carry.n + symbols_before,
                                              alphabet, seg.max_code_length, lengths);
    carry = code_lengths::AfterPiece(carry, piece_map, piece_symbols, alphabet);
    parsed = !__syncthreads_or(!ok);
  }
  if (!parsed || !code_lengths::Complete(carry, alphabet)) {
    if (threadIdx.x == 0) ReportError(status, kErrCodeLengths, s);
    return;
  }
  // Each thread's run of 64 symbols' lengths, in registers: the sort below
  // goes over them once per code length, and reading them from shared memory
  // that often (a 64-byte stride between threads: 16-way bank conflicts)
  // made this kernel the longest stage of a small decompression.
  constexpr uint32_t kPer = 65536 / kTableThreads;  // symbols per thread
  constexpr int kWords = kPer / 4;
  static_assert(kWords * 4 == kPer);
  const uint32_t my_begin = threadIdx.x * kPer;
  uint32_t mine[kWords];
#pragma unroll
  for (int k = 0; k < kWords; ++k) {
    mine[k] = reinterpret_cast<const uint32_t*>(lengths + my_begin)[k];
  }
  // Most threads' symbols are unused (a code's symbols crowd around the
  // radius and the run tokens): they count nothing. Counting in every thread
  // was most of this kernel's instructions (Nsight Compute, 1 GiB REL 1e-4).
  uint32_t any_length = 0;
#pragma unroll
  for (int k = 0; k < kWords; ++k) any_length |= mine[k];
  // Symbols sorted by (length, symbol) and counted per length, six lengths
  // a scan (LengthCounts): each thread's matches of each (at most 64), then
  // its symbols of each length at its rank. The counts are the scans'
  // totals: counting them first with shared-memory atomics (all threads on
  // the same few lengths) took a third of this kernel.
  uint16_t* sorted = t.sorted + uint64_t{s} * 65536;
  const int max_length = static_cast<int>(seg.max_code_length);
  constexpr int kLengths = LengthCounts::kLengths;
  uint32_t shorter = 0;  // symbols of the shorter lengths, the same in every thread
  for (int l0 = 1; l0 <= max_length; l0 += kLengths) {
    LengthCounts mine_counts{{0, 0}};
    if (any_length != 0) {
#pragma unroll
      for (int j = 0; j < kLengths; ++j) {
        const uint32_t pattern = 0x01010101u * static_cast<uint32_t>(l0 + j);
        uint32_t matches = 0;
#pragma unroll
        for (int k = 0; k < kWords; ++k) matches += __popc(__vcmpeq4(mine[k], pattern)) / 8;
        mine_counts.word[j / 3] |= uint64_t{matches} << (LengthCounts::kField * (j % 3));
      }
    }
    LengthCounts before, total;
    LengthScan(length_temp).ExclusiveSum(mine_counts, before, total);
    __syncthreads();  // length_temp is reused
    for (int j = 0; j < kLengths && l0 + j <= max_length; ++j) {
      const int l = l0 + j;
      const uint32_t n = total.Get(j);
      if (threadIdx.x == 0) count[l] = n;
      if (mine_counts.Get(j) != 0) {
        const uint32_t pattern = 0x01010101u * static_cast<uint32_t>(l);
        uint32_t rank = shorter + before.Get(j);
#pragma unroll
        for (int k = 0; k < kWords; ++k) {
          // 0xFF in each byte of length l; lowest byte (lowest symbol) first.
          for (uint32_t eq = __vcmpeq4(mine[k], pattern); eq != 0;) {
            const int byte = (__ffs(eq) - 1) / 8;
            sorted[rank++] = static_cast<uint16_t>(my_begin + 4 * k + byte);
            eq &= ~(0xFFu << (8 * byte));
          }
        }
      }
      shorter += n;
    }
  }
  __syncthreads();
  // Kraft: sum of 2^-l <= 1.
  if (threadIdx.x == 0) {
    uint64_t kraft = 0, used = 0;
    uint32_t code = 0, at = 0;
    for (int l = 1; l <= kMaxLength; ++l) {
      kraft += uint64_t{count[l]} << (kMaxLength - l);
      used += count[l];
      code = (code + count[l - 1]) << 1;
      first[l] = code;
      offset[l] = at;
      at += count[l];
    }
    bad = used == 0 || kraft > (uint64_t{1} << kMaxLength);
  }
  __syncthreads();
  if (bad) {
    if (threadIdx.x == 0) ReportError(status, kErrCodeLengths, s);
    return;
  }
  // The lookup table, one entry per thread: the canonical decode of its
  // kLookupBits-bit prefix; where the code is longer, kLongCode and the
  // shortest length of a code with this prefix, so that a decoder's search
  // (which a warp waits on whenever one lane needs it) starts there.
  for (uint32_t e = threadIdx.x; e < (1u << kLookupBits); e += kTableThreads) {
    uint32_t entry = 0;
    for (int l = 1; l <= static_cast<int>(seg.max_code_length); ++l) {
      if (l <= kLookupBits) {
        const uint32_t k = (e >> (kLookupBits - l)) - first[l];
        if (k < count[l]) {
          entry = (static_cast<uint32_t>(sorted[offset[l] + k]) << 8) | l;
          break;
        }
      } else if (count[l] != 0) {
        // l-bit codes with this prefix: [e << (l - kLookupBits), (e + 1) << ...).
        const uint64_t lo = uint64_t{e} << (l - kLookupBits);
        const uint64_t hi = uint64_t{e + 1} << (l - kLookupBits);
        if (first[l] < hi && uint64_t{first[l]} + count[l] > lo) {
          entry = kLongCode | l;
          break;
        }
      }
    }
    lookup[e] = entry;
  }
  if (threadIdx.x <= kMaxLength) {
    t.first_code[uint64_t{s} * 32 + threadIdx.x] = first[threadIdx.x];
    t.count[uint64_t{s} * 32 + threadIdx.x] = count[threadIdx.x];
    t.offset[uint64_t{s} * 32 + threadIdx.x] = offset[threadIdx.x];
  }
  // The multi-symbol entries, read off the lookup table (in global memory,
  // written by this block).
  if (t.multi == nullptr) return;
  __syncthreads();
  const uint32_t base = MultiBase(seg.radius);
  uint64_t* multi = t.multi + uint64_t{s} * (1 << kMultiBits);
  uint32_t* spans = t.spans + uint64_t{s} * (1 << kMultiBits);
  for (uint32_t e = threadIdx.x; e < (1u << kMultiBits); e += kTableThreads) {
    const uint32_t window = e << (32 - kMultiBits);
    if (run_base == 0xFFFFFFFFu) {
      multi[e] = SymbolsEntry(lookup, window, base);
    } else {
      multi[e] = TokensEntry(lookup, window, base, seg.radius, run_base);
      spans[e] = TokensSpan(lookup, window, seg.radius, run_base);
    }
  }
}

// One segment's table, as the decoders read it.
struct Table {
  const uint32_t* lookup;
  const uint64_t* multi;
  const uint32_t* spans;  // with tokens, beside multi
  uint32_t base;          // of multi's symbols
  const uint32_t* first;
  const uint32_t* count;
  const uint32_t* offset;
  const uint16_t* sorted;
  int max_length;

  __device__ Table(const DecodeTables& t, const Segment& seg, uint32_t s)
      : lookup(t.lookup + uint64_t{s} * (1 << kLookupBits)),
        multi(t.multi ? t.multi + uint64_t{s} * (1 << kMultiBits) : nullptr),
        spans(t.spans ? t.spans + uint64_t{s} * (1 << kMultiBits) : nullptr),
        base(MultiBase(seg.radius)),
        first(t.first_code + uint64_t{s} * 32),
        count(t.count + uint64_t{s} * 32),
        offset(t.offset + uint64_t{s} * 32),
        sorted(t.sorted + uint64_t{s} * 65536),
        max_length(static_cast<int>(seg.max_code_length)) {}

  // Points the table's small parts at copies in shared memory (a block's
  // decoders make a lookup per symbol, each a dependent load). The
  // multi-symbol table is staged by GapArrayWarpKernel alone (StageMulti).
  __device__ void Stage(uint32_t* shared_lookup, uint32_t* shared_lengths) {
    for (uint32_t i = threadIdx.x; i < (1u << kLookupBits); i += blockDim.x) {
      shared_lookup[i] = lookup[i];
    }
    if (threadIdx.x < 32) {
      shared_lengths[threadIdx.x] = first[threadIdx.x];
      shared_lengths[32 + threadIdx.x] = count[threadIdx.x];
      shared_lengths[64 + threadIdx.x] = offset[threadIdx.x];
    }
    lookup = shared_lookup;
    first = shared_lengths;
    count = shared_lengths + 32;
    offset = shared_lengths + 64;
  }
  // The multi-symbol table (16 KiB) too, for a segment with run tokens:
  // their chunks step through it at every token, and read through L1 it
  // competed with the bitstream's words and the scattered stores (1 GiB REL
  // 1e-4 on the H100: decompression 197-199 -> 209-213 GB/s). Without
  // tokens it stays in global memory: staged, it took L1 from the
  // bitstream's words and slowed the chunks that do not use it by 7-12 %
  // (format version 1).
  // The spans as well, which the count pass steps through instead.
  __device__ void StageMulti(uint64_t* shared_multi, uint32_t* shared_spans) {
    if (multi == nullptr) return;
    for (uint32_t i = threadIdx.x; i < (1u << kMultiBits); i += blockDim.x) {
      shared_multi[i] = multi[i];
      shared_spans[i] = spans[i];
    }
    multi = shared_multi;
    spans = shared_spans;
  }

  // Length of the codeword at the top of `window` (0 if none) and its symbol.
  __device__ int Decode(uint32_t window, uint32_t* symbol) const {
    const uint32_t e = lookup[window >> (32 - kLookupBits)];
    if ((e & kLongCode) == 0) {  // 0: no code has this prefix
      *symbol = e >> 8;
      return static_cast<int>(e & 0xFF);
    }
    for (int l = static_cast<int>(e & ~kLongCode); l <= max_length; ++l) {
      const uint32_t code = window >> (32 - l);
      const uint32_t k = code - first[l];
      if (k < count[l]) {
        *symbol = __ldg(&sorted[offset[l] + k]);
        return l;
      }
    }
    return 0;
  }
};

// A segment's tokens (FORMAT.md §15.4, §15.4.1) as the kRuns decoders read
// them: symbols from `base` on are the run classes, which stand for runs of
// `zero`, and the run-value tokens (ShapeOf tells them apart).
struct RunCode {
  uint32_t base = 0xFFFFFFFFu;  // 2 * radius; past every symbol without tokens
  uint32_t zero = 0;            // radius

  RunCode() = default;
  __device__ explicit RunCode(const Segment& seg)
      : base(seg.lossless ? 2 * seg.radius : 0xFFFFFFFFu), zero(seg.radius) {}
};
template <bool kRuns>
__device__ RunCode RunCodeOf(const Segment& seg) {
  if constexpr (kRuns) {
    return RunCode(seg);
  } else {
    return RunCode();
  }
}

// The token at the top of `window`: its length in bits, codeword and extra
// bits (0 when no codeword matches or, FORMAT.md §15.4.1, a run-value
// token names no symbol), its symbol and the positions it covers:
// `positions` of `symbol`, but for a run-value token, whose last position is
// `value` (kNoRunValue for every other token; codec/huffman_decoder.cc's
// TokenOf). A codeword has at most 20 bits with tokens (BuildTablesKernel
// checks) and a class at most 12, so the extra bits are in the same window.
// Without kRuns, Table::Decode: every token one position.
template <bool kRuns>
__device__ __forceinline__ int DecodeToken(const Table& table, const RunCode& runs, uint32_t window,
                                           uint32_t* symbol, uint32_t* positions,
                                           uint32_t* value) {
  int l = table.Decode(window, symbol);
  *positions = 1;
  *value = kNoRunValue;
  if constexpr (kRuns) {
    if (l != 0 && *symbol >= runs.base) {
      const RunTokenShape shape = ShapeOf(*symbol, runs.zero);
      if (!shape.valid) return 0;  // a value that is no symbol (radius 1 or 2)
      const int c = shape.klass;
      *positions = RunZeros(c, window << l) + (shape.value != kNoRunValue);
      *symbol = runs.zero;
      *value = shape.value;
      l += c;
    }
  }
  return l;
}

// Reads a chunk's bits MSB-first; words past the chunk read as zero. Words
// staged in shared memory are skewed (word i at i + i / 32, see
// BlockDecodeKernel); in place, skew_shift 31 leaves them as they are.
struct BitReader {
  const uint32_t* words;
  uint32_t num_words;
  uint32_t skew_shift = 31;

  __device__ uint32_t Word(uint32_t i) const {
    return i < num_words ? words[i + (i >> skew_shift)] : 0u;
  }
  __device__ uint32_t Window(uint32_t pos) const {
    const uint32_t w = pos / 32, r = pos % 32;
    const uint32_t hi = Word(w);
    return r == 0 ? hi : (hi << r) | (Word(w + 1) >> (32 - r));
  }
};

// Where a chunk is and what decodes it.
struct ChunkView {
  uint32_t s;
  const Segment* seg;
  uint64_t c;      // within the segment
  uint32_t count;  // symbols
  uint32_t bits;
  BitReader reader;
  uint16_t* out;  // the chunk's first symbol

  __device__ ChunkView(const Segment* segments, uint32_t num_segments, const Item* items,
                       uint64_t chunk, const uint32_t* chunk_bits, const uint64_t* word_prefix,
                       uint16_t* symbols) {
    s = SegmentOfChunk(segments, num_segments, chunk);
    seg = &segments[s];
    c = chunk - seg->chunk_base;
    const uint64_t begin = c * seg->chunk_symbols;
    count = static_cast<uint32_t>(min(seg->positions - begin, uint64_t{seg->chunk_symbols}));
    bits = chunk_bits[chunk];
    reader.words = reinterpret_cast<const uint32_t*>(items[seg->item].archive +
                                                     seg->section_offset[format::kBitstream]) +
                   (word_prefix[chunk] - word_prefix[seg->chunk_base]);
    reader.num_words = (bits + 31) / 32;
    out = symbols + seg->symbol_base + begin;
  }
};

// The self-synchronizing decoder's speculative pass and corrections
// (gpu/decode_steps.h) decode tokens through this.
template <bool kRuns>
struct WindowDecoder {
  const Table& table;
  const RunCode& runs;
  const BitReader& reader;
  __device__ int operator()(uint32_t pos, uint32_t* positions) const {
    uint32_t sym, value;
    return DecodeToken<kRuns>(table, runs, reader.Window(pos), &sym, positions, &value);
  }
};
using decode_steps::kTrace;
using decode_steps::kTraceStarts;

// A chunk's bits MSB-first through a 64-bit buffer refilled a word at a time
// (words past the chunk read as zero): a decode step waits on its table
// lookup alone, not on two word loads as BitReader::Window does.
struct BitStream {
  BitReader words;
  uint32_t next;   // word to load next
  uint32_t avail;  // valid bits at the top of buf; more than 32 between steps
  uint64_t buf;

  __device__ BitStream(const BitReader& r, uint32_t pos) : words(r) {
    const uint32_t w = pos / 32;
    buf = ((uint64_t{r.Word(w)} << 32) | r.Word(w + 1)) << (pos % 32);
    avail = 64 - pos % 32;
    next = w + 2;
  }
  __device__ uint32_t Window() const { return static_cast<uint32_t>(buf >> 32); }
  __device__ void Skip(int l) {  // l <= 32: a codeword, or a run token's and its extra bits
    buf <<= l;
    avail -= l;
    if (avail <= 32) {
      buf |= uint64_t{words.Word(next++)} << (32 - avail);
      avail += 32;
    }
  }
};

// Stores a lane's symbols at consecutive positions, four at a time where
// the position is 8-byte aligned: a warp's lanes write 32 separate runs, and
// 2-byte stores would each cost a sector.
struct SymbolWriter {
  uint16_t* out;
  uint64_t packed = 0;
  uint32_t held = 0;

  __device__ explicit SymbolWriter(uint16_t* at) : out(at) {}
  __device__ void Put(uint16_t sym) {
    if (held == 0 && (reinterpret_cast<uintptr_t>(out) & 7) != 0) {
      *out++ = sym;
      return;
    }
    packed |= uint64_t{sym} << (16 * held);
    if (++held == 4) {
      *reinterpret_cast<uint64_t*>(out) = packed;
      out += 4;
      packed = 0;
      held = 0;
    }
  }
  __device__ void Flush() {
    for (uint32_t i = 0; i < held; ++i) out[i] = static_cast<uint16_t>(packed >> (16 * i));
  }
  // k copies of sym (a run token's positions), none at or past `end`: the
  // chunk's end, which a run token of a corrupt stream must not pass before
  // the counts catch it. Four to an 8-byte store once aligned.
  __device__ void PutRun(uint16_t sym, uint32_t k, const uint16_t* end) {
    const int64_t room = (end - out) - static_cast<int64_t>(held);
    if (room <= 0) return;
    if (static_cast<int64_t>(k) > room) k = static_cast<uint32_t>(room);
    for (; k > 0 && (held != 0 || (reinterpret_cast<uintptr_t>(out) & 7) != 0); --k) Put(sym);
    const uint64_t pattern = 0x0001000100010001ull * sym;
    for (; k >= 4; k -= 4, out += 4) *reinterpret_cast<uint64_t*>(out) = pattern;
    for (; k > 0; --k) Put(sym);
  }
  // `count` copies of sym: a multi-symbol entry's item.
  __device__ void PutItem(uint16_t sym, uint32_t count, const uint16_t* end) {
    if (count == 1) {
      Put(sym);
    } else {
      PutRun(sym, count, end);
    }
  }
  // A token's positions (DecodeToken's): PutRun's, then a run-value token's
  // value, which stays before `end` too.
  __device__ void PutToken(uint16_t sym, uint32_t positions, uint32_t value,
                           const uint16_t* end) {
    if (value == kNoRunValue) {
      PutItem(sym, positions, end);
      return;
    }
    PutRun(sym, positions - 1, end);
    if ((end - out) - static_cast<int64_t>(held) > 0) Put(static_cast<uint16_t>(value));
  }
};

// A warp writes `sym` at out[0, count): a chunk's run symbol, before its
// lanes write the rest through RunFilledWriter.
__device__ void FillWarp(uint16_t* out, uint32_t count, uint16_t sym, uint32_t lane) {
  const uint32_t misaligned = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(out) & 15);
  const uint32_t head = min(count, ((16 - misaligned) & 15) / 2);
  if (lane < head) out[lane] = sym;
  const uint32_t wide = (count - head) / 8;
  const uint32_t pair = 0x00010001u * sym;
  uint4* to = reinterpret_cast<uint4*>(out + head);
  for (uint32_t i = lane; i < wide; i += 32) to[i] = make_uint4(pair, pair, pair, pair);
  for (uint32_t i = head + 8 * wide + lane; i < count; i += 32) out[i] = sym;
  __syncwarp();
}

// SymbolWriter's interface over an output that already holds the run
// symbol everywhere (FillWarp): a run only moves the position. Any other
// symbol goes into the lane's copy of its 32-byte sector in shared memory,
// and a sector holding one goes out whole (two 16-byte stores) when the
// lane moves past it, or, at the ends of the lane's positions [lo, hi),
// which it shares with its neighbours, position by position. With run
// tokens the lanes' runs differ in length, and SymbolWriter's run loops and
// packing branches left 5-9 of a warp's 32 threads active for most of the
// gap-array decode (Nsight Compute, 1 GiB REL 1e-4); one 2-byte store per
// symbol then kept them busier but sent ~5 partial sectors to L2 for every
// sector of output, which is what held the kernel back with several blocks
// an SM.
struct RunFilledWriter {
  static constexpr int kSector = 16;  // positions
  uint16_t* base;                     // the chunk's first position
  uint4* slot;                        // 2 x 16 bytes of shared memory
  int pos, lo, hi;                    // positions within the chunk
  int sector = kNone;                 // the first position of what slot holds
  int skew;                           // base's place in its sector
  uint16_t run;
  static constexpr int kNone = -(1 << 30);

  __device__ RunFilledWriter(uint16_t* chunk, uint32_t first, uint32_t end, uint16_t run_symbol,
                             uint4* lane_slot)
      : base(chunk),
        slot(lane_slot),
        pos(static_cast<int>(first)),
        lo(static_cast<int>(first)),
        hi(static_cast<int>(end)),
        skew(static_cast<int>(reinterpret_cast<uintptr_t>(chunk) / 2 % kSector)),
        run(run_symbol) {
    Clear();
  }
  __device__ void Clear() {
    const uint32_t pair = 0x00010001u * run;
    slot[0] = slot[1] = make_uint4(pair, pair, pair, pair);
  }
  __device__ void Put(uint16_t sym) {
    if (sym != run && pos < hi) {
      const int at = ((pos + skew) & ~(kSector - 1)) - skew;
      if (at != sector) {
        Flush();
        sector = at;
      }
      reinterpret_cast<uint16_t*>(slot)[pos - at] = sym;
    }
    ++pos;
  }
  __device__ void Flush() {
    if (sector == kNone) return;
    if (sector >= lo && sector + kSector <= hi) {
      uint4* to = reinterpret_cast<uint4*>(base + sector);
      to[0] = slot[0];
      to[1] = slot[1];
    } else {
      const uint16_t* held = reinterpret_cast<const uint16_t*>(slot);
      for (int i = max(0, lo - sector); i < min(kSector, hi - sector); ++i) {
        if (held[i] != run) base[sector + i] = held[i];
      }
    }
    Clear();
    sector = kNone;
  }
  __device__ void PutItem(uint16_t sym, uint32_t count, const uint16_t*) {
    pos += static_cast<int>(count) - 1;
    Put(sym);
  }
  __device__ void PutToken(uint16_t sym, uint32_t positions, uint32_t value, const uint16_t*) {
    PutItem(static_cast<uint16_t>(value == kNoRunValue ? sym : value), positions, nullptr);
  }
};

// Counts (and with kEmit writes, counting zeros) the symbols of the codewords
// from `pos` starting before `stop`, through a BitStream.
// With kMulti, where the codewords of a multi-symbol entry (counting tokens:
// of a span) all start before `stop`, they go in one step (none is symbol
// 0: zeros are counted on the other path).
template <bool kEmit, bool kMulti, bool kRuns, typename Writer>
__device__ bool StreamRun(const Table& table, const RunCode& runs, BitStream& in, uint32_t& pos,
                          uint32_t stop, uint32_t bits, uint32_t& n, Writer* out,
                          uint32_t& zeros, const uint16_t* out_end) {
  [[maybe_unused]] const uint32_t last = min(stop, bits);
  while (pos < stop) {
    if constexpr (kMulti) {
      const uint32_t prefix = in.Window() >> (32 - kMultiBits);
      // Tokens (uniform across the warp), counted: the prefix's span.
      if (kRuns && !kEmit && runs.base != 0xFFFFFFFFu) {
        const uint32_t span = table.spans[prefix];
        const uint32_t used = span & 0xF;
        if (used != 0 && pos + used <= last) {
          n += span >> kSpanPositionsAt;
          pos += used;
          in.Skip(used);
          continue;
        }
      } else {
        // (Staged in shared memory for segments with tokens: a generic load.)
        const uint64_t m = kRuns ? table.multi[prefix] : __ldg(&table.multi[prefix]);
        const uint32_t used = m & 0xF;
        if (used != 0 && pos + used <= last) {
          if (kRuns && runs.base != 0xFFFFFFFFu) {  // tokens, emitted: items
            const uint32_t items = (m >> 4) & 0x3;
#pragma unroll
            for (uint32_t k = 0; k < kMultiItems; ++k) {
              if (k >= items) break;
              const uint32_t item = static_cast<uint32_t>(m >> (kItemsAt + kItemBits * k));
              const uint32_t count = (item >> 8) & 0x7FF;
              // (As DecodeToken's path: a run's positions stop at the chunk's end.)
              if constexpr (kEmit) {
                out->PutItem(static_cast<uint16_t>(table.base + (item & 0xFF)), count, out_end);
              }
              n += count;
            }
          } else {
            const uint32_t count = (m >> 4) & 0x7;
            if constexpr (kEmit) {
              for (uint32_t i = 0; i < count; ++i) {
                out->Put(static_cast<uint16_t>(table.base + ((m >> (8 + 8 * i)) & 0xFF)));
              }
            }
            n += count;
          }
          pos += used;
          in.Skip(used);
          continue;
        }
      }
    }
    uint32_t sym, positions, value;
    const int l = DecodeToken<kRuns>(table, runs, in.Window(), &sym, &positions, &value);
    if (l == 0 || pos + l > bits) return false;
    if constexpr (kEmit) {
      if constexpr (kRuns) {
        out->PutToken(static_cast<uint16_t>(sym), positions, value, out_end);
        // A run's symbol is radius, never 0; the value after it may be 0
        // where the radius is 1 or 2.
        zeros += value == 0;
      } else {
        out->Put(static_cast<uint16_t>(sym));
      }
      zeros += sym == 0;
    }
    n += positions;
    pos += l;
    in.Skip(l);
  }
  return true;
}

// Multi-symbol steps pay where codewords are short. On the H100 (1 GiB
// smooth field and etopo5 tiled) the gap-array decode gained 10-20 % at 1.2-3
// bits per symbol and lost up to 27 % at 5-7 bits, where an 11-bit prefix
// rarely holds two codewords and a warp's lanes split between the two
// paths; deciding per segment from the table (its mean codewords per entry)
// did worse than this, a chunk's own bits per symbol. A chunk's choice is
// its warp's (the block form, for small batches, takes single steps only).
constexpr uint32_t kMultiMaxBitsPerSymbol = 3;
__device__ bool UseMulti(uint32_t bits, uint32_t symbols) {
  return uint64_t{bits} < uint64_t{kMultiMaxBitsPerSymbol} * symbols;
}
template <bool kEmit, bool kRuns, typename Writer = SymbolWriter>
__device__ bool StreamRun(bool multi, const Table& table, const RunCode& runs, BitStream& in,
                          uint32_t& pos, uint32_t stop, uint32_t bits, uint32_t& n,
                          Writer* out, uint32_t& zeros, const uint16_t* out_end) {
  return multi ? StreamRun<kEmit, true, kRuns>(table, runs, in, pos, stop, bits, n, out, zeros,
                                               out_end)
               : StreamRun<kEmit, false, kRuns>(table, runs, in, pos, stop, bits, n, out, zeros,
                                                out_end);
}

// With a gap array: decodes (or counts) from `pos`, a true codeword start,
// to `stop`, checking each subsequence start it crosses on the way (from
// `next_sub`, every `sub` bits): once the codewords that start before it are
// done, the path must be where that subsequence's gap says. FORMAT.md §5.4
// requires every entry checked, as the CPU's gap-array decoder does; a run
// covering several subsequences otherwise read only its first entry.
template <bool kEmit, bool kRuns>
__device__ bool GapCheckedRun(bool multi, const Table& table, const RunCode& runs, BitStream& in,
                              uint32_t& pos, uint32_t next_sub, uint32_t stop, uint32_t bits,
                              uint32_t sub, const uint8_t* gaps, uint32_t& n, SymbolWriter* out,
                              uint32_t& zeros, const uint16_t* out_end) {
  for (uint32_t b = next_sub; b < stop; b += sub) {
    if (!StreamRun<kEmit, kRuns>(multi, table, runs, in, pos, b, bits, n, out, zeros, out_end) ||
        pos != b + gaps[b / sub]) {
      return false;
    }
  }
  return StreamRun<kEmit, kRuns>(multi, table, runs, in, pos, stop, bits, n, out, zeros, out_end);
}

// ---------------------------------------------------------------------------
// (a) Chunk-parallel: the baseline, one thread decodes a whole chunk.

template <bool kRuns>
__global__ void ChunkParallelKernel(const Segment* segments, uint32_t num_segments,
                                    ChunkRange chunks, const Item* items, DecodeTables tables,
                                    const uint32_t* chunk_bits, const uint64_t* word_prefix,
                                    uint16_t* symbols, uint64_t* zero_symbols,
                                    DeviceStatus* status) {
  const uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  // An index that failed its checks may point outside the bitstream.
  if (i >= chunks.end - chunks.begin || status->error != kNoError) return;
  const uint64_t chunk = chunks.At(i);
  const ChunkView v(segments, num_segments, items, chunk, chunk_bits, word_prefix, symbols);
  const Table table(tables, *v.seg, v.s);
  const RunCode runs = RunCodeOf<kRuns>(*v.seg);
  uint32_t pos = 0, zeros = 0;
  for (uint32_t i = 0; i < v.count;) {
    uint32_t sym, positions, value;
    const int l = DecodeToken<kRuns>(table, runs, v.reader.Window(pos), &sym, &positions, &value);
    // (A run past the chunk's positions is the CPU's "capacity" failure.)
    if (l == 0 || pos + l > v.bits || (kRuns && positions > v.count - i)) {
      ReportError(status, kErrBitstream, v.s);
      return;
    }
    if constexpr (kRuns) {
      const uint32_t repeat = positions - (value != kNoRunValue);
      for (uint32_t k = 0; k < repeat; ++k) v.out[i + k] = static_cast<uint16_t>(sym);
      if (value != kNoRunValue) v.out[i + repeat] = static_cast<uint16_t>(value);
      zeros += value == 0;
    } else {
      v.out[i] = static_cast<uint16_t>(sym);
    }
    zeros += sym == 0;
    pos += l;
    i += positions;
  }
  if (pos != v.bits) ReportError(status, kErrBitstream, v.s);
  if (zeros) atomicAdd(reinterpret_cast<unsigned long long*>(&zero_symbols[v.s]), zeros);
}

// ---------------------------------------------------------------------------
// (b) Gap array, for many chunks: a warp per chunk; lane l owns a contiguous
// run of subsequences and decodes from the first codeword start the gap
// array gives for it: count, scan across the warp, decode again straight
// into place. At common bounds a chunk has ~20-100 subsequences, so the block
// form below leaves most of its 256 threads idle, and its staged bits and
// symbols (48 KiB) hold an SM to 3 chunks at a time; with thousands of
// chunks, 8 warps per block keep ~10 times more runs going (16 KiB of
// shared memory a block; 41 KiB with tokens, whose multi-symbol table and
// sectors of output are staged too: 3 blocks an SM, by their 80 registers).

constexpr uint32_t kChunksPerBlock = kThreads / 32;

template <bool kRuns>
__global__ void __launch_bounds__(kThreads)
    GapArrayWarpKernel(const Segment* segments, uint32_t num_segments, ChunkRange chunks,
                       const Item* items, DecodeTables tables, const uint32_t* chunk_bits,
                       const uint64_t* word_prefix, const uint64_t* gap_prefix, uint16_t* symbols,
                       uint64_t* zero_symbols, DeviceStatus* status) {
  __shared__ uint32_t shared_lookup[1u << kLookupBits];
  __shared__ uint32_t shared_lengths[96];
  __shared__ uint64_t shared_multi[kRuns ? 1u << kMultiBits : 1];  // see Table::StageMulti
  extern __shared__ uint32_t shared_spans[];  // 2048 with kRuns (past the static 48 KiB)
  __shared__ uint4 shared_sectors[kRuns ? 2 * kThreads : 1];        // see RunFilledWriter
  constexpr unsigned kAll = 0xFFFFFFFFu;
  // A block's chunks nearly always share a segment: its table is staged once
  // and warps of another segment's chunks read theirs in place.
  const uint64_t first = uint64_t{blockIdx.x} * kChunksPerBlock;  // within the range
  const uint32_t s0 = SegmentOfChunk(segments, num_segments, chunks.At(first));
  Table staged(tables, segments[s0], s0);
  staged.Stage(shared_lookup, shared_lengths);
  if (kRuns && segments[s0].lossless != 0) staged.StageMulti(shared_multi, shared_spans);
  __syncthreads();

  const uint64_t i = first + threadIdx.x / 32;
  const uint32_t lane = threadIdx.x % 32;
  // See ChunkParallelKernel; one read per warp, so the whole warp agrees.
  const bool failed = __shfl_sync(kAll, lane == 0 && status->error != kNoError, 0);
  if (i >= chunks.end - chunks.begin || failed) return;
  const uint64_t chunk = chunks.At(i);
  const ChunkView v(segments, num_segments, items, chunk, chunk_bits, word_prefix, symbols);
  const Segment& seg = *v.seg;
  const Table table = v.s == s0 ? staged : Table(tables, seg, v.s);
  const RunCode runs = RunCodeOf<kRuns>(seg);
  const bool multi = UseMulti(v.bits, v.count);

  const uint32_t sub = seg.subsequence_bits;
  const uint32_t subsequences = (v.bits + sub - 1) / sub;
  const uint32_t per = (subsequences + 31) / 32;
  const uint32_t boundary = min(v.bits, lane * per * sub);  // first bit of my run
  const uint32_t stop = min(v.bits, (lane + 1) * per * sub);
  const bool active = boundary < v.bits;

  uint32_t pos = boundary, n = 0, zeros = 0;
  bool ok = true;
  const uint8_t* gaps = items[seg.item].archive + seg.section_offset[format::kGapArray] +
                        (gap_prefix[chunk] - gap_prefix[seg.chunk_base]);
  if (active) {
    pos = boundary + gaps[lane * per];
    ok = pos <= v.bits && (lane > 0 || pos == 0);
  }
  const uint32_t start = active ? pos : v.bits;
  if (active && ok) {
    BitStream in(v.reader, pos);
    ok = GapCheckedRun<false, kRuns>(multi, table, runs, in, pos, boundary + sub, stop, v.bits, sub,
                                     gaps, n, nullptr, zeros, nullptr);
  }
  const uint32_t end = active ? pos : v.bits;
  if (!ok) ReportError(status, kErrGapArray, v.s);
  // The runs must chain: each ends exactly where the next begins.
  const uint32_t next_start = __shfl_down_sync(kAll, start, 1);
  if (active && ok && end != (lane < 31 ? next_start : v.bits)) {
    ReportError(status, kErrGapArray, v.s);
  }

  // With run tokens a corrupt stream's positions could overflow the sums:
  // more than the chunk's in one lane fails the total anyway.
  const uint32_t counted = !(active && ok) ? 0 : kRuns ? min(n, v.count + 1) : n;
  uint32_t rank = counted;  // inclusive scan, then exclusive
  for (uint32_t d = 1; d < 32; d *= 2) {
    const uint32_t up = __shfl_up_sync(kAll, rank, d);
    if (lane >= d) rank += up;
  }
  const uint32_t total = __shfl_sync(kAll, rank, 31);
  rank -= counted;
  const bool chained = __shfl_sync(kAll, end, 31) == v.bits || v.bits == 0;
  if (total != v.count || !chained) {
    if (lane == 0) ReportError(status, kErrBitstream, v.s);
    return;
  }
  // With tokens the chunk gets its run symbol first and runs are passed over.
  const bool tokens = kRuns && runs.base != 0xFFFFFFFFu;
  if (tokens) FillWarp(v.out, v.count, static_cast<uint16_t>(runs.zero), lane);
  if (active && ok) {
    uint32_t p = start, m = 0;
    BitStream in(v.reader, p);
    const uint16_t* out_end = v.out + v.count;
    if (tokens) {
      RunFilledWriter out(v.out, rank, min(v.count, rank + counted),
                          static_cast<uint16_t>(runs.zero), &shared_sectors[2 * threadIdx.x]);
      StreamRun<true, kRuns>(multi, table, runs, in, p, stop, v.bits, m, &out, zeros, out_end);
      out.Flush();
    } else {
      SymbolWriter out(v.out + rank);
      StreamRun<true, kRuns>(multi, table, runs, in, p, stop, v.bits, m, &out, zeros, out_end);
      out.Flush();
    }
    // The same path as the count's: a disagreement is this kernel's fault.
    if (kRuns && m != n) ReportError(status, kErrBitstream, v.s);
  }
  for (uint32_t d = 16; d > 0; d /= 2) zeros += __shfl_down_sync(kAll, zeros, d);
  if (lane == 0 && zeros) {
    atomicAdd(reinterpret_cast<unsigned long long*>(&zero_symbols[v.s]), zeros);
  }
}

// ---------------------------------------------------------------------------
// (b) for few chunks, and (c): a block per chunk; thread t owns a contiguous
// run of the chunk's bits and decodes from the first codeword start in it.
// Runs start speculatively, at their first bit, and are corrected in rounds
// until each begins where the one before ends (Weissenberger and Schmidt).
// With a gap array (b), the runs are quarter subsequences and those that
// begin a subsequence start exactly where the gap array says, so that a
// correction never travels further than three runs, and every exact start
// must agree with the path that reaches it. With few chunks the GPU has room
// for a block each: quarter subsequences give a 256 KiB array's decode a
// quarter of the longest run that a thread per subsequence had (its 150 us
// were that one dependent chain).

constexpr int kDecodeThreads = 512;
constexpr uint32_t kRunsPerSubsequence = 4;
using decode_steps::kNoEnd;  // a run that met an invalid codeword

template <bool kSelfSync, bool kRuns>
__global__ void __launch_bounds__(kDecodeThreads)
    BlockDecodeKernel(const Segment* segments, uint32_t num_segments, ChunkRange chunks,
                      const Item* items, DecodeTables tables, const uint32_t* chunk_bits,
                      const uint64_t* word_prefix, const uint64_t* gap_prefix, uint16_t* symbols,
                      uint64_t* zero_symbols, DeviceStatus* status) {
  using Scan = cub::BlockScan<uint32_t, kDecodeThreads>;
  __shared__ typename Scan::TempStorage temp;
  __shared__ uint32_t start[kDecodeThreads + 1];  // true codeword start of each thread's run
  __shared__ uint32_t end[kDecodeThreads];        // where each thread's decoding stopped
  __shared__ uint32_t trace[kDecodeThreads][kTrace];
  __shared__ uint32_t zeros;
  __shared__ uint32_t shared_lengths[96];  // the table's per-length parts
  // Dynamic: the lookup table, the chunk's bits (when they fit) and its
  // symbols, staged for a coalesced write.
  extern __shared__ uint32_t dynamic[];
  uint32_t* const shared_lookup = dynamic;
  uint32_t* const shared_words = dynamic + (1u << kLookupBits);
  uint16_t* const staged = reinterpret_cast<uint16_t*>(shared_words + kSkewedWords);
  __shared__ bool skip;
  // See ChunkParallelKernel; one read, so the whole block agrees.
  if (threadIdx.x == 0) skip = status->error != kNoError;
  __syncthreads();
  if (skip) return;

  const uint64_t chunk = chunks.At(blockIdx.x);
  const ChunkView v(segments, num_segments, items, chunk, chunk_bits, word_prefix, symbols);
  const Segment& seg = *v.seg;
  Table table(tables, seg, v.s);
  table.Stage(shared_lookup, shared_lengths);
  const RunCode run_code = RunCodeOf<kRuns>(seg);
  BitReader reader = v.reader;
  if (reader.num_words <= kStagedWords) {
    // Skewed by a word per 32: threads start whole subsequences (32 words)
    // apart and read about the same word of each at once, which unskewed
    // is one bank for a whole warp.
    for (uint32_t i = threadIdx.x; i < reader.num_words; i += kDecodeThreads) {
      shared_words[i + i / 32] = reader.words[i];
    }
    reader.words = shared_words;
    reader.skew_shift = 5;
  }
  __syncthreads();
  const uint32_t sub = seg.subsequence_bits;
  const uint32_t run_bits =
      !kSelfSync && sub % (32 * kRunsPerSubsequence) == 0 ? sub / kRunsPerSubsequence : sub;
  const uint32_t runs = (v.bits + run_bits - 1) / run_bits;
  const uint32_t per = (runs + kDecodeThreads - 1) / kDecodeThreads;
  const uint32_t t = threadIdx.x;
  const uint32_t boundary = min(v.bits, t * per * run_bits);  // first bit of my run
  const uint32_t stop = min(v.bits, (t + 1) * per * run_bits);
  const bool active = boundary < v.bits;
  // Runs that start on a true codeword start: thread 0's, and with a gap
  // array every run that begins a subsequence.
  const bool exact = active && (t == 0 || (!kSelfSync && boundary % sub == 0));
  if (t == 0) zeros = 0;

  uint32_t pos = boundary, n = 0;
  bool ok = true;
  const uint8_t* gaps = nullptr;
  if (!kSelfSync) {
    gaps = items[seg.item].archive + seg.section_offset[format::kGapArray] +
           (gap_prefix[chunk] - gap_prefix[seg.chunk_base]);
  }
  if (!kSelfSync && exact) {
    pos = boundary + gaps[boundary / sub];
    ok = pos <= v.bits && (t > 0 || pos == 0);
    if (!ok) ReportError(status, kErrGapArray, v.s);
  }
  start[t] = active ? pos : v.bits;
  uint32_t traced = 0;
  uint32_t* my_trace = trace[t];
  const WindowDecoder<kRuns> decode{table, run_code, reader};
  const bool valid =
      active && ok && decode_steps::TraceRun<kRuns>(decode, pos, stop, v.bits, n, my_trace, traced);
  end[t] = !active ? v.bits : valid ? pos : kNoEnd;
  __syncthreads();
  // Rounds: a speculative run whose start disagrees with its predecessor's
  // (valid) end decodes again from there, stopping as soon as it lands on a
  // codeword start of its previous path: from there on the paths agree.
  for (uint32_t round = 0; round <= kDecodeThreads; ++round) {
    const uint32_t want = t == 0 ? 0 : end[t - 1];
    const bool redo = active && !exact && want != kNoEnd && want != start[t];
    __syncthreads();
    if (redo) {
      uint32_t my_end = end[t];
      decode_steps::Correct<kRuns>(decode, want, stop, v.bits, my_trace, traced, n, &my_end);
      end[t] = my_end;
      start[t] = want;
    }
    if (!__syncthreads_or(redo)) break;
  }
  // The runs must chain: each ends exactly where the next begins. The
  // rounds made it so for speculative starts; an exact one that disagrees
  // is a gap array that does not match the bitstream.
  if (active && ok) {
    ok = end[t] != kNoEnd && end[t] == (t + 1 < kDecodeThreads ? start[t + 1] : v.bits);
    if (!ok) ReportError(status, kSelfSync ? kErrBitstream : kErrGapArray, v.s);
  }
  __syncthreads();

  // Count, scan, decode into shared memory, write out coalesced. (With run
  // tokens a corrupt stream's positions could overflow the sum: more than
  // the chunk's in one thread fails the total anyway.)
  uint32_t rank, total;
  Scan(temp).ExclusiveSum(!(active && ok) ? 0 : kRuns ? min(n, v.count + 1) : n, rank, total);
  const bool chained = end[kDecodeThreads - 1] == v.bits || v.bits == 0;
  if (total != v.count || !chained) {
    if (t == 0) ReportError(status, kErrBitstream, v.s);
    return;
  }
  uint32_t my_zeros = 0;
  if (active && ok) {
    uint32_t p = start[t], m = 0;
    BitStream in(reader, p);
    SymbolWriter out(staged + rank);
    // Single-symbol steps only: with multi-symbol ones the service's
    // batches of 256 KiB arrays at REL 1e-4 decoded 4 % slower (0.103 ->
    // 0.107 ms for one array, 0.129 -> 0.134 for 8). The gap entries of
    // subsequences starting inside a run are checked here, the others were
    // its exact starts.
    if constexpr (kSelfSync) {
      StreamRun<true, kRuns>(false, table, run_code, in, p, stop, v.bits, m, &out, my_zeros,
                             staged + v.count);
    } else if (!GapCheckedRun<true, kRuns>(false, table, run_code, in, p,
                                           (boundary / sub + 1) * sub, stop, v.bits, sub, gaps, m,
                                           &out, my_zeros, staged + v.count)) {
      ReportError(status, kErrGapArray, v.s);
    }
    out.Flush();
    // The rounds' count of this path: a disagreement is this kernel's fault.
    if (kRuns && m != n) ReportError(status, kErrBitstream, v.s);
  }
  if (my_zeros) atomicAdd(&zeros, my_zeros);
  __syncthreads();
  for (uint32_t i = t; i < v.count; i += kDecodeThreads) v.out[i] = staged[i];
  if (t == 0 && zeros) {
    atomicAdd(reinterpret_cast<unsigned long long*>(&zero_symbols[v.s]), zeros);
  }
}

// ---------------------------------------------------------------------------
// Chunk index (FORMAT.md §5.2).

__global__ void ReadChunkIndexKernel(const Segment* segments, uint32_t num_segments,
                                     uint64_t num_chunks, const Item* items, uint32_t* chunk_bits,
                                     uint64_t* chunk_words, uint64_t* chunk_gaps,
                                     DeviceStatus* status) {
  const uint64_t chunk = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (chunk >= num_chunks) return;
  const uint32_t s = SegmentOfChunk(segments, num_segments, chunk);
  const Segment& seg = segments[s];
  const uint64_t c = chunk - seg.chunk_base;
  const uint64_t groups = (seg.num_chunks + seg.chunk_group - 1) / seg.chunk_group;
  const uint8_t* index = items[seg.item].archive + seg.section_offset[format::kChunkIndex];
  uint32_t bits = LoadBytes<uint32_t>(index + groups * 8 + c * 4);
  if (uint64_t{bits} > uint64_t{seg.chunk_symbols} * seg.max_code_length) {
    ReportError(status, kErrChunkIndex, s);
    bits = 0;
  }
  chunk_bits[chunk] = bits;
  chunk_words[chunk] = (bits + 31) / 32;
  chunk_gaps[chunk] = seg.gap_array ? (bits + seg.subsequence_bits - 1) / seg.subsequence_bits : 0;
}

__global__ void CheckChunkIndexKernel(const Segment* segments, uint32_t num_segments,
                                      uint64_t num_chunks, const Item* items,
                                      const uint64_t* chunk_words, const uint64_t* chunk_gaps,
                                      const uint64_t* word_prefix, const uint64_t* gap_prefix,
                                      DeviceStatus* status) {
  const uint64_t chunk = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (chunk >= num_chunks) return;
  const uint32_t s = SegmentOfChunk(segments, num_segments, chunk);
  const Segment& seg = segments[s];
  const uint64_t c = chunk - seg.chunk_base;
  const uint64_t words_before = word_prefix[chunk] - word_prefix[seg.chunk_base];
  if (c % seg.chunk_group == 0) {
    const uint8_t* index = items[seg.item].archive + seg.section_offset[format::kChunkIndex];
    if (LoadBytes<uint64_t>(index + (c / seg.chunk_group) * 8) != words_before) {
      ReportError(status, kErrChunkIndex, s);
    }
  }
  if (c + 1 == seg.num_chunks) {
    const uint64_t words = words_before + chunk_words[chunk];
    const uint64_t gaps = gap_prefix[chunk] - gap_prefix[seg.chunk_base] + chunk_gaps[chunk];
    if (words * 4 != seg.section_length[format::kBitstream] ||
        (seg.gap_array && gaps != seg.section_length[format::kGapArray])) {
      ReportError(status, kErrChunkIndex, s);
    }
  }
}

}  // namespace

cudaError_t LaunchBuildDecodeTables(const Segment* segments, uint32_t num_segments,
                                    const Item* items, DecodeTables tables, DeviceStatus* status,
                                    cudaStream_t stream) {
  if (cudaError_t e = cudaFuncSetAttribute(BuildTablesKernel,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, 65536);
      e != cudaSuccess) {
    return e;
  }
  BuildTablesKernel<<<num_segments, kTableThreads, 65536, stream>>>(segments, items, tables,
                                                                    status);
  return cudaGetLastError();
}

cudaError_t LaunchReadChunkIndex(const Segment* segments, uint32_t num_segments,
                                 uint64_t num_chunks, const Item* items, uint32_t* chunk_bits,
                                 uint64_t* chunk_words, uint64_t* chunk_gaps, DeviceStatus* status,
                                 cudaStream_t stream) {
  ReadChunkIndexKernel<<<(num_chunks + kThreads - 1) / kThreads, kThreads, 0, stream>>>(
      segments, num_segments, num_chunks, items, chunk_bits, chunk_words, chunk_gaps, status);
  return cudaGetLastError();
}

cudaError_t LaunchCheckChunkIndex(const Segment* segments, uint32_t num_segments,
                                  uint64_t num_chunks, const Item* items,
                                  const uint64_t* chunk_words, const uint64_t* chunk_gaps,
                                  const uint64_t* word_prefix, const uint64_t* gap_prefix,
                                  DeviceStatus* status, cudaStream_t stream) {
  CheckChunkIndexKernel<<<(num_chunks + kThreads - 1) / kThreads, kThreads, 0, stream>>>(
      segments, num_segments, num_chunks, items, chunk_words, chunk_gaps, word_prefix, gap_prefix,
      status);
  return cudaGetLastError();
}

namespace {

template <bool kRuns>
cudaError_t LaunchDecoders(GpuDecoder decoder, const Segment* segments, uint32_t num_segments,
                           ChunkRange chunks, uint32_t max_chunk_symbols, const Item* items,
                           DecodeTables tables, const uint32_t* chunk_bits,
                           const uint64_t* word_prefix, const uint64_t* gap_prefix,
                           uint16_t* symbols, uint64_t* zero_symbols, DeviceStatus* status,
                           cudaStream_t stream) {
  const uint64_t count = chunks.end - chunks.begin;
  if (count == 0) return cudaSuccess;
  if (decoder == GpuDecoder::kChunkParallel) {
    ChunkParallelKernel<kRuns><<<(count + 127) / 128, 128, 0, stream>>>(
        segments, num_segments, chunks, items, tables, chunk_bits, word_prefix, symbols,
        zero_symbols, status);
    return cudaGetLastError();
  }
  if (DecodesByWarps(decoder, chunks.batch_chunks)) {
    const size_t spans = kRuns ? (size_t{1} << kMultiBits) * sizeof(uint32_t) : 0;
    if (cudaError_t e = cudaFuncSetAttribute(GapArrayWarpKernel<kRuns>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(spans));
        e != cudaSuccess) {
      return e;
    }
    GapArrayWarpKernel<kRuns>
        <<<(count + kChunksPerBlock - 1) / kChunksPerBlock, kThreads, spans, stream>>>(
            segments, num_segments, chunks, items, tables, chunk_bits, word_prefix, gap_prefix,
            symbols, zero_symbols, status);
    return cudaGetLastError();
  }
  const size_t smem = (size_t{1} << kLookupBits) * 4 + size_t{kSkewedWords} * 4 +
                      size_t{max_chunk_symbols} * sizeof(uint16_t);
  auto kernel = decoder == GpuDecoder::kGapArray ? BlockDecodeKernel<false, kRuns>
                                                 : BlockDecodeKernel<true, kRuns>;
  if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(smem));
      e != cudaSuccess) {
    return e;
  }
  kernel<<<count, kDecodeThreads, smem, stream>>>(segments, num_segments, chunks, items, tables,
                                                  chunk_bits, word_prefix, gap_prefix, symbols,
                                                  zero_symbols, status);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchDecode(GpuDecoder decoder, const Segment* segments, uint32_t num_segments,
                         ChunkRange chunks, uint32_t max_chunk_symbols, const Item* items,
                         DecodeTables tables, const uint32_t* chunk_bits,
                         const uint64_t* word_prefix, const uint64_t* gap_prefix, uint16_t* symbols,
                         uint64_t* zero_symbols, DeviceStatus* status, cudaStream_t stream) {
  return LaunchDecoders<false>(decoder, segments, num_segments, chunks, max_chunk_symbols, items,
                               tables, chunk_bits, word_prefix, gap_prefix, symbols, zero_symbols,
                               status, stream);
}

cudaError_t LaunchDecodeRuns(GpuDecoder decoder, const Segment* segments, uint32_t num_segments,
                             ChunkRange chunks, uint32_t max_chunk_symbols, const Item* items,
                             DecodeTables tables, const uint32_t* chunk_bits,
                             const uint64_t* word_prefix, const uint64_t* gap_prefix,
                             uint16_t* symbols, uint64_t* zero_symbols, DeviceStatus* status,
                             cudaStream_t stream) {
  return LaunchDecoders<true>(decoder, segments, num_segments, chunks, max_chunk_symbols, items,
                              tables, chunk_bits, word_prefix, gap_prefix, symbols, zero_symbols,
                              status, stream);
}

}  // namespace ebzip::gpu
