// What ebzipd does with bad input and bad clients (docs/design.md §4, issue #4 §3):
// clear statuses, nothing lost, nothing leaked, never a crash.
#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "codec/archive.h"
#include "codec/format.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/server/test_arrays.h"
#include "tests/server/test_server.h"

namespace ebzip::testing {
namespace {

v1::CompressHeader Header(v1::DType dtype, std::vector<uint64_t> shape, v1::ErrorBoundMode mode,
                          double bound) {
  v1::CompressHeader h;
  h.mutable_array()->set_dtype(dtype);
  for (uint64_t d : shape) h.mutable_array()->add_shape(d);
  h.mutable_error_bound()->set_mode(mode);
  h.mutable_error_bound()->set_value(bound);
  return h;
}

v1::CompressRequest HeaderMessage(v1::CompressHeader h) {
  v1::CompressRequest r;
  *r.mutable_header() = std::move(h);
  return r;
}

v1::CompressRequest DataMessage(size_t bytes) {
  v1::CompressRequest r;
  r.set_data(std::string(bytes, '\0'));
  return r;
}

// Sends the messages as one Compress call and returns its status.
grpc::Status RawCompress(v1::Compressor::Stub& stub, const std::vector<v1::CompressRequest>& msgs,
                         std::function<void(grpc::ClientContext&)> prepare = nullptr) {
  grpc::ClientContext context;
  if (prepare) prepare(context);
  auto stream = stub.Compress(&context);
  for (const auto& m : msgs) {
    if (!stream->Write(m)) break;
  }
  stream->WritesDone();
  v1::CompressResponse response;
  while (stream->Read(&response)) {
  }
  return stream->Finish();
}

grpc::Status RawDecompress(v1::Compressor::Stub& stub, const std::vector<std::string>& pieces) {
  grpc::ClientContext context;
  auto stream = stub.Decompress(&context);
  v1::DecompressRequest request;
  for (const auto& p : pieces) {
    request.set_archive(p);
    if (!stream->Write(request)) break;
  }
  stream->WritesDone();
  v1::DecompressResponse response;
  while (stream->Read(&response)) {
  }
  return stream->Finish();
}

TEST(ServerFaults, BadCompressRequestsGetInvalidArgument) {
  START_TEST_SERVER(server, TestServerOptions());
  auto stub = StubFor(*server);
  const auto good = Header(v1::FLOAT32, {10, 10}, v1::ABS, 1e-3);
  struct Case {
    std::string name;
    std::vector<v1::CompressRequest> messages;
    std::string says;  // a piece of the message the client must see
  };
  auto with = [&](std::function<void(v1::CompressHeader&)> edit) {
    v1::CompressHeader h = good;
    edit(h);
    return HeaderMessage(h);
  };
  v1::CompressRequest empty_message;
  const std::vector<Case> cases = {
      {"data before header", {DataMessage(400)}, "data before the header"},
      {"no header at all", {}, "before a header"},
      {"too few bytes", {HeaderMessage(good), DataMessage(396)}, "received 396 bytes"},
      {"too many bytes", {HeaderMessage(good), DataMessage(400), DataMessage(1)}, "more data"},
      {"bound 0", {with([](auto& h) { h.mutable_error_bound()->set_value(0); })}, "positive"},
      {"bound NaN", {with([](auto& h) { h.mutable_error_bound()->set_value(NAN); })}, "positive"},
      {"bound negative",
       {with([](auto& h) { h.mutable_error_bound()->set_value(-1); })},
       "positive"},
      {"bound infinite",
       {with([](auto& h) { h.mutable_error_bound()->set_value(INFINITY); })},
       "positive"},
      {"no bound mode",
       {with([](auto& h) { h.mutable_error_bound()->set_mode(v1::ERROR_BOUND_MODE_UNSPECIFIED); })},
       "ABS or REL"},
      {"no dtype",
       {with([](auto& h) { h.mutable_array()->set_dtype(v1::DTYPE_UNSPECIFIED); })},
       "FLOAT32 or FLOAT64"},
      {"unknown dtype",
       {with([](auto& h) { h.mutable_array()->set_dtype(static_cast<v1::DType>(7)); })},
       "got 7"},
      {"empty shape", {with([](auto& h) { h.mutable_array()->clear_shape(); })}, "shape is empty"},
      {"zero dimension",
       {with([](auto& h) { h.mutable_array()->set_shape(1, 0); })},
       "header.array"},
      {"five dimensions",
       {with([](auto& h) {
         for (int i = 0; i < 3; ++i) h.mutable_array()->add_shape(1);
       })},
       "header.array"},
      {"bad radius", {with([](auto& h) { h.mutable_options()->set_radius(1u << 30); })}, "radius"},
      {"second header", {HeaderMessage(good), HeaderMessage(good)}, "second header"},
      {"empty message", {empty_message}, "neither header nor data"},
  };
  for (const Case& c : cases) {
    const grpc::Status s = RawCompress(*stub, c.messages);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << c.name << ": " << s.error_message();
    EXPECT_TRUE(absl::StrContains(s.error_message(), c.says))
        << c.name << ": \"" << s.error_message() << "\" lacks \"" << c.says << "\"";
  }
  EXPECT_TRUE(WaitQuiet(*server));
}

// The server reads a message that holds only the bulk bytes in place
// (server/payload.h) and leaves any other to protobuf. Messages that encode
// the same request another valid way (here with a field this server does
// not know, which protobuf skips) must come to the same result, and one
// protobuf refuses must be refused with a clear message.
TEST(ServerFaults, MessagesOutsideThePlainEncodingMeanWhatProtobufSays) {
  START_TEST_SERVER(server, TestServerOptions());
  auto stub = StubFor(*server);
  const std::string unknown_field("\xa0\x06\x01", 3);  // field 100, varint 1
  auto compress = [&](const std::vector<v1::CompressRequest>& msgs, std::string* archive) {
    grpc::ClientContext context;
    auto stream = stub->Compress(&context);
    for (const auto& m : msgs) stream->Write(m);
    stream->WritesDone();
    v1::CompressResponse response;
    while (stream->Read(&response)) archive->append(response.archive());
    return stream->Finish();
  };
  const auto header = HeaderMessage(Header(v1::FLOAT32, {100}, v1::ABS, 1e-3));
  v1::CompressRequest data;
  std::string values(400, '\0');
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<char>(i * 7);
  data.set_data(values);
  v1::CompressRequest data_and_more;
  ASSERT_TRUE(data_and_more.ParseFromString(data.SerializeAsString() + unknown_field));
  ASSERT_NE(data_and_more.SerializeAsString(), data.SerializeAsString());
  std::string plain, other;
  ASSERT_TRUE(compress({header, data}, &plain).ok());
  const grpc::Status s = compress({header, data_and_more}, &other);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(other, plain);

  // Decompress, the archive with a field more.
  v1::DecompressRequest archive;
  ASSERT_TRUE(archive.ParseFromString([&] {
    v1::DecompressRequest r;
    r.set_archive(plain);
    return r.SerializeAsString();
  }() + unknown_field));
  grpc::ClientContext context;
  auto stream = stub->Decompress(&context);
  stream->Write(archive);
  stream->WritesDone();
  v1::DecompressResponse response;
  std::string array;
  while (stream->Read(&response)) array.append(response.data());
  ASSERT_TRUE(stream->Finish().ok());
  EXPECT_EQ(array.size(), values.size());

  // A string field that is not UTF-8: protobuf does not parse the message.
  auto bad = header;
  bad.mutable_header()->set_request_id("\xff\xfe");
  const grpc::Status refused = RawCompress(*stub, {bad, data});
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << refused.error_message();
  EXPECT_TRUE(
      absl::StrContains(refused.error_message(), "does not parse as ebzip.v1.CompressRequest"))
      << refused.error_message();
  EXPECT_TRUE(WaitQuiet(*server));
}

TEST(ServerFaults, CorruptAndTruncatedArchivesGetDataLoss) {
  START_TEST_SERVER(server, TestServerOptions());
  auto stub = StubFor(*server);
  TestArray a = SmoothArray({DType::kFloat32, {200, 300}}, 3);
  CompressOptions o;
  o.bound = 1e-3;
  auto archive = Compress(a.spec, a.bytes, o);
  ASSERT_TRUE(archive.ok());
  const std::string whole(archive->begin(), archive->end());
  std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"empty", {}},
      {"truncated", {whole.substr(0, whole.size() / 2)}},
      {"tail missing", {whole.substr(0, whole.size() - 1)}},
      {"garbage", {std::string(5000, 'x')}},
  };
  // A flipped bit in each part of the archive.
  for (size_t at : {size_t{3}, size_t{70}, whole.size() / 3, whole.size() / 2, whole.size() - 5}) {
    std::string bad = whole;
    bad[at] ^= 0x10;
    cases.push_back({absl::StrCat("bit flipped at ", at), {bad}});
  }
  for (const auto& [name, pieces] : cases) {
    const grpc::Status s = RawDecompress(*stub, pieces);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::DATA_LOSS) << name << ": " << s.error_message();
  }
  // The same archive whole, in odd pieces, still decodes.
  std::vector<std::string> pieces;
  for (size_t at = 0; at < whole.size(); at += 777) pieces.push_back(whole.substr(at, 777));
  EXPECT_TRUE(RawDecompress(*stub, pieces).ok());
  EXPECT_TRUE(WaitQuiet(*server));
}

