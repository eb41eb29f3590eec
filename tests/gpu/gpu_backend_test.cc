// The GPU backend driven directly, one batch at a time, so that a batch's
// make-up is certain (the service tests leave it to the scheduler): inputs
// in the page-locked pool and in ordinary memory side by side in one batch,
// results into the pool and into ordinary memory.
#include "server/gpu_backend.h"

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/archive.h"
#include "codec/region.h"
#include "gpu/gpu_codec.h"
#include "gtest/gtest.h"
#include "tests/region_slice.h"
#include "tests/server/test_arrays.h"

namespace ebzip::testing {
namespace {

// Version 1 (Lorenzo, plain Huffman), beside the default version 2.
CompressOptions Version1() {
  CompressOptions o;
  o.predictor = Predictor::kLorenzo;
  o.lossless = Lossless::kHuffman;
  return o;
}

using server::GpuBackendOptions;
using server::Method;
using server::Work;

std::unique_ptr<server::Backend> BackendOrSkip(uint64_t host_pool_bytes) {
  if (!gpu::DeviceAvailable().ok()) return nullptr;
  GpuBackendOptions o;
  o.memory_bytes = uint64_t{512} << 20;
  o.pinned_bytes = uint64_t{64} << 20;
  o.host_pool_bytes = host_pool_bytes;
  o.workers_per_gpu = 1;
  auto backend = server::MakeGpuBackend(o);
  EXPECT_TRUE(backend.ok()) << backend.status();
  return backend.ok() ? *std::move(backend) : nullptr;
}

// Compresses and decompresses one batch of arrays whose inputs alternate
// between pool blocks (`in_pool[i]`) and ordinary memory; every result must
// be the CPU codec's.
void ExpectBatchesMatchTheCpuCodec(server::Backend& backend, const std::vector<bool>& in_pool,
                                   CompressOptions options) {
  options.mode = BoundMode::kRel;
  options.bound = 1e-4;
  std::vector<TestArray> arrays;
  std::vector<std::shared_ptr<Work>> batch;
  for (size_t i = 0; i < in_pool.size(); ++i) {
    // 16 KiB to 272 KiB, every one a different size, so that a place taken
    // by the wrong bytes cannot pass for the right ones.
    arrays.push_back(SmoothArray({DType::kFloat32, {16 + 16 * i, 256}}, i, i % 2 == 0));
    auto w = std::make_shared<Work>();
    w->method = Method::kCompress;
    w->spec = arrays[i].spec;
    w->options = options;
    if (in_pool[i]) {
      w->input_block = backend.InputBlock(arrays[i].bytes.size());
      ASSERT_TRUE(w->input_block) << "the pool has room for every input of this test";
      w->input_block.Append(arrays[i].bytes.data(), arrays[i].bytes.size());
    } else {
      w->input = arrays[i].bytes;
    }
    batch.push_back(std::move(w));
  }
  ASSERT_TRUE(backend.Run(0, batch).empty()) << "no work handed back";
  std::vector<std::shared_ptr<Work>> decompress;
  for (size_t i = 0; i < batch.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("array ", i, in_pool[i] ? " (in the pool)" : " (ordinary memory)"));
    ASSERT_TRUE(batch[i]->status.ok()) << batch[i]->status;
    EXPECT_EQ(batch[i]->device, "gpu:0");
    auto expected = Compress(arrays[i].spec, arrays[i].bytes, options);
    ASSERT_TRUE(expected.ok()) << expected.status();
    ASSERT_TRUE(batch[i]->output == *expected) << "the archive differs from the CPU codec's";
    EXPECT_FALSE(batch[i]->input_block) << "the input block goes back once compressed";

    auto w = std::make_shared<Work>();
    w->method = Method::kDecompress;
    w->input = *expected;
    auto info = ReadArchiveInfo(w->input);
    ASSERT_TRUE(info.ok()) << info.status();
    w->info = *std::move(info);
    decompress.push_back(std::move(w));
  }
  ASSERT_TRUE(backend.Run(0, decompress).empty()) << "no work handed back";
  for (size_t i = 0; i < decompress.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("array ", i));
    const Work& w = *decompress[i];
    ASSERT_TRUE(w.status.ok()) << w.status;
    auto expected = Decompress(batch[i]->output);
    ASSERT_TRUE(expected.ok()) << expected.status();
    const absl::Span<const uint8_t> got =
        w.output_block ? w.output_block.bytes() : absl::Span<const uint8_t>(w.output);
    ASSERT_TRUE(got == absl::Span<const uint8_t>(expected->data))
        << "the array differs from the CPU codec's";
  }
  batch.clear();
  decompress.clear();
  if (std::optional<server::HostPoolStats> pool = backend.HostPool()) {
    EXPECT_EQ(pool->given, 0u) << "every block goes back with its work";
  }
}

