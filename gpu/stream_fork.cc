#include "gpu/stream_fork.h"

#include <map>

#include "gpu/cuda_status.h"

namespace ebzip::gpu {
namespace {

// One thread's side streams and events on one device, created on first use
// and kept for the thread's life.
struct SideLanes {
  cudaStream_t stream[StreamFork::kMaxLanes - 1] = {};
  cudaEvent_t joined[StreamFork::kMaxLanes - 1] = {};
  cudaEvent_t forked = nullptr;
  bool ready = false;
};

absl::StatusOr<SideLanes*> LanesOfThisThread() {
  int device = 0;
  CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  thread_local std::map<int, SideLanes> by_device;
  SideLanes& l = by_device[device];
  if (!l.ready) {
    for (int i = 0; i < StreamFork::kMaxLanes - 1; ++i) {
      CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&l.stream[i], cudaStreamNonBlocking));
      CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&l.joined[i], cudaEventDisableTiming));
    }
    CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&l.forked, cudaEventDisableTiming));
    l.ready = true;
  }
  return &l;
}

}  // namespace

absl::StatusOr<StreamFork> StreamFork::Begin(cudaStream_t stream, int lanes) {
  if (lanes < 1 || lanes > kMaxLanes) return absl::InvalidArgumentError("stream fork: lanes");
  StreamFork fork;
  fork.stream_ = stream;
  fork.lanes_ = lanes;
  if (lanes == 1) return fork;
  auto side = LanesOfThisThread();
  if (!side.ok()) return side.status();
  CUDA_RETURN_IF_ERROR(cudaEventRecord((*side)->forked, stream));
  for (int i = 0; i < lanes - 1; ++i) {
    fork.side_[i] = (*side)->stream[i];
    fork.joined_[i] = (*side)->joined[i];
    CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(fork.side_[i], (*side)->forked, 0));
  }
  return fork;
}

absl::Status StreamFork::Join() {
  for (int i = 0; i < lanes_ - 1; ++i) {
    CUDA_RETURN_IF_ERROR(cudaEventRecord(joined_[i], side_[i]));
    CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream_, joined_[i], 0));
  }
  return absl::OkStatus();
}

}  // namespace ebzip::gpu
