#include "server/scheduler.h"

#include <algorithm>
#include <exception>
#include <new>
#include <string>

#include "absl/strings/str_cat.h"
#include "server/log.h"

namespace ebzip::server {
namespace {

// The queue's order: higher priority first (arrival order within one is kept
// by where work is inserted).
bool HigherPriority(const std::shared_ptr<Work>& a, const std::shared_ptr<Work>& b) {
  return a->priority > b->priority;
}

// Enough that replies of one batch go out side by side; each mostly waits
// on its socket write.
constexpr int kCompletionThreads = 4;

// Statuses for a batch that threw, made before any is needed: copying one
// takes no memory, which may be short just then.
const absl::Status& OutOfMemory() {
  static const absl::Status* const status = new absl::Status(absl::ResourceExhaustedError(
      "the server ran out of memory running this request; send it again later or in smaller "
      "pieces"));
  return *status;
}
const absl::Status& UnexplainedFailure() {
  static const absl::Status* const status =
      new absl::Status(absl::InternalError("the server failed running this request"));
  return *status;
}

// Backend::Run does not throw by contract, but the codecs allocate, and an
// allocation that fails (or a bug that throws) must fail its batch, not end
// the server and every call it holds. Sets *threw when it did.
std::vector<std::shared_ptr<Work>> RunCatching(Backend& backend, int worker,
                                               absl::Span<const std::shared_ptr<Work>> batch,
                                               bool* threw) {
  *threw = false;
  absl::Status failed = OutOfMemory();
  try {
    return backend.Run(worker, batch);
  } catch (const std::bad_alloc&) {
  } catch (const std::exception& e) {
    failed = UnexplainedFailure();
    try {
      failed =
          absl::InternalError(absl::StrCat("the server failed running this request: ", e.what()));
    } catch (...) {
    }
  } catch (...) {
    failed = UnexplainedFailure();
  }
  *threw = true;
  for (const auto& w : batch) w->status = failed;
  try {
    LogEvent(LogLevel::kError, "a batch failed with an exception",
             {{"error", std::string(failed.message())},
              {"requests", batch.size()},
              {"backend", backend.name()}});
  } catch (...) {  // the log line is not worth the server
  }
  return {};
}

}  // namespace

Scheduler::Scheduler(Backend& backend, BatchingOptions batching, Metrics* metrics)
    : backend_(backend), batching_(batching), metrics_(metrics) {
  OutOfMemory();  // made now, while memory is plentiful
  UnexplainedFailure();
  for (int i = 0; i < backend_.workers(); ++i) {
    threads_.emplace_back([this, i] { WorkerLoop(i); });
  }
  for (int i = 0; i < kCompletionThreads; ++i) {
    completion_threads_.emplace_back([this] { CompletionLoop(); });
  }
}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::Submit(std::shared_ptr<Work> work) {
  work->enqueued = absl::Now();
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      auto at = std::upper_bound(queue_.begin(), queue_.end(), work, HigherPriority);
      queue_.insert(at, std::move(work));
      return;
    }
  }
  Finish(work, absl::UnavailableError("the server is shutting down"));
}

void Scheduler::Cancel(const std::shared_ptr<Work>& work) {
  work->cancelled.store(true);
  {
    absl::MutexLock lock(&mu_);
    auto it = std::find(queue_.begin(), queue_.end(), work);
    if (it == queue_.end()) return;  // running or done: the backend sees the flag
    queue_.erase(it);
  }
  Finish(work, absl::CancelledError("the call was cancelled"));
}

void Scheduler::Stop() {
  std::deque<std::shared_ptr<Work>> left;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    left.swap(queue_);
  }
  for (auto& w : left) Finish(w, absl::UnavailableError("the server is shutting down"));
  for (auto& t : threads_) t.join();
  threads_.clear();
  {
    absl::MutexLock lock(&done_mu_);
    done_stopping_ = true;
  }
  for (auto& t : completion_threads_) t.join();  // once they have run every completion
  completion_threads_.clear();
}

