// Hostile and careless clients against ebzipd: decompression bombs, stalled
// uploads and readers, options that multiply work, too many calls. Each
// limit refuses at once with a clear status, counts in
// ebzip_limit_hits_total, and leaves the server serving others
// (docs/operations.md, "Limits and abuse").
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "codec/archive.h"
#include "codec/format.h"
#include "gtest/gtest.h"
#include "tests/server/test_arrays.h"
#include "tests/server/test_server.h"

namespace ebzip::testing {
namespace {

using Stream = grpc::ClientReaderWriter<v1::DecompressRequest, v1::DecompressResponse>;
using CompressStream = grpc::ClientReaderWriter<v1::CompressRequest, v1::CompressResponse>;

double LimitHits(server::EbzipServer& s, const char* limit) {
  return MetricValue(s.metrics().Render(),
                     absl::StrCat("ebzip_limit_hits_total{limit=\"", limit, "\"}"));
}

v1::CompressRequest Header(DType dtype, std::vector<uint64_t> shape, v1::ErrorBoundMode mode,
                           double bound, uint64_t frame_elements = 0) {
  v1::CompressRequest r;
  auto* h = r.mutable_header();
  h->mutable_array()->set_dtype(dtype == DType::kFloat32 ? v1::FLOAT32 : v1::FLOAT64);
  for (uint64_t d : shape) h->mutable_array()->add_shape(d);
  h->mutable_error_bound()->set_mode(mode);
  h->mutable_error_bound()->set_value(bound);
  if (frame_elements != 0) h->mutable_options()->set_frame_elements(frame_elements);
  return r;
}

v1::CompressRequest Data(const std::vector<uint8_t>& bytes, size_t from, size_t n) {
  v1::CompressRequest r;
  r.set_data(bytes.data() + from, n);
  return r;
}

v1::DecompressRequest ArchivePiece(const std::vector<uint8_t>& bytes, size_t from, size_t n) {
  v1::DecompressRequest r;
  r.set_archive(bytes.data() + from, n);
  return r;
}

// A valid file header claiming an array of `shape` in frames of `frame_rows`.
std::vector<uint8_t> FileHeaderClaiming(std::vector<uint64_t> shape, uint64_t frame_rows) {
  format::FileHeader h;
  h.dtype = DType::kFloat32;
  h.shape = std::move(shape);
  h.bound_mode = BoundMode::kAbs;
  h.bound_value = 1e-3;
  h.abs_bound = 1e-3;
  h.frame_rows = frame_rows;
  h.frame_count = (h.shape[0] + frame_rows - 1) / frame_rows;
  std::vector<uint8_t> out;
  format::AppendFileHeader(h, &out);
  return out;
}

// Reads what a call sends until it ends; its status.
template <class S, class Response>
grpc::Status Drain(S& stream, Response* response, uint64_t* bytes = nullptr) {
  while (stream.Read(response)) {
    if constexpr (std::is_same_v<Response, v1::DecompressResponse>) {
      if (bytes != nullptr) *bytes += response->data().size();
    }
  }
  return stream.Finish();
}

std::unique_ptr<grpc::ClientContext> Context(absl::Duration timeout = absl::Seconds(60)) {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  return c;
}

// A constant array: what a "decompression bomb" is made of (the largest
// ratio the format reaches).
TestArray Constant(std::vector<uint64_t> shape) {
  TestArray a{{DType::kFloat32, std::move(shape)}, {}};
  a.bytes.resize(a.spec.num_bytes());
  const float v = 3.25f;
  for (uint64_t i = 0; i < a.spec.num_elements(); ++i) std::memcpy(&a.bytes[4 * i], &v, 4);
  return a;
}

TEST(ServerAbuse, ABombIsRefusedAtItsFileHeader) {
  auto options = TestServerOptions();
  options.max_output_bytes = uint64_t{1} << 30;
  options.max_queued_bytes = uint64_t{256} << 20;
  START_TEST_SERVER(server, options);
  auto stub = StubFor(*server);
  struct Case {
    const char* name;
    std::vector<uint8_t> header;
    grpc::StatusCode code;
    const char* says;
    const char* limit;
  };
  const Case cases[] = {
      // 16 GiB in frames of 4 rows: past --max_output_bytes.
      {"past max_output_bytes", FileHeaderClaiming({1 << 20, 1 << 12}, 4),
       grpc::StatusCode::RESOURCE_EXHAUSTED, "--max_output_bytes", "output_bytes"},
      // 512 MiB in one frame: its array alone is past the whole budget.
      {"one frame past the budget", FileHeaderClaiming({1 << 15, 1 << 12}, 1 << 15),
       grpc::StatusCode::RESOURCE_EXHAUSTED, "--max_queued_bytes", "queued_bytes"},
      // 512 MiB in 64 MiB frames: the frames in flight do not fit.
      {"frames in flight past the budget", FileHeaderClaiming({1 << 15, 1 << 12}, 1 << 12),
       grpc::StatusCode::RESOURCE_EXHAUSTED, "--max_queued_bytes", "queued_bytes"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const double hits = LimitHits(*server, c.limit);
    auto context = Context();
    auto stream = stub->Decompress(context.get());
    // The file header and nothing else, the side left open: the refusal
    // must come from the header alone.
    ASSERT_TRUE(stream->Write(ArchivePiece(c.header, 0, c.header.size())));
    v1::DecompressResponse response;
    uint64_t received = 0;
    grpc::Status s = Drain(*stream, &response, &received);
    EXPECT_EQ(s.error_code(), c.code) << s.error_message();
    EXPECT_TRUE(absl::StrContains(s.error_message(), c.says)) << s.error_message();
    EXPECT_EQ(received, 0u);
    EXPECT_EQ(LimitHits(*server, c.limit), hits + 1);
  }
  EXPECT_TRUE(WaitQuiet(*server));
}

// A real bomb: 256 MiB of constant data in 64 frames, an archive of a few
// MiB, decoded through a server whose budget is well under the array. It is
// served (streamed, frame by frame) and what the server holds never passes
// its budget; a ratio cap below the archive's refuses it.
TEST(ServerAbuse, AValidBombDecodesWithinTheBudget) {
  TestArray a = Constant({1 << 14, 1 << 12});
  CompressOptions o;
  o.mode = BoundMode::kAbs;
  o.bound = 1e-3;
  o.frame_elements = uint64_t{1} << 20;
  auto archive = Compress(a.spec, a.bytes, o);
  ASSERT_TRUE(archive.ok()) << archive.status();
  ASSERT_GT(a.bytes.size(), 16 * archive->size()) << "not much of a bomb";

  auto options = TestServerOptions();
  options.max_queued_bytes = uint64_t{160} << 20;
  options.stream_frames = 2;
  START_TEST_SERVER(server, options);
  auto stub = StubFor(*server);
  std::atomic<bool> done{false};
  std::atomic<uint64_t> most{0};
  std::thread watch([&] {
    while (!done.load()) {
      most = std::max<uint64_t>(most.load(), server->held_bytes());
      absl::SleepFor(absl::Microseconds(200));
    }
  });
  auto context = Context(absl::Minutes(2));
  auto stream = stub->Decompress(context.get());
  std::thread writer([&] {
    for (size_t at = 0; at < archive->size(); at += 1 << 20) {
      if (!stream->Write(
              ArchivePiece(*archive, at, std::min<size_t>(1 << 20, archive->size() - at)))) {
        break;
      }
    }
    stream->WritesDone();
  });
  v1::DecompressResponse response;
  std::string array;
  array.reserve(a.bytes.size());
  while (stream->Read(&response)) array += response.data();
  writer.join();
  grpc::Status s = stream->Finish();
  done = true;
  watch.join();
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(array.size(), a.bytes.size());
  EXPECT_TRUE(std::memcmp(array.data(), a.bytes.data(), a.bytes.size()) == 0);
  EXPECT_GT(most.load(), 0u);
  EXPECT_LE(most.load(), options.max_queued_bytes);
  EXPECT_TRUE(WaitQuiet(*server));

  // The same archive past a ratio cap below its own: refused at its first
  // frame, before any of it is decoded.
  options.max_ratio = 4;
  START_TEST_SERVER(capped, options);
  auto capped_stub = StubFor(*capped);
  auto context2 = Context();
  auto stream2 = capped_stub->Decompress(context2.get());
  for (size_t at = 0; at < archive->size(); at += 1 << 20) {
    if (!stream2->Write(
            ArchivePiece(*archive, at, std::min<size_t>(1 << 20, archive->size() - at)))) {
      break;
    }
  }
  stream2->WritesDone();
  uint64_t received = 0;
  s = Drain(*stream2, &response, &received);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "--max_ratio")) << s.error_message();
  EXPECT_EQ(received, 0u);
  EXPECT_EQ(LimitHits(*capped, "ratio"), 1);
  EXPECT_TRUE(WaitQuiet(*capped));
}

// Clients that send their header and then nothing hold nothing: others are
// served at once, however much the stalled ones claim.
TEST(ServerAbuse, HeaderOnlyCallsHoldNothing) {
  auto options = TestServerOptions();
  options.max_queued_bytes = uint64_t{4} << 30;
  START_TEST_SERVER(server, options);
  auto stub = StubFor(*server);
  // Two Decompress calls claiming 256 MiB each (one frame), two Compress
  // calls claiming 64 MiB each.
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<Stream>> decompress;
  std::vector<std::unique_ptr<CompressStream>> compress;
  const std::vector<uint8_t> claim = FileHeaderClaiming({1 << 14, 1 << 12}, 1 << 14);
  for (int i = 0; i < 2; ++i) {
    contexts.push_back(Context());
    decompress.push_back(stub->Decompress(contexts.back().get()));
    ASSERT_TRUE(decompress.back()->Write(ArchivePiece(claim, 0, claim.size())));
    contexts.push_back(Context());
    compress.push_back(stub->Compress(contexts.back().get()));
    ASSERT_TRUE(compress.back()->Write(Header(DType::kFloat32, {1 << 12, 1 << 12}, v1::REL, 1e-3)));
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (server->calls_in_progress() < 4 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(server->calls_in_progress(), 4);
  EXPECT_LE(server->held_bytes(), 2 * claim.size());
  // Another client is served meanwhile.
  TestArray a = SmoothArray({DType::kFloat32, {256, 256}}, 3);
  auto client = ClientFor(*server);
  CompressOptions o;
  o.mode = BoundMode::kRel;
  o.bound = 1e-4;
  auto archive = client->Compress(a.spec, a.bytes, o);
  ASSERT_TRUE(archive.ok()) << archive.status();
  for (auto& c : contexts) c->TryCancel();
  EXPECT_TRUE(WaitQuiet(*server));
}

// Stalled uploads hold what they sent until --idle_timeout_seconds, then are
// ended and the bytes go back: a client refused meanwhile is served after.
TEST(ServerAbuse, StalledUploadsAreEndedAfterTheIdleTimeout) {
  // Two 16 MiB arrays, half sent each: 16 MiB held. Each fits beside what
  // the other holds; a third of the same size does not fit beside both (by
  // 4 MiB: the test does not hang on the working-memory figure to the byte).
  TestArray big = SmoothArray({DType::kFloat32, {1 << 10, 1 << 12}}, 4);
  auto options = TestServerOptions();
  // Long enough for the third call's header to be refused before the
  // stalled ones time out: with 1 s, a loaded 2-core CI machine once took
  // 1.2 s to get there, and the third call was admitted instead.
  options.idle_timeout = absl::Seconds(3);
  options.max_queued_bytes = CompressCost(big.spec.shape) + (12 << 20);
  START_TEST_SERVER(server, options);
  auto stub = StubFor(*server);
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<CompressStream>> stalled;
  for (int i = 0; i < 2; ++i) {
    contexts.push_back(Context());
    stalled.push_back(stub->Compress(contexts.back().get()));
    ASSERT_TRUE(stalled.back()->Write(Header(DType::kFloat32, {1 << 10, 1 << 12}, v1::REL, 1e-3)));
    for (size_t at = 0; at < big.bytes.size() / 2; at += 1 << 20) {
      ASSERT_TRUE(stalled.back()->Write(Data(big.bytes, at, 1 << 20)));
    }
  }
  // (What they hold is what was allocated for what they sent: at least that.)
  const absl::Time start = absl::Now();
  const uint64_t sent = big.bytes.size();
  while (server->held_bytes() < sent && absl::Now() < start + absl::Seconds(10)) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_GE(server->held_bytes(), sent);
  const uint64_t held = server->held_bytes();
  // A third that does not fit beside them is refused at its header...
  auto context = Context();
  auto third = stub->Compress(context.get());
  ASSERT_TRUE(third->Write(Header(DType::kFloat32, {1 << 10, 1 << 12}, v1::REL, 1e-3)));
  v1::CompressResponse response;
  grpc::Status s = Drain(*third, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message() << "; held " << held << " of " << options.max_queued_bytes
      << ", a third costs " << CompressCost(big.spec.shape) << ", "
      << absl::FormatDuration(absl::Now() - start) << " after the stalled ones' last data";
  EXPECT_TRUE(absl::StrContains(s.error_message(), "server is full")) << s.error_message();
  // ...the stalled ones end with the idle timeout's status...
  for (auto& call : stalled) {
    s = Drain(*call, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::CANCELLED) << s.error_message();
    EXPECT_TRUE(absl::StrContains(s.error_message(), "--idle_timeout_seconds"))
        << s.error_message();
  }
  EXPECT_GE(absl::Now() - start, options.idle_timeout);
  EXPECT_EQ(LimitHits(*server, "idle_timeout"), 2);
  EXPECT_TRUE(WaitQuiet(*server, absl::Seconds(5)));
  // ...and the third fits now.
  auto client = ClientFor(*server);
  CompressOptions o;
  o.mode = BoundMode::kRel;
  o.bound = 1e-3;
  auto archive = client->Compress(big.spec, big.bytes, o);
  EXPECT_TRUE(archive.ok()) << archive.status();
}

// Empty or tiny messages are not progress: a client that keeps its call
// alive with them while holding the budget is ended all the same.
TEST(ServerAbuse, ATrickleOfEmptyMessagesIsStillIdle) {
  auto options = TestServerOptions();
  options.idle_timeout = absl::Seconds(1);
  START_TEST_SERVER(server, options);
  auto stub = StubFor(*server);
  TestArray big = SmoothArray({DType::kFloat32, {1 << 10, 1 << 10}}, 8);
  auto context = Context();
  auto call = stub->Compress(context.get());
  ASSERT_TRUE(call->Write(Header(DType::kFloat32, {1 << 10, 1 << 10}, v1::REL, 1e-3)));
  ASSERT_TRUE(call->Write(Data(big.bytes, 0, big.bytes.size() / 2)));
  // An empty message every 100 ms, and one byte every 300 ms, for up to
  // 5 s: none of it is progress, so the server ends the call about a second
  // in (each message's read restarting the clock would let it run on).
  const absl::Time start = absl::Now();
  size_t at = big.bytes.size() / 2;
  bool ended = false;
  for (int i = 0; absl::Now() < start + absl::Seconds(5); ++i) {
    if (!call->Write(i % 3 == 2 ? Data(big.bytes, at++, 1) : Data(big.bytes, at, 0))) {
      ended = true;
      break;
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(ended) << "the trickle went on for 5 s";
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  v1::CompressResponse response;
  grpc::Status s = Drain(*call, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::CANCELLED) << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "--idle_timeout_seconds")) << s.error_message();
  EXPECT_EQ(LimitHits(*server, "idle_timeout"), 1);
  EXPECT_TRUE(WaitQuiet(*server));
}

// One message that holds a whole archive of many frames is taken only as
// far as the window allows (the rest waits in the server, held in its
// budget), and decodes to the local codec's array.
TEST(ServerAbuse, AMessageOfManyFramesIsTakenAWindowAtATime) {
  TestArray a = SmoothArray({DType::kFloat32, {1 << 10, 1 << 10}}, 9);
  CompressOptions o;
  o.mode = BoundMode::kAbs;
  o.bound = 1e-3;
  o.frame_elements = 4 << 10;  // 256 frames of 4 rows
  auto archive = Compress(a.spec, a.bytes, o);
  ASSERT_TRUE(archive.ok()) << archive.status();
  auto local = Decompress(*archive);
  ASSERT_TRUE(local.ok()) << local.status();
  auto options = TestServerOptions();
  options.stream_frames = 2;
  START_TEST_SERVER(server, options);
  auto stub = StubFor(*server);
  auto context = Context();
  auto stream = stub->Decompress(context.get());
  ASSERT_TRUE(stream->Write(ArchivePiece(*archive, 0, archive->size())));
  stream->WritesDone();
  v1::DecompressResponse response;
  std::string array;
  while (stream->Read(&response)) array += response.data();
  grpc::Status s = stream->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(array == std::string(local->data.begin(), local->data.end()));
  EXPECT_TRUE(WaitQuiet(*server));
}

// A client that sends its archive and never reads the array back is ended
// too, and the array it left goes back to the budget.
TEST(ServerAbuse, AClientThatStopsReadingIsEnded) {
  auto options = TestServerOptions();
  options.idle_timeout = absl::Seconds(1);
  START_TEST_SERVER(server, options);
  auto stub = StubFor(*server);
  TestArray a = SmoothArray({DType::kFloat32, {1 << 11, 1 << 12}}, 6);  // 32 MiB
  CompressOptions o;
  o.mode = BoundMode::kRel;
  o.bound = 1e-3;
  auto archive = Compress(a.spec, a.bytes, o);
  ASSERT_TRUE(archive.ok()) << archive.status();
  auto context = Context();
  auto stream = stub->Decompress(context.get());
  for (size_t at = 0; at < archive->size(); at += 1 << 20) {
    ASSERT_TRUE(
        stream->Write(ArchivePiece(*archive, at, std::min<size_t>(1 << 20, archive->size() - at))));
  }
  stream->WritesDone();
  // Not a read: the array fills the connection's windows and stops there,
  // until the idle timeout ends the call.
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (LimitHits(*server, "idle_timeout") < 1 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_TRUE(WaitQuiet(*server, absl::Seconds(20)));
  EXPECT_EQ(LimitHits(*server, "idle_timeout"), 1);
  v1::DecompressResponse response;
  grpc::Status s = Drain(*stream, &response);
  EXPECT_FALSE(s.ok());
}

TEST(ServerAbuse, OptionsThatMultiplyWorkAreRefused) {
  auto options = TestServerOptions();
  options.min_frame_elements = uint64_t{1} << 16;
  START_TEST_SERVER(server, options);
  auto stub = StubFor(*server);
  struct Case {
    const char* name;
    v1::CompressRequest header;
    const char* says;
  };
  std::vector<Case> cases;
  cases.push_back({"frames of one row",
                   Header(DType::kFloat32, {1 << 10, 1 << 8}, v1::ABS, 1e-3, /*frame_elements=*/1),
                   "--min_frame_elements"});
  auto tiny_chunks = Header(DType::kFloat32, {1 << 16}, v1::ABS, 1e-3);
  tiny_chunks.mutable_header()->mutable_options()->set_chunk_symbols(1);
  cases.push_back({"chunks of one symbol", tiny_chunks, "chunk_symbols"});
  auto tiny_subsequences = Header(DType::kFloat32, {1 << 16}, v1::ABS, 1e-3);
  tiny_subsequences.mutable_header()->mutable_options()->set_subsequence_bits(32);
  cases.push_back({"subsequences of one word", tiny_subsequences, "subsequence_bits"});
  // Frames of 16 rows of 2^12 elements: 2^17 frames.
  cases.push_back({"too many frames",
                   Header(DType::kFloat32, {1 << 21, 1 << 12}, v1::ABS, 1e-3, uint64_t{1} << 16),
                   "frames"});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto context = Context();
    auto stream = stub->Compress(context.get());
    ASSERT_TRUE(stream->Write(c.header));
    v1::CompressResponse response;
    grpc::Status s = Drain(*stream, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_TRUE(absl::StrContains(s.error_message(), c.says)) << s.error_message();
  }
  EXPECT_EQ(LimitHits(*server, "options"), static_cast<double>(cases.size()));
  EXPECT_TRUE(WaitQuiet(*server));
}

// A streamed Compress (absolute bound, several frames) whose frames in
// flight cannot fit is refused at its header, before any data.
TEST(ServerAbuse, AStreamedCompressPastTheBudgetIsRefusedAtItsHeader) {
  auto options = TestServerOptions();
  options.max_queued_bytes = uint64_t{128} << 20;
  START_TEST_SERVER(server, options);
  auto stub = StubFor(*server);
  auto context = Context();
  auto stream = stub->Compress(context.get());
  // 1 GiB in frames of 64 MiB.
  ASSERT_TRUE(
      stream->Write(Header(DType::kFloat32, {1 << 16, 1 << 12}, v1::ABS, 1e-3, uint64_t{1} << 24)));
  v1::CompressResponse response;
  grpc::Status s = Drain(*stream, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "--max_queued_bytes")) << s.error_message();
  EXPECT_EQ(LimitHits(*server, "queued_bytes"), 1);
  EXPECT_TRUE(WaitQuiet(*server));
}

TEST(ServerAbuse, CallsPastMaxCallsAreRefused) {
  auto options = TestServerOptions();
  options.max_calls = 2;
  START_TEST_SERVER(server, options);
  auto stub = StubFor(*server);
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<CompressStream>> open;
  for (int i = 0; i < 2; ++i) {
    contexts.push_back(Context());
    open.push_back(stub->Compress(contexts.back().get()));
    ASSERT_TRUE(open.back()->Write(Header(DType::kFloat32, {16}, v1::ABS, 1e-3)));
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (server->calls_in_progress() < 2 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  auto context = Context();
  auto third = stub->Compress(context.get());
  third->Write(Header(DType::kFloat32, {16}, v1::ABS, 1e-3));
  v1::CompressResponse response;
  grpc::Status s = Drain(*third, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "--max_calls")) << s.error_message();
  EXPECT_EQ(LimitHits(*server, "calls"), 1);
  for (auto& c : contexts) c->TryCancel();
  EXPECT_TRUE(WaitQuiet(*server));
}

}  // namespace
}  // namespace ebzip::testing
