// ParallelFor runs every index once and hands an exception to its caller,
// workers woken ahead (ParallelWarmUp) take jobs, and the pool is sized by the cores the process may use: its CPU affinity
// and its cgroup's CPU quota.
#include "codec/parallel.h"

#include <sched.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <new>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace ebzip {
namespace {

TEST(ParallelFor, RunsEveryIndexOnce) {
  for (uint64_t n : {uint64_t{0}, uint64_t{1}, uint64_t{7}, uint64_t{10000}}) {
    std::vector<std::atomic<int>> hits(n);
    ParallelFor(n, [&](uint64_t i) { hits[i].fetch_add(1); });
    for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i << " of " << n;
  }
}

// An exception on a pool thread reaches the caller instead of ending the
// process, through nested calls too, and leaves the pool working.
TEST(ParallelFor, AnExceptionReachesTheCaller) {
  std::atomic<int> ran{0};
  EXPECT_THROW(ParallelFor(1000,
                           [&](uint64_t i) {
                             ran.fetch_add(1);
                             if (i % 100 == 37)
                               throw std::runtime_error("index " + std::to_string(i));
                           }),
               std::runtime_error);
  // On one thread ParallelFor stops at the throw; on several, the caller
  // waits for every index before it rethrows.
  if (DefaultThreadCount() > 1) {
    EXPECT_EQ(ran.load(), 1000);
  } else {
    EXPECT_EQ(ran.load(), 38);
  }
  EXPECT_THROW(ParallelFor(8,
                           [&](uint64_t) {
                             ParallelFor(64, [](uint64_t j) {
                               if (j == 63) throw std::bad_alloc();
                             });
                           }),
               std::bad_alloc);
  std::vector<std::atomic<int>> hits(5000);
  ParallelFor(hits.size(), [&](uint64_t i) { hits[i].fetch_add(1); });
  for (uint64_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i;
}

// Workers woken by ParallelWarmUp spin for jobs: calls in series within the
// window run every index once, with the workers taking part (each index
// sleeps, so a caller alone would not take them all); after the window they
// sleep again and still take jobs.
TEST(ParallelWarmUp, WarmedWorkersTakeJobsInSeriesThenSleep) {
  ParallelWarmUp(std::chrono::milliseconds(200));
  for (int call = 0; call < 3; ++call) {
    std::vector<std::atomic<int>> hits(64);
    std::mutex mu;
    std::set<std::thread::id> threads;
    ParallelFor(hits.size(), [&](uint64_t i) {
      hits[i].fetch_add(1);
      {
        std::lock_guard<std::mutex> lock(mu);
        threads.insert(std::this_thread::get_id());
      }
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    });
    for (uint64_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i;
    if (DefaultThreadCount() > 1) {
      EXPECT_GT(threads.size(), 1u) << "call " << call;
    }
  }
  ParallelWarmUp(std::chrono::microseconds(0));  // nothing to wake for
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // past the window
  std::vector<std::atomic<int>> hits(1000);
  ParallelFor(hits.size(), [&](uint64_t i) { hits[i].fetch_add(1); });
  for (uint64_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i;
}

TEST(CoresFromCpuMax, QuotaOverPeriodRoundedUp) {
  EXPECT_EQ(CoresFromCpuMax("400000 100000"), 4);
  EXPECT_EQ(CoresFromCpuMax("400000 100000\n"), 4);
  EXPECT_EQ(CoresFromCpuMax("150000 100000"), 2);
  EXPECT_EQ(CoresFromCpuMax("50000 100000"), 1);
  EXPECT_EQ(CoresFromCpuMax("max 100000"), 0);  // no limit
  EXPECT_EQ(CoresFromCpuMax(""), 0);
  EXPECT_EQ(CoresFromCpuMax("0 100000"), 0);
  EXPECT_EQ(CoresFromCpuMax("100000 0"), 0);
  EXPECT_EQ(CoresFromCpuMax("400000"), 0);
  EXPECT_EQ(CoresFromCpuMax("-1 100000"), 0);
  EXPECT_EQ(CoresFromCpuMax("400000 100000 7"), 0);
}

// The calling thread's affinity is what a taskset, or Kubernetes' static CPU
// manager, gives the process.
TEST(AvailableCores, FollowsTheAffinity) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  const int all = AvailableCores();
  EXPECT_GE(all, 1);
  EXPECT_LE(all, CPU_COUNT(&saved));

  int first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  EXPECT_EQ(AvailableCores(), 1);
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  EXPECT_EQ(AvailableCores(), all);
}

}  // namespace
}  // namespace ebzip