TEST(ServerFaults, FullServerAnswersResourceExhaustedAtOnce) {
  // B fits an empty server, not one where A has sent 192 KiB.
  const uint64_t b_cost = CompressCost({192 << 10});
  auto options = TestServerOptions();
  options.max_queued_bytes = b_cost + (100 << 10);
  options.max_request_bytes = 900 << 10;
  START_TEST_SERVER(server, options);
  ASSERT_LE(CompressCost({64 << 10}), options.max_queued_bytes);
  auto stub = StubFor(*server);
  // Too large for one request.
  grpc::Status s = RawCompress(*stub, {HeaderMessage(Header(v1::FLOAT32, {1 << 20}, v1::ABS, 1))});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "max_request_bytes"));

  // A holds what it has sent (three quarters of its 256 KiB) and the buffer
  // it went into.
  grpc::ClientContext a_context;
  auto a = stub->Compress(&a_context);
  ASSERT_TRUE(a->Write(HeaderMessage(Header(v1::FLOAT32, {64 << 10}, v1::ABS, 1e-3))));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(a->Write(DataMessage(64 << 10)));
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (server->held_bytes() < (192u << 10) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_GE(server->held_bytes(), 192u << 10);  // at least what it sent
  // B does not fit beside it: refused at its header, before its data.
  s = RawCompress(*stub, {HeaderMessage(Header(v1::FLOAT32, {192 << 10}, v1::ABS, 1e-3))});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "server is full"));
  // A is unharmed by B's refusal.
  ASSERT_TRUE(a->Write(DataMessage(64 << 10)));
  a->WritesDone();
  v1::CompressResponse response;
  bool summary = false;
  while (a->Read(&response)) summary |= response.has_summary();
  EXPECT_TRUE(a->Finish().ok());
  EXPECT_TRUE(summary);
  // And B fits now.
  EXPECT_TRUE(WaitQuiet(*server));
  s = RawCompress(*stub, {HeaderMessage(Header(v1::FLOAT32, {192 << 10}, v1::ABS, 1e-3)),
                          DataMessage(768 << 10)});
  EXPECT_TRUE(s.ok()) << s.error_message();
}

