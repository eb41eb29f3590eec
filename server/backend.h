// What the scheduler runs batches on: the CPU codec over threads, or one
// worker per GPU (gpu_backend.h). A backend fills in each work's result; the
// scheduler handles queueing, batching, deadlines and completion.
#ifndef EBZIP_SERVER_BACKEND_H_
#define EBZIP_SERVER_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "server/work.h"

namespace ebzip::server {

// One device's state for the metrics.
struct DeviceState {
  std::string device;  // "gpu:0", "cpu"
  uint64_t memory_used_bytes = 0;
  uint64_t memory_total_bytes = 0;
  double busy_seconds = 0;  // time spent running batches, since start
};

class Backend {
 public:
  virtual ~Backend() = default;
  // "cpu" or "gpu".
  virtual std::string name() const = 0;
  // What ServerInfo lists: "gpu:0 NVIDIA H100 ...", "cpu: 16 threads".
  virtual std::vector<std::string> devices() const = 0;
  // Scheduler threads to start; Run() is called with worker in [0, workers()).
  virtual int workers() const = 0;
  // Whether `a` and `b` may run in one batch.
  virtual bool Compatible(const Work& a, const Work& b) const = 0;
  // Runs every work of the batch, setting its status and results. Must not
  // throw; a failure of one work must not fail the server.
  virtual void Run(int worker, absl::Span<const std::shared_ptr<Work>> batch) = 0;
  virtual std::vector<DeviceState> DeviceStates() const = 0;
};

// Runs one work on the CPU codec; shared by the CPU backend and by the GPU
// backend for what the GPU kernels do not take.
void RunOnCpu(Work& work);

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_BACKEND_H_
