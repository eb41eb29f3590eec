#include "server/host_block_pool.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace ebzip::server {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

// A pool over `bytes` of malloc'd memory that counts its release.
std::shared_ptr<HostBlockPool> MallocPool(uint64_t bytes, int* released) {
  auto* region = static_cast<uint8_t*>(std::malloc(bytes));
  return HostBlockPool::Create(region, bytes, [released](uint8_t* p) {
    ++*released;
    std::free(p);
  });
}

TEST(HostBlockPool, BlocksArePowerOfTwoClassesInsideTheRegionAndDoNotOverlap) {
  int released = 0;
  auto pool = MallocPool(32 * kMiB, &released);
  std::vector<HostBlock> blocks;
  for (uint64_t want : {1 * kKiB, 64 * kKiB, 65 * kKiB, 256 * kKiB, 300 * kKiB, 8 * kMiB}) {
    HostBlock b = pool->Take(want);
    ASSERT_TRUE(b) << want;
    EXPECT_GE(b.capacity(), want);
    EXPECT_LT(b.capacity(), std::max<uint64_t>(2 * want, 64 * kKiB + 1)) << want;
    EXPECT_EQ(b.capacity() & (b.capacity() - 1), 0u) << "not a power of two: " << b.capacity();
    EXPECT_EQ(b.size(), 0u);
    blocks.push_back(std::move(b));
  }
  // Fill each block with its own byte and check that none overwrote another.
  for (size_t i = 0; i < blocks.size(); ++i) {
    std::vector<uint8_t> fill(blocks[i].capacity(), static_cast<uint8_t>(i + 1));
    blocks[i].Append(fill.data(), fill.size());
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    for (uint8_t byte : blocks[i].bytes()) ASSERT_EQ(byte, i + 1) << "block " << i;
  }
  EXPECT_EQ(pool->carved(), (64 + 64 + 128 + 256 + 512) * kKiB + 8 * kMiB);
}

TEST(HostBlockPool, AppendFillsFromTheFront) {
  int released = 0;
  auto pool = MallocPool(kMiB, &released);
  HostBlock b = pool->Take(100);
  const char first[] = "abc", second[] = "defg";
  b.Append(first, 3);
  b.Append(second, 4);
  ASSERT_EQ(b.size(), 7u);
  EXPECT_EQ(std::memcmp(b.data(), "abcdefg", 7), 0);
}

TEST(HostBlockPool, AFreedBlockIsReusedByItsClassBeforeTheRegionIsCarvedFurther) {
  int released = 0;
  auto pool = MallocPool(kMiB, &released);
  uint8_t* first;
  {
    HostBlock b = pool->Take(200 * kKiB);
    first = b.data();
  }
  EXPECT_EQ(pool->carved(), 256 * kKiB);
  HostBlock again = pool->Take(256 * kKiB);
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(pool->carved(), 256 * kKiB);
  HostBlock other_class = pool->Take(64 * kKiB);  // a different class: carved anew
  EXPECT_NE(other_class.data(), first);
  EXPECT_EQ(pool->carved(), 320 * kKiB);
}

TEST(HostBlockPool, TooLargeOrUsedUpGivesAnEmptyBlock) {
  int released = 0;
  auto pool = MallocPool(kMiB, &released);
  EXPECT_FALSE(pool->Take(HostBlockPool::kLargestBlock + 1));
  HostBlock a = pool->Take(512 * kKiB);
  HostBlock b = pool->Take(512 * kKiB);
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  HostBlock c = pool->Take(1);  // the region is used up, and no 64 KiB block was freed
  EXPECT_FALSE(c);
  EXPECT_EQ(c.data(), nullptr);
  EXPECT_EQ(c.capacity(), 0u);
  a.Release();
  EXPECT_FALSE(a);
  EXPECT_TRUE(pool->Take(300 * kKiB)) << "a's block is free again";
}

