// Launchers of the GPU codec's kernels, one group per .cu file. Each enqueues
// on `stream` and returns the launch error; none allocates or synchronizes.
// Element-type-dependent launchers take the element size (4 or 8).
#ifndef EBZIP_GPU_KERNELS_H_
#define EBZIP_GPU_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "gpu/segment.h"

namespace ebzip {
struct SymbolCount;  // codec/huffman_code.h
}  // namespace ebzip

namespace ebzip::gpu {

// --- predict_kernels.cu: range, bound, and the fused prediction pass.
// Reduces each REL item's finite non-fill range into Item::min_key/max_key.
cudaError_t LaunchRange(int elem_size, const Segment* segments, uint32_t num_segments, Item* items,
                        uint64_t range_tiles, cudaStream_t stream);
// Resolves every item's absolute bound and step (ResolveBoundFor).
cudaError_t LaunchResolveBounds(Item* items, uint32_t num_items, cudaStream_t stream);
// Quantize, placeholder, Lorenzo, symbols, histogram and special-element
// masks, one Lorenzo block at a time, for every tile of every Lorenzo
// segment. `host_segments`: the table's host copy, from which only the
// kernels with work are launched (none when no segment is Lorenzo).
struct PredictOutputs {
  uint16_t* symbols;
  int32_t* deltas;      // outlier residuals, written at their element's index
  uint32_t* histogram;  // 65536 bins per segment
  uint32_t* outlier_mask;
  uint32_t* verbatim_mask;
  uint32_t* fill_mask;
};
cudaError_t LaunchPredict(int elem_size, const Segment* segments, const Segment* host_segments,
                          uint32_t num_segments, const Item* items, uint64_t num_tiles,
                          PredictOutputs out, cudaStream_t stream);

// --- codebook_kernels.cu: each frame's used symbols, and the host-built
// codes' way back.
constexpr uint32_t kHistogramBins = 65536;
// Where a segment's used symbols sit in the list that goes to the host (and
// their lengths and codes in the lists that come back).
struct UsedSymbols {
  uint32_t count;
  uint32_t reserved;
  uint64_t offset;
};
// Lists every segment's used symbols (non-zero bins, ascending) with their
// counts behind the previous segment's: used[s] and info[s] say how many and
// where. `list` has room for every bin of every segment.
cudaError_t LaunchListUsedSymbols(const uint32_t* histogram, uint32_t num_segments, uint32_t* used,
                                  UsedSymbols* info, SymbolCount* list, cudaStream_t stream);
// Spreads the lengths and codes built for each listed symbol into the
// segment's 65536-entry tables (entries of unused symbols are never read).
cudaError_t LaunchUnpackCodes(const UsedSymbols* info, const SymbolCount* list,
                              uint32_t num_segments, const uint8_t* packed_lengths,
                              const uint32_t* packed_codes, uint8_t* lengths, uint32_t* codes,
                              cudaStream_t stream);

// --- code_build_kernels.cu: the Huffman code built on the device instead
// (the host's lengths exactly; gpu/code_build_steps.h), from the same list.
// Scratch per listed symbol (room for `listed_capacity`, indexed like the
// list), and CUB's sort workspace.
// Trees of few enough symbols work in shared memory and leave theirs unused.
struct CodeBuildScratch {
  uint64_t* keys[2];  // sort keys and their double buffer
  uint32_t* leaf_weight;
  uint32_t* internal_weight;
  uint32_t* merged_weight;
  uint32_t* merged_node;
  uint32_t* parent;  // two per listed symbol
  uint8_t* height;   // two per listed symbol
  uint8_t* depth;
  uint8_t* leaf_depth;  // by sorted position
  uint8_t* place_length;
  int* sort_begin;  // per segment
  int* sort_end;
  void* sort_temp;
  size_t sort_temp_bytes;
};
cudaError_t CodeBuildSortBytes(uint64_t listed_capacity, uint32_t num_segments, size_t* bytes);
// Writes each segment's lengths and codes into its 65536-entry tables (as
// LaunchUnpackCodes does), its code-length section at `sections` +
// Segment::code_section_at, and the section's place and size in codebooks.
// max_symbols: the most symbols any segment can use (sizes shared memory).
cudaError_t LaunchBuildCodes(const Segment* segments, uint32_t num_segments,
                             uint64_t listed_capacity, uint32_t max_symbols,
                             const UsedSymbols* info, const SymbolCount* list,
                             const CodeBuildScratch& scratch, uint8_t* lengths, uint32_t* codes,
                             Codebook* codebooks, uint8_t* sections, cudaStream_t stream);

// --- encode_kernels.cu: chunked Huffman encoding with gap array.
// Bits per chunk, and the words and gap entries each chunk takes.
cudaError_t LaunchChunkBits(const Segment* segments, uint32_t num_segments, uint64_t num_chunks,
                            const uint16_t* symbols, const uint8_t* lengths, uint32_t* chunk_bits,
                            uint64_t* chunk_words, uint64_t* chunk_gaps, cudaStream_t stream);
// Writes bitstream, gap array and chunk index into each frame's sections.
// word_prefix/gap_prefix: exclusive scans of chunk_words/chunk_gaps.
cudaError_t LaunchEncode(const Segment* segments, uint32_t num_segments, uint64_t num_chunks,
                         uint32_t max_chunk_symbols, uint32_t max_code_length, const Item* items,
                         const FrameLayout* layouts, const uint16_t* symbols,
                         const uint8_t* lengths, const uint32_t* codes, const uint32_t* chunk_bits,
                         const uint64_t* word_prefix, const uint64_t* gap_prefix,
                         cudaStream_t stream);

// --- specials_kernels.cu: outliers, verbatim values and fill runs, in index
// order, from the masks.
cudaError_t LaunchCountSpecials(const Segment* segments, uint32_t num_segments,
                                uint64_t num_mask_tiles, const uint32_t* outlier_mask,
                                const uint32_t* verbatim_mask, const uint32_t* fill_mask,
                                SpecialCounts* tile_counts, cudaStream_t stream);
// `tile_counts` (LaunchCountSpecials's), when not null, lets a tile with
// nothing to write skip its masks.
cudaError_t LaunchWriteSpecials(int elem_size, const Segment* segments, uint32_t num_segments,
                                uint64_t num_mask_tiles, const Item* items,
                                const FrameLayout* layouts, const uint32_t* outlier_mask,
                                const uint32_t* verbatim_mask, const uint32_t* fill_mask,
                                const SpecialCounts* tile_counts,
                                const SpecialCounts* tile_prefix, const int32_t* deltas,
                                cudaStream_t stream);

// --- assemble_kernels.cu: frame layout, headers, index, trailer.
// Fixes every section's length and place (one thread per item) and the
// archive's size, and lists the sections whose CRC the device computes.
// Segments with a fill mask (fill_coding 1): fill_mask_sizes[2s] is its
// section's bytes, [2s + 1] its tokens, and fill_mask_at[s] gets where the
// section goes (null when the archive overflows); both unread otherwise.
cudaError_t LaunchLayout(int elem_size, const Segment* segments, Item* items, uint32_t num_items,
                         const Codebook* codebooks, const SpecialCounts* tile_prefix,
                         const SpecialCounts* tile_counts, const uint64_t* word_prefix,
                         const uint64_t* gap_prefix, const uint64_t* chunk_words,
                         const uint64_t* chunk_gaps, const uint64_t* fill_mask_sizes,
                         uint8_t** fill_mask_at, FrameLayout* layouts, CrcJob* crc_jobs,
                         uint64_t* crc_job_pieces, cudaStream_t stream);
// Copies each frame's code-length section into place.
cudaError_t LaunchCopyCodeLengths(const Segment* segments, uint32_t num_segments, const Item* items,
                                  const FrameLayout* layouts, const Codebook* codebooks,
                                  const uint8_t* code_sections, cudaStream_t stream);
// Writes frame headers from their templates (kFrameHeaderSize bytes per
// segment), the file header (kFileHeaderSize per item), index and trailer.
cudaError_t LaunchHeaders(const Segment* segments, uint32_t num_segments, const Item* items,
                          uint32_t num_items, const FrameLayout* layouts,
                          const uint8_t* frame_templates, const uint8_t* file_templates,
                          cudaStream_t stream);

// --- crc_kernels.cu: CRC-32C of many byte ranges in 1 KiB pieces (a thread
// each: a small frame's sections make enough of them to fill a few warps).
inline constexpr uint64_t kCrcPieceBytes = 1024;
// XORs each job's CRC into *job.result, which must hold 0 before.
// piece_prefix: exclusive scan of each job's piece count (ceil(length/1024)),
// num_jobs + 1 entries, the last being the total (on the device).
cudaError_t LaunchCrc(const CrcJob* jobs, uint32_t num_jobs, const uint64_t* piece_prefix,
                      uint64_t max_pieces, cudaStream_t stream);
// After LaunchCrc: compares each *job.result with job.expected and records
// the first mismatch.
cudaError_t LaunchCrcCheck(const CrcJob* jobs, uint32_t num_jobs, DeviceStatus* status,
                           cudaStream_t stream);
// Checks the zero bytes after each job's range up to its next multiple of 8
// (a section's padding, which no CRC covers): kErrPadding.
cudaError_t LaunchPaddingCheck(const CrcJob* jobs, uint32_t num_jobs, DeviceStatus* status,
                               cudaStream_t stream);

// --- decode_kernels.cu: code tables, chunk index, the three decoders.
struct DecodeTables {
  uint32_t* lookup;      // 4096 per segment: (symbol << 8) | length; see decode_kernels.cu
  uint64_t* multi;       // 2048 per segment: the short codewords of an 11-bit prefix;
                         // null: not built (no decoder of the launch reads it)
  uint32_t* spans;       // 2048 per segment with multi, built for segments with tokens:
                         // the bits and positions of an 11-bit prefix's whole tokens
  uint16_t* sorted;      // 65536 per segment: symbols by (length, symbol)
  uint32_t* first_code;  // 32 per segment: canonical first code of each length
  uint32_t* count;       // 32 per segment
  uint32_t* offset;      // 32 per segment: into sorted
};
cudaError_t LaunchBuildDecodeTables(const Segment* segments, uint32_t num_segments,
                                    const Item* items, DecodeTables tables, DeviceStatus* status,
                                    cudaStream_t stream);
// Reads each chunk's bit length; words and gap entries per chunk.
cudaError_t LaunchReadChunkIndex(const Segment* segments, uint32_t num_segments,
                                 uint64_t num_chunks, const Item* items, uint32_t* chunk_bits,
                                 uint64_t* chunk_words, uint64_t* chunk_gaps, DeviceStatus* status,
                                 cudaStream_t stream);
// Checks group offsets and totals against the scans.
cudaError_t LaunchCheckChunkIndex(const Segment* segments, uint32_t num_segments,
                                  uint64_t num_chunks, const Item* items,
                                  const uint64_t* chunk_words, const uint64_t* chunk_gaps,
                                  const uint64_t* word_prefix, const uint64_t* gap_prefix,
                                  DeviceStatus* status, cudaStream_t stream);
enum class GpuDecoder { kChunkParallel, kGapArray, kSelfSync };
// From this many chunks in a launch on, the gap-array decoder runs a warp per
// chunk instead of a block per chunk (about as many chunks as the block form
// keeps in flight on an H100: 132 SMs x 3, rounded up).
inline constexpr uint64_t kWarpGapDecodeMinChunks = 512;
// Whether LaunchDecode runs that warp-per-chunk form, the one decoder that
// reads DecodeTables::multi.
inline bool DecodesByWarps(GpuDecoder decoder, uint64_t num_chunks) {
  return decoder == GpuDecoder::kGapArray && num_chunks >= kWarpGapDecodeMinChunks;
}
// The chunks [begin, end) of a batch of `batch_chunks`: the batch's count
// picks the decoder's form, so a batch decodes the same way in one launch
// or in several (the decompressor launches each interpolation frame's
// chunks apart, on that frame's stream).
// With `list` (device memory), the range's i-th chunk is list[i] instead of
// begin + i: a region's chunks of one frame (gpu/decompressor.cu).
struct ChunkRange {
  uint64_t begin;
  uint64_t end;
  uint64_t batch_chunks;
  const uint64_t* list = nullptr;
  static ChunkRange All(uint64_t chunks) { return {0, chunks, chunks}; }
#ifdef __CUDACC__
  __device__ uint64_t At(uint64_t i) const { return list != nullptr ? list[i] : begin + i; }
#endif
};
cudaError_t LaunchDecode(GpuDecoder decoder, const Segment* segments, uint32_t num_segments,
                         ChunkRange chunks, uint32_t max_chunk_symbols, const Item* items,
                         DecodeTables tables, const uint32_t* chunk_bits,
                         const uint64_t* word_prefix, const uint64_t* gap_prefix, uint16_t* symbols,
                         uint64_t* zero_symbols, DeviceStatus* status, cudaStream_t stream);

// --- reconstruct_kernels.cu: outliers, inverse Lorenzo, fill and verbatim.
// Lorenzo frames' outliers into `deltas`, each checked against its symbol.
cudaError_t LaunchScatterOutliers(const Segment* segments, uint32_t num_segments,
                                  uint64_t total_outliers, const Item* items,
                                  const uint16_t* symbols, int32_t* deltas, DeviceStatus* status,
                                  cudaStream_t stream);
// Every frame's count of symbol 0 (what the decoder counted) against its
// outlier count: after every frame's Huffman decode.
cudaError_t LaunchCheckOutlierCounts(const Segment* segments, uint32_t num_segments,
                                     const uint64_t* zero_symbols, DeviceStatus* status,
                                     cudaStream_t stream);
cudaError_t LaunchReconstruct(int elem_size, const Segment* segments, uint32_t num_segments,
                              uint64_t num_tiles, const uint16_t* symbols, const int32_t* deltas,
                              cudaStream_t stream);
cudaError_t LaunchRestoreSpecials(int elem_size, const Segment* segments, uint32_t num_segments,
                                  uint64_t total_runs, uint64_t total_verbatim, const Item* items,
                                  DeviceStatus* status, cudaStream_t stream);

}  // namespace ebzip::gpu

#endif  // EBZIP_GPU_KERNELS_H_
