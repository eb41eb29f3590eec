// Regions of an archived array: a hyperslab (per dimension a start, a count
// and a step, NumPy's start:stop:step) and the decoder that returns exactly
// its values, the same bytes a full decode would put there, decoding only
// the frames the region meets.
#ifndef EBZIP_CODEC_REGION_H_
#define EBZIP_CODEC_REGION_H_

#include <atomic>
#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codec/archive.h"

namespace ebzip {

// Indices start[d] + i * step[d], 0 <= i < count[d], along each dimension.
struct Hyperslab {
  std::vector<uint64_t> start;
  std::vector<uint64_t> count;
  std::vector<uint64_t> step;

  uint64_t NumElements() const;
  // The region's own shape (count per dimension).
  const std::vector<uint64_t>& Shape() const { return count; }
  std::string ToString() const;  // "start:stop:step,..." (stop exclusive)
};

// The whole array.
Hyperslab WholeArray(absl::Span<const uint64_t> shape);

// INVALID_ARGUMENT unless the hyperslab has one entry per dimension, steps of
// at least 1, and every index it names lies inside `shape` (a count of 0 is
// an empty region, valid with any start up to the extent).
absl::Status CheckHyperslab(const Hyperslab& region, absl::Span<const uint64_t> shape);

// Parses "10:20,0:180:2,:,5" against `shape`: one item per dimension,
// separated by commas, each `start:stop[:step]` with either bound optional
// (`:` is the whole dimension) or a single index `i` (= `i:i+1`). Indices
// are non-negative and within the extent (stop may equal it); stop < start
// and steps of 0 or below are errors, as is an index past the end: unlike
// NumPy nothing is clipped, so a typo cannot silently return less.
absl::StatusOr<Hyperslab> ParseHyperslab(absl::string_view text, absl::Span<const uint64_t> shape);

// How much of each frame the region meets is decoded: all of it, or only
// what the region's box within the frame needs (codec/region_frame.h: the
// Huffman chunks, Lorenzo blocks or interpolation tiles it meets). kAuto
// decodes the part when the box is at most half of the frame.
enum class RegionFrames { kAuto, kWhole, kPart };

// Decodes `region` of the archive into `out` (region.NumElements() elements
// of the archive's dtype, C order of the region), the same bytes whichever
// `frames` is. Only the frames that hold rows of the region are decoded: a
// whole frame is checked as Decompress checks it, a part as
// DecodeFrameRegion says (every section's CRC, and what the part reads);
// nothing else of the archive is read past ReadArchiveInfo's validation.
// `decoder` applies to whole frames; parts decode their chunks start to end.
absl::Status DecompressRegion(const ArchiveInfo& info, absl::Span<const uint8_t> archive,
                              const Hyperslab& region, DecoderKind decoder,
                              absl::Span<uint8_t> out,
                              const std::atomic<bool>* cancel = nullptr,
                              RegionFrames frames = RegionFrames::kAuto);

// The frames DecompressRegion decodes for `region`, in increasing order:
// those holding at least one of its rows (none for an empty region).
std::vector<uint64_t> FramesOf(const ArchiveInfo& info, const Hyperslab& region);

}  // namespace ebzip

#endif  // EBZIP_CODEC_REGION_H_
