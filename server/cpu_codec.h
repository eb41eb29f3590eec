// One work on the CPU codec, inside the memory its reservation holds: what
// the CPU backend runs, and the GPU backend for what its kernels do not take.
//
// The host memory a work may use is reserved before it runs (CpuWorkingBytes
// beyond its input), and what the codec produces is added to the reservation
// as it is produced: each frame of an archive once encoded (its size is known
// only then; the frames in flight are covered by the working bytes), the
// decompressed array in advance (its size is the header's). A frame that
// does not fit in the budget fails the work with RESOURCE_EXHAUSTED, so no
// work drives the server's memory past --max_queued_bytes.
#ifndef EBZIP_SERVER_CPU_CODEC_H_
#define EBZIP_SERVER_CPU_CODEC_H_

#include <cstdint>

#include "codec/archive.h"
#include "server/work.h"

namespace ebzip::server {

// Frames of one work encoded or decoded at once; each uses every core
// inside (ranges, chunks), so more would add memory, not speed.
inline constexpr uint64_t kFramesAtOnce = 2;

// Host bytes a work needs beyond its input, reserved before it is queued:
// the working sets of the frames in flight, and for Decompress the array.
// An upper bound whatever the data (codec/memory_bounds.h).
uint64_t CpuWorkingBytes(const Work& work);
// The same for a Compress whose plan the caller has already made (frame
// sizes do not depend on the bound, so any plan of its shape and options).
uint64_t CompressWorkingBytes(const ArchivePlan& plan);

// Runs the work, setting its status and result. Stops between frames, and
// inside a frame between ranges, once the work is cancelled.
void RunOnCpu(Work& work);

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_CPU_CODEC_H_
