// The scheduler against a backend that records what it is given: priority
// order, batching limits and compatibility, cancellation and deadlines in
// the queue, a backend that throws, and admission control.
#include "server/scheduler.h"

#include <map>
#include <mutex>
#include <new>
#include <set>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/admission.h"

namespace ebzip::server {
namespace {

class RecordingBackend final : public Backend {
 public:
  std::string name() const override { return "test"; }
  std::vector<std::string> devices() const override { return {"test"}; }
  int workers() const override { return 1; }
  // Works of equal dtype batch together.
  bool Compatible(const Work& a, const Work& b) const override { return a.dtype() == b.dtype(); }
  std::vector<std::shared_ptr<Work>> Run(int,
                                         absl::Span<const std::shared_ptr<Work>> batch) override {
    gate.WaitForNotification();
    absl::MutexLock lock(&mu);
    std::vector<std::string> ids;
    for (const auto& w : batch) {
      ids.push_back(w->request_id);
      w->status = absl::OkStatus();
      w->device = "test";
    }
    batches.push_back(ids);
    return {};
  }
  std::vector<DeviceState> DeviceStates() const override { return {}; }

  absl::Notification gate;
  absl::Mutex mu;
  std::vector<std::vector<std::string>> batches;
};

// Two workers; worker 0 "fails" on its first batch: it hands the batch back
// and retires. Worker 1 waits for `gate` before its first batch, so worker 0
// takes the first one.
class FailingBackend final : public Backend {
 public:
  std::string name() const override { return "test"; }
  std::vector<std::string> devices() const override { return {"test:0", "test:1"}; }
  int workers() const override { return 2; }
  bool Compatible(const Work&, const Work&) const override { return true; }
  std::vector<std::shared_ptr<Work>> Run(int worker,
                                         absl::Span<const std::shared_ptr<Work>> batch) override {
    if (worker == 0) {
      absl::MutexLock lock(&mu);
      ++worker0_batches;
      failed = true;
      return {batch.begin(), batch.end()};
    }
    gate.WaitForNotification();
    absl::MutexLock lock(&mu);
    for (const auto& w : batch) {
      order.push_back(w->request_id);
      w->status = absl::OkStatus();
      w->device = "test:1";
    }
    return {};
  }
  bool Retired(int worker) const override {
    absl::MutexLock lock(&mu);
    return worker == 0 && failed;
  }
  std::vector<DeviceState> DeviceStates() const override { return {}; }

  absl::Notification gate;
  mutable absl::Mutex mu;
  bool failed = false;
  int worker0_batches = 0;
  std::vector<std::string> order;
};

// Throws what `next` says on each batch: the allocation failure or bug that
// Backend::Run should not let out, but might.
class ThrowingBackend final : public Backend {
 public:
  enum class Throw { kBadAlloc, kRuntimeError, kNothing };
  std::string name() const override { return "test"; }
  std::vector<std::string> devices() const override { return {"test"}; }
  int workers() const override { return 1; }
  bool Compatible(const Work&, const Work&) const override { return true; }
  std::vector<std::shared_ptr<Work>> Run(int,
                                         absl::Span<const std::shared_ptr<Work>> batch) override {
    absl::MutexLock lock(&mu);
    ++runs;
    switch (next) {
      case Throw::kBadAlloc:
        throw std::bad_alloc();
      case Throw::kRuntimeError:
        throw std::runtime_error("a bug");
      case Throw::kNothing:
        break;
    }
    for (const auto& w : batch) w->status = absl::OkStatus();
    return {};
  }
  std::vector<DeviceState> DeviceStates() const override { return {}; }

