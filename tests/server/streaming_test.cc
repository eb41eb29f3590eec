// Compress calls with an absolute bound and several frames stream frame by
// frame (server/compress_call.cc): the archive must be the local codec's,
// byte for byte, whatever order the frames finish in; memory is bounded by
// the window, not by the array (the array may exceed --max_request_bytes and
// even --max_queued_bytes); and a call that fails or goes away mid-stream
// leaves nothing behind.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/archive.h"
#include "gtest/gtest.h"
#include "tests/bound_checker.h"
#include "tests/server/test_arrays.h"
#include "tests/server/test_server.h"

namespace ebzip::testing {
namespace {

CompressOptions Abs(double bound, uint64_t frame_elements) {
  CompressOptions o;
  o.mode = BoundMode::kAbs;
  o.bound = bound;
  o.frame_elements = frame_elements;
  return o;
}

// Compresses through the server; expects the local codec's bytes, a summary
// that adds up over the frames, and a decoded array within the bound.
void ExpectStreamedRoundTrip(client::RemoteClient& client, const TestArray& a,
                             const CompressOptions& options) {
  SCOPED_TRACE(absl::StrCat(DTypeName(a.spec.dtype), " ", ShapeToString(a.spec.shape),
                            " frame_elements ", options.frame_elements));
  client::RemoteSummary summary;
  auto archive = client.Compress(a.spec, a.bytes, options, &summary);
  ASSERT_TRUE(archive.ok()) << archive.status();
  auto local = Compress(a.spec, a.bytes, options);
  ASSERT_TRUE(local.ok()) << local.status();
  ASSERT_TRUE(*archive == *local) << "streamed archive differs from the local codec's ("
                                  << archive->size() << " vs " << local->size() << " bytes)";
  auto info = ReadArchiveInfo(*local);
  ASSERT_TRUE(info.ok());
  ASSERT_GT(info->frames.size(), 1u) << "the test array must span several frames";
  uint64_t outliers = 0, verbatim = 0;
  for (const auto& h : info->frame_headers) {
    outliers += h.outlier_count;
    verbatim += h.verbatim_count;
  }
  EXPECT_EQ(summary.frames, info->frames.size());
  EXPECT_EQ(summary.outliers, outliers);
  EXPECT_EQ(summary.verbatim, verbatim);
  EXPECT_EQ(summary.archive_bytes, archive->size());
  EXPECT_EQ(summary.input_bytes, a.bytes.size());
  EXPECT_EQ(summary.abs_bound, options.bound);

  auto decoded = client.Decompress(*archive);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->data.size(), a.bytes.size());
  const uint64_t n = a.spec.num_elements();
  const CheckResult r = a.spec.dtype == DType::kFloat32
                            ? CheckBound(reinterpret_cast<const float*>(a.bytes.data()),
                                         reinterpret_cast<const float*>(decoded->data.data()), n,
                                         options.bound, options.fill_value)
                            : CheckBound(reinterpret_cast<const double*>(a.bytes.data()),
                                         reinterpret_cast<const double*>(decoded->data.data()), n,
                                         options.bound, options.fill_value);
  EXPECT_TRUE(r.ok()) << r.Describe();
}

TEST(ServerStreaming, FramesComeBackInOrderWithTheLocalCodecsBytes) {
  auto options = TestServerOptions();
  options.stream_frames = 3;
  START_TEST_SERVER(server, options);
  auto client = ClientFor(*server);
  // Shapes that are not a multiple of the frame or the Lorenzo block, a last
  // frame of one row, both dtypes, 1-D to 3-D, specials and a fill value.
  ExpectStreamedRoundTrip(*client, SmoothArray({DType::kFloat32, {1001, 257}}, 1),
                          Abs(1e-3, 16 * 257));
  ExpectStreamedRoundTrip(*client, SmoothArray({DType::kFloat64, {37, 50, 31}}, 2, true), [] {
    CompressOptions o = Abs(1e-6, 4 * 50 * 31);
    o.fill_value = -1e34;
    return o;
  }());
  ExpectStreamedRoundTrip(*client, SmoothArray({DType::kFloat32, {300001}}, 3, true),
                          Abs(0.5, 4096));
  ExpectStreamedRoundTrip(*client, SmoothArray({DType::kFloat32, {65, 64}}, 4),
                          Abs(1e-2, 64 * 64));  // two frames: 64 rows and 1
  EXPECT_TRUE(WaitQuiet(*server));
}

TEST(ServerStreaming, ManyConcurrentStreamsShareTheWorkers) {
  auto options = TestServerOptions();
  options.stream_frames = 2;
  options.cpu_workers = 3;
  START_TEST_SERVER(server, options);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      auto client = ClientFor(*server);
      TestArray a = SmoothArray({DType::kFloat32, {512u + 37u * t, 128}}, 10 + t, t % 2 == 0);
      const CompressOptions o = Abs(1e-3, 32 * 128);
      auto archive = client->Compress(a.spec, a.bytes, o);
      auto local = Compress(a.spec, a.bytes, o);
      if (!archive.ok() || !local.ok() || *archive != *local) ++failures;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_TRUE(WaitQuiet(*server));
}

// A relative bound through the C++ client in one call: the client sends
// the array's range, so the server streams it frame by frame within limits
// far below the array (held whole, it would be RESOURCE_EXHAUSTED), and the
// archive is the local codec's.
TEST(ServerStreaming, ARelativeBoundStreamsWithTheClientsRange) {
  TestArray a = SmoothArray({DType::kFloat32, {16384, 1024}}, 17, /*specials=*/true);
  CompressOptions rel;
  rel.mode = BoundMode::kRel;
  rel.bound = 1e-4;
  rel.frame_elements = 256 * 1024;
  auto options = TestServerOptions();
  options.max_request_bytes = uint64_t{1} << 20;
  options.stream_frames = 2;
  options.max_queued_bytes =
      (options.stream_frames + 1) * CompressCost({256, 1024}, rel) + (1 << 20);
  START_TEST_SERVER(server, options);
  ASSERT_LT(options.max_queued_bytes, a.bytes.size());
  client::RemoteOptions one_call;
  one_call.streams = 1;
  auto client = ClientFor(*server, one_call);
  auto archive = client->Compress(a.spec, a.bytes, rel);
  ASSERT_TRUE(archive.ok()) << archive.status();
  auto local = Compress(a.spec, a.bytes, rel);
  ASSERT_TRUE(local.ok());
  EXPECT_TRUE(*archive == *local) << "the archive differs from the local codec's";
  EXPECT_TRUE(WaitQuiet(*server));
}

TEST(ServerStreaming, ArraysLargerThanTheRequestAndQueueLimitsStream) {
  // 64 MiB in 1 MiB frames through a server that holds what the frames in
  // flight need (2 queued or running and 1 arriving, each with its rows and
  // the codec's working memory), well under the array.
  TestArray a = SmoothArray({DType::kFloat32, {16384, 1024}}, 7);
  const CompressOptions streamed = Abs(1e-3, 256 * 1024);
  const uint64_t frame_cost = CompressCost({256, 1024}, streamed);
  auto options = TestServerOptions();
  options.max_request_bytes = uint64_t{1} << 20;
  options.stream_frames = 2;
  options.max_queued_bytes = (options.stream_frames + 1) * frame_cost + (1 << 20);
  START_TEST_SERVER(server, options);
  ASSERT_LT(options.max_queued_bytes, a.bytes.size());
  auto client = ClientFor(*server);
  ExpectStreamedRoundTrip(*client, a, streamed);
  EXPECT_TRUE(WaitQuiet(*server));

  // A relative bound needs the whole array first: the request limit applies.
  CompressOptions rel;
  rel.mode = BoundMode::kRel;
  rel.bound = 1e-4;
  auto refused = client->Compress(a.spec, a.bytes, rel);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  // A window larger than the whole budget is refused at the header.
  auto too_wide = client->Compress(a.spec, a.bytes, Abs(1e-3, 2048 * 1024));
  EXPECT_EQ(too_wide.status().code(), absl::StatusCode::kResourceExhausted) << too_wide.status();
  EXPECT_TRUE(WaitQuiet(*server));
}

// Issue #6: an array larger than the GPU's memory goes through the GPU
// frame by frame. Here the device pool (32 MiB per worker: a version-2
// frame's batch holds its five candidates' surveys beside it) is a fraction
// of the 128 MiB array; every frame must still run on a GPU, not fall back
// to the CPU codec, and the archive must be the local codec's.
TEST(ServerStreaming, ArraysLargerThanTheDevicePoolStreamThroughTheGpu) {
  if (std::string(EBZIP_TEST_BACKEND) != "gpu") GTEST_SKIP() << "a GPU backend test";
  auto options = TestServerOptions();
  options.gpu_memory_bytes = uint64_t{64} << 20;
  options.gpu_workers = 2;
  options.stream_frames = 4;
  START_TEST_SERVER(server, options);
  auto client = ClientFor(*server);
  TestArray a = SmoothArray({DType::kFloat32, {32768, 1024}}, 14, true);  // 128 MiB
  const CompressOptions o = Abs(1e-3, 256 * 1024);             // 1 MiB frames
  client::RemoteSummary summary;
  auto archive = client->Compress(a.spec, a.bytes, o, &summary);
  ASSERT_TRUE(archive.ok()) << archive.status();
  EXPECT_EQ(summary.backend.find("cpu"), std::string::npos)
      << "frames fell back to the CPU codec: " << summary.backend;
  EXPECT_NE(summary.backend.find("gpu:"), std::string::npos) << summary.backend;
  ExpectStreamedRoundTrip(*client, a, o);  // the local codec's bytes, decoded within the bound
  EXPECT_TRUE(WaitQuiet(*server));
}

v1::CompressRequest StreamedHeader(const TestArray& a, uint64_t frame_elements) {
  v1::CompressRequest m;
  auto* h = m.mutable_header();
  h->mutable_array()->set_dtype(v1::FLOAT32);
  for (uint64_t d : a.spec.shape) h->mutable_array()->add_shape(d);
  h->mutable_error_bound()->set_mode(v1::ABS);
  h->mutable_error_bound()->set_value(1e-3);
  h->mutable_options()->set_frame_elements(frame_elements);
  return m;
}

v1::CompressRequest Data(const TestArray& a, size_t from, size_t bytes) {
  v1::CompressRequest m;
  m.set_data(a.bytes.data() + from, bytes);
  return m;
}

TEST(ServerStreaming, BadStreamsFailAndLeaveNothingBehind) {
  START_TEST_SERVER(server, TestServerOptions());
  auto stub = StubFor(*server);
  TestArray a = SmoothArray({DType::kFloat32, {1024, 256}}, 8);
  const auto header = StreamedHeader(a, 64 * 256);  // 16 frames of 64 KiB
  const size_t half = a.bytes.size() / 2 + 1000;    // not on a frame boundary

  {  // Too little data: INVALID_ARGUMENT, after half the frames were queued.
    grpc::ClientContext context;
    auto stream = stub->Compress(&context);
    stream->Write(header);
    stream->Write(Data(a, 0, half));
    stream->WritesDone();
    v1::CompressResponse response;
    while (stream->Read(&response)) {
    }
    grpc::Status s = stream->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  }
  {  // Too much data: INVALID_ARGUMENT, even though every frame was complete.
    grpc::ClientContext context;
    auto stream = stub->Compress(&context);
    stream->Write(header);
    stream->Write(Data(a, 0, a.bytes.size()));
    stream->Write(Data(a, 0, 4));
    stream->WritesDone();
    v1::CompressResponse response;
    bool got_summary = false;
    while (stream->Read(&response)) got_summary |= response.has_summary();
    grpc::Status s = stream->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_FALSE(got_summary);
  }
  // Cancelled mid-upload, after the upload, and while the archive streams back.
  for (int stage = 0; stage < 3; ++stage) {
    for (int i = 0; i < 20; ++i) {
      grpc::ClientContext context;
      auto stream = stub->Compress(&context);
      stream->Write(header);
      stream->Write(Data(a, 0, half));
      if (stage >= 1) {
        stream->Write(Data(a, half, a.bytes.size() - half));
        stream->WritesDone();
      }
      if (stage == 2) {
        v1::CompressResponse response;
        stream->Read(&response);
      }
      context.TryCancel();
      stream->Finish();
    }
  }
  EXPECT_TRUE(WaitQuiet(*server)) << "calls " << server->calls_in_progress() << ", held bytes "
                                  << server->held_bytes();
}

// What the server can send before the client closes its side goes out at
// once: a client that reads it first must get it. A server that held the
// archive back until the summary (with gRPC's buffer_hint, say) would stall
// such a client; the arrays are small, so that a held message would not
// leave on its own for a full write buffer.
TEST(ServerStreaming, AClientThatReadsBeforeItClosesGetsWhatIsReady) {
  START_TEST_SERVER(server, TestServerOptions());
  auto stub = StubFor(*server);
  TestArray a = SmoothArray({DType::kFloat32, {64, 64}}, 12);
  for (uint64_t frame_elements : {uint64_t{64 * 64}, uint64_t{16 * 64}}) {  // one frame, four
    SCOPED_TRACE(absl::StrCat("frame_elements ", frame_elements));
    auto local = Compress(a.spec, a.bytes, Abs(1e-3, frame_elements));
    ASSERT_TRUE(local.ok()) << local.status();
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    auto stream = stub->Compress(&context);
    ASSERT_TRUE(stream->Write(StreamedHeader(a, frame_elements)));
    ASSERT_TRUE(stream->Write(Data(a, 0, a.bytes.size())));
    // The whole archive, before the half-close.
    std::string archive;
    v1::CompressResponse response;
    while (archive.size() < local->size() && stream->Read(&response)) {
      ASSERT_FALSE(response.has_summary()) << "the summary came before the half-close";
      archive += response.archive();
    }
    ASSERT_EQ(archive.size(), local->size()) << "the archive stopped short";
    EXPECT_TRUE(archive == std::string(local->begin(), local->end()))
        << "not the local codec's bytes";
    // Then the summary, after it.
    stream->WritesDone();
    ASSERT_TRUE(stream->Read(&response));
    EXPECT_TRUE(response.has_summary());
    EXPECT_FALSE(stream->Read(&response));
    grpc::Status s = stream->Finish();
    EXPECT_TRUE(s.ok()) << s.error_message();

    // Decoding it: a streamed archive's rows come back before the half-close
    // (a one-frame archive is decoded only once it is whole).
    if (frame_elements == 64 * 64) continue;
    grpc::ClientContext context2;
    context2.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    auto stream2 = stub->Decompress(&context2);
    v1::DecompressRequest request;
    request.set_archive(archive);
    ASSERT_TRUE(stream2->Write(request));
    v1::DecompressResponse reply;
    ASSERT_TRUE(stream2->Read(&reply));
    ASSERT_TRUE(reply.has_header());
    std::string rows;
    while (rows.size() < a.bytes.size() && stream2->Read(&reply)) rows += reply.data();
    ASSERT_EQ(rows.size(), a.bytes.size()) << "the rows stopped short";
    const CheckResult r = CheckBound(reinterpret_cast<const float*>(a.bytes.data()),
                                     reinterpret_cast<const float*>(rows.data()),
                                     a.spec.num_elements(), 1e-3, std::nullopt);
    EXPECT_TRUE(r.ok()) << r.Describe();
    stream2->WritesDone();
    EXPECT_FALSE(stream2->Read(&reply));
    s = stream2->Finish();
    EXPECT_TRUE(s.ok()) << s.error_message();
  }
  EXPECT_TRUE(WaitQuiet(*server));
}

TEST(ServerStreaming, DamagedArchivesOfManyFramesNeverDecodeWrong) {
  auto options = TestServerOptions();
  options.stream_frames = 2;
  START_TEST_SERVER(server, options);
  auto client = ClientFor(*server);
  TestArray a = SmoothArray({DType::kFloat32, {200, 300}}, 9, true);
  auto archive = Compress(a.spec, a.bytes, Abs(1e-3, 16 * 300));
  ASSERT_TRUE(archive.ok());
  auto reference = Decompress(*archive);
  ASSERT_TRUE(reference.ok());
  ASSERT_GT(ReadArchiveInfo(*archive)->frames.size(), 10u);

  auto decoded = client->Decompress(*archive);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_TRUE(decoded->data == reference->data);

  // Cut anywhere: in the file header, a frame header, a frame, the index,
  // the trailer.
  for (size_t cut = 0; cut < archive->size(); cut += 1 + cut / 3) {
    std::vector<uint8_t> truncated(archive->begin(), archive->begin() + cut);
    auto r = client->Decompress(truncated);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kDataLoss)
        << "cut at " << cut << ": " << r.status();
  }
  // Bytes after the trailer.
  std::vector<uint8_t> longer = *archive;
  longer.push_back(0);
  EXPECT_EQ(client->Decompress(longer).status().code(), absl::StatusCode::kDataLoss);
  // A flipped bit anywhere: refused, or (in padding no checksum covers)
  // exactly the right array — never a wrong one.
  int refused = 0;
  for (size_t at = 0; at < archive->size(); at += 1 + at / 5) {
    std::vector<uint8_t> damaged = *archive;
    damaged[at] ^= 0x10;
    auto r = client->Decompress(damaged);
    if (r.ok()) {
      EXPECT_TRUE(r->data == reference->data) << "a flip at byte " << at << " decoded wrong";
    } else {
      // A flip in a version field reads as an archive from a newer ebzip.
      EXPECT_TRUE(r.status().code() == absl::StatusCode::kDataLoss ||
                  r.status().code() == absl::StatusCode::kUnimplemented)
          << at << ": " << r.status();
      ++refused;
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_TRUE(WaitQuiet(*server));
}

TEST(ServerStreaming, AGpuThatFailsMidRequestLosesNothing) {
  if (std::string(EBZIP_TEST_BACKEND) != "gpu") GTEST_SKIP() << "a GPU backend test";
  auto options = TestServerOptions();
  options.stream_frames = 2;
  options.gpu_fail_at_batch = 3;  // every GPU fails on its fourth batch
  options.batching.enabled = false;
  START_TEST_SERVER(server, options);
  auto client = ClientFor(*server);
  // 16 frames: some run on the GPUs, the rest, once each GPU has failed,
  // on the CPU codec; the archive is the same, and the server goes on.
  TestArray a = SmoothArray({DType::kFloat32, {1024, 256}}, 11, true);
  const CompressOptions o = Abs(1e-3, 64 * 256);
  client::RemoteSummary summary;
  auto archive = client->Compress(a.spec, a.bytes, o, &summary);
  ASSERT_TRUE(archive.ok()) << archive.status();
  auto local = Compress(a.spec, a.bytes, o);
  ASSERT_TRUE(local.ok());
  EXPECT_TRUE(*archive == *local) << "frames from a failing GPU differ";
  EXPECT_NE(summary.backend.find("gpu:0"), std::string::npos) << summary.backend;
  EXPECT_NE(summary.backend.find("cpu"), std::string::npos) << summary.backend;
  ExpectStreamedRoundTrip(*client, a, o);  // and later requests still work
  EXPECT_TRUE(WaitQuiet(*server));
}

bool Healthy(const server::EbzipServer& server, const std::string& device) {
  for (const auto& d : server.backend().DeviceStates()) {
    if (d.device == device) return d.healthy;
  }
  ADD_FAILURE() << "no device " << device;
  return false;
}

// With two GPUs, one failing mid-request: its frames go back to the queue
// and run on the other GPU (not the CPU codec), the archive is unchanged,
// and the failed GPU takes no more work.
TEST(ServerStreaming, AFailedGpuLeavesItsWorkToTheOtherGpu) {
  if (std::string(EBZIP_TEST_BACKEND) != "gpu") GTEST_SKIP() << "a GPU backend test";
  auto options = TestServerOptions();
  options.stream_frames = 8;  // enough frames at once for every worker of both GPUs
  options.gpu_fail_device = 1;
  options.gpu_fail_at_batch = 1;
  options.batching.enabled = false;
  START_TEST_SERVER(server, options);
  if (server->backend().devices().size() < 2) GTEST_SKIP() << "needs two GPUs";
  auto client = ClientFor(*server);
  TestArray a = SmoothArray({DType::kFloat32, {1024, 256}}, 12, true);
  const CompressOptions o = Abs(1e-3, 32 * 256);  // 32 frames
  client::RemoteSummary summary;
  auto archive = client->Compress(a.spec, a.bytes, o, &summary);
  ASSERT_TRUE(archive.ok()) << archive.status();
  ASSERT_FALSE(Healthy(*server, "gpu:1")) << "the fault never fired: gpu:1 ran under 2 frames";
  EXPECT_TRUE(Healthy(*server, "gpu:0"));
  auto local = Compress(a.spec, a.bytes, o);
  ASSERT_TRUE(local.ok());
  EXPECT_TRUE(*archive == *local) << "frames moved off a failing GPU differ";
  EXPECT_EQ(summary.backend.find("cpu"), std::string::npos)
      << "a healthy GPU was left, yet work went to the CPU codec: " << summary.backend;
  for (int i = 0; i < 3; ++i) {
    client::RemoteSummary later;
    auto again = client->Compress(a.spec, a.bytes, o, &later);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_TRUE(*again == *local);
    EXPECT_EQ(later.backend, "gpu:0") << "work after the failure must go to the healthy GPU only";
  }
  ExpectStreamedRoundTrip(*client, a, o);
  EXPECT_TRUE(WaitQuiet(*server));
}

// --gpu_failure_policy fail: the request a GPU was running when it failed
// ends with UNAVAILABLE naming the GPU; the server keeps serving (on the
// other GPU, or the CPU codec when it had only one).
TEST(ServerStreaming, WithTheFailPolicyTheRequestFailsWithAClearStatus) {
  if (std::string(EBZIP_TEST_BACKEND) != "gpu") GTEST_SKIP() << "a GPU backend test";
  auto options = TestServerOptions();
  options.stream_frames = 2;
  options.gpu_failure_policy = server::GpuFailurePolicy::kFail;
  options.gpu_fail_device = 0;
  options.gpu_fail_at_batch = 1;
  options.batching.enabled = false;
  START_TEST_SERVER(server, options);
  auto client = ClientFor(*server);
  TestArray a = SmoothArray({DType::kFloat32, {1024, 256}}, 13, true);
  const CompressOptions o = Abs(1e-3, 32 * 256);
  auto archive = client->Compress(a.spec, a.bytes, o);
  ASSERT_FALSE(Healthy(*server, "gpu:0")) << "the fault never fired";
  ASSERT_FALSE(archive.ok()) << "the request gpu:0 failed under succeeded";
  EXPECT_EQ(archive.status().code(), absl::StatusCode::kUnavailable) << archive.status();
  EXPECT_NE(archive.status().message().find("gpu:0 failed"), std::string::npos) << archive.status();
  EXPECT_TRUE(WaitQuiet(*server));
  ExpectStreamedRoundTrip(*client, a, o);  // the next request works
  EXPECT_TRUE(WaitQuiet(*server));
}

}  // namespace
}  // namespace ebzip::testing
