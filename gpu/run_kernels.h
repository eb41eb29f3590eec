// Launchers of version 2's entropy pieces on the GPU (FORMAT.md §15.4,
// §15.4.1, §15.6),
// bit-identical to the CPU codec's (codec/run_tokens.h, huffman_encoder.cc,
// huffman_decoder.cc, fill_mask.cc). Each enqueues on `stream` and returns the
// launch error; none allocates or synchronizes. The per-thread rules they
// share with a CPU simulation are in gpu/run_steps.h.
//
// Tokens work on the segment table as the version-1 launchers of
// gpu/kernels.h do, and take the same arrays: a segment's Segment::lossless
// is its stage, 1 coding runs of `radius` as class tokens (alphabet
// 2 * radius + 12), 2 also a run and the residual of -2 .. +2 after it as one
// run-value token (alphabet 2 * radius + 64), 0 exactly as version 1 does, so
// one launch may mix them. Chunks cover a segment's positions S
// (Segment::positions).
//
// The fill mask works on one frame's mask at a time.
#ifndef EBZIP_GPU_RUN_KERNELS_H_
#define EBZIP_GPU_RUN_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "gpu/kernels.h"
#include "gpu/segment.h"

namespace ebzip::gpu {

// --- run_kernels.cu: tokens, encode side.
//
// Pipeline (the compressor's version-1 one with two launches added):
//   histogram of the symbols (65536 bins per segment, as LaunchPredict makes)
//   LaunchRunCounters -> LaunchTokenHistogram -> code lengths from the token
//   histogram (max_code_length <= 20) -> LaunchRunChunkBits -> scans ->
//   LaunchLayout -> LaunchRunEncode.
//
// Slice states: the three kernels cut each chunk into kSliceStatesPerChunk
// slices, and each leaves the next what it learned of each slice in
// `slice_states`, kSliceStatesPerChunk words per chunk, chunk c of a segment
// at Segment::slice_chunk_base + c: the zeros directly before the slice
// (LaunchRunCounters), then also the slice's bits (LaunchRunChunkBits). So
// LaunchRunCounters must have run over the same symbols, with states, before
// LaunchRunChunkBits, and that before LaunchRunEncode. Between the first
// two, a segment's stage and S may change (Segment::lossless, positions,
// chunk_base): the states do not depend on the stage, and slice_chunk_base
// keeps their place.
inline constexpr uint32_t kSliceStatesPerChunk = 1024;

// Per segment, run_steps::kRunCounters counters (zeroed here first) of its
// runs, from which both token stages' histograms follow (gpu/run_steps.h):
// [0] the zero symbols (radius) that lossless 1 leaves as symbols, [c] its
// run tokens of class c, then the run-value tokens. Every segment with
// Segment::highest_lossless != 0 is counted for both stages; the others are
// left at 0. `slice_states` (null: none kept) as above.
inline constexpr uint32_t kRunCountersPerSegment = 65;
cudaError_t LaunchRunCounters(const Segment* segments, uint32_t num_segments, uint64_t num_chunks,
                              const uint16_t* symbols, uint32_t* counters, uint32_t* slice_states,
                              cudaStream_t stream);
// Turns copies of each segment's symbol histogram (65536 bins per segment)
// into its token histograms in place: `zero_runs` lossless 1's where
// Segment::highest_lossless >= 1, `run_values` lossless 2's where it is 2
// (either may be null; with 2 the radius leaves room for the tokens). The
// zero symbol's bin becomes the zeros left alone, the run tokens' bins (none
// in a symbol histogram) their counts, and run-value tokens take their
// residuals' counts, so the result is TokenHistogram's.
// extra_bits[s]: the segment's extra bits, the same for both stages (0
// without tokens).
cudaError_t LaunchTokenHistogram(const Segment* segments, uint32_t num_segments,
                                 const uint32_t* counters, uint32_t* zero_runs,
                                 uint32_t* run_values, uint64_t* extra_bits, cudaStream_t stream);
// LaunchChunkBits and LaunchEncode (gpu/kernels.h) with tokens: the same
// arguments and outputs, and the slice states; `lengths` and `codes` cover
// the token alphabet.
cudaError_t LaunchRunChunkBits(const Segment* segments, uint32_t num_segments, uint64_t num_chunks,
                               const uint16_t* symbols, const uint8_t* lengths,
                               uint32_t* slice_states, uint32_t* chunk_bits, uint64_t* chunk_words,
                               uint64_t* chunk_gaps, cudaStream_t stream);
cudaError_t LaunchRunEncode(const Segment* segments, uint32_t num_segments, uint64_t num_chunks,
                            uint32_t max_chunk_symbols, uint32_t max_code_length, const Item* items,
                            const FrameLayout* layouts, const uint16_t* symbols,
                            const uint8_t* lengths, const uint32_t* codes,
                            const uint32_t* slice_states, const uint32_t* chunk_bits,
                            const uint64_t* word_prefix, const uint64_t* gap_prefix,
                            cudaStream_t stream);

// --- decode_kernels.cu: LaunchDecode (gpu/kernels.h) for launches where some
// segment has tokens: the same decoders, arguments and errors, tokens
// expanded to positions. LaunchBuildDecodeTables reads the token alphabet of
// such segments. LaunchDecode itself stays the version-1 kernels.
cudaError_t LaunchDecodeRuns(GpuDecoder decoder, const Segment* segments, uint32_t num_segments,
                             ChunkRange chunks, uint32_t max_chunk_symbols, const Item* items,
                             DecodeTables tables, const uint32_t* chunk_bits,
                             const uint64_t* word_prefix, const uint64_t* gap_prefix,
                             uint16_t* symbols, uint64_t* zero_symbols, DeviceStatus* status,
                             cudaStream_t stream);

// --- fill_mask_kernels.cu: the fill mask of one frame (FORMAT.md §15.6).
//
// `mask`: one byte per element, 1 for fill (compared as bytes, as
// codec/fill_mask.cc does); `row`: elements per index along dimension 0, n
// for a 1-D frame. n <= 2^32 - 1 (a frame's limit).

// The largest section EncodeFillMask can write for n elements.
uint64_t MaxFillMaskSectionBytes(uint64_t n);
// Device workspace of LaunchEncodeFillMask.
cudaError_t FillMaskEncodeWorkspace(uint64_t n, size_t* bytes);
// Writes the section at `section` (device, 4-byte aligned, room for
// MaxFillMaskSectionBytes(n)) and, on the device, its length and token count
// (the frame header's fill_run_count): EncodeFillMask's bytes.
cudaError_t LaunchEncodeFillMask(const uint8_t* mask, uint64_t n, uint64_t row, void* workspace,
                                 size_t workspace_bytes, uint8_t* section, uint64_t* section_bytes,
                                 uint64_t* tokens, cudaStream_t stream);
// The same in two steps, for a compressor that places the section only once
// its size is known: the first leaves *section_bytes and *tokens on the
// device; the second (same workspace, untouched in between) writes the
// section at *section, a device pointer read when its kernels run, so that a
// layout kernel may set it in between (null: nothing is written).
cudaError_t LaunchFillMaskEncodeSizes(const uint8_t* mask, uint64_t n, uint64_t row,
                                      void* workspace, size_t workspace_bytes,
                                      uint64_t* section_bytes, uint64_t* tokens,
                                      cudaStream_t stream);
cudaError_t LaunchFillMaskEncodeWrite(uint64_t n, void* workspace, size_t workspace_bytes,
                                      uint8_t* const* section, cudaStream_t stream);

// Device workspace of LaunchDecodeFillMask (`tokens`: the frame header's
// fill_run_count).
cudaError_t FillMaskDecodeWorkspace(uint64_t n, uint64_t row, uint64_t tokens, size_t* bytes);
// Decodes the section (device, 4-byte aligned, `section_bytes` long) into
// `mask` (n bytes, 1 for fill) and *fill_count, DecodeFillMask's results.
// What DecodeFillMask rejects is reported in *status: kErrFillMask for
// `segment`, with the MaskCheck in DeviceStatus::section. Skips its work
// once *status holds an error (as the decoders do).
enum MaskCheck : uint32_t {
  kMaskTooShort = 1,         // no tokens, or no room for the chunk lengths
  kMaskPadding = 2,          // bytes 13-15 not zero
  kMaskBadCode = 3,          // a length over 20, none used, or Kraft's inequality
  kMaskNotWords = 4,         // the bitstream is not whole words
  kMaskChunkPastEnd = 5,     // a chunk's words run past the bitstream
  kMaskInvalidToken = 6,     // no codeword, or a token past its chunk's bits
  kMaskChunkLength = 7,      // a chunk's tokens end before its bits
  kMaskBitstreamLength = 8,  // words left after the last chunk
  kMaskRunsTooLong = 9,      // the runs cover more than the frame
  kMaskRunsTooShort = 10,    // the runs cover less than the frame
};
cudaError_t LaunchDecodeFillMask(const uint8_t* section, uint64_t section_bytes, uint64_t tokens,
                                 uint64_t n, uint64_t row, void* workspace, size_t workspace_bytes,
                                 uint8_t* mask, uint64_t* fill_count, DeviceStatus* status,
                                 uint32_t segment, cudaStream_t stream);

}  // namespace ebzip::gpu

#endif  // EBZIP_GPU_RUN_KERNELS_H_
