// The scheduler: a priority queue of admitted work in front of the backend's
// workers, with Triton-style dynamic batching. A worker that finds small
// work at the head of the queue waits up to `max_queue_delay` for more
// compatible work to arrive, then takes up to `max_batch_bytes` of it in one
// batch; work at least that large runs alone. Higher priority first, then
// first come, first served. Work a worker hands back (its GPU failed) goes
// to the front of the queue for the others.
//
// A finished batch's completions (each work's on_done) run on completion
// threads, not on the worker: a completion starts the call's reply, and gRPC
// sends a write on the thread that starts it, so a worker that ran them
// itself sent its batch's replies over the socket before it could take the
// next batch, time the GPU stood idle under the small-request load.
#ifndef EBZIP_SERVER_SCHEDULER_H_
#define EBZIP_SERVER_SCHEDULER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/backend.h"
#include "server/metrics.h"
#include "server/work.h"

namespace ebzip::server {

struct BatchingOptions {
  bool enabled = true;
  uint64_t max_batch_bytes = uint64_t{64} << 20;
  size_t max_batch_requests = 256;
  absl::Duration max_queue_delay = absl::Microseconds(500);
};

class Scheduler {
 public:
  // Starts backend.workers() threads. `metrics` may be null.
  Scheduler(Backend& backend, BatchingOptions batching, Metrics* metrics);
  ~Scheduler();  // Stop()
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues `work`; its on_done runs exactly once, on a scheduler thread (a
  // worker or a completion thread) or (after Cancel or Stop) on the
  // caller's.
  void Submit(std::shared_ptr<Work> work);
  // Finishes `work` with CANCELLED at once if it is still queued; otherwise
  // flags it so the backend may skip it.
  void Cancel(const std::shared_ptr<Work>& work);
  // Finishes queued work with UNAVAILABLE, waits for running batches and
  // their completions, joins.
  void Stop();

  size_t queued() const;

 private:
  void WorkerLoop(int worker);
  void CompletionLoop();
  // Hands finished works to the completion threads.
  void Complete(std::vector<std::shared_ptr<Work>> works);
  // With mu_ held: the batch that starts at the head of the queue, removed
  // from the queue; empty when the worker should keep waiting.
  std::vector<std::shared_ptr<Work>> TakeBatch(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Finish(const std::shared_ptr<Work>& work, absl::Status status);
  // Puts back works a worker returned (Backend::Run) for the others.
  void Requeue(const std::vector<std::shared_ptr<Work>>& works);

  Backend& backend_;
  const BatchingOptions batching_;
  Metrics* const metrics_;

  mutable absl::Mutex mu_;
  // Ordered by priority (higher first), then arrival.
  std::deque<std::shared_ptr<Work>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;

  absl::Mutex done_mu_;
  std::deque<std::shared_ptr<Work>> done_ ABSL_GUARDED_BY(done_mu_);
  bool done_stopping_ ABSL_GUARDED_BY(done_mu_) = false;
  std::vector<std::thread> completion_threads_;
};

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_SCHEDULER_H_
