#include "codec/parallel.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace ebzip {
namespace {

using Clock = std::chrono::steady_clock;

// One ParallelFor call: workers and the caller claim indices from `next`.
struct Job {
  uint64_t n;
  const std::function<void(uint64_t)>* fn;
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> done{0};
  std::mutex mu;
  std::condition_variable finished;

  // The first exception fn threw, for the caller to rethrow: one escaping a
  // pool thread would end the process (an allocation failing in a server's
  // request, say, instead of that request).
  std::exception_ptr error;

  void Work() {
    uint64_t completed = 0;
    for (uint64_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      try {
        (*fn)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
      ++completed;
    }
    if (completed != 0 && done.fetch_add(completed) + completed == n) {
      std::lock_guard<std::mutex> lock(mu);
      finished.notify_all();
    }
  }
};

class Pool {
 public:
  explicit Pool(int threads) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { Loop(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

  // Offers the job to up to `helpers` idle workers.
  void Offer(const std::shared_ptr<Job>& job, int helpers) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int i = 0; i < helpers; ++i) queue_.push_back(job);
      queued_.store(queue_.size(), std::memory_order_release);
    }
    cv_.notify_all();
  }

  // Sleeping workers wake and spin until `deadline` or a job.
  void WarmUp(Clock::time_point deadline) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (deadline <= spin_until_) return;  // already spinning as long
      spin_until_ = deadline;
      ++warm_epoch_;
    }
    cv_.notify_all();
  }

 private:
  void Loop() {
    uint64_t seen_epoch = 0;
    for (;;) {
      std::shared_ptr<Job> job;
      Clock::time_point spin_until;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock,
                 [&] { return stop_ || !queue_.empty() || warm_epoch_ != seen_epoch; });
        if (stop_) return;
        seen_epoch = warm_epoch_;
        spin_until = spin_until_;
        if (!queue_.empty()) {
          job = std::move(queue_.front());
          queue_.pop_front();
          queued_.store(queue_.size(), std::memory_order_release);
        }
      }
      if (job != nullptr) job->Work();
      // Warmed up (a window not yet passed, after a job too: a warmed-up
      // caller's parallel steps come in series): wait for the next job on
      // this core, not in the scheduler.
      for (int spins = 0; queued_.load(std::memory_order_acquire) == 0; ++spins) {
        if (spins % 64 == 63) {
          if (Clock::now() >= spin_until) break;
          std::this_thread::yield();
        }
      }
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_ ABSL_GUARDED_BY(mu_);
  std::atomic<size_t> queued_{0};  // queue_.size(), for spinning workers
  Clock::time_point spin_until_ ABSL_GUARDED_BY(mu_);
  uint64_t warm_epoch_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

Pool& GlobalPool() {
  static Pool* pool = new Pool(std::max(0, DefaultThreadCount() - 1));
  return *pool;
}

}  // namespace

int DefaultThreadCount() {
  static const int count = [] {
    if (const char* env = std::getenv("EBZIP_THREADS")) {
      int v = std::atoi(env);
      if (v > 0) return v;
    }
    if (const int cores = AvailableCores(); cores > 0) return cores;
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }();
  return count;
}

int AvailableCores() {
  int cores = 0;
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cores = CPU_COUNT(&set);
#endif
  std::ifstream cpu_max("/sys/fs/cgroup/cpu.max");
  std::string line;
  if (cpu_max && std::getline(cpu_max, line)) {
    if (const int quota = CoresFromCpuMax(line); quota > 0) {
      cores = cores > 0 ? std::min(cores, quota) : quota;
    }
  }
  return cores;
}

int CoresFromCpuMax(std::string_view cpu_max) {
  const std::vector<absl::string_view> parts =
      absl::StrSplit(absl::string_view(cpu_max.data(), cpu_max.size()), absl::ByAnyChar(" \t\n"),
                     absl::SkipEmpty());
  uint64_t quota = 0, period = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &quota) ||
      !absl::SimpleAtoi(parts[1], &period) || quota == 0 || period == 0) {
    return 0;  // "max": no limit; or not a cpu.max line
  }
  const uint64_t cores = (quota + period - 1) / period;
  return static_cast<int>(std::min<uint64_t>(cores, 1 << 16));
}

void ParallelWarmUp(std::chrono::microseconds window) {
  if (DefaultThreadCount() <= 1) return;
  GlobalPool().WarmUp(Clock::now() + window);
}

void ParallelFor(uint64_t n, const std::function<void(uint64_t)>& fn, int max_threads) {
  if (n == 0) return;
  int threads =
      max_threads > 0 ? std::min(max_threads, DefaultThreadCount()) : DefaultThreadCount();
  if (threads <= 1 || n == 1) {
    for (uint64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  auto job = std::make_shared<Job>();
  job->n = n;
  job->fn = &fn;
  try {
    GlobalPool().Offer(job, static_cast<int>(std::min<uint64_t>(threads - 1, n - 1)));
  } catch (...) {
    // Helpers are optional, but an offer already queued points at fn: the
    // caller runs the job with whatever was offered and waits, as ever.
  }
  job->Work();
  std::unique_lock<std::mutex> lock(job->mu);
  job->finished.wait(lock, [&] { return job->done.load() == n; });
  if (job->error) std::rethrow_exception(job->error);
}

}  // namespace ebzip
