// What the scheduler runs batches on: the CPU codec over threads, or one
// worker per GPU (gpu_backend.h). A backend fills in each work's result; the
// scheduler handles queueing, batching, deadlines and completion.
#ifndef EBZIP_SERVER_BACKEND_H_
#define EBZIP_SERVER_BACKEND_H_

#include <memory>
#include <optional>
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
  bool healthy = true;      // false once a GPU has failed (until restart)
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
  // Runs the works of the batch, setting their status and results, except
  // those it returns: the worker could not run them (its device failed), so
  // the scheduler queues them again for the other workers, untouched. A
  // failure of one work sets its status; should Run throw anyway (an
  // allocation failing), the scheduler fails the whole batch with it.
  virtual std::vector<std::shared_ptr<Work>> Run(int worker,
                                                 absl::Span<const std::shared_ptr<Work>> batch) = 0;
  // Whether `worker` has stopped for good (its device failed while others
  // are left): the scheduler ends its thread. Some worker never retires.
  virtual bool Retired(int /*worker*/) const { return false; }
  virtual std::vector<DeviceState> DeviceStates() const = 0;
  // Memory to receive a compression's `bytes` of input into, when the
  // backend has a better place for them than the heap (Work::input_block);
  // an empty block means the heap.
  virtual HostBlock InputBlock(uint64_t /*bytes*/) const { return {}; }
  // The pool InputBlock and results come from, for the metrics; none when
  // the backend has none.
  virtual std::optional<HostPoolStats> HostPool() const { return std::nullopt; }
};

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_BACKEND_H_
