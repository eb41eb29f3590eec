// gpu/runtime driven directly: a worker's rounds from host memory to host
// memory and what each says became of it (ran; unsupported, for a batch
// holding a corrupt archive), the caller's say over what comes down and
// where. The carver runs anywhere; the rest skips without a CUDA device.
#include "gpu/runtime/worker.h"

#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/archive.h"
#include "codec/format.h"
#include "gpu/gpu_codec.h"
#include "gtest/gtest.h"
#include "tests/server/test_arrays.h"

namespace ebzip::gpu::runtime {
namespace {

using testing::SmoothArray;
using testing::TestArray;

TEST(PoolCarver, TakesAlignedPlacesUntilTheSliceIsUsedUp) {
  alignas(256) static uint8_t memory[4 * kDeviceAlign];  // never written: stands for device memory
  PoolCarver carver(PoolSlice(memory, sizeof(memory)));
  EXPECT_EQ(carver.Take(1), memory);
  EXPECT_EQ(carver.Take(kDeviceAlign + 1), memory + kDeviceAlign);
  EXPECT_EQ(carver.left(), kDeviceAlign);
  EXPECT_EQ(carver.Take(kDeviceAlign + 1), nullptr) << "no room for it: nothing is taken";
  EXPECT_EQ(carver.Take(kDeviceAlign), memory + 3 * kDeviceAlign);
  EXPECT_EQ(carver.left(), 0u);
  EXPECT_EQ(carver.Take(1), nullptr);
}

struct Fixture {
  std::unique_ptr<Device> device;
  std::unique_ptr<Worker> worker;
};

Fixture OpenOrSkip() {
  Fixture f;
  if (!DeviceAvailable().ok()) return f;
  auto device = Device::Open(0, {HostWait::kYield, uint64_t{512} << 20});
  EXPECT_TRUE(device.ok()) << device.status();
  if (!device.ok()) return f;
  f.device = *std::move(device);
  EXPECT_EQ(f.device->pool_bytes(), uint64_t{512} << 20);
  const std::vector<PoolSlice> slices = f.device->SplitPool(2);
  EXPECT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[1].data(), slices[0].data() + slices[0].bytes());
  auto worker = Worker::Create(*f.device, slices[0], uint64_t{64} << 20);
  EXPECT_TRUE(worker.ok()) << worker.status();
  if (worker.ok()) f.worker = *std::move(worker);
  return f;
}

CompressOptions Rel(double bound) {
  CompressOptions o;
  o.mode = BoundMode::kRel;
  o.bound = bound;
  return o;
}

std::vector<TestArray> Arrays(int n) {
  std::vector<TestArray> arrays;
  for (int i = 0; i < n; ++i) {
    // Every one a different size, so that a place taken by the wrong bytes
    // cannot pass for the right ones.
    arrays.push_back(SmoothArray({DType::kFloat32, {uint64_t(32 + 16 * i), 256}}, i, i == 1));
  }
  return arrays;
}

TEST(GpuRuntime, ACompressRoundGivesTheCpuCodecsArchivesAndAsksBeforeEachComesDown) {
  Fixture f = OpenOrSkip();
  if (f.worker == nullptr) GTEST_SKIP() << "no CUDA device";
  const CompressOptions options = Rel(1e-4);
  const std::vector<TestArray> arrays = Arrays(3);
  // Array 2 is in page-locked memory (goes up by its own DMA), the others in
  // ordinary memory (staged).
  auto pinned = PinnedBuffer::Allocate(arrays[2].bytes.size());
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  std::memcpy(pinned->data(), arrays[2].bytes.data(), arrays[2].bytes.size());
  std::vector<Worker::CompressJob> jobs;
  std::vector<CompressTask> tasks;
  uint64_t buffers = 0;
  for (size_t i = 0; i < arrays.size(); ++i) {
    Worker::CompressJob j;
    j.task.spec = arrays[i].spec;
    j.task.options = options;
    j.task.capacity = MaxArchiveBytes(arrays[i].spec, options);
    j.input = i == 2 ? absl::Span<const uint8_t>(pinned->data(), arrays[2].bytes.size())
                     : absl::Span<const uint8_t>(arrays[i].bytes);
    j.input_pinned = i == 2;
    jobs.push_back(j);
    tasks.push_back(j.task);
    buffers += Worker::CompressBufferBytes(j.task);
  }
  auto workspace = CompressWorkspaceSize(tasks);
  ASSERT_TRUE(workspace.ok()) << workspace.status();
  ASSERT_TRUE(f.worker->CompressFits(buffers, *workspace, tasks.size()));
  std::vector<uint64_t> asked(arrays.size(), 0);
  Worker::CompressRound round =
      f.worker->Compress(jobs, *workspace, [&](size_t job, uint64_t bytes) {
        asked[job] = bytes;
        return job != 1;  // array 1's archive stays on the device
      });
  ASSERT_TRUE(round.result.ran()) << round.result.why();
  ASSERT_EQ(round.archives.size(), arrays.size());
  for (size_t i = 0; i < arrays.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("array ", i));
    auto expected = Compress(arrays[i].spec, arrays[i].bytes, options);
    ASSERT_TRUE(expected.ok()) << expected.status();
    EXPECT_EQ(asked[i], expected->size()) << "admit is asked with the archive's size";
    if (i == 1) {
      EXPECT_TRUE(round.archives[i].empty()) << "a refused archive does not come down";
    } else {
      EXPECT_TRUE(round.archives[i] == *expected) << "the archive differs from the CPU codec's";
    }
  }
}