// Resident bytes after handing the allocator's free pages back to the system,
// so that memory freed but cached in malloc arenas (one per thread that
// allocated) does not read as held.
uint64_t ResidentBytes() {
  malloc_trim(0);
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

TEST(ServerFaults, ThousandCancelledCallsLeaveNothingBehind) {
  START_TEST_SERVER(server, TestServerOptions());
  auto stub = StubFor(*server);
  TestArray a = SmoothArray({DType::kFloat32, {256, 256}}, 5);
  const auto header = HeaderMessage(Header(v1::FLOAT32, {256, 256}, v1::REL, 1e-4));
  v1::CompressRequest half;
  half.set_data(a.bytes.data(), a.bytes.size() / 2);
  v1::CompressRequest rest;
  rest.set_data(a.bytes.data() + a.bytes.size() / 2, a.bytes.size() - a.bytes.size() / 2);
  // Cancel at every stage: mid-upload, after the upload (queued or running),
  // and while the archive streams back.
  auto cancelled_call = [&](int stage) {
    grpc::ClientContext context;
    auto stream = stub->Compress(&context);
    stream->Write(header);
    stream->Write(half);
    if (stage >= 1) {
      stream->Write(rest);
      stream->WritesDone();
    }
    if (stage == 2) {
      v1::CompressResponse response;
      stream->Read(&response);
    }
    context.TryCancel();
    return stream->Finish();
  };
  // A first round of 1,000 may grow the process once (allocator arenas,
  // gRPC and CUDA state seen for the first time: up to ~40 MB on a 32-core
  // host with two GPUs, and not again when repeated); a leak grows in every
  // round, so the second round is the one measured.
  for (int i = 0; i < 1000; ++i) cancelled_call(i % 3);
  ASSERT_TRUE(WaitQuiet(*server));
  const uint64_t rss_before = ResidentBytes();
  const auto devices_before = server->backend().DeviceStates();
  int cancelled = 0;
  for (int i = 0; i < 1000; ++i) {
    cancelled += cancelled_call(i % 3).error_code() == grpc::StatusCode::CANCELLED;
  }
  EXPECT_GT(cancelled, 900);
  ASSERT_TRUE(WaitQuiet(*server)) << "calls " << server->calls_in_progress() << ", held bytes "
                                  << server->held_bytes();
  const uint64_t rss_after = ResidentBytes();
  // Each call held 256 KiB; a leak of an eighth of them would show.
  EXPECT_LT(rss_after, rss_before + (32u << 20)) << rss_before << " -> " << rss_after;
  const auto devices_after = server->backend().DeviceStates();
  ASSERT_EQ(devices_before.size(), devices_after.size());
  for (size_t i = 0; i < devices_after.size(); ++i) {
    EXPECT_EQ(devices_after[i].memory_used_bytes, devices_before[i].memory_used_bytes)
        << devices_after[i].device;
  }
  // And the server still works.
  auto client = ClientFor(*server);
  CompressOptions o;
  o.mode = BoundMode::kRel;
  o.bound = 1e-4;
  auto archive = client->Compress(a.spec, a.bytes, o);
  EXPECT_TRUE(archive.ok()) << archive.status();
}

// The host memory the server's gauges say calls still hold: bytes admitted
// (ebzip_queued_bytes) and, on the GPU backend, page-locked pool blocks
// given out (ebzip_host_pool_used_bytes; -1, absent, where the backend has
// no pool).
struct HeldGauges {
  double queued = 0;
  double pool_used = 0;
  bool operator==(const HeldGauges&) const = default;
};

std::ostream& operator<<(std::ostream& os, const HeldGauges& g) {
  return os << "queued " << g.queued << ", host pool used " << g.pool_used;
}

HeldGauges ReadHeldGauges(server::EbzipServer& s) {
  const std::string text = s.metrics().Render();
  return {MetricValue(text, "ebzip_queued_bytes"), MetricValue(text, "ebzip_host_pool_used_bytes")};
}

// Calls of `method` ("compress" or "decompress") the server has ended,
// whatever their status.
double EndedCalls(server::EbzipServer& s, const std::string& method) {
  const std::string label = absl::StrCat("method=\"", method, "\"");
  double n = 0;
  for (absl::string_view line : absl::StrSplit(s.metrics().Render(), '\n')) {
    if (absl::StartsWith(line, "ebzip_requests_total{") && absl::StrContains(line, label)) {
      n += std::stod(std::string(line.substr(line.rfind(' ') + 1)));
    }
  }
  return n;
}

// What the server holds before a round of calls, to compare with after it.
struct MemorySnapshot {
  uint64_t resident = 0;
  HeldGauges gauges;
  std::vector<server::DeviceState> devices;
};

MemorySnapshot TakeSnapshot(server::EbzipServer& s) {
  MemorySnapshot m{ResidentBytes(), ReadHeldGauges(s), s.backend().DeviceStates()};
  // The GPU backend always has its pool (--gpu_host_pool_bytes is not 0
  // here): without its gauge the pool's check would say nothing.
  if (s.backend().name() == "gpu") {
    EXPECT_GE(m.gauges.pool_used, 0) << "no ebzip_host_pool_used_bytes on the GPU backend";
  }
  return m;
}

// Expects the server to come back to `before` once its calls have ended:
// the gauges and each device's memory exactly, resident bytes within
// `slack` (less than a leak of a fraction of the round's calls would add).
// The gauges are polled rather than read once: a pool block a reply was
// sent from goes back only when gRPC lets go of the message, which can be
// after the call has ended.
void ExpectBackTo(server::EbzipServer& s, const MemorySnapshot& before, uint64_t slack) {
  ASSERT_TRUE(WaitQuiet(s)) << "calls " << s.calls_in_progress() << ", held bytes "
                            << s.held_bytes() << ", queued requests " << s.queued_requests();
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  HeldGauges now = ReadHeldGauges(s);
  while (!(now == before.gauges) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
    now = ReadHeldGauges(s);
  }
  EXPECT_EQ(now, before.gauges);
  const uint64_t resident = ResidentBytes();
  EXPECT_LT(resident, before.resident + slack) << before.resident << " -> " << resident;
  const auto devices = s.backend().DeviceStates();
  ASSERT_EQ(devices.size(), before.devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    EXPECT_EQ(devices[i].memory_used_bytes, before.devices[i].memory_used_bytes)
        << devices[i].device;
  }
}

// The server still serves: an array compressed to the local codec's bytes
// and decoded to what the local codec decodes.
void ExpectRoundTrip(const server::EbzipServer& s, const TestArray& a, const CompressOptions& o) {
  auto client = ClientFor(s);
  ASSERT_NE(client, nullptr);
  auto archive = client->Compress(a.spec, a.bytes, o);
  ASSERT_TRUE(archive.ok()) << archive.status();
  auto local = Compress(a.spec, a.bytes, o);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_TRUE(*archive == *local) << "the server's archive differs from the local codec's";
  auto decoded = client->Decompress(*archive);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  auto reference = Decompress(*local);
  ASSERT_TRUE(reference.ok()) << reference.status();
  EXPECT_TRUE(decoded->data == reference->data) << "the server decodes differently";
}

// The archive's bytes as Decompress messages: the file header alone (the
// server then knows which way it decodes), the rest of the first half, the
// second half.
std::vector<v1::DecompressRequest> ArchiveMessages(const std::vector<uint8_t>& archive) {
  const std::string bytes(archive.begin(), archive.end());
  const size_t half = bytes.size() / 2;
  std::vector<v1::DecompressRequest> messages(3);
  messages[0].set_archive(bytes.substr(0, format::kFileHeaderSize));
  messages[1].set_archive(bytes.substr(format::kFileHeaderSize, half - format::kFileHeaderSize));
  messages[2].set_archive(bytes.substr(half));
  return messages;
}

// Takes a call part of the way: writes its first `sent` messages (having
// written all of them, closes its side), then reads up to `replies`.
template <class Request, class Response>
void Drive(grpc::ClientReaderWriter<Request, Response>& stream,
           const std::vector<Request>& messages, size_t sent, int replies) {
  for (size_t i = 0; i < sent; ++i) {
    if (!stream.Write(messages[i])) return;  // the call has ended
  }
  if (sent == messages.size()) stream.WritesDone();
  Response response;
  for (int i = 0; i < replies && stream.Read(&response); ++i) {
  }
}

// How far a call gets before its client lets it go: messages sent (3 of 3:
// and its side closed) and replies read.
struct Stage {
  const char* name;
  size_t sent;
  int replies;
};

// The messages of a Decompress call that sends an archive of `a`, which
// must have `frames` frames: one takes the buffered way through the server,
// more the streamed way (server/decompress_call.cc). None on failure.
std::vector<v1::DecompressRequest> DecompressMessages(const TestArray& a, const CompressOptions& o,
                                                      size_t frames) {
  auto archive = Compress(a.spec, a.bytes, o);
  EXPECT_TRUE(archive.ok()) << archive.status();
  if (!archive.ok()) return {};
  auto info = ReadArchiveInfo(*archive);
  EXPECT_TRUE(info.ok() && info->frames.size() == frames) << "the archive has the wrong frames";
  return ArchiveMessages(*archive);
}

// Options for the two ways through either method: one frame (a relative
// bound) and four 64 KiB frames of a 256x256 float32 array (an absolute
// bound and frame_elements).
CompressOptions OneFrame() {
  CompressOptions o;
  o.mode = BoundMode::kRel;
  o.bound = 1e-4;
  return o;
}

CompressOptions FourFrames() {
  CompressOptions o;
  o.mode = BoundMode::kAbs;
  o.bound = 1e-3;
  o.frame_elements = 64 * 256;
  return o;
}

TEST(ServerFaults, ThousandCancelledDecompressCallsLeaveNothingBehind) {
  auto options = TestServerOptions();
  // Replies of several messages, so that a cancellation can land mid-reply.
  options.message_bytes = 64 << 10;
  START_TEST_SERVER(server, options);
  auto stub = StubFor(*server);
  TestArray a = SmoothArray({DType::kFloat32, {256, 256}}, 6);
  const std::vector<v1::DecompressRequest> inputs[] = {DecompressMessages(a, OneFrame(), 1),
                                                       DecompressMessages(a, FourFrames(), 4)};
  ASSERT_FALSE(inputs[0].empty() || inputs[1].empty());
  // Cancel at every stage: the call opened and nothing sent; the file header
  // sent (the server has chosen its way); half the archive; all of it, the
  // server decoding it or about to; the reply's header and first rows read,
  // the rest on their way.
  const Stage stages[] = {
      {"nothing sent", 0, 0}, {"file header", 1, 0}, {"half", 2, 0},
      {"all", 3, 0},          {"replying", 3, 2},
  };
  auto cancelled_call = [&](int i) {
    const bool streamed = (i / 5) % 2 == 1;
    const std::vector<v1::DecompressRequest>& messages = inputs[streamed];
    const Stage& stage = stages[i % 5];
    grpc::ClientContext context;
    // Never a hang: a call the server does not end fails on its deadline.
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    auto stream = stub->Decompress(&context);
    Drive(*stream, messages, stage.sent, stage.replies);
    context.TryCancel();
    const grpc::Status s = stream->Finish();
    // Before the whole archive is in, the server cannot have ended the call
    // (it only learns then whether the archive is sound); after, it may
    // have sent the whole reply before the cancellation reached it. Any
    // other status is a fault.
    if (s.error_code() != grpc::StatusCode::CANCELLED) {
      EXPECT_TRUE(stage.sent == messages.size() && s.ok())
          << stage.name << ", " << (streamed ? "four frames" : "one frame") << ": "
          << s.error_code() << " " << s.error_message();
    }
  };
  // As in ThousandCancelledCallsLeaveNothingBehind: the first round may
  // grow the process once; a leak grows it in every round.
  for (int i = 0; i < 1000; ++i) cancelled_call(i);
  ASSERT_TRUE(WaitQuiet(*server));
  const MemorySnapshot before = TakeSnapshot(*server);
  EXPECT_EQ(before.gauges.queued, 0);
  const double ended_before = EndedCalls(*server, "decompress");
  for (int i = 0; i < 1000; ++i) cancelled_call(i);
  // The calls reached the server, so that the checks below mean something
  // (999 or 1,000 did in every run seen: a call cancelled before it sent
  // anything may not).
  EXPECT_GE(EndedCalls(*server, "decompress") - ended_before, 900);
  // Each call held a 256 KiB array or its archive; a leak of an eighth of
  // them would show.
  ExpectBackTo(*server, before, 32u << 20);
  ExpectRoundTrip(*server, a, OneFrame());
  ExpectRoundTrip(*server, a, FourFrames());
}

// A TCP relay for one client connection to the server, which the test cuts
// the way a crashed client or a failed network does: the server's socket
// closes with no HTTP/2 goodbye (no RST_STREAM, no GOAWAY), which no
// cancellation by a live gRPC client produces.
class CuttableRelay {
 public:
  explicit CuttableRelay(int server_port) : server_port_(server_port) {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address = Loopback(0);
    socklen_t size = sizeof(address);
    if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
        listen(listener_, 1) != 0 ||
        getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
      ADD_FAILURE() << "relay: " << std::strerror(errno);
      return;
    }
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~CuttableRelay() {
    Cut();
    if (thread_.joinable()) thread_.join();
    for (int fd : {listener_, client_, upstream_}) {
      if (fd >= 0) close(fd);
    }
  }
  CuttableRelay(const CuttableRelay&) = delete;
  CuttableRelay& operator=(const CuttableRelay&) = delete;

  int port() const { return port_; }

  // Closes both connections, as the kernel of a client process that died
  // closes its sockets. Shutting them down (not closing them) also wakes the
  // relay's thread wherever it waits; they close once it has returned.
  void Cut() {
    absl::MutexLock lock(&mu_);
    cut_ = true;
    for (int fd : {listener_, client_, upstream_}) {
      if (fd >= 0) shutdown(fd, SHUT_RDWR);
    }
  }

  // Stops forwarding without closing anything, as a client machine that
  // lost power or its route: nothing more arrives, and no FIN or RST either.
  void Freeze() {
    absl::MutexLock lock(&mu_);
    frozen_ = true;
  }

 private:
  static sockaddr_in Loopback(int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    return a;
  }

  static bool SendAll(int fd, const char* data, size_t size) {
    while (size > 0) {
      const ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
      if (n <= 0) return false;
      data += n;
      size -= static_cast<size_t>(n);
    }
    return true;
  }

  void Run() {
    const int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) return;  // cut before the client connected
    const int upstream = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_in server = Loopback(server_port_);
    const bool connected =
        upstream >= 0 &&
        connect(upstream, reinterpret_cast<const sockaddr*>(&server), sizeof(server)) == 0;
    {
      absl::MutexLock lock(&mu_);
      client_ = client;
      upstream_ = upstream;
      if (cut_ || !connected) {
        for (int fd : {client_, upstream_}) {
          if (fd >= 0) shutdown(fd, SHUT_RDWR);
        }
        return;
      }
    }
    pollfd fds[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
    std::vector<char> buffer(64 << 10);
    for (;;) {
      {
        absl::MutexLock lock(&mu_);
        if (cut_) return;
        if (frozen_) {
          mu_.AwaitWithTimeout(absl::Condition(&cut_), absl::Milliseconds(50));
          continue;
        }
      }
      const int ready = poll(fds, 2, 50);
      if (ready < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (ready == 0) continue;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].revents == 0) continue;
        const ssize_t n = recv(fds[i].fd, buffer.data(), buffer.size(), 0);
        if (n <= 0 || !SendAll(fds[1 - i].fd, buffer.data(), static_cast<size_t>(n))) return;
      }
    }
  }

  const int server_port_;
  int port_ = 0;
  int listener_ = -1;
  std::thread thread_;
  absl::Mutex mu_;
  bool cut_ ABSL_GUARDED_BY(mu_) = false;
  bool frozen_ ABSL_GUARDED_BY(mu_) = false;
  // Written once by the relay's thread; closed by the destructor after it.
  int client_ ABSL_GUARDED_BY(mu_) = -1;
  int upstream_ ABSL_GUARDED_BY(mu_) = -1;
};

