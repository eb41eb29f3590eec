// The tables every GPU launch works from. A batch is a list of arrays
// ("items"); each array is cut into frames exactly as the CPU codec cuts it
// (ArchivePlan), and each frame is one "segment". Kernels index segments, so
// one set of launches serves one large array or many small ones alike.
// Plain structs: the host fills them, copies them to the device, kernels read
// them.
#ifndef EBZIP_GPU_SEGMENT_H_
#define EBZIP_GPU_SEGMENT_H_

#include <cstdint>
#include <cstring>

#include "codec/format.h"
#include "codec/host_device.h"
#include "codec/resolve_bound.h"

namespace ebzip::gpu {

inline constexpr int kDims = 4;
inline constexpr int kSections = format::kSectionCount;

// Elements per prediction tile: a tile is a run of whole Lorenzo blocks of one
// segment, so its shared-memory histogram is flushed once per ~this many.
inline constexpr uint32_t kTileElements = 16384;
// Tiles a segment is cut into at least (blocks allowing): a 256 KiB array
// would otherwise be 4 tiles, 4 thread blocks walking 64 Lorenzo blocks each
// one after the other on a GPU of 132 SMs.
inline constexpr uint32_t kMinTilesPerSegment = 32;
// Largest Lorenzo block (in elements) the GPU kernels hold in shared memory.
inline constexpr uint32_t kMaxBlockVolume = 4096;
// Largest chunk the encoder and decoders stage in shared memory.
inline constexpr uint32_t kMaxGpuChunkSymbols = 65536;
// Special-element masks are scanned in tiles of this many 32-bit words.
inline constexpr uint32_t kMaskTileWords = 256;

// A frame seen as 4-D, as codec/lorenzo.h's BlockGrid sees it.
struct Geometry {
  uint64_t dims[kDims];
  uint32_t block[kDims];
  uint64_t grid[kDims];  // blocks along each dimension
  uint64_t n;
  uint64_t num_blocks;

