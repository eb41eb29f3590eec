// The archive container (FORMAT.md §Archive): a file header, independent
// frames (slabs along dimension 0), a frame index and a trailer. This is the
// codec's public entry point; the CLI, the service and the GPU codec build
// on it.
#ifndef EBZIP_CODEC_ARCHIVE_H_
#define EBZIP_CODEC_ARCHIVE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codec/format.h"
#include "codec/frame_codec.h"
#include "codec/huffman_decoder.h"
#include "codec/resolve_bound.h"
#include "codec/types.h"

namespace ebzip {

// The extremes of the finite values that are not the fill value: what a
// relative bound is relative to.
struct ValueRange {
  bool any = false;
  double min = 0;
  double max = 0;
};

struct CompressOptions {
  BoundMode mode = BoundMode::kAbs;
  double bound = 0;  // > 0; ABS: absolute; REL: fraction of the finite range
  // Values bit-equal to it are restored exactly and left out of REL's range.
  std::optional<double> fill_value;
  uint64_t frame_elements = uint64_t{1} << 24;  // target slab size
  uint32_t radius = 32768;
  uint32_t chunk_symbols = 16384;
  uint32_t subsequence_bits = 1024;
  uint32_t chunk_group = 16;
  bool gap_array = true;
  // Lorenzo block per dimension; empty for DefaultBlock(rank).
  std::vector<uint16_t> block;
  // Per-frame choices (FORMAT.md §15.9). Lorenzo with plain Huffman and no
  // metadata writes version 1, as earlier ebzip did; anything else writes
  // version 2. Zero-run tokens cap the radius at 32762, run-value tokens
  // (allowed by kAuto) at 32736.
  Predictor predictor = Predictor::kAuto;
  Lossless lossless = Lossless::kAuto;
  int interp_order = 0;  // 0: chosen per frame; 1 linear, 3 cubic
  // REL only: the range the bound is relative to, when the caller knows it,
  // so the array is not scanned. Compressing the parts of an array apart
  // (codec/archive_parts.h) gives each part the whole array's range; their
  // frames are then the whole array's. A range that misses some values
  // still bounds every value by the bound it resolves to.
  std::optional<ValueRange> range;
  // A JSON object stored in the metadata block (version 2); empty for none.
  // It must be a JSON text (FORMAT.md §15.1); ValidateCompressOptions checks
  // only that it is braced, not that it parses.
  std::string metadata;
};

// The archive version these options write.
uint16_t ArchiveVersion(const CompressOptions& options);

// INVALID_ARGUMENT for a bound that is not a positive finite number, a
// non-finite fill value, or parameters out of FORMAT.md's limits.
absl::Status ValidateCompressOptions(const ArraySpec& spec, const CompressOptions& options);

// The range of `data` a relative bound refers to. Once *cancel is set the
// scan stops early and the range is meaningless: the caller checks the flag.
ValueRange FiniteRange(const ArraySpec& spec, absl::Span<const uint8_t> data,
                       std::optional<double> fill_value, const std::atomic<bool>* cancel = nullptr);

// What an array's reconstructions are rounded to, for ResolveBoundFor: its
// element type, in a version-2 archive; none in version 1, whose step stays
// twice the bound.
Narrowing NarrowingFor(const CompressOptions& options, DType dtype);

// ResolveBoundFor (codec/resolve_bound.h) applied to the options, the
// array's element type and its range.
ResolvedBound ResolveBound(const CompressOptions& options, DType dtype, const ValueRange& range);

// The range a relative bound of `options` refers to: options.range when
// given, else FiniteRange's scan; nothing for an absolute bound.
ValueRange RangeFor(const ArraySpec& spec, absl::Span<const uint8_t> data,
                    const CompressOptions& options, const std::atomic<bool>* cancel = nullptr);

// Fixed before any frame is written: the file header and each frame's
// parameters. With it, frames can be compressed in any order or in parallel
// (on threads, or on GPUs) and still produce the same archive.
struct ArchivePlan {
  format::FileHeader header;
  FrameParams frame;  // shape[0] and first_row vary per frame
  uint64_t row_bytes = 0;
  std::string metadata;  // written after the file header when not empty

