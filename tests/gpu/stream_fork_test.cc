// gpu/stream_fork.h: lanes start after what the caller's stream held, and
// the caller's stream waits for the lanes after Join. Large copies make a
// missing wait show: a lane that started early copies the buffer before the
// caller's stream has filled it. Skips where no CUDA device is visible.
#include "gpu/stream_fork.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "gpu/gpu_codec.h"
#include "gtest/gtest.h"

namespace ebzip::gpu {
namespace {

#define SKIP_WITHOUT_GPU()                                                        \
  do {                                                                            \
    if (absl::Status s = DeviceAvailable(); !s.ok()) GTEST_SKIP() << s.message(); \
  } while (0)

TEST(StreamFork, LanesSeeTheStreamsWorkAndTheStreamSeesTheLanes) {
  SKIP_WITHOUT_GPU();
  constexpr size_t kBytes = size_t{256} << 20;
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  uint8_t* source = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&source), kBytes), cudaSuccess);
  std::vector<uint8_t*> copies(StreamFork::kMaxLanes);
  for (auto& c : copies) {
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&c), kBytes), cudaSuccess);
  }
  for (int round = 1; round <= 3; ++round) {
    for (auto& c : copies) ASSERT_EQ(cudaMemset(c, 0, kBytes), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the legacy stream does not order these
    ASSERT_EQ(cudaMemsetAsync(source, round, kBytes, stream), cudaSuccess);
    auto fork = StreamFork::Begin(stream, StreamFork::kMaxLanes);
    ASSERT_TRUE(fork.ok()) << fork.status();
    for (int i = 0; i < fork->lanes(); ++i) {
      ASSERT_EQ(cudaMemcpyAsync(copies[i], source, kBytes, cudaMemcpyDeviceToDevice, fork->lane(i)),
                cudaSuccess);
    }
    ASSERT_TRUE(fork->Join().ok());
    // After the join the stream reads every lane's copy; the last bytes are
    // the copies' last written.
    for (int i = 0; i < fork->lanes(); ++i) {
      uint8_t last = 0;
      ASSERT_EQ(cudaMemcpyAsync(&last, copies[i] + kBytes - 1, 1, cudaMemcpyDeviceToHost, stream),
                cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      EXPECT_EQ(last, round) << "lane " << i << ", round " << round;
    }
  }
  for (auto& c : copies) cudaFree(c);
  cudaFree(source);
  cudaStreamDestroy(stream);
}

// A host function that holds the stream until the test releases it (or 30 s
// pass, which the test reports as a failure).
struct Gate {
  std::atomic<bool> released{false};
  std::atomic<bool> timed_out{false};
  static void Hold(void* self) {
    auto* g = static_cast<Gate*>(self);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!g->released.load()) {
      if (std::chrono::steady_clock::now() > until) {
        g->timed_out = true;
        return;
      }
      std::this_thread::yield();
    }
  }
};

TEST(StreamFork, LanesAtAMarkSeeTheWorkBeforeItAndRunBesideTheWorkAfterIt) {
  SKIP_WITHOUT_GPU();
  constexpr size_t kBytes = size_t{64} << 20;
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  uint8_t* source = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&source), kBytes), cudaSuccess);
  std::vector<uint8_t*> copies(StreamFork::kMaxLanes);
  for (auto& c : copies) {
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&c), kBytes), cudaSuccess);
  }
  for (int round = 1; round <= 2; ++round) {
    for (auto& c : copies) ASSERT_EQ(cudaMemset(c, 0, kBytes), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(source, round, kBytes, stream), cudaSuccess);
    ASSERT_TRUE(StreamFork::Mark(stream).ok());
    // After the mark the stream is held until every lane has finished: lanes
    // that waited for it would never finish (until the gate times out).
    static Gate gates[2];  // outlive the test should an assertion leave it early
    Gate& gate = gates[round - 1];
    ASSERT_EQ(cudaLaunchHostFunc(stream, &Gate::Hold, &gate), cudaSuccess);
    auto fork = StreamFork::BeginAtMark(stream, StreamFork::kMaxLanes);
    ASSERT_TRUE(fork.ok()) << fork.status();
    for (int i = 0; i < fork->lanes(); ++i) {
      EXPECT_NE(fork->lane(i), stream) << "lane " << i;
      ASSERT_EQ(cudaMemcpyAsync(copies[i], source, kBytes, cudaMemcpyDeviceToDevice, fork->lane(i)),
                cudaSuccess);
    }
    for (int i = 0; i < fork->lanes(); ++i) {
      uint8_t last = 0;
      ASSERT_EQ(
          cudaMemcpyAsync(&last, copies[i] + kBytes - 1, 1, cudaMemcpyDeviceToHost, fork->lane(i)),
          cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(fork->lane(i)), cudaSuccess);
      EXPECT_EQ(last, round) << "lane " << i << ", round " << round;
    }
    EXPECT_FALSE(gate.timed_out.load()) << "the lanes waited for the work after the mark";
    gate.released = true;
    ASSERT_TRUE(fork->Join().ok());
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  }
  for (auto& c : copies) cudaFree(c);
  cudaFree(source);
  cudaStreamDestroy(stream);
}

TEST(StreamFork, BeginAtMarkWithoutAMarkFails) {
  SKIP_WITHOUT_GPU();
  // A thread of its own: marks are per thread.
  absl::Status status;
  std::thread([&] { status = StreamFork::BeginAtMark(nullptr, 2).status(); }).join();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
}

TEST(StreamFork, OneLaneIsTheStreamItself) {
  SKIP_WITHOUT_GPU();
  auto fork = StreamFork::Begin(nullptr, 1);
  ASSERT_TRUE(fork.ok());
  EXPECT_EQ(fork->lane(0), nullptr);
  EXPECT_TRUE(fork->Join().ok());
  EXPECT_FALSE(StreamFork::Begin(nullptr, 0).ok());
  EXPECT_FALSE(StreamFork::Begin(nullptr, StreamFork::kMaxLanes + 1).ok());
}

}  // namespace
}  // namespace ebzip::gpu
