// Work forked from a caller's stream onto side streams and joined back: the
// side streams start after everything the caller's stream holds so far, and
// the caller's stream waits for everything they were given once Join runs.
// For chains of short, dependent launches that each leave most of the GPU
// idle (the predictor survey's candidates on small samples): on lanes of
// their own they overlap instead of queueing one behind another.
//
// A fork can also start from an earlier point of the caller's stream (Mark,
// then BeginAtMark): work queued on the stream after the mark then runs
// beside the lanes (the survey's Lorenzo candidates beside its interpolation
// candidates, both reading the samples gathered before the mark).
//
// The side streams and events are kept per thread and device and reused
// (creating a stream costs more than the launches it carries here), so a
// fork allocates nothing after a thread's first; its lane 0 is the caller's
// stream itself, except in a fork begun at a mark.
#ifndef EBZIP_GPU_STREAM_FORK_H_
#define EBZIP_GPU_STREAM_FORK_H_

#include <cuda_runtime_api.h>

#include "absl/status/statusor.h"

namespace ebzip::gpu {

class StreamFork {
 public:
  static constexpr int kMaxLanes = 4;

  // Lanes 1 .. lanes-1 wait for what `stream` holds now. `lanes` from 1 to
  // kMaxLanes (1: no fork, every lane is `stream`).
  static absl::StatusOr<StreamFork> Begin(cudaStream_t stream, int lanes);

  // Notes what `stream` holds now, for this thread's next BeginAtMark (one
  // mark per thread and device: a later Mark moves it).
  static absl::Status Mark(cudaStream_t stream);
  // Every lane, lane 0 too (a side stream then), waits for what `stream`
  // held at this thread's last Mark only; what was queued on `stream` since
  // runs beside them. Join as for Begin.
  static absl::StatusOr<StreamFork> BeginAtMark(cudaStream_t stream, int lanes);

  int lanes() const { return lanes_; }
  cudaStream_t lane(int i) const { return i == 0 && !at_mark_ ? stream_ : side_[i - at_shift()]; }

  // `stream` waits for every lane's work so far.
  absl::Status Join();

 private:
  static absl::StatusOr<StreamFork> Fork(cudaStream_t stream, int lanes, bool at_mark);
  // Side streams lane i uses side_[i - 1], or side_[i] at a mark.
  int at_shift() const { return at_mark_ ? 0 : 1; }
  int sides() const { return lanes_ - at_shift(); }

  cudaStream_t stream_ = nullptr;
  int lanes_ = 1;
  bool at_mark_ = false;
  cudaStream_t side_[kMaxLanes] = {};
  cudaEvent_t joined_[kMaxLanes] = {};
};

}  // namespace ebzip::gpu

#endif  // EBZIP_GPU_STREAM_FORK_H_