size_t Scheduler::queued() const {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

void Scheduler::Finish(const std::shared_ptr<Work>& work, absl::Status status) {
  work->status = std::move(status);
  if (work->on_done) work->on_done();
}

std::vector<std::shared_ptr<Work>> Scheduler::TakeBatch(absl::Time now) {
  std::vector<std::shared_ptr<Work>> batch;
  const Work& head = *queue_.front();
  const bool alone = !batching_.enabled || head.array_bytes() >= batching_.max_batch_bytes;
  if (alone) {
    batch.push_back(queue_.front());
    queue_.pop_front();
    return batch;
  }
  // What a batch taken now would hold.
  uint64_t bytes = 0;
  std::vector<size_t> picked;
  for (size_t i = 0; i < queue_.size() && picked.size() < batching_.max_batch_requests; ++i) {
    const Work& w = *queue_[i];
    if (!backend_.Compatible(head, w)) continue;
    if (bytes + w.array_bytes() > batching_.max_batch_bytes) continue;
    bytes += w.array_bytes();
    picked.push_back(i);
  }
  const bool full = picked.size() >= batching_.max_batch_requests ||
                    bytes * 2 >= batching_.max_batch_bytes ||
                    picked.size() < queue_.size();  // more waiting than fits: go now
  if (!full && now < head.enqueued + batching_.max_queue_delay && !stopping_) return batch;
  for (size_t i : picked) batch.push_back(queue_[i]);
  for (auto it = picked.rbegin(); it != picked.rend(); ++it) queue_.erase(queue_.begin() + *it);
  return batch;
}

void Scheduler::WorkerLoop(int worker) {
  for (;;) {
    std::vector<std::shared_ptr<Work>> batch;
    {
      absl::MutexLock lock(&mu_);
      for (;;) {
        mu_.Await(absl::Condition(
            +[](Scheduler* s)
                 ABSL_NO_THREAD_SAFETY_ANALYSIS { return s->stopping_ || !s->queue_.empty(); },
            this));
        if (queue_.empty()) return;  // stopping
        const absl::Time now = absl::Now();
        batch = TakeBatch(now);
        if (!batch.empty()) break;
        // Wait for more work or for the head's delay to run out.
        const absl::Time until = queue_.front()->enqueued + batching_.max_queue_delay;
        std::pair<Scheduler*, size_t> seen(this, queue_.size());
        mu_.AwaitWithDeadline(
            absl::Condition(
                +[](std::pair<Scheduler*, size_t>* a) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                  return a->first->stopping_ || a->first->queue_.size() != a->second;
                },
                &seen),
            until);
      }
    }
    const absl::Time start = absl::Now();
    std::vector<std::shared_ptr<Work>> runnable;
    uint64_t bytes = 0;
    for (auto& w : batch) {
      w->queue_time = start - w->enqueued;
      if (metrics_ != nullptr) metrics_->Queued(w->method, absl::ToDoubleSeconds(w->queue_time));
      if (w->cancelled.load()) {
        Finish(w, absl::CancelledError("the call was cancelled"));
      } else if (start > w->deadline) {
        Finish(w, absl::DeadlineExceededError("the deadline passed while the request was queued"));
      } else {
        bytes += w->array_bytes();
        runnable.push_back(std::move(w));
      }
    }
    if (runnable.empty()) continue;
    bool threw = false;
    std::vector<std::shared_ptr<Work>> returned = RunCatching(backend_, worker, runnable, &threw);
    const absl::Duration took = absl::Now() - start;
    if (!returned.empty()) {
      Requeue(returned);
      std::erase_if(runnable, [&](const std::shared_ptr<Work>& w) {
        return std::find(returned.begin(), returned.end(), w) != returned.end();
      });
    }
    if (metrics_ != nullptr && !runnable.empty() && !threw) {
      metrics_->Batch(runnable.front()->device, runnable.size(), bytes);
    }
    for (auto& w : runnable) {
      w->compute_time = took;
      if (metrics_ != nullptr && w->status.ok()) {
        metrics_->Computed(w->method, w->device, absl::ToDoubleSeconds(took));
      }
    }
    Complete(std::move(runnable));
    if (backend_.Retired(worker)) return;
  }
}

void Scheduler::Complete(std::vector<std::shared_ptr<Work>> works) {
  absl::MutexLock lock(&done_mu_);
  for (auto& w : works) done_.push_back(std::move(w));
}

void Scheduler::CompletionLoop() {
  for (;;) {
    std::shared_ptr<Work> work;
    {
      absl::MutexLock lock(&done_mu_);
      done_mu_.Await(absl::Condition(
          +[](Scheduler* s)
               ABSL_NO_THREAD_SAFETY_ANALYSIS { return s->done_stopping_ || !s->done_.empty(); },
          this));
      if (done_.empty()) return;  // stopping, and nothing left to complete
      work = std::move(done_.front());
      done_.pop_front();
    }
    if (work->on_done) work->on_done();
  }
}

void Scheduler::Requeue(const std::vector<std::shared_ptr<Work>>& works) {
  std::vector<std::shared_ptr<Work>> refused;
  {
    absl::MutexLock lock(&mu_);
    // Ahead of everything of their priority, in their original order: they
    // were taken before anything still queued.
    for (auto w = works.rbegin(); w != works.rend(); ++w) {
      if (stopping_) {
        refused.push_back(*w);
        continue;
      }
      auto at = std::lower_bound(queue_.begin(), queue_.end(), *w, HigherPriority);
      queue_.insert(at, *w);
    }
  }
  for (auto& w : refused) Finish(w, absl::UnavailableError("the server is shutting down"));
}

}  // namespace ebzip::server
