// Upper bounds, in bytes, of what the CPU codec allocates on the heap, known
// before it runs: a service reserves them against its memory budget before
// admitting a request, so a small archive that decodes to gigabytes is
// refused up front instead of discovered in the process's size.
//
// Every bound counts the bytes the codec asks operator new for (not the
// allocator's own overhead) and holds whatever the data: it assumes the
// worst the format allows (every element an outlier and stored verbatim,
// every code as long as the frame's limit). Parameters and headers may lie
// (a shape of 2^64): arithmetic saturates at UINT64_MAX instead of wrapping.
//
// Inside one frame the codec runs ranges and chunks on up to
// DefaultThreadCount() threads (codec/parallel.h); what each thread holds
// for its range is included for that many threads.
#ifndef EBZIP_CODEC_MEMORY_BOUNDS_H_
#define EBZIP_CODEC_MEMORY_BOUNDS_H_

#include <cstdint>

#include "codec/archive.h"
#include "codec/format.h"
#include "codec/frame_codec.h"

namespace ebzip {

// The largest frame EncodeFrame can write for these parameters: header, and
// every section at its worst (all elements outliers, and verbatim or fill,
// every codeword max_code_length bits, a gap entry per subsequence, the
// chunk index), each padded to 8 bytes.
uint64_t MaxFrameBytes(const FrameParams& p);

// The largest archive Compress can write for this plan: file header, every
// frame's MaxFrameBytes, frame index and trailer.
uint64_t MaxArchiveBytes(const ArchivePlan& plan);

// The most EncodeFrame holds at once besides its input and the vector it
// appends the frame to (which grows by at most MaxFrameBytes).
uint64_t EncodeFrameWorkingBytes(const FrameParams& p);

// The most DecodeFrame holds at once, with any decoder, besides the frame's
// bytes and the rows it writes; from the header's counts and section
// lengths (ParseFrameHeader has checked that they agree).
uint64_t DecodeFrameWorkingBytes(const format::FrameHeader& h);

// Everything Compress(spec, data, options) allocates beyond `data`: every
// frame's bytes, the archive they are copied into, and the working sets of
// `concurrent_frames` frames encoding at once. Compress itself encodes up to
// min(DefaultThreadCount(), frame count) frames at once, so pass
// DefaultThreadCount() for it; 1 is right only where frames are encoded one
// after another (a pool of one thread, or slabs compressed in turn).
uint64_t CompressHeapBytes(const ArchivePlan& plan, uint64_t concurrent_frames);

// Everything Decompress(archive) allocates beyond the archive: the output
// array, the parsed index, and `concurrent_frames` frames decoding at once
// (as for CompressHeapBytes, pass DefaultThreadCount() for Decompress).
// Needs only the file header's shape, dtype, frame_rows and frame_count, so
// it can be checked before the rest of the archive arrives; the frame
// parameters it cannot see are taken at their worst. `max_frame_bytes`
// bounds each frame's compressed size (the archive's size when nothing
// better is known; a smaller figure gives a tighter bound).
uint64_t DecompressHeapBytes(const format::FileHeader& header, uint64_t max_frame_bytes,
                             uint64_t concurrent_frames);

}  // namespace ebzip

#endif  // EBZIP_CODEC_MEMORY_BOUNDS_H_
