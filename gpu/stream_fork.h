// Work forked from a caller's stream onto side streams and joined back: the
// side streams start after everything the caller's stream holds so far, and
// the caller's stream waits for everything they were given once Join runs.
// For chains of short, dependent launches that each leave most of the GPU
// idle (the predictor survey's candidates on small samples): on lanes of
// their own they overlap instead of queueing one behind another.
//
// The side streams and events are kept per thread and device and reused
// (creating a stream costs more than the launches it carries here), so a
// fork allocates nothing after a thread's first; its lane 0 is the caller's
// stream itself.
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

  int lanes() const { return lanes_; }
  cudaStream_t lane(int i) const { return i == 0 ? stream_ : side_[i - 1]; }

  // `stream` waits for every lane's work so far.
  absl::Status Join();

 private:
  cudaStream_t stream_ = nullptr;
  int lanes_ = 1;
  cudaStream_t side_[kMaxLanes - 1] = {};
  cudaEvent_t joined_[kMaxLanes - 1] = {};
};

}  // namespace ebzip::gpu

#endif  // EBZIP_GPU_STREAM_FORK_H_