// A channel with a connection of its own (gRPC otherwise shares one among
// channels to an address), which closes when the channel goes.
std::shared_ptr<grpc::Channel> OwnChannel(int port) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                   grpc::InsecureChannelCredentials(), args);
}

// Payload bytes the server has read for `method` (its received-bytes counter).
double ReceivedBytes(server::EbzipServer& s, const std::string& method) {
  return MetricValue(s.metrics().Render(),
                     absl::StrCat("ebzip_received_bytes_total{method=\"", method, "\"}"));
}

// Calls whose client goes away without cancelling them. Its code drops the
// call (stream and context destroyed mid-call, no TryCancel, no Finish:
// gRPC then resets the stream on its own); drops the call's channel too,
// and with it the connection; or its process or network dies under it
// (CuttableRelay), so that only the socket's end tells the server. Each of
// the three, for both methods and both ways through each (one frame, four),
// mid-upload, after the upload (queued or running) and while the reply
// streams back.
TEST(ServerFaults, AbandonedCallsLeaveNothingBehind) {
  auto options = TestServerOptions();
  options.message_bytes = 64 << 10;  // replies of several messages
  START_TEST_SERVER(server, options);
  auto shared_channel = grpc::CreateChannel(Address(*server), grpc::InsecureChannelCredentials());
  TestArray a = SmoothArray({DType::kFloat32, {256, 256}}, 7);
  // Compress: the header, the first half of the array (not on a frame
  // boundary), the rest.
  auto compress_messages = [&](const CompressOptions& o) {
    const size_t half = a.bytes.size() / 2 + 1000;
    std::vector<v1::CompressRequest> m(3);
    auto* h = m[0].mutable_header();
    h->mutable_array()->set_dtype(v1::FLOAT32);
    for (uint64_t d : a.spec.shape) h->mutable_array()->add_shape(d);
    h->mutable_error_bound()->set_mode(o.mode == BoundMode::kRel ? v1::REL : v1::ABS);
    h->mutable_error_bound()->set_value(o.bound);
    h->mutable_options()->set_frame_elements(o.frame_elements);
    m[1].set_data(a.bytes.data(), half);
    m[2].set_data(a.bytes.data() + half, a.bytes.size() - half);
    return m;
  };
  const std::vector<v1::CompressRequest> compress_inputs[] = {compress_messages(OneFrame()),
                                                              compress_messages(FourFrames())};
  const std::vector<v1::DecompressRequest> decompress_inputs[] = {
      DecompressMessages(a, OneFrame(), 1), DecompressMessages(a, FourFrames(), 4)};
  ASSERT_FALSE(decompress_inputs[0].empty() || decompress_inputs[1].empty());
  const Stage stages[] = {{"uploading", 2, 0}, {"uploaded", 3, 0}, {"replying", 3, 2}};
  enum How { kDropped, kChannelDropped, kConnectionCut, kHows };
  const char* const how_names[] = {"call dropped", "channel dropped", "connection cut"};

  // One call (Compress or Decompress, as `messages` are), taken to `stage`
  // and let go `how`.
  auto abandoned_call = [&](const auto& messages, const Stage& stage, How how) {
    constexpr bool kCompress =
        std::is_same_v<std::decay_t<decltype(messages)>, std::vector<v1::CompressRequest>>;
    const std::string method = kCompress ? "compress" : "decompress";
    // The bytes the stage's messages carry, as the server counts them.
    double sent_bytes = 0;
    for (size_t i = 0; i < stage.sent; ++i) {
      if constexpr (kCompress) {
        sent_bytes += static_cast<double>(messages[i].data().size());
      } else {
        sent_bytes += static_cast<double>(messages[i].archive().size());
      }
    }
    std::unique_ptr<CuttableRelay> relay;
    std::shared_ptr<grpc::Channel> channel = shared_channel;
    if (how == kChannelDropped) channel = OwnChannel(server->port());
    if (how == kConnectionCut) {
      relay = std::make_unique<CuttableRelay>(server->port());
      channel = OwnChannel(relay->port());
    }
    auto stub = v1::Compressor::NewStub(channel);
    channel.reset();  // the stub's is the last reference
    const double received = ReceivedBytes(*server, method);
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    auto drive = [&](auto stream) {
      Drive(*stream, messages, stage.sent, stage.replies);
      if (relay) {
        // The relay may not have passed everything on yet; cut it once the
        // server has read what was sent, so that the cut lands where the
        // stage says.
        const double want = received + sent_bytes;
        const absl::Time deadline = absl::Now() + absl::Seconds(30);
        while (ReceivedBytes(*server, method) < want && absl::Now() < deadline) {
          absl::SleepFor(absl::Milliseconds(1));
        }
        EXPECT_GE(ReceivedBytes(*server, method), want) << method << " " << stage.name;
        relay->Cut();
      }
      // `stream` goes here, unfinished, then the context, then the stub and
      // with it the channel.
    };
    if constexpr (kCompress) {
      drive(stub->Compress(context.get()));
    } else {
      drive(stub->Decompress(context.get()));
    }
  };
  // Every kind of call, at every stage, let go every way; `cycles` times.
  int calls = 0;
  auto round = [&](int cycles) {
    for (int c = 0; c < cycles; ++c) {
      for (int how = 0; how < kHows; ++how) {
        SCOPED_TRACE(how_names[how]);
        for (const Stage& stage : stages) {
          for (int way = 0; way < 2; ++way) {
            abandoned_call(compress_inputs[way], stage, static_cast<How>(how));
            abandoned_call(decompress_inputs[way], stage, static_cast<How>(how));
            calls += 2;
          }
        }
      }
    }
  };
  round(10);  // the process grows once (ThousandCancelledCallsLeaveNothingBehind)
  ASSERT_TRUE(WaitQuiet(*server));
  const MemorySnapshot before = TakeSnapshot(*server);
  EXPECT_EQ(before.gauges.queued, 0);
  const double ended_before = EndedCalls(*server, "compress") + EndedCalls(*server, "decompress");
  calls = 0;
  round(10);
  ASSERT_TRUE(WaitQuiet(*server));
  // Every call had written two messages before it was let go, so the server
  // saw it (all 360 did in every run seen): that the calls reached it is
  // what makes the checks below mean something.
  EXPECT_GE(EndedCalls(*server, "compress") + EndedCalls(*server, "decompress") - ended_before,
            0.9 * calls);
  // 360 calls, each holding a 256 KiB array or its archive; a leak of a
  // sixth of them would show.
  ExpectBackTo(*server, before, 16u << 20);
  ExpectRoundTrip(*server, a, OneFrame());
  ExpectRoundTrip(*server, a, FourFrames());
}

