// Frames of one array compressed apart (FORMAT.md §2: frames are
// independent). A service that streams a large array compresses each slab
// as an archive of its own, then moves that archive's single frame into the
// array's archive; the result is byte-identical to compressing the whole
// array at once, whoever compressed each slab (a CPU thread, any GPU).
#ifndef EBZIP_CODEC_SLAB_H_
#define EBZIP_CODEC_SLAB_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codec/archive.h"
#include "codec/format.h"

namespace ebzip {

// Options that compress frame `index` of `plan` (an absolute bound: the
// frames of an array share one resolved bound) as a one-frame archive of
// the slab's own shape, plan.ParamsForFrame(index) in all but first_row.
// FAILED_PRECONDITION for a relative bound without its range
// (CompressOptions::range), which needs the whole array before its first
// frame.
absl::StatusOr<CompressOptions> SlabOptions(const CompressOptions& options);
ArraySpec SlabSpec(const ArchivePlan& plan, uint64_t index);

// The single frame of `slab_archive`, moved to `first_row` of the array
// (its header's first_row and checksum rewritten): the bytes that frame
// has in the array's archive. DATA_LOSS unless the archive parses and holds
// exactly one frame.
absl::StatusOr<std::vector<uint8_t>> FrameFromSlabArchive(absl::Span<const uint8_t> slab_archive,
                                                          uint64_t first_row);

// The other way, for streamed decompression: a one-frame archive holding
// `frame` (frame `index` of an archive whose file header is `whole`, moved
// to row 0), which decompresses to that frame's rows. DATA_LOSS when the
// frame's header does not belong at `index` of `whole`.
absl::StatusOr<std::vector<uint8_t>> SlabArchiveOfFrame(const format::FileHeader& whole,
                                                        uint64_t index,
                                                        absl::Span<const uint8_t> frame);

}  // namespace ebzip

#endif  // EBZIP_CODEC_SLAB_H_