TEST(GpuBackend, ABatchMixingPoolBlocksAndOrdinaryMemoryGivesTheCpuCodecsBytes) {
  auto backend = BackendOrSkip(uint64_t{64} << 20);
  if (backend == nullptr) GTEST_SKIP() << "no CUDA device";
  // A block between ordinary inputs (the staged DMA of these must not
  // overwrite its place), blocks first, blocks last, all one kind.
  for (const std::vector<bool>& in_pool :
       std::vector<std::vector<bool>>{{false, true, false, true, true, false},
                                      {true, false, false},
                                      {false, false, true},
                                      {true, true, true},
                                      {false, false, false}}) {
    ExpectBatchesMatchTheCpuCodec(*backend, in_pool, Version1());
    ExpectBatchesMatchTheCpuCodec(*backend, in_pool, CompressOptions());
  }
}

TEST(GpuBackend, WithoutAPoolEveryArrayUsesOrdinaryMemory) {
  auto backend = BackendOrSkip(0);
  if (backend == nullptr) GTEST_SKIP() << "no CUDA device";
  EXPECT_FALSE(backend->InputBlock(1024));
  ExpectBatchesMatchTheCpuCodec(*backend, {false, false, false, false}, Version1());
  ExpectBatchesMatchTheCpuCodec(*backend, {false, false, false, false}, CompressOptions());
}

// Regions in one batch: the GPU decodes the frames each meets and sends
// down only the region, the bytes of the CPU codec's DecompressRegion;
// what has nothing to decode (the header alone, an empty region) goes to
// the CPU codec.
TEST(GpuBackend, RegionsDecodeOnTheGpuAsOnTheCpu) {
  auto backend = BackendOrSkip(uint64_t{64} << 20);
  if (backend == nullptr) GTEST_SKIP() << "no CUDA device";
  std::mt19937_64 rng(7);
  std::vector<std::shared_ptr<Work>> batch;
  std::vector<std::vector<uint8_t>> want;
  std::vector<std::string> device;
  for (int k = 0; k < 3; ++k) {
    const std::vector<uint64_t> shape = k == 0   ? std::vector<uint64_t>{40, 33, 29}
                                        : k == 1 ? std::vector<uint64_t>{7, 9, 20, 24}
                                                 : std::vector<uint64_t>{97, 130};
    const TestArray a = SmoothArray({DType::kFloat32, shape}, k, /*specials=*/true);
    CompressOptions o = k == 2 ? Version1() : CompressOptions();
    o.mode = BoundMode::kRel;
    o.bound = 1e-3;
    o.frame_elements = 2000;  // many frames
    auto archive = Compress(a.spec, a.bytes, o);
    ASSERT_TRUE(archive.ok()) << archive.status();
    auto info = ReadArchiveInfo(*archive);
    ASSERT_TRUE(info.ok());
    for (const Hyperslab& r : RegionsOf(shape, rng)) {
      auto w = std::make_shared<Work>();
      w->method = Method::kDecompress;
      w->input = *archive;
      w->info = *info;
      w->region = r;
      std::vector<uint8_t> region(r.NumElements() * 4);
      ASSERT_TRUE(
          DecompressRegion(*info, *archive, r, DecoderKind::kAuto, absl::MakeSpan(region)).ok());
      want.push_back(std::move(region));
      device.push_back(r.NumElements() == 0 ? "cpu" : "gpu:0");
      batch.push_back(std::move(w));
    }
    if (k == 0) {
      auto w = std::make_shared<Work>();
      w->method = Method::kDecompress;
      w->input = *archive;
      w->info = *info;
      w->region = WholeArray(shape);
      w->region->count.assign(shape.size(), 0);
      w->header_only = true;
      want.emplace_back();
      device.push_back("cpu");
      batch.push_back(std::move(w));
    }
  }
  ASSERT_TRUE(backend->Run(0, batch).empty()) << "no work handed back";
  for (size_t i = 0; i < batch.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("work ", i, " region ", batch[i]->region->ToString()));
    const Work& w = *batch[i];
    ASSERT_TRUE(w.status.ok()) << w.status;
    EXPECT_EQ(w.device, device[i]);
    const absl::Span<const uint8_t> got =
        w.output_block ? w.output_block.bytes() : absl::Span<const uint8_t>(w.output);
    EXPECT_TRUE(got == absl::Span<const uint8_t>(want[i])) << "the region differs";
  }
}

}  // namespace
}  // namespace ebzip::testing