  absl::Mutex mu;
  Throw next = Throw::kNothing;
  int runs = 0;
};

BatchingOptions Unbatched() {
  BatchingOptions b;
  b.enabled = false;
  return b;
}

std::shared_ptr<Work> MakeWork(const std::string& id, uint64_t elements, int priority = 0,
                               DType dtype = DType::kFloat32) {
  auto w = std::make_shared<Work>();
  w->request_id = id;
  w->priority = priority;
  w->spec = {dtype, {elements}};
  return w;
}

struct Done {
  absl::Mutex mu;
  std::map<std::string, absl::Status> status;
  void Attach(const std::shared_ptr<Work>& w) {
    Work* raw = w.get();
    w->on_done = [this, raw] {
      absl::MutexLock lock(&mu);
      status[raw->request_id] = raw->status;
    };
  }
  bool WaitFor(size_t n) {
    std::pair<Done*, size_t> want(this, n);
    absl::MutexLock lock(&mu);
    return mu.AwaitWithTimeout(absl::Condition(
                                   +[](std::pair<Done*, size_t>* a) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                     return a->first->status.size() >= a->second;
                                   },
                                   &want),
                               absl::Seconds(10));
  }
};

TEST(Scheduler, BatchesByPriorityThenArrivalWithinLimits) {
  RecordingBackend backend;
  BatchingOptions b;
  b.max_batch_bytes = 4000;  // 1000 float32 elements
  b.max_batch_requests = 3;
  b.max_queue_delay = absl::Milliseconds(1);
  Scheduler scheduler(backend, b, nullptr);
  Done done;
  // The first work occupies the worker (the gate is closed) while the rest queue.
  auto first = MakeWork("first", 10);
  done.Attach(first);
  scheduler.Submit(first);
  absl::SleepFor(absl::Milliseconds(50));
  std::vector<std::shared_ptr<Work>> works = {
      MakeWork("low", 100, -1),   MakeWork("a", 100),    MakeWork("f64", 100, 0, DType::kFloat64),
      MakeWork("b", 100),         MakeWork("c", 100),    MakeWork("d", 100),
      MakeWork("urgent", 100, 5), MakeWork("big", 5000),
  };
  for (auto& w : works) {
    done.Attach(w);
    scheduler.Submit(w);
  }
  backend.gate.Notify();
  ASSERT_TRUE(done.WaitFor(works.size() + 1));
  absl::MutexLock lock(&backend.mu);
  const std::vector<std::vector<std::string>> expected = {
      {"first"}, {"urgent", "a", "b"},  // priority first; at most 3 per batch; f64 waits its turn
      {"f64"},   {"c", "d", "low"},     // low priority still fills a batch's spare room
      {"big"},                          // over max_batch_bytes: alone
  };
  EXPECT_EQ(backend.batches, expected);
}

TEST(Scheduler, WithoutBatchingEveryWorkRunsAlone) {
  RecordingBackend backend;
  Scheduler scheduler(backend, Unbatched(), nullptr);
  Done done;
  for (int i = 0; i < 5; ++i) {
    auto w = MakeWork(std::to_string(i), 10);
    done.Attach(w);
    scheduler.Submit(w);
  }
  backend.gate.Notify();
  ASSERT_TRUE(done.WaitFor(5));
  absl::MutexLock lock(&backend.mu);
  EXPECT_EQ(backend.batches.size(), 5u);
}

// A completion starts the call's reply, which gRPC may send on that very
// thread: the worker must be free for the next batch meanwhile. Here the
// first work's completion waits for the second work to be done, which only
// the one worker can run.
TEST(Scheduler, ASlowCompletionDoesNotHoldUpTheWorker) {
  absl::Notification second_done, first_done;  // outlive the scheduler's threads
  RecordingBackend backend;
  backend.gate.Notify();
  Scheduler scheduler(backend, Unbatched(), nullptr);
  auto first = MakeWork("first", 10);
  auto second = MakeWork("second", 10);
  first->on_done = [&] {
    // Bounded, so that a scheduler that runs completions on its worker fails
    // the test instead of hanging it.
    if (second_done.WaitForNotificationWithTimeout(absl::Seconds(10))) first_done.Notify();
  };
  second->on_done = [&] { second_done.Notify(); };
  scheduler.Submit(first);
  absl::SleepFor(absl::Milliseconds(20));  // the worker has taken `first`
  scheduler.Submit(second);
  EXPECT_TRUE(second_done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_TRUE(first_done.WaitForNotificationWithTimeout(absl::Seconds(10)));
}

TEST(Scheduler, CancelledAndExpiredWorkNeverRuns) {
  RecordingBackend backend;
  Scheduler scheduler(backend, Unbatched(), nullptr);
  Done done;
  auto blocker = MakeWork("blocker", 10);
  auto cancelled = MakeWork("cancelled", 10);
  auto expired = MakeWork("expired", 10);
  expired->deadline = absl::Now() + absl::Milliseconds(20);
  for (auto& w : {blocker, cancelled, expired}) {
    done.Attach(w);
    scheduler.Submit(w);
  }
  scheduler.Cancel(cancelled);
  {
    // Cancelled work finishes at once, even with the worker busy.
    absl::MutexLock lock(&done.mu);
    ASSERT_EQ(done.status.count("cancelled"), 1u);
    EXPECT_EQ(done.status["cancelled"].code(), absl::StatusCode::kCancelled);
  }
  absl::SleepFor(absl::Milliseconds(50));
  backend.gate.Notify();
  ASSERT_TRUE(done.WaitFor(3));
  absl::MutexLock lock(&done.mu);
  EXPECT_TRUE(done.status["blocker"].ok());
  EXPECT_EQ(done.status["expired"].code(), absl::StatusCode::kDeadlineExceeded);
  absl::MutexLock backend_lock(&backend.mu);
  EXPECT_EQ(backend.batches, (std::vector<std::vector<std::string>>{{"blocker"}}));
}

TEST(Scheduler, ABatchThatThrowsFailsAloneAndTheWorkerGoesOn) {
  ThrowingBackend backend;
  Scheduler scheduler(backend, Unbatched(), nullptr);
  Done done;
  const std::pair<const char*, ThrowingBackend::Throw> steps[] = {
      {"out of memory", ThrowingBackend::Throw::kBadAlloc},
      {"bug", ThrowingBackend::Throw::kRuntimeError},
      {"fine", ThrowingBackend::Throw::kNothing},
  };
  size_t n = 0;
  for (const auto& [id, what] : steps) {
    {
      absl::MutexLock lock(&backend.mu);
      backend.next = what;
    }
    auto w = MakeWork(id, 10);
    w->status = absl::OkStatus();
    done.Attach(w);
    scheduler.Submit(w);
    ASSERT_TRUE(done.WaitFor(++n)) << id;
  }
  absl::MutexLock lock(&done.mu);
  EXPECT_EQ(done.status["out of memory"].code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(done.status["bug"].code(), absl::StatusCode::kInternal);
  EXPECT_NE(done.status["bug"].message().find("a bug"), std::string::npos) << done.status["bug"];
  EXPECT_TRUE(done.status["fine"].ok()) << done.status["fine"];
  absl::MutexLock backend_lock(&backend.mu);
  EXPECT_EQ(backend.runs, 3);
}

TEST(Scheduler, EveryWorkOfABatchThatThrowsFails) {
  ThrowingBackend backend;
  backend.next = ThrowingBackend::Throw::kBadAlloc;
  BatchingOptions b;
  b.enabled = true;
  b.max_batch_requests = 3;
  b.max_queue_delay = absl::Seconds(5);  // the batch fills long before
  Scheduler scheduler(backend, b, nullptr);
  Done done;
  for (const char* id : {"a", "b", "c"}) {
    auto w = MakeWork(id, 10);
    w->status = absl::OkStatus();
    done.Attach(w);
    scheduler.Submit(w);
  }
  ASSERT_TRUE(done.WaitFor(3));
  absl::MutexLock lock(&done.mu);
  for (const char* id : {"a", "b", "c"}) {
    EXPECT_EQ(done.status[id].code(), absl::StatusCode::kResourceExhausted) << id;
  }
  absl::MutexLock backend_lock(&backend.mu);
  EXPECT_EQ(backend.runs, 1) << "the three works did not share one batch";
}

TEST(Scheduler, StopFinishesQueuedWorkAsUnavailable) {
  RecordingBackend backend;
  auto scheduler = std::make_unique<Scheduler>(backend, Unbatched(), nullptr);
  // A failed ASSERT must not leave the worker waiting on the gate, or the
  // scheduler's destructor would wait for it forever.
  struct OpenGate {
    absl::Notification& gate;
    ~OpenGate() {
      if (!gate.HasBeenNotified()) gate.Notify();
    }
  } open_gate{backend.gate};
  Done done;
  for (const char* id : {"running", "queued"}) {
    auto w = MakeWork(id, 10);
    done.Attach(w);
    scheduler->Submit(w);
  }
  // The worker has taken "running" (and waits on the gate) when one work is
  // left in the queue; Stop finishes the queued one before it waits for the
  // worker. Waiting for each, not for a fixed time, keeps a loaded machine
  // from reordering them.
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (scheduler->queued() != 1 && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(1));
  ASSERT_EQ(scheduler->queued(), 1u);
  std::thread stop([&] { scheduler->Stop(); });
  const bool queued_finished = done.WaitFor(1);
  backend.gate.Notify();
  stop.join();
  ASSERT_TRUE(queued_finished);
  ASSERT_TRUE(done.WaitFor(2));
  absl::MutexLock lock(&done.mu);
  EXPECT_TRUE(done.status["running"].ok());
  EXPECT_EQ(done.status["queued"].code(), absl::StatusCode::kUnavailable);
}

TEST(Scheduler, WorkAFailedWorkerHandsBackRunsOnTheOthersOnce) {
  FailingBackend backend;
  Scheduler scheduler(backend, Unbatched(), nullptr);
  Done done;
  std::vector<std::shared_ptr<Work>> works;
  for (int i = 0; i < 6; ++i) {
    works.push_back(MakeWork(absl::StrCat("w", i), 10));
    done.Attach(works.back());
  }
  // Worker 1 is held at its gate, so worker 0 takes the first work, hands it
  // back and retires; then worker 1 runs everything in order.
  for (auto& w : works) scheduler.Submit(w);
  absl::SleepFor(absl::Milliseconds(50));
  backend.gate.Notify();
  ASSERT_TRUE(done.WaitFor(6));
  absl::MutexLock lock(&backend.mu);
  EXPECT_EQ(backend.worker0_batches, 1);  // retired after its failure
  for (const auto& [id, status] : done.status) EXPECT_TRUE(status.ok()) << id << ": " << status;
  // Every work ran once, on worker 1, and the handed-back one (w0 or w1,
  // whichever worker 0 took) kept its place ahead of later arrivals of its
  // priority: at the back of the queue it would have run last. Which of the
  // two worker 1 ran first depends on which it had taken before its gate.
  ASSERT_EQ(backend.order.size(), 6u);
  const std::set<std::string> first_two(backend.order.begin(), backend.order.begin() + 2);
  EXPECT_EQ(first_two, (std::set<std::string>{"w0", "w1"})) << absl::StrJoin(backend.order, " ");
  const std::vector<std::string> rest(backend.order.begin() + 2, backend.order.end());
  EXPECT_EQ(rest, (std::vector<std::string>{"w2", "w3", "w4", "w5"}))
      << absl::StrJoin(backend.order, " ");
}

TEST(Admission, BudgetIsEnforcedAndGivenBack) {
  AdmissionControl admission(1000);
  Reservation a = admission.Empty();
  ASSERT_TRUE(a.Grow(600).ok());
  Reservation b = admission.Empty();
  EXPECT_EQ(b.Grow(500).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(b.bytes(), 0u);
  ASSERT_TRUE(b.Grow(400).ok());
  EXPECT_EQ(admission.held(), 1000u);
  a.Resize(100);  // an output smaller than the input it replaces
  EXPECT_EQ(admission.held(), 500u);
  {
    Reservation moved = std::move(b);
    EXPECT_EQ(admission.held(), 500u);
  }
  EXPECT_EQ(admission.held(), 100u);
  a.Release();
  EXPECT_EQ(admission.held(), 0u);
  EXPECT_EQ(admission.Empty().Grow(1001).code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace ebzip::server
