// ParallelFor over a process-wide pool of worker threads. The calling thread
// takes part, so nested calls (frames, then chunks inside a frame) cannot
// deadlock: if every worker is busy the caller simply does all the work.
#ifndef EBZIP_CODEC_PARALLEL_H_
#define EBZIP_CODEC_PARALLEL_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>

namespace ebzip {

// Runs fn(i) for every i in [0, n), on up to `max_threads` threads
// (0: every hardware thread). Returns when all calls have returned; if any
// threw, rethrows the first exception on the calling thread (on one thread,
// the indices after it do not run; on several, the others still do).
void ParallelFor(uint64_t n, const std::function<void(uint64_t)>& fn, int max_threads = 0);

// Wakes the pool's workers to wait for the next ParallelFor by spinning,
// for at most `window`: one that comes within it starts on every thread at
// once. A sleeping worker takes its wake-up to start, which on a virtual
// machine (the GPU hosts of bench/GPU_NOTES.md) left the last of 15 workers
// idle for 0.3-0.7 ms, as long as the whole parallel step between two of a
// GPU's stages. For a caller about to wait (on a GPU) before such a step;
// the workers spin, yielding, on cores that would otherwise sleep.
void ParallelWarmUp(std::chrono::microseconds window);

// Threads ParallelFor uses by default: $EBZIP_THREADS, else AvailableCores(),
// else the hardware threads.
int DefaultThreadCount();

// The cores this process may use: the CPUs its calling thread may run on
// (taskset, Kubernetes' static CPU manager), capped by the cgroup v2 CPU
// quota (docker --cpus, a Kubernetes CPU limit); 0 when neither is known.
// A pool sized by the machine's cores under a smaller quota is throttled.
int AvailableCores();

// The whole cores a cgroup v2 cpu.max line ("QUOTA PERIOD") allows, rounded
// up ("150000 100000": 2); 0 for no limit ("max 100000") or a line that
// does not parse.
int CoresFromCpuMax(std::string_view cpu_max);

}  // namespace ebzip

#endif  // EBZIP_CODEC_PARALLEL_H_
