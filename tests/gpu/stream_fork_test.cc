// gpu/stream_fork.h: lanes start after what the caller's stream held, and
// the caller's stream waits for the lanes after Join. Large copies make a
// missing wait show: a lane that started early copies the buffer before the
// caller's stream has filled it. Skips where no CUDA device is visible.
#include "gpu/stream_fork.h"

#include <cuda_runtime_api.h>

#include <cstdint>
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
