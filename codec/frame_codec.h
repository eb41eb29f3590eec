// One frame: a slab of the array along dimension 0, compressed on its own
// (FORMAT.md §4, §15). The pipeline is predictor (block Lorenzo,
// codec/lorenzo_frame.h, or interpolation, codec/interp_predictor.h, chosen
// per frame by codec/predictor_choice.h) -> symbols -> entropy stage
// (Huffman, with or without zero-run tokens) -> sections, and its exact
// inverse.
#ifndef EBZIP_CODEC_FRAME_CODEC_H_
#define EBZIP_CODEC_FRAME_CODEC_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codec/format.h"
#include "codec/huffman_decoder.h"
#include "codec/types.h"

namespace ebzip {

// Which predictor and lossless stage a writer may use; kAuto lets each frame
// choose by estimate (FORMAT.md §15.9).
enum class Predictor : uint8_t { kAuto, kLorenzo, kInterp };
enum class Lossless : uint8_t { kAuto, kHuffman, kZeroRuns, kRunValues };

// Everything that fixes a frame's bytes apart from its data.
struct FrameParams {
  // 1: Lorenzo, Huffman and fill runs only, as version 1 writes them; 2:
  // the frame chooses within `predictor` and `lossless`.
  uint16_t version = format::kVersion1;
  Predictor predictor = Predictor::kLorenzo;
  Lossless lossless = Lossless::kHuffman;
  int interp_order = 0;  // 0: chosen; 1 linear, 3 cubic
  DType dtype = DType::kFloat32;
  std::vector<uint64_t> shape;  // the frame's own shape
  uint64_t first_row = 0;
  BoundMode bound_mode = BoundMode::kAbs;
  double bound_value = 0;
  double abs_bound = 0;
  double quant_step = 0;
  std::optional<double> fill_value;
  std::array<uint16_t, kMaxDims> block{};
  uint32_t radius = 32768;
  uint32_t chunk_symbols = 16384;
  uint32_t subsequence_bits = 1024;
  uint32_t chunk_group = 16;
  int max_code_length = 20;
  bool gap_array = true;
};

// The lossless stages a frame of `params` may use: bit i for FORMAT.md
// §15.2's id i (version 1: plain Huffman alone).
uint8_t AllowedStages(const FrameParams& params);

// The frame header's data-independent fields (counts and sections zero), as
// every writer fills them: the CPU encoder, and the GPU's header templates.
// For version 2 the predictor's fields are the caller's to set.
format::FrameHeader FrameHeaderFor(const FrameParams& params);

// Appends the frame's bytes (a multiple of 8 long) to *out. `data` holds the
// frame's elements, little-endian.
void EncodeFrame(const FrameParams& params, const uint8_t* data, std::vector<uint8_t>* out);
// The same, stopping with CANCELLED soon after *cancel is set (codec/cancel.h:
// checked between stages and between ranges of the parallel passes), with
// *out as it was and everything else freed. A null flag never cancels.
absl::Status EncodeFrame(const FrameParams& params, const uint8_t* data, std::vector<uint8_t>* out,
                         const std::atomic<bool>* cancel);

// Decodes a frame into `out` (header.num_elements() elements of its dtype),
// verifying every checksum and cross-check on the way. CANCELLED soon after
// *cancel is set, with `out` partly written.
absl::Status DecodeFrame(absl::Span<const uint8_t> frame, const format::FrameHeader& header,
                         DecoderKind decoder, uint8_t* out,
                         const std::atomic<bool>* cancel = nullptr);

// The frame's seven sections (FORMAT.md §4), each checked against its CRC
// and followed by zero padding: what every decoder of the frame, whole or
// in part, checks first. DATA_LOSS otherwise.
using FrameSections = std::array<absl::Span<const uint8_t>, format::kSectionCount>;
absl::StatusOr<FrameSections> CheckedSections(absl::Span<const uint8_t> frame,
                                              const format::FrameHeader& header);

}  // namespace ebzip

#endif  // EBZIP_CODEC_FRAME_CODEC_H_
