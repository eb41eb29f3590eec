#include "gpu/stage_timer.h"

#include <cuda_runtime_api.h>

namespace ebzip::gpu {

StageTimer::~StageTimer() {
  for (CUevent_st* e : events_) cudaEventDestroy(e);
}

CUevent_st* StageTimer::EventAt(size_t i) {
  while (events_.size() <= i) {
    cudaEvent_t e = nullptr;
    cudaEventCreate(&e);
    events_.push_back(e);
  }
  return events_[i];
}

void StageTimer::Start(CUstream_st* stream) {
  used_ = 0;
  names_.clear();
  notes_.clear();
  cudaEventRecord(EventAt(used_++), stream);
}

void StageTimer::Mark(const char* name, CUstream_st* stream) {
  names_.emplace_back(name);
  cudaEventRecord(EventAt(used_++), stream);
}

std::vector<std::pair<std::string, float>> StageTimer::Stages() const {
  std::vector<std::pair<std::string, float>> out;
  if (used_ == 0) return out;
  cudaEventSynchronize(events_[used_ - 1]);
  for (size_t i = 1; i < used_; ++i) {
    float ms = 0;
    cudaEventElapsedTime(&ms, events_[i - 1], events_[i]);
    out.emplace_back(names_[i - 1], ms);
  }
  return out;
}

}  // namespace ebzip::gpu