// A client that vanishes without closing its connection (power lost, route
// gone) is found by the server's keepalive pings: the connection closes and
// its calls end, with the idle timeout off.
TEST(ServerFaults, KeepaliveEndsTheCallsOfAVanishedClient) {
  auto options = TestServerOptions();
  options.idle_timeout = absl::ZeroDuration();
  options.keepalive = absl::Seconds(1);
  options.keepalive_timeout = absl::Seconds(1);
  START_TEST_SERVER(server, options);
  CuttableRelay relay(server->port());
  auto stub = v1::Compressor::NewStub(OwnChannel(relay.port()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto call = stub->Compress(&context);
  ASSERT_TRUE(call->Write(HeaderMessage(Header(v1::FLOAT32, {1 << 16}, v1::REL, 1e-3))));
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (server->calls_in_progress() == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(server->calls_in_progress(), 1);
  relay.Freeze();
  EXPECT_TRUE(WaitQuiet(*server, absl::Seconds(20)));
  relay.Cut();
  context.TryCancel();
  call->Finish();
}

// --max_concurrent_streams: a connection's calls past the limit wait in
// gRPC, not in the server, until one ends.
TEST(ServerFaults, CallsPastAConnectionsStreamLimitWait) {
  auto options = TestServerOptions();
  options.max_concurrent_streams = 2;
  START_TEST_SERVER(server, options);
  auto stub = StubFor(*server);  // one channel: one connection
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReaderWriter<v1::CompressRequest, v1::CompressResponse>>>
      open;
  for (int i = 0; i < 2; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    open.push_back(stub->Compress(contexts.back().get()));
    ASSERT_TRUE(open.back()->Write(HeaderMessage(Header(v1::FLOAT32, {16}, v1::ABS, 1e-3))));
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (server->calls_in_progress() < 2 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(server->calls_in_progress(), 2);
  // A third on the same connection never reaches the server before its
  // deadline...
  grpc::Status s = RawCompress(
      *stub, {HeaderMessage(Header(v1::FLOAT32, {16}, v1::ABS, 1e-3)), DataMessage(64)},
      [](grpc::ClientContext& c) {
        c.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
      });
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  EXPECT_EQ(server->calls_in_progress(), 2);
  // ...and goes through once one of the two has ended.
  contexts[0]->TryCancel();
  s = RawCompress(*stub,
                  {HeaderMessage(Header(v1::FLOAT32, {16}, v1::ABS, 1e-3)), DataMessage(64)});
  EXPECT_TRUE(s.ok()) << s.error_message();
  contexts[1]->TryCancel();
  EXPECT_TRUE(WaitQuiet(*server));
}

TEST(ServerFaults, DeadlinesAreHonoured) {
  auto options = TestServerOptions();
  options.cpu_workers = 1;
  START_TEST_SERVER(server, options);
  TestArray big = SmoothArray({DType::kFloat32, {4096, 4096}}, 9);
  client::RemoteOptions hurried;
  hurried.timeout = absl::Milliseconds(20);
  auto client = ClientFor(*server, hurried);
  // Connect first: on a loaded machine setting up the connection can take
  // longer than the deadline, and then the call never reaches the server.
  bool connected = false;
  for (int i = 0; i < 100 && !connected; ++i) connected = client->Health().ok();
  ASSERT_TRUE(connected);
  CompressOptions o;
  o.bound = 1e-4;
  auto archive = client->Compress(big.spec, big.bytes, o);
  EXPECT_EQ(archive.status().code(), absl::StatusCode::kDeadlineExceeded) << archive.status();
  EXPECT_TRUE(WaitQuiet(*server));
  // The server counts it as a deadline, not as a client's cancellation.
  const std::string metrics = server->metrics().Render();
  EXPECT_TRUE(absl::StrContains(
      metrics, "ebzip_requests_total{code=\"DEADLINE_EXCEEDED\",method=\"compress\"} 1"))
      << metrics.substr(metrics.find("ebzip_requests_total"), 400);
  auto patient = ClientFor(*server);
  EXPECT_TRUE(patient->Compress(big.spec, big.bytes, o).ok());
}

// Options a server cannot run with are refused when it starts, naming the
// flag, whatever backend it would have used. (Modes by unknown names never
// get this far: server_flags_test.)
TEST(ServerFaults, BadOptionsAreRefusedAtStart) {
  server::SetLogQuiet(true);
  struct Case {
    const char* flag;
    std::function<void(server::ServerOptions&)> set;
  };
  const Case cases[] = {
      {"--gpu_workers", [](server::ServerOptions& o) { o.gpu_workers = 0; }},
      {"--gpu_workers", [](server::ServerOptions& o) { o.gpu_workers = -1; }},
  };
  for (const Case& c : cases) {
    server::ServerOptions o = TestServerOptions();
    c.set(o);
    auto s = server::EbzipServer::Start(o);
    ASSERT_FALSE(s.ok()) << c.flag;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << s.status();
    EXPECT_TRUE(absl::StrContains(s.status().message(), c.flag)) << s.status();
  }
  // Every wait mode is taken (a GPU build without a GPU says so instead).
  for (const auto& wait : server::kGpuWaitNames) {
    server::ServerOptions o = TestServerOptions();
    o.gpu_wait = wait.value;
    auto s = server::EbzipServer::Start(o);
    EXPECT_TRUE(s.ok() || s.status().code() == absl::StatusCode::kFailedPrecondition)
        << wait.name << ": " << s.status();
  }
}

TEST(ServerFaults, TokenIsRequiredWhenConfigured) {
  auto options = TestServerOptions();
  options.token = "s3cret";
  START_TEST_SERVER(server, options);
  TestArray a = SmoothArray({DType::kFloat32, {100}}, 1);
  CompressOptions o;
  o.bound = 1e-3;
  for (std::string token : {"", "wrong", "s3cret "}) {
    client::RemoteOptions ro;
    ro.token = token;
    auto client = ClientFor(*server, ro);
    auto archive = client->Compress(a.spec, a.bytes, o);
    EXPECT_EQ(archive.status().code(), absl::StatusCode::kUnauthenticated) << "'" << token << "'";
    EXPECT_EQ(client->Info().status().code(), absl::StatusCode::kUnauthenticated);
    // Health stays open: Kubernetes probes carry no token.
    EXPECT_TRUE(client->Health().ok());
  }
  client::RemoteOptions ro;
  ro.token = "s3cret";
  auto client = ClientFor(*server, ro);
  auto archive = client->Compress(a.spec, a.bytes, o);
  ASSERT_TRUE(archive.ok()) << archive.status();
  EXPECT_TRUE(client->Decompress(*archive).ok());
  EXPECT_TRUE(client->Info().ok());
}

// A self-signed certificate for "localhost" made with openssl, or empty.
std::string MakeCertificate(const std::string& dir) {
  const std::string cmd = absl::StrCat(
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost "
      "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout ",
      dir, "/key.pem -out ", dir, "/cert.pem >/dev/null 2>&1");
  return std::system(cmd.c_str()) == 0 ? dir + "/cert.pem" : "";
}

TEST(ServerFaults, TlsWhenConfigured) {
  const std::string dir = ::testing::TempDir() + "/ebzip_tls_" + std::to_string(getpid());
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  const std::string cert = MakeCertificate(dir);
  if (cert.empty()) GTEST_SKIP() << "openssl is not installed";
  auto options = TestServerOptions();
  options.tls_cert_file = cert;
  options.tls_key_file = dir + "/key.pem";
  START_TEST_SERVER(server, options);
  TestArray a = SmoothArray({DType::kFloat64, {50, 20}}, 2);
  CompressOptions o;
  o.bound = 1e-6;

  client::RemoteOptions tls;
  tls.server = "localhost:" + std::to_string(server->port());
  tls.tls_ca_file = cert;
  auto client = client::RemoteClient::Connect(tls);
  ASSERT_TRUE(client.ok());
  auto archive = (*client)->Compress(a.spec, a.bytes, o);
  ASSERT_TRUE(archive.ok()) << archive.status();
  auto local = Compress(a.spec, a.bytes, o);
  EXPECT_TRUE(*archive == *local);

  // Plaintext to a TLS port fails, and says so as UNAVAILABLE.
  client::RemoteOptions plain;
  plain.timeout = absl::Seconds(5);
  auto insecure = ClientFor(*server, plain);
  EXPECT_EQ(insecure->Compress(a.spec, a.bytes, o).status().code(), absl::StatusCode::kUnavailable);
}

// The bytes of its array a held call sends before it holds the rest back.
constexpr size_t kHeldCallSends = 4096;

// Sends a Compress header for a 512 x 512 float32 array (REL 1e-4) and the
// array's first kHeldCallSends bytes, and holds the rest back. The writes
// return once the bytes are on their way: this waits until the server has
// admitted the call (it holds the bytes received), or a drain could refuse
// it as a new one.
bool SendHeaderAndWaitForAdmission(
    grpc::ClientReaderWriter<v1::CompressRequest, v1::CompressResponse>& call,
    const server::EbzipServer& server, const TestArray& a) {
  if (!call.Write(HeaderMessage(Header(v1::FLOAT32, {512, 512}, v1::REL, 1e-4)))) return false;
  v1::CompressRequest first;
  first.set_data(a.bytes.data(), kHeldCallSends);
  if (!call.Write(first)) return false;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (server.held_bytes() == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  return server.held_bytes() > 0;
}

TEST(ServerFaults, DrainFinishesAcceptedCallsAndRefusesNewOnes) {
  START_TEST_SERVER(server, TestServerOptions());
  auto stub = StubFor(*server);
  TestArray a = SmoothArray({DType::kFloat32, {512, 512}}, 4);
  CompressOptions o;
  o.mode = BoundMode::kRel;
  o.bound = 1e-4;
  auto expected = Compress(a.spec, a.bytes, o);
  ASSERT_TRUE(expected.ok());

  // A call the drain must wait for: header sent, data held back.
  grpc::ClientContext held_context;
  auto held = stub->Compress(&held_context);
  ASSERT_TRUE(SendHeaderAndWaitForAdmission(*held, *server, a));
  // And calls under load.
  std::vector<std::thread> load;
  std::atomic<int> lost{0};
  for (int t = 0; t < 8; ++t) {
    load.emplace_back([&] {
      auto client = ClientFor(*server);
      auto archive = client->Compress(a.spec, a.bytes, o);
      // Refused (UNAVAILABLE, at admission or by a listener that has
      // closed) is fine; accepted and then failed is not, and a scheduler
      // shutting down on accepted work says so.
      if (archive.ok() ? *archive != *expected
                       : archive.status().code() != absl::StatusCode::kUnavailable ||
                             absl::StrContains(archive.status().message(), "shutting down")) {
        ++lost;
      }
    });
  }
  std::atomic<bool> drained_cleanly{false};
  std::thread drain([&] { drained_cleanly = server->Drain(absl::Seconds(60)); });

  // Health says NOT_SERVING while the drain waits, and new calls are refused.
  auto health = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel(Address(*server), grpc::InsecureChannelCredentials()));
  grpc::health::v1::HealthCheckResponse state;
  for (int i = 0; i < 1000; ++i) {
    grpc::ClientContext c;
    if (health->Check(&c, {}, &state).ok() &&
        state.status() == grpc::health::v1::HealthCheckResponse::NOT_SERVING) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(state.status(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  const grpc::Status refused =
      RawCompress(*stub, {HeaderMessage(Header(v1::FLOAT32, {4}, v1::ABS, 1)), DataMessage(16)});
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();

  // The held call completes, with the right archive.
  v1::CompressRequest data;
  data.set_data(a.bytes.data() + kHeldCallSends, a.bytes.size() - kHeldCallSends);
  // EXPECT, not ASSERT: the threads above must still be joined.
  EXPECT_TRUE(held->Write(data));
  held->WritesDone();
  std::string archive;
  v1::CompressResponse response;
  while (held->Read(&response)) {
    if (response.has_archive()) archive += response.archive();
  }
  const grpc::Status held_status = held->Finish();
  EXPECT_TRUE(held_status.ok()) << held_status.error_code() << ": " << held_status.error_message();
  EXPECT_TRUE(archive == std::string(expected->begin(), expected->end()))
      << "received " << archive.size() << " archive bytes, expected " << expected->size();
  for (auto& t : load) t.join();
  drain.join();
  EXPECT_TRUE(drained_cleanly.load());
  EXPECT_EQ(lost.load(), 0);
  EXPECT_EQ(server->calls_in_progress(), 0);
  EXPECT_EQ(server->held_bytes(), 0u);
}

// A call still open when the grace period ends is cancelled: the drain
// returns (not cleanly), the call ends with an error, and the server holds
// nothing afterwards (ebzipd then exits 0 all the same, main.cc).
TEST(ServerFaults, ADrainPastItsGraceCancelsWhatIsLeft) {
  START_TEST_SERVER(server, TestServerOptions());
  auto stub = StubFor(*server);
  grpc::ClientContext held_context;
  auto held = stub->Compress(&held_context);
  TestArray a = SmoothArray({DType::kFloat32, {512, 512}}, 4);
  ASSERT_TRUE(SendHeaderAndWaitForAdmission(*held, *server, a));

  const absl::Time start = absl::Now();
  EXPECT_FALSE(server->Drain(absl::Milliseconds(1500)));
  const absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, absl::Milliseconds(1500));
  EXPECT_LT(took, absl::Seconds(10)) << "the drain waited well past its grace period";

  // The client never sent its data: its call cannot have succeeded.
  held->WritesDone();
  v1::CompressResponse response;
  while (held->Read(&response)) {
  }
  const grpc::Status status = held->Finish();
  EXPECT_FALSE(status.ok());
  EXPECT_TRUE(status.error_code() == grpc::StatusCode::CANCELLED ||
              status.error_code() == grpc::StatusCode::UNAVAILABLE)
      << status.error_code() << ": " << status.error_message();
  EXPECT_TRUE(WaitQuiet(*server)) << "calls " << server->calls_in_progress() << ", held bytes "
                                  << server->held_bytes();
}

// One client over two replicas, as a dns:/// target over a headless Service
// gives, while one of them drains: the client leaves it as its health turns
// NOT_SERVING, and runs again on the other any call it refused. No call may
// fail, and the client process must survive (gRPC's own retries aborted it).
TEST(ServerFaults, ADrainingReplicaLosesNoCallOfABalancingClient) {
  START_TEST_SERVER(a, TestServerOptions());
  START_TEST_SERVER(b, TestServerOptions());
  client::RemoteOptions both;
  both.server = "ipv4:" + Address(*a) + "," + Address(*b);
  auto client = client::RemoteClient::Connect(both);
  ASSERT_TRUE(client.ok()) << client.status();
  TestArray x = SmoothArray({DType::kFloat32, {64, 96}}, 3);
  CompressOptions o;
  o.bound = 1e-3;
  auto expected = Compress(x.spec, x.bytes, o);
  ASSERT_TRUE(expected.ok());
  auto served_ok = [](server::EbzipServer& s) {
    return MetricValue(s.metrics().Render(),
                       "ebzip_requests_total{code=\"OK\",method=\"compress\"}");
  };
  for (int i = 0; i < 20; ++i) ASSERT_TRUE((*client)->Compress(x.spec, x.bytes, o).ok());
  ASSERT_GT(served_ok(*a), 0) << "round robin sent nothing to the replica that drains";
  ASSERT_GT(served_ok(*b), 0);

  std::atomic<bool> stop{false};
  std::atomic<int> calls{0}, failed{0};
  std::string first_failure;
  absl::Mutex mu;
  std::vector<std::thread> load;
  for (int t = 0; t < 4; ++t) {
    load.emplace_back([&] {
      while (!stop.load()) {
        auto archive = (*client)->Compress(x.spec, x.bytes, o);
        ++calls;
        if (!archive.ok() || *archive != *expected) {
          absl::MutexLock lock(&mu);
          if (failed++ == 0)
            first_failure = archive.ok() ? "other bytes" : archive.status().ToString();
        }
      }
    });
  }
  absl::SleepFor(absl::Milliseconds(100));
  const bool drained = a->Drain(absl::Seconds(30));
  const int during = calls.load();
  absl::SleepFor(absl::Milliseconds(200));  // and after: all of it on b
  stop = true;
  for (auto& t : load) t.join();
  EXPECT_TRUE(drained);
  EXPECT_EQ(failed.load(), 0) << "of " << calls.load() << " calls; the first: " << first_failure;
  EXPECT_GT(calls.load(), during) << "no call ran after the drain";
}

}  // namespace
}  // namespace ebzip::testing