TEST(HostBlockPool, WithTheRegionUsedUpAFreedLargerBlockServesASmallRequest) {
  int released = 0;
  auto pool = MallocPool(kMiB, &released);
  {
    HostBlock a = pool->Take(512 * kKiB);
    HostBlock b = pool->Take(512 * kKiB);
  }  // a burst of large arrays carved the whole region, then ended
  EXPECT_EQ(pool->carved(), kMiB);
  HostBlock small1 = pool->Take(10 * kKiB);
  HostBlock small2 = pool->Take(10 * kKiB);
  ASSERT_TRUE(small1);
  ASSERT_TRUE(small2);
  EXPECT_EQ(small1.capacity(), 512 * kKiB);
  EXPECT_NE(small1.data(), small2.data());
  EXPECT_FALSE(pool->Take(10 * kKiB)) << "both large blocks are out";
  small1.Release();  // back to its own (512 KiB) class
  HostBlock large = pool->Take(400 * kKiB);
  ASSERT_TRUE(large);
  EXPECT_EQ(pool->carved(), kMiB);
}

TEST(HostBlockPool, AnAbandonedBlockNeverComesBack) {
  int released = 0;
  auto pool = MallocPool(128 * kKiB, &released);
  HostBlock a = pool->Take(64 * kKiB);
  uint8_t* lost = a.data();
  a.Abandon();
  EXPECT_FALSE(a);
  HostBlock b = pool->Take(64 * kKiB);
  ASSERT_TRUE(b);
  EXPECT_NE(b.data(), lost);
  EXPECT_FALSE(pool->Take(64 * kKiB)) << "the abandoned block stays carved";
  b.Release();
  pool.reset();
  EXPECT_EQ(released, 1) << "an abandoned block does not keep the region";
}

TEST(HostBlockPool, StatsCountWhatIsOutAndWhatWasRefused) {
  int released = 0;
  auto pool = MallocPool(kMiB, &released);
  EXPECT_EQ(pool->stats().bytes, kMiB);
  HostBlock a = pool->Take(100 * kKiB);  // a 128 KiB block
  HostBlock b = pool->Take(512 * kKiB);
  EXPECT_EQ(pool->stats().given, 640 * kKiB);
  EXPECT_EQ(pool->stats().carved, 640 * kKiB);
  EXPECT_FALSE(pool->Take(512 * kKiB));                        // 384 KiB left: a miss
  EXPECT_FALSE(pool->Take(HostBlockPool::kLargestBlock + 1));  // too large: not a miss
  EXPECT_EQ(pool->stats().misses, 1u);
  b.Release();
  EXPECT_EQ(pool->stats().given, 128 * kKiB);
  a = HostBlock();
  EXPECT_EQ(pool->stats().given, 0u);
  EXPECT_EQ(pool->stats().carved, 640 * kKiB);
}

TEST(HostBlockPool, TheRegionIsReleasedOnceTheLastBlockIsGone) {
  int released = 0;
  auto pool = MallocPool(kMiB, &released);
  HostBlock outlives = pool->Take(kKiB);
  HostBlock moved_from = pool->Take(kKiB);
  HostBlock moved_to = std::move(moved_from);
  EXPECT_FALSE(moved_from);
  EXPECT_TRUE(moved_to);
  pool.reset();
  EXPECT_EQ(released, 0) << "blocks still out";
  moved_to = HostBlock();
  EXPECT_EQ(released, 0);
  outlives.Release();
  EXPECT_EQ(released, 1);
}

TEST(HostBlockPool, ConcurrentTakersNeverShareABlock) {
  int released = 0;
  auto pool = MallocPool(64 * kMiB, &released);
  constexpr int kThreads = 8, kRounds = 2000;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        HostBlock b = pool->Take((64 + 64 * ((t + r) % 4)) * kKiB);
        if (!b) {
          ++failures;
          continue;
        }
        std::vector<uint8_t> mine(b.capacity(), static_cast<uint8_t>(t));
        b.Append(mine.data(), mine.size());
        for (uint8_t byte : b.bytes()) {
          if (byte != t) ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  // Each thread holds one block at a time: freed blocks were reused, not
  // carved anew (at most one of each class per thread).
  EXPECT_LE(pool->carved(), kThreads * (64 + 128 + 256 + 256) * kKiB);
}

}  // namespace
}  // namespace ebzip::server
