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

// A stream, a source buffer and a copy buffer per lane, for rounds of
// copies whose last byte tells which round's source a lane saw.
class StreamForkTest : public ::testing::Test {
 protected:
  void Allocate(size_t bytes) {
    bytes_ = bytes;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&source_), bytes), cudaSuccess);
    copies_.assign(StreamFork::kMaxLanes, nullptr);
    for (auto& c : copies_) {
      ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&c), bytes), cudaSuccess);
    }
  }
  void TearDown() override {
    for (auto& c : copies_) cudaFree(c);
    if (source_ != nullptr) cudaFree(source_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  // Zeroes the copies, then fills the source with `round` on the stream.
  void StartRound(int round) {
    for (auto& c : copies_) ASSERT_EQ(cudaMemset(c, 0, bytes_), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the legacy stream does not order these
    ASSERT_EQ(cudaMemsetAsync(source_, round, bytes_, stream_), cudaSuccess);
  }
  void CopyOn(int lane, cudaStream_t s) {
    ASSERT_EQ(cudaMemcpyAsync(copies_[lane], source_, bytes_, cudaMemcpyDeviceToDevice, s),
              cudaSuccess);
  }
  // The last byte of lane's copy, read on s.
  uint8_t LastByte(int lane, cudaStream_t s) {
    uint8_t last = 0;
    EXPECT_EQ(cudaMemcpyAsync(&last, copies_[lane] + bytes_ - 1, 1, cudaMemcpyDeviceToHost, s),
              cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    return last;
  }

  size_t bytes_ = 0;
  cudaStream_t stream_ = nullptr;
  uint8_t* source_ = nullptr;
  std::vector<uint8_t*> copies_;
};

TEST_F(StreamForkTest, LanesSeeTheStreamsWorkAndTheStreamSeesTheLanes) {
  SKIP_WITHOUT_GPU();
  ASSERT_NO_FATAL_FAILURE(Allocate(size_t{256} << 20));
  for (int round = 1; round <= 3; ++round) {
    ASSERT_NO_FATAL_FAILURE(StartRound(round));
    auto fork = StreamFork::Begin(stream_, StreamFork::kMaxLanes);
    ASSERT_TRUE(fork.ok()) << fork.status();
    for (int i = 0; i < fork->lanes(); ++i) ASSERT_NO_FATAL_FAILURE(CopyOn(i, fork->lane(i)));
    ASSERT_TRUE(fork->Join().ok());
    // After the join the stream reads every lane's copy; the last bytes are
    // the copies' last written.
    for (int i = 0; i < fork->lanes(); ++i) {
      EXPECT_EQ(LastByte(i, stream_), round) << "lane " << i << ", round " << round;
    }
  }
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

TEST_F(StreamForkTest, LanesAtAMarkSeeTheWorkBeforeItAndRunBesideTheWorkAfterIt) {
  SKIP_WITHOUT_GPU();
  ASSERT_NO_FATAL_FAILURE(Allocate(size_t{64} << 20));
  for (int round = 1; round <= 2; ++round) {
    ASSERT_NO_FATAL_FAILURE(StartRound(round));
    ASSERT_TRUE(StreamFork::Mark(stream_).ok());
    // After the mark the stream is held until every lane has finished: lanes
    // that waited for it would never finish (until the gate times out).
    static Gate gates[2];  // outlive the test should an assertion leave it early
    Gate& gate = gates[round - 1];
    ASSERT_EQ(cudaLaunchHostFunc(stream_, &Gate::Hold, &gate), cudaSuccess);
    auto fork = StreamFork::BeginAtMark(stream_, StreamFork::kMaxLanes);
    ASSERT_TRUE(fork.ok()) << fork.status();
    for (int i = 0; i < fork->lanes(); ++i) {
      EXPECT_NE(fork->lane(i), stream_) << "lane " << i;
      ASSERT_NO_FATAL_FAILURE(CopyOn(i, fork->lane(i)));
    }
    for (int i = 0; i < fork->lanes(); ++i) {
      EXPECT_EQ(LastByte(i, fork->lane(i)), round) << "lane " << i << ", round " << round;
    }
    EXPECT_FALSE(gate.timed_out.load()) << "the lanes waited for the work after the mark";
    gate.released = true;
    ASSERT_TRUE(fork->Join().ok());
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  }
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
