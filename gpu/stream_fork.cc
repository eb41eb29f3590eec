#include "gpu/stream_fork.h"

#include <map>

#include "gpu/cuda_status.h"

namespace ebzip::gpu {
namespace {

// One thread's side streams and events on one device, created on first use
// and kept for the thread's life.
struct SideLanes {
  cudaStream_t stream[StreamFork::kMaxLanes] = {};
  cudaEvent_t joined[StreamFork::kMaxLanes] = {};
  cudaEvent_t forked = nullptr;
  cudaEvent_t mark = nullptr;
  bool marked = false;
  bool ready = false;
};

absl::StatusOr<SideLanes*> LanesOfThisThread() {
  int device = 0;
  CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  thread_local std::map<int, SideLanes> by_device;
  SideLanes& l = by_device[device];
  if (!l.ready) {
    for (int i = 0; i < StreamFork::kMaxLanes; ++i) {
      CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&l.stream[i], cudaStreamNonBlocking));
      CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&l.joined[i], cudaEventDisableTiming));
    }
    CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&l.forked, cudaEventDisableTiming));
    CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&l.mark, cudaEventDisableTiming));
    l.ready = true;
  }
  return &l;
}

}  // namespace

absl::StatusOr<StreamFork> StreamFork::Begin(cudaStream_t stream, int lanes) {
  return Fork(stream, lanes, false);
}

absl::Status StreamFork::Mark(cudaStream_t stream) {
  auto side = LanesOfThisThread();
  if (!side.ok()) return side.status();
  CUDA_RETURN_IF_ERROR(cudaEventRecord((*side)->mark, stream));
  (*side)->marked = true;
  return absl::OkStatus();
}

absl::StatusOr<StreamFork> StreamFork::BeginAtMark(cudaStream_t stream, int lanes) {
  return Fork(stream, lanes, true);
}

absl::StatusOr<StreamFork> StreamFork::Fork(cudaStream_t stream, int lanes, bool at_mark) {
  if (lanes < 1 || lanes > kMaxLanes) return absl::InvalidArgumentError("stream fork: lanes");
  StreamFork fork;
  fork.stream_ = stream;
  fork.lanes_ = lanes;
  fork.at_mark_ = at_mark;
  if (fork.sides() == 0) return fork;
  auto side = LanesOfThisThread();
  if (!side.ok()) return side.status();
  cudaEvent_t from = (*side)->forked;
  if (at_mark) {
    if (!(*side)->marked) return absl::FailedPreconditionError("stream fork: no mark");
    from = (*side)->mark;
  } else {
    CUDA_RETURN_IF_ERROR(cudaEventRecord(from, stream));
  }
  for (int i = 0; i < fork.sides(); ++i) {
    fork.side_[i] = (*side)->stream[i];
    fork.joined_[i] = (*side)->joined[i];
    CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(fork.side_[i], from, 0));
  }
  return fork;
}

absl::Status StreamFork::Join() {
  for (int i = 0; i < sides(); ++i) {
    CUDA_RETURN_IF_ERROR(cudaEventRecord(joined_[i], side_[i]));
    CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream_, joined_[i], 0));
  }
  return absl::OkStatus();
}

}  // namespace ebzip::gpu