  uint64_t frame_count() const { return header.frame_count; }
  FrameParams ParamsForFrame(uint64_t index) const;
  // Byte range of frame `index` in the uncompressed array.
  uint64_t FrameDataOffset(uint64_t index) const;
  uint64_t FrameDataBytes(uint64_t index) const;
};

absl::StatusOr<ArchivePlan> PlanArchive(const ArraySpec& spec, const CompressOptions& options,
                                        const ResolvedBound& bound);

// Builds an archive frame by frame: Begin(), then each frame's bytes in
// order, then Finish() for the index and trailer.
class ArchiveWriter {
 public:
  explicit ArchiveWriter(const ArchivePlan& plan) : plan_(plan) {}
  std::vector<uint8_t> Begin();
  void AddFrame(uint64_t bytes);
  std::vector<uint8_t> Finish() const;
  // The same bytes appended to *out.
  void Finish(std::vector<uint8_t>* out) const;

 private:
  const ArchivePlan& plan_;
  std::vector<format::FrameIndexEntry> entries_;
  uint64_t offset_ = 0;
};

// Compresses a whole array held in memory. Every entry point below that
// takes `cancel` returns CANCELLED soon after *cancel is set (codec/cancel.h:
// checked between frames, between stages and between ranges of the parallel
// passes inside a frame), having freed what it allocated; a null flag, or
// one never set, changes nothing.
absl::StatusOr<std::vector<uint8_t>> Compress(const ArraySpec& spec, absl::Span<const uint8_t> data,
                                              const CompressOptions& options,
                                              const std::atomic<bool>* cancel = nullptr);

// A parsed archive: its header and where each frame lies.
struct ArchiveInfo {
  format::FileHeader header;
  std::string metadata;  // the metadata block's JSON document; empty when none
  std::vector<format::FrameIndexEntry> frames;
  std::vector<format::FrameHeader> frame_headers;  // validated against header

  ArraySpec spec() const { return {header.dtype, header.shape}; }
  uint64_t FrameRows(uint64_t index) const;
};

// Validates the file header, trailer, frame index and every frame header of
// a complete archive (not the sections: DecompressFrame checks those). After
// it, the array's size is bounded by the archive's (a frame has at least a
// bit per element), so callers may allocate the output.
absl::StatusOr<ArchiveInfo> ReadArchiveInfo(absl::Span<const uint8_t> archive);

// Reads out.size() bytes at `offset` of an archive held elsewhere (a file):
// OK, or why not (a short read of a truncated archive is DATA_LOSS).
using ArchiveReader = absl::FunctionRef<absl::Status(uint64_t offset, absl::Span<uint8_t> out)>;

// ReadArchiveInfo of an archive of `size` bytes that `read` reads, with the
// same checks and result, reading only its file header, metadata block,
// index, trailer and frame headers: never a frame's sections. ReadArchiveInfo
// is this over a span.
absl::StatusOr<ArchiveInfo> ReadArchiveInfoFrom(uint64_t size, ArchiveReader read);

// Parses frame `index`'s header and checks it agrees with the file header
// (ReadArchiveInfo has done this for every frame already).
absl::StatusOr<format::FrameHeader> ReadFrameHeader(const ArchiveInfo& info,
                                                    absl::Span<const uint8_t> archive,
                                                    uint64_t index);

// Parses the header at the start of `bytes`, frame `index` of an archive
// whose file header is `whole` and `size` bytes long, and checks that it
// belongs there: its place, rows, shape, bound, fill value and size.
// DATA_LOSS otherwise.
absl::StatusOr<format::FrameHeader> ParseFrameAt(const format::FileHeader& whole, uint64_t index,
                                                 absl::Span<const uint8_t> bytes, uint64_t size);

// Decodes frame `index` into `out` (its rows of the array).
absl::Status DecompressFrame(const ArchiveInfo& info, absl::Span<const uint8_t> archive,
                             uint64_t index, DecoderKind decoder, uint8_t* out,
                             const std::atomic<bool>* cancel = nullptr);

// Decodes every frame of a validated archive into `out`, a caller's buffer
// of exactly info.spec().num_bytes() bytes (INVALID_ARGUMENT otherwise), so
// that a caller who owns the memory (a NumPy array, a mapped file) gets the
// array without a copy. On failure `out` holds partial data.
absl::Status DecompressInto(const ArchiveInfo& info, absl::Span<const uint8_t> archive,
                            absl::Span<uint8_t> out, DecoderKind decoder = DecoderKind::kAuto,
                            const std::atomic<bool>* cancel = nullptr);

struct DecompressedArray {
  ArraySpec spec;
  double abs_bound = 0;
  std::vector<uint8_t> data;
};

absl::StatusOr<DecompressedArray> Decompress(absl::Span<const uint8_t> archive,
                                             DecoderKind decoder = DecoderKind::kAuto,
                                             const std::atomic<bool>* cancel = nullptr);

}  // namespace ebzip

#endif  // EBZIP_CODEC_ARCHIVE_H_