struct Archives {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<ArchiveInfo> infos;
  std::vector<std::vector<uint8_t>> arrays;  // what they decode to
};

Archives ArchivesOf(const std::vector<TestArray>& arrays) {
  Archives a;
  for (const TestArray& t : arrays) {
    auto archive = Compress(t.spec, t.bytes, Rel(1e-3));
    EXPECT_TRUE(archive.ok()) << archive.status();
    a.bytes.push_back(archive.ok() ? *std::move(archive) : std::vector<uint8_t>());
  }
  for (const auto& b : a.bytes) {
    auto info = ReadArchiveInfo(b);
    EXPECT_TRUE(info.ok()) << info.status();
    auto decoded = Decompress(b);
    EXPECT_TRUE(decoded.ok()) << decoded.status();
    if (!info.ok() || !decoded.ok()) continue;
    a.infos.push_back(*std::move(info));
    a.arrays.push_back(std::move(decoded->data));
  }
  return a;
}

Worker::DecompressRound DecompressAll(Worker& worker, const Archives& a,
                                      StagedDownload::Destination destination) {
  std::vector<Worker::DecompressJob> jobs;
  std::vector<DecompressTask> tasks;
  for (size_t i = 0; i < a.bytes.size(); ++i) {
    jobs.push_back({&a.infos[i], a.bytes[i]});
    DecompressTask t;
    t.info = &a.infos[i];
    tasks.push_back(t);
  }
  auto workspace = DecompressWorkspaceSize(tasks, DecoderKind::kAuto);
  EXPECT_TRUE(workspace.ok()) << workspace.status();
  return worker.Decompress(jobs, *workspace, destination);
}

TEST(GpuRuntime, ADecompressRoundLandsInTheCallersPinnedMemoryWhereItIsGiven) {
  Fixture f = OpenOrSkip();
  if (f.worker == nullptr) GTEST_SKIP() << "no CUDA device";
  const Archives a = ArchivesOf(Arrays(3));
  ASSERT_EQ(a.infos.size(), 3u);
  auto pinned = PinnedBuffer::Allocate(a.arrays[1].size());
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  std::memset(pinned->data(), 0xA5, pinned->bytes());
  std::vector<uint64_t> asked(3, 0);
  Worker::DecompressRound round =
      DecompressAll(*f.worker, a, [&](size_t job, uint64_t bytes) -> uint8_t* {
        asked[job] = bytes;
        return job == 1 ? pinned->data() : nullptr;
      });
  ASSERT_TRUE(round.result.ran()) << round.result.why();
  EXPECT_FALSE(round.destinations_in_flight);
  ASSERT_EQ(round.arrays.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(absl::StrCat("array ", i));
    EXPECT_EQ(asked[i], a.arrays[i].size());
    if (i == 1) {
      EXPECT_TRUE(round.arrays[i].empty()) << "it came down into the caller's memory";
      EXPECT_EQ(std::memcmp(pinned->data(), a.arrays[i].data(), a.arrays[i].size()), 0);
    } else {
      EXPECT_TRUE(round.arrays[i] == a.arrays[i]) << "the array differs from the CPU codec's";
    }
  }
}