  // Extent of block `b` along dimension d.
  EBZIP_HD uint32_t Extent(int d, uint64_t b) const {
    const uint64_t rest = dims[d] - b * block[d];
    return rest < block[d] ? static_cast<uint32_t>(rest) : block[d];
  }
};

// Per frame, fixed on the host before any launch.
struct Segment {
  Geometry geo;
  const void* input;  // compression: the frame's first element
  void* output;       // decompression: where the frame's elements go
  uint32_t item;
  uint32_t radius;
  uint32_t chunk_symbols;
  uint32_t subsequence_bits;
  uint32_t chunk_group;
  uint32_t gap_array;
  uint32_t max_code_length;
  uint32_t frame_index;  // within its item
  uint64_t symbol_base;  // into the batch's symbol (and delta) arrays
  uint64_t mask_base;    // first word of this frame in each special mask
  uint64_t mask_tile_base;
  uint64_t mask_tiles;
  uint64_t chunk_base;
  uint64_t num_chunks;
  // Compression with tokens: chunk c's slice states are chunk
  // slice_chunk_base + c's (gpu/run_kernels.h), the chunk_base the runs were
  // counted under, before S was known and the chunks laid out again.
  uint64_t slice_chunk_base;
  uint64_t tile_base;  // first prediction tile
  uint64_t tiles;
  uint64_t blocks_per_tile;
  // Compression, device-built code: where its code-length section is staged.
  uint64_t code_section_at;
  // Decompression: what the (host-parsed) frame header says.
  uint64_t frame_offset;  // in its item's archive
  uint64_t section_offset[kSections];
  uint64_t section_length[kSections];
  uint32_t section_crc[kSections];
  uint64_t outlier_count;
  uint64_t verbatim_count;
  uint64_t fill_run_count;
  uint64_t outlier_base;  // prefix sums of the counts over the batch
  uint64_t verbatim_base;
  uint64_t fill_run_base;
  double quant_step;
  double fill_value;
  // Version 2 (FORMAT.md §15.2). predictor 1 (interpolation) frames are
  // coded by gpu/interp_kernels.h; the Lorenzo kernels skip them.
  uint32_t predictor;
  // The lossless stage (§15.2, gpu/run_kernels.h): 0 plain symbols; 1 runs
  // of the zero residual are class tokens (§15.4), alphabet 2 * radius + 12;
  // 2 also run-value tokens (§15.4.1), alphabet 2 * radius + 64. Compression
  // sets it once it has picked the stage (0 until then).
  uint32_t lossless;
  // Compression: the highest stage the frame may use (HighestStage), up to
  // which the run counters count and token histograms are made before the
  // pick.
  uint32_t highest_lossless;
  uint32_t fill_coding;  // 1: fill mask (§15.6) instead of fill runs
  uint32_t order;        // interpolation: 1 or 3
  // Symbol positions S (§15.3): chunks cover these. n unless fill_coding = 1.
  uint64_t positions;
  // 1: only some of its chunks are decoded (a region's frame,
  // gpu/decompressor.cu), so its zero symbols are not counted: the
  // interpolation decoder checks its outliers.
  uint32_t partial;
};

// Per array.
struct Item {
  uint8_t* archive;        // device: where its archive goes / comes from
  uint64_t* archive_size;  // device: compression writes the archive's length here
  uint64_t capacity;       // compression: bytes available at `archive`
  uint64_t first_segment;
  uint64_t num_segments;
  // The bound mode: 0 ABS; REL: 1 with the range reduced on the device,
  // 2 with the caller's range (CompressOptions::range) preset in the keys.
  uint32_t relative;
  uint32_t has_fill;
  double bound;
  uint64_t fill_bits;  // fill value's bit pattern in the element type
  // Written on the device.
  unsigned long long min_key;  // OrderedKey of the smallest finite non-fill value
  unsigned long long max_key;
  double abs_bound;
  double quant_step;
  uint32_t overflow;  // the archive would exceed `capacity`: nothing is written
  uint32_t frame_only;  // one frame's bytes, no file header, index or trailer
  Narrowing narrowing;  // for ResolveBoundFor: NarrowingFor(options, dtype)
};

// What the compressor learns on the device about each frame, then writes.
struct FrameLayout {
  uint64_t frame_offset;  // in its item's archive
  uint64_t frame_size;
  uint64_t section_offset[kSections];
  uint64_t section_length[kSections];
  uint32_t section_crc[kSections];
  uint64_t outliers;
  uint64_t verbatim;
  uint64_t fill_runs;
};

// Per-frame Huffman code, built on the host or the device: where its
// code-length section is staged. The section's CRC is the device's, as every
// other section's.
struct Codebook {
  uint64_t section_offset;  // into the staged code-length sections
  uint64_t section_bytes;
};

// Counts of special elements in one mask tile (and their prefix sums).
struct SpecialCounts {
  uint64_t outliers;
  uint64_t verbatim;
  uint64_t run_starts;
  uint64_t run_ends;
};

EBZIP_HD inline SpecialCounts operator+(const SpecialCounts& a, const SpecialCounts& b) {
  return {a.outliers + b.outliers, a.verbatim + b.verbatim, a.run_starts + b.run_starts,
          a.run_ends + b.run_ends};
}

// A byte range to checksum: one section of one frame.
struct CrcJob {
  const uint8_t* data;
  uint64_t length;
  uint32_t* result;       // where the CRC goes: 0 before LaunchCrc
  uint32_t expected;      // what it must be (decompression)
  uint32_t segment;
};

// First error a decompression kernel found; 0 while none.
enum DeviceError : uint32_t {
  kNoError = 0,
  kErrChecksum = 1,
  kErrCodeLengths = 2,
  kErrChunkIndex = 3,
  kErrBitstream = 4,
  kErrGapArray = 5,
  kErrOutliers = 6,
  kErrVerbatim = 7,
  kErrFillRuns = 8,
  // Version 2 (gpu/run_kernels.h); DeviceStatus::section holds the MaskCheck.
  kErrFillMask = 16,
  // Interpolation (gpu/interp_kernels.h); DeviceStatus::section holds the
  // interp::DecodeError bits.
  kErrInterp = 17,
  kErrPadding = 18,  // a section's padding (FORMAT.md §1) is not zero
};
struct DeviceStatus {
  uint32_t error;    // a DeviceError
  uint32_t segment;  // where
  uint32_t section;  // for checksum errors
  uint32_t unused;
};

// Monotone map from doubles to unsigned keys, so atomicMin/atomicMax on keys
// reduce the finite range without floating-point atomics.
EBZIP_HD inline unsigned long long OrderedKey(double v) {
  unsigned long long b;
  memcpy(&b, &v, sizeof b);
  return (b >> 63) ? ~b : b | (1ull << 63);
}
EBZIP_HD inline double FromOrderedKey(unsigned long long k) {
  const unsigned long long b = (k >> 63) ? k & ~(1ull << 63) : ~k;
  double v;
  memcpy(&v, &b, sizeof v);
  return v;
}

EBZIP_HD inline uint64_t Align8(uint64_t v) { return (v + 7) & ~uint64_t{7}; }

// Binary search in a prefix table: the last i in [0, count) with base(i) <= x.
template <typename Base>
EBZIP_HD inline uint32_t FindSegment(uint32_t count, uint64_t x, Base base) {
  uint32_t lo = 0, hi = count;
  while (hi - lo > 1) {
    const uint32_t mid = (lo + hi) / 2;
    if (base(mid) <= x) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace ebzip::gpu

#endif  // EBZIP_GPU_SEGMENT_H_
