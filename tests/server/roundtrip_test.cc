// Arrays through ebzipd: archives byte-identical to the local codec's (so the
// CLI and the service interoperate), decoded values within the bound by the
// independent checker, and special values bit-exact.
#include <algorithm>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/archive.h"
#include "gtest/gtest.h"
#include "tests/bound_checker.h"
#include "tests/real_fields.h"
#include "tests/server/test_arrays.h"
#include "tests/server/test_server.h"

namespace ebzip::testing {
namespace {

CheckResult Check(const ArraySpec& spec, const std::vector<uint8_t>& original,
                  const std::vector<uint8_t>& decoded, double bound, std::optional<double> fill) {
  const uint64_t n = spec.num_elements();
  if (spec.dtype == DType::kFloat32) {
    return CheckBound(reinterpret_cast<const float*>(original.data()),
                      reinterpret_cast<const float*>(decoded.data()), n, bound, fill);
  }
  return CheckBound(reinterpret_cast<const double*>(original.data()),
                    reinterpret_cast<const double*>(decoded.data()), n, bound, fill);
}

// Compresses through the server and locally, decompresses through the
// server, and checks everything docs/design.md §3 and §4 promise.
void ExpectRoundTrip(client::RemoteClient& client, const ArraySpec& spec,
                     const std::vector<uint8_t>& data, const CompressOptions& options,
                     const std::string& what) {
  SCOPED_TRACE(what);
  client::RemoteSummary summary;
  auto archive = client.Compress(spec, data, options, &summary);
  ASSERT_TRUE(archive.ok()) << archive.status();
  auto local = Compress(spec, data, options);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_TRUE(*archive == *local) << "server archive differs from the local codec's ("
                                  << archive->size() << " vs " << local->size() << " bytes)";
  EXPECT_EQ(summary.input_bytes, data.size());
  EXPECT_EQ(summary.archive_bytes, archive->size());
  auto info = ReadArchiveInfo(*archive);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(summary.abs_bound, info->header.abs_bound);
  EXPECT_EQ(summary.frames, info->frames.size());

  auto decoded = client.Decompress(*archive);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->spec.shape, spec.shape);
  EXPECT_EQ(decoded->spec.dtype, spec.dtype);
  EXPECT_EQ(decoded->abs_bound, info->header.abs_bound);
  ASSERT_EQ(decoded->data.size(), data.size());
  auto local_decoded = Decompress(*local);
  ASSERT_TRUE(local_decoded.ok());
  EXPECT_TRUE(decoded->data == local_decoded->data) << "server and local decoders differ";
  const CheckResult r =
      Check(spec, data, decoded->data, info->header.abs_bound, options.fill_value);
  EXPECT_TRUE(r.ok()) << r.Describe();
}

TEST(ServerRoundTrip, RealFields) {
  START_TEST_SERVER(server, TestServerOptions());
  auto client = ClientFor(*server);
  for (const char* name : {"etopo5", "temp", "salt", "uwnd"}) {
    // The GPU host gets the fields that fit the device tool's carry limit.
    if (std::string(EBZIP_TEST_BACKEND) == "gpu" && !LoadRealField(name).ok()) continue;
    ASSERT_LOAD_REAL_FIELD(field, name);
    for (double rel : {1e-2, 1e-4, 1e-5}) {
      CompressOptions o;
      o.mode = BoundMode::kRel;
      o.bound = rel;
      o.fill_value = field.fill_value;
      ExpectRoundTrip(*client, field.spec, field.data, o, absl::StrCat(name, " REL ", rel));
    }
  }
}

TEST(ServerRoundTrip, AdversarialArrays) {
  START_TEST_SERVER(server, TestServerOptions());
  auto client = ClientFor(*server);
  struct Case {
    std::string name;
    ArraySpec spec;
    bool specials;
    BoundMode mode;
    double bound;
    std::optional<double> fill;
  };
  const std::vector<Case> cases = {
      {"one element", {DType::kFloat32, {1}}, false, BoundMode::kAbs, 1e-3, std::nullopt},
      {"odd 3-D with specials and fill",
       {DType::kFloat32, {7, 13, 5}},
       true,
       BoundMode::kRel,
       1e-3,
       -1e34},
      {"float64 4-D with specials",
       {DType::kFloat64, {3, 5, 9, 17}},
       true,
       BoundMode::kAbs,
       1e-6,
       -1e34},
      {"tiny bound", {DType::kFloat64, {1000}}, false, BoundMode::kAbs, 1e-300, std::nullopt},
      {"huge bound", {DType::kFloat32, {33, 65}}, false, BoundMode::kAbs, 1e30, std::nullopt},
      {"several frames",
       {DType::kFloat32, {300, 50, 40}},
       false,
       BoundMode::kRel,
       1e-4,
       std::nullopt},
  };
  for (const Case& c : cases) {
    TestArray a = SmoothArray(c.spec, 7, c.specials);
    CompressOptions o;
    o.mode = c.mode;
    o.bound = c.bound;
    o.fill_value = c.fill;
    if (c.name == "several frames") o.frame_elements = 100000;
    ExpectRoundTrip(*client, a.spec, a.bytes, o, c.name);
  }
  // Constant and all-NaN arrays.
  std::vector<uint8_t> constant(4 * 4096);
  for (uint64_t i = 0; i < 4096; ++i) Put(constant, i, 3.25f);
  CompressOptions rel;
  rel.mode = BoundMode::kRel;
  rel.bound = 1e-3;
  ExpectRoundTrip(*client, {DType::kFloat32, {64, 64}}, constant, rel, "constant");
  std::vector<uint8_t> nans(4 * 100);
  for (uint64_t i = 0; i < 100; ++i) Put(nans, i, std::numeric_limits<float>::quiet_NaN());
  ExpectRoundTrip(*client, {DType::kFloat32, {100}}, nans, rel, "all NaN");
}

TEST(ServerRoundTrip, SixtyFourConcurrentClientsWithMixedSizes) {
  START_TEST_SERVER(server, TestServerOptions());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 64; ++t) {
    threads.emplace_back([&, t] {
      auto client = ClientFor(*server);
      // 1 KiB to 4 MiB, both dtypes.
      const uint64_t rows = uint64_t{1} << (t % 13);
      const ArraySpec spec{t % 3 == 0 ? DType::kFloat64 : DType::kFloat32, {rows, 256}};
      TestArray a = SmoothArray(spec, static_cast<uint64_t>(t), t % 5 == 0);
      CompressOptions o;
      o.mode = BoundMode::kRel;
      o.bound = 1e-4;
      auto archive = client->Compress(a.spec, a.bytes, o);
      auto local = Compress(a.spec, a.bytes, o);
      if (!archive.ok() || !local.ok() || *archive != *local) {
        ++failures;
        return;
      }
      auto decoded = client->Decompress(*archive);
      auto info = ReadArchiveInfo(*archive);
      if (!decoded.ok() || !info.ok() ||
          !Check(a.spec, a.bytes, decoded->data, info->header.abs_bound, std::nullopt).ok()) {
        ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_TRUE(WaitQuiet(*server));
}

// Whether the server's archive equals the local codec's and the server
// decodes it to what the local codec decodes.
bool SameBytesBothWays(client::RemoteClient& client, const TestArray& a, const CompressOptions& o) {
  auto archive = client.Compress(a.spec, a.bytes, o);
  auto local = Compress(a.spec, a.bytes, o);
  if (!archive.ok() || !local.ok() || *archive != *local) return false;
  auto decoded = client.Decompress(*archive);
  auto reference = Decompress(*local);
  return decoded.ok() && reference.ok() && decoded->data == reference->data;
}

// On the GPU backend, a pool too small for a whole batch cuts it into rounds,
// and an array too large for the pool alone runs on the CPU codec: the bytes
// must not change either way.
TEST(ServerRoundTrip, SmallDevicePoolStillGivesTheSameArchives) {
  auto options = TestServerOptions();
  options.gpu_memory_bytes = uint64_t{24} << 20;
  options.batching.max_queue_delay = absl::Milliseconds(20);
  START_TEST_SERVER(server, options);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 17; ++t) {
    threads.emplace_back([&, t] {
      auto client = ClientFor(*server);
      // Sixteen 1 MiB arrays, and one of 32 MiB that cannot fit the pool.
      const ArraySpec spec{DType::kFloat32, {t == 16 ? 8192u : 256u, 1024}};
      TestArray a = SmoothArray(spec, static_cast<uint64_t>(t), t % 4 == 0);
      CompressOptions o;
      o.mode = BoundMode::kRel;
      o.bound = 1e-4;
      if (!SameBytesBothWays(*client, a, o)) ++failures;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_TRUE(WaitQuiet(*server));
}

// On the GPU backend, small arrays are received into and decompressed into
// blocks of a page-locked pool; when it has none left (here a 256 KiB
// region: a few blocks, of whichever sizes are asked for first, under 24
// concurrent calls) or there is none, they use ordinary memory. Either way,
// and mixed in one batch (which this load makes likely, not certain:
// tests/gpu/gpu_backend_test makes such batches directly), the bytes must
// not change.
TEST(ServerRoundTrip, HostPoolUsedUpOrOffStillGivesTheSameArchives) {
  for (const uint64_t pool_bytes : {uint64_t{256} << 10, uint64_t{0}}) {
    SCOPED_TRACE(absl::StrCat("--gpu_host_pool_bytes ", pool_bytes));
    auto options = TestServerOptions();
    options.gpu_host_pool_bytes = pool_bytes;
    START_TEST_SERVER(server, options);
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < 24; ++t) {
      threads.emplace_back([&, t] {
        auto client = ClientFor(*server);
        // 4 KiB to 512 KiB of float32, a few float64.
        const ArraySpec spec{t % 6 == 0 ? DType::kFloat64 : DType::kFloat32,
                             {uint64_t{4} << (t % 8), 256}};
        TestArray a = SmoothArray(spec, static_cast<uint64_t>(t), t % 4 == 0);
        CompressOptions o;
        o.mode = BoundMode::kRel;
        o.bound = 1e-4;
        for (int round = 0; round < 3; ++round) {
          if (!SameBytesBothWays(*client, a, o)) ++failures;
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_TRUE(WaitQuiet(*server));
    // Its metrics: every block back once the calls are gone (a reply's
    // block goes with its call, just after the call stops counting), and
    // misses, since the 512 KiB arrays never fit a 256 KiB region.
    const bool pooled = server->backend().name() == "gpu" && pool_bytes > 0;
    const absl::Time deadline = absl::Now() + absl::Seconds(5);
    std::string text = server->metrics().Render();
    while (pooled && MetricValue(text, "ebzip_host_pool_used_bytes") != 0 &&
           absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
      text = server->metrics().Render();
    }
    if (pooled) {
      EXPECT_EQ(MetricValue(text, "ebzip_host_pool_bytes"), static_cast<double>(pool_bytes));
      EXPECT_EQ(MetricValue(text, "ebzip_host_pool_used_bytes"), 0) << "a block was not given back";
      EXPECT_GT(MetricValue(text, "ebzip_host_pool_misses_total"), 0);
    } else {
      EXPECT_EQ(MetricValue(text, "ebzip_host_pool_bytes"), -1) << "no pool, no pool metrics";
    }
  }
}

// Counts from the exposition text: the sum and count of a histogram.
TEST(ServerBatching, SmallConcurrentRequestsShareBatches) {
  for (bool batching : {true, false}) {
    SCOPED_TRACE(batching ? "batching on" : "batching off");
    auto options = TestServerOptions();
    options.batching.enabled = batching;
    options.batching.max_queue_delay = absl::Milliseconds(50);
    options.cpu_workers = 1;
    START_TEST_SERVER(server, options);
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < 16; ++t) {
      threads.emplace_back([&, t] {
        auto client = ClientFor(*server);
        TestArray a = SmoothArray({DType::kFloat32, {64, 64}}, static_cast<uint64_t>(t));
        CompressOptions o;
        o.bound = 1e-3;
        auto archive = client->Compress(a.spec, a.bytes, o);
        auto local = Compress(a.spec, a.bytes, o);
        if (!archive.ok() || !local.ok() || *archive != *local) ++failures;
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
    // Summed over the devices: with several GPUs, each worker runs batches.
    const std::string text = server->metrics().Render();
    double batches = 0, requests = 0;
    for (const server::DeviceState& d : server->backend().DeviceStates()) {
      const std::string device = "{device=\"" + d.device + "\"}";
      batches += std::max(0.0, MetricValue(text, "ebzip_batch_requests_count" + device));
      requests += std::max(0.0, MetricValue(text, "ebzip_batch_requests_sum" + device));
    }
    EXPECT_EQ(requests, 16);
    if (batching) {
      EXPECT_LT(batches, requests) << "no two requests shared a batch";
    } else {
      EXPECT_EQ(batches, requests);
    }
  }
}

}  // namespace
}  // namespace ebzip::testing
