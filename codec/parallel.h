// ParallelFor over a process-wide pool of worker threads. The calling thread
// takes part, so nested calls (frames, then chunks inside a frame) cannot
// deadlock: if every worker is busy the caller simply does all the work.
#ifndef EBZIP_CODEC_PARALLEL_H_
#define EBZIP_CODEC_PARALLEL_H_

#include <cstdint>
#include <functional>

namespace ebzip {

// Runs fn(i) for every i in [0, n), on up to `max_threads` threads
// (0: every hardware thread). Returns when all calls have returned.
void ParallelFor(uint64_t n, const std::function<void(uint64_t)>& fn, int max_threads = 0);

// Threads ParallelFor uses by default: hardware threads, or $EBZIP_THREADS.
int DefaultThreadCount();

}  // namespace ebzip

#endif  // EBZIP_CODEC_PARALLEL_H_