TEST(GpuRuntime, ABatchHoldingACorruptArchiveIsUnsupportedNotADeviceLoss) {
  Fixture f = OpenOrSkip();
  if (f.worker == nullptr) GTEST_SKIP() << "no CUDA device";
  Archives a = ArchivesOf(Arrays(2));
  ASSERT_EQ(a.infos.size(), 2u);
  // A byte in the middle of archive 1's first section that has any flipped:
  // its headers still read, the section's CRC-32C no longer matches.
  std::vector<uint8_t>& bad = a.bytes[1];
  const format::FrameHeader& header = a.infos[1].frame_headers[0];
  uint64_t at = a.infos[1].frames[0].offset + format::kFrameHeaderSize;
  for (int s = 0; s < format::kSectionCount; ++s) {
    const uint64_t length = header.sections[s].length;
    if (length > 0) {
      at += length / 2;
      break;
    }
    at += (length + format::kAlignment - 1) / format::kAlignment * format::kAlignment;
  }
  ASSERT_LT(at, bad.size());
  bad[at] ^= 0x10;
  auto info = ReadArchiveInfo(bad);
  ASSERT_TRUE(info.ok()) << info.status();
  a.infos[1] = *std::move(info);
  ASSERT_EQ(Decompress(bad).status().code(), absl::StatusCode::kDataLoss);
  Worker::DecompressRound round =
      DecompressAll(*f.worker, a, [](size_t, uint64_t) -> uint8_t* { return nullptr; });
  EXPECT_EQ(round.result.outcome(), Outcome::kUnsupported) << round.result.why();
  EXPECT_EQ(round.result.why().code(), absl::StatusCode::kDataLoss) << round.result.why();
  EXPECT_FALSE(round.destinations_in_flight);
  // The worker goes on: the next round runs.
  const Archives good = ArchivesOf(Arrays(2));
  Worker::DecompressRound next =
      DecompressAll(*f.worker, good, [](size_t, uint64_t) -> uint8_t* { return nullptr; });
  ASSERT_TRUE(next.result.ran()) << next.result.why();
  EXPECT_TRUE(next.arrays[0] == good.arrays[0]);
}

TEST(GpuRuntime, StreamCopiesMoveHostRangesBothWays) {
  Fixture f = OpenOrSkip();
  if (f.worker == nullptr) GTEST_SKIP() << "no CUDA device";
  std::vector<uint8_t> up(100000);
  for (size_t i = 0; i < up.size(); ++i) up[i] = static_cast<uint8_t>(i * 13 + 7);
  PoolCarver pool(f.worker->pool());
  uint8_t* device = pool.Take(up.size());
  ASSERT_NE(device, nullptr);
  CudaStream& stream = f.worker->stream();
  ASSERT_TRUE(stream.CopyToDevice(device, up.data(), up.size()).ran());
  // A range of it back into pinned memory, asynchronously.
  auto down = PinnedBuffer::Allocate(5000);
  ASSERT_TRUE(down.ok()) << down.status();
  ASSERT_TRUE(stream.CopyToHost(down->data(), device + 1234, 5000).ran());
  ASSERT_TRUE(stream.Synchronize().ran());
  EXPECT_EQ(std::memcmp(down->data(), up.data() + 1234, 5000), 0);
}

}  // namespace
}  // namespace ebzip::gpu::runtime
