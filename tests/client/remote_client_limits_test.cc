// RemoteClient against a server that lies: an in-process fake Compressor on
// loopback whose replies describe arrays too large to hold, malformed
// headers, more or fewer bytes than announced, data before the header, and
// archives without end. Each must come back as a status (never an abort or
// an exception), and the oversized ones before anything is allocated or
// handed to the caller. MaxArchiveBytes, the bound on a Compress reply, is
// checked against archives the local codec writes for adversarial arrays.
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "client/remote/remote_client.h"
#include "codec/archive.h"
#include "ebzip/v1/ebzip.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace ebzip::client {
namespace {

using ::absl::StatusCode;

constexpr size_t kEndlessMessageBytes = 64 << 10;
// An "endless" reply stops here if the client never stops it: 256 MiB, far
// beyond what any of the replies below may legitimately carry.
constexpr int kEndlessCap = 4096;

// Replies with scripted messages; optionally follows them with data (or
// archive) messages of kEndlessMessageBytes until a write fails, that is,
// until the client has cancelled the call (or kEndlessCap is reached).
class FakeCompressor final : public v1::Compressor::Service {
 public:
  void ScriptDecompress(std::vector<v1::DecompressResponse> reply, bool endless) {
    absl::MutexLock lock(&mu_);
    decompress_reply_ = std::move(reply);
    endless_ = endless;
    sent_endless_ = 0;
  }
  void ScriptCompress(std::vector<v1::CompressResponse> reply, bool endless) {
    absl::MutexLock lock(&mu_);
    compress_reply_ = std::move(reply);
    endless_ = endless;
    sent_endless_ = 0;
  }
  int sent_endless() const { return sent_endless_.load(); }

  grpc::Status Decompress(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::DecompressResponse, v1::DecompressRequest>* stream) override {
    v1::DecompressRequest request;
    while (stream->Read(&request)) {
    }
    std::vector<v1::DecompressResponse> reply;
    bool endless;
    {
      absl::MutexLock lock(&mu_);
      reply = decompress_reply_;
      endless = endless_;
    }
    for (const auto& m : reply) {
      if (!stream->Write(m)) return grpc::Status::CANCELLED;
    }
    if (endless) {
      v1::DecompressResponse data;
      data.set_data(std::string(kEndlessMessageBytes, '\x5a'));
      while (sent_endless_ < kEndlessCap && stream->Write(data)) ++sent_endless_;
    }
    return grpc::Status::OK;
  }

  grpc::Status Compress(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::CompressResponse, v1::CompressRequest>* stream) override {
    v1::CompressRequest request;
    while (stream->Read(&request)) {
    }
    std::vector<v1::CompressResponse> reply;
    bool endless;
    {
      absl::MutexLock lock(&mu_);
      reply = compress_reply_;
      endless = endless_;
    }
    for (const auto& m : reply) {
      if (!stream->Write(m)) return grpc::Status::CANCELLED;
    }
    if (endless) {
      v1::CompressResponse archive;
      archive.set_archive(std::string(kEndlessMessageBytes, '\x5a'));
      while (sent_endless_ < kEndlessCap && stream->Write(archive)) ++sent_endless_;
    }
    return grpc::Status::OK;
  }

 private:
  absl::Mutex mu_;
  std::vector<v1::DecompressResponse> decompress_reply_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::CompressResponse> compress_reply_ ABSL_GUARDED_BY(mu_);
  bool endless_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<int> sent_endless_{0};
};

v1::DecompressResponse Header(v1::DType dtype, std::vector<uint64_t> shape) {
  v1::DecompressResponse m;
  m.mutable_header()->mutable_array()->set_dtype(dtype);
  for (uint64_t d : shape) m.mutable_header()->mutable_array()->add_shape(d);
  m.mutable_header()->set_abs_error_bound(0.5);
  m.mutable_header()->set_backend("fake");
  return m;
}

v1::DecompressResponse Data(const std::string& bytes) {
  v1::DecompressResponse m;
  m.set_data(bytes);
  return m;
}

class RemoteClientLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // No health service: the client's health checking takes a server
    // without one (UNIMPLEMENTED) as serving, and gRPC's default one kept
    // the server's destructor waiting up to 10 s now and then.
    grpc::ServerBuilder builder;
    // The sync server's destructor waits for its pollers, which otherwise
    // sleep up to 10 s on the completion queue.
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::CQ_TIMEOUT_MSEC, 50);
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&fake_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
  }

  std::unique_ptr<RemoteClient> Client(uint64_t max_output_bytes = PhysicalMemoryBytes()) {
    RemoteOptions o;
    o.server = "127.0.0.1:" + std::to_string(port_);
    o.timeout = absl::Seconds(60);
    o.max_output_bytes = max_output_bytes;
    auto c = RemoteClient::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }

  // Decompress through the streaming overload, recording what the caller
  // was handed.
  struct Seen {
    bool header = false;
    uint64_t bytes = 0;
  };
  absl::Status StreamingDecompress(RemoteClient& client, Seen* seen) {
    const std::vector<uint8_t> archive(100, 7);  // the fake does not read it
    return client
        .Decompress(
            archive,
            [&](const RemoteArrayHeader&) {
              seen->header = true;
              return absl::OkStatus();
            },
            [&](absl::Span<const uint8_t> b) {
              seen->bytes += b.size();
              return absl::OkStatus();
            })
        .status();
  }

  FakeCompressor fake_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(RemoteClientLimitsTest, HugeArrayIsResourceExhaustedBeforeTheCallerSeesIt) {
  // 2^40 x 2^20 float64: 2^63 bytes, a valid shape far beyond any machine.
  fake_.ScriptDecompress({Header(v1::FLOAT64, {uint64_t{1} << 40, uint64_t{1} << 20})}, true);
  auto client = Client();
  auto in_memory = client->Decompress(std::vector<uint8_t>(100, 7));
  ASSERT_EQ(in_memory.status().code(), StatusCode::kResourceExhausted) << in_memory.status();
  EXPECT_NE(in_memory.status().message().find("max_output_bytes"), std::string::npos)
      << in_memory.status();
  EXPECT_NE(in_memory.status().message().find(std::to_string(uint64_t{1} << 63)), std::string::npos)
      << in_memory.status();

  Seen seen;
  absl::Status s = StreamingDecompress(*client, &seen);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s;
  EXPECT_FALSE(seen.header);
  EXPECT_EQ(seen.bytes, 0u);
}

TEST_F(RemoteClientLimitsTest, AllocationFailureWithinTheLimitIsResourceExhausted) {
  // No limit: the array is valid, so the in-memory overload tries to
  // allocate it. 2^62 bytes fail in operator new (bad_alloc), 2^63 exceed
  // the vector's max_size (length_error); both must come back as statuses.
  auto client = Client(std::numeric_limits<uint64_t>::max());
  for (uint64_t rows : {uint64_t{1} << 39, uint64_t{1} << 40}) {
    SCOPED_TRACE(rows);
    fake_.ScriptDecompress({Header(v1::FLOAT64, {rows, uint64_t{1} << 20})}, false);
    auto r = client->Decompress(std::vector<uint8_t>(100, 7));
    EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status();
  }
}

TEST_F(RemoteClientLimitsTest, MalformedHeadersAreProtocolErrors) {
  const uint64_t big = uint64_t{1} << 40;
  const std::vector<std::pair<std::string, v1::DecompressResponse>> cases = {
      {"no dimensions", Header(v1::FLOAT32, {})},
      {"five dimensions", Header(v1::FLOAT32, {2, 2, 2, 2, 2})},
      {"a zero dimension", Header(v1::FLOAT32, {4, 0})},
      {"no dtype", Header(v1::DTYPE_UNSPECIFIED, {4})},
      {"an unknown dtype", Header(static_cast<v1::DType>(7), {4})},
      {"a byte count past 64 bits", Header(v1::FLOAT64, {big, big})},
  };
  auto client = Client(std::numeric_limits<uint64_t>::max());
  for (const auto& [what, header] : cases) {
    SCOPED_TRACE(what);
    fake_.ScriptDecompress({header, Data(std::string(16, '\0'))}, false);
    auto r = client->Decompress(std::vector<uint8_t>(100, 7));
    EXPECT_EQ(r.status().code(), StatusCode::kInternal) << r.status();
    EXPECT_NE(r.status().message().find("protocol error"), std::string::npos) << r.status();
    Seen seen;
    EXPECT_EQ(StreamingDecompress(*client, &seen).code(), StatusCode::kInternal);
    EXPECT_FALSE(seen.header);
  }
}

TEST_F(RemoteClientLimitsTest, MoreDataThanTheShapeFailsAsItArrives) {
  // A 16-byte array followed by data without end: the client must stop the
  // call at the first excess message, not after buffering the stream.
  fake_.ScriptDecompress({Header(v1::FLOAT32, {4})}, true);
  auto client = Client();
  Seen seen;
  absl::Status s = StreamingDecompress(*client, &seen);
  EXPECT_EQ(s.code(), StatusCode::kInternal) << s;
  EXPECT_TRUE(seen.header);
  EXPECT_EQ(seen.bytes, 0u);  // the excess message is refused whole
  EXPECT_LT(fake_.sent_endless(), kEndlessCap);

  fake_.ScriptDecompress({Header(v1::FLOAT32, {4})}, true);
  auto r = client->Decompress(std::vector<uint8_t>(100, 7));
  EXPECT_EQ(r.status().code(), StatusCode::kInternal) << r.status();
  EXPECT_LT(fake_.sent_endless(), kEndlessCap);

  // An exact fit followed by one byte more.
  fake_.ScriptDecompress(
      {Header(v1::FLOAT32, {4}), Data(std::string(16, '\1')), Data(std::string(1, '\1'))}, false);
  EXPECT_EQ(client->Decompress(std::vector<uint8_t>(100, 7)).status().code(),
            StatusCode::kInternal);
}

TEST_F(RemoteClientLimitsTest, FewerBytesThanTheShapeAreAProtocolError) {
  fake_.ScriptDecompress({Header(v1::FLOAT32, {4}), Data(std::string(15, '\1'))}, false);
  auto client = Client();
  auto r = client->Decompress(std::vector<uint8_t>(100, 7));
  EXPECT_EQ(r.status().code(), StatusCode::kInternal) << r.status();
  fake_.ScriptDecompress({}, false);  // neither header nor data
  EXPECT_EQ(client->Decompress(std::vector<uint8_t>(100, 7)).status().code(),
            StatusCode::kInternal);
}

TEST_F(RemoteClientLimitsTest, DataBeforeTheHeaderOrASecondHeaderIsAProtocolError) {
  auto client = Client();
  fake_.ScriptDecompress({Data(std::string(16, '\1')), Header(v1::FLOAT32, {4})}, false);
  Seen seen;
  EXPECT_EQ(StreamingDecompress(*client, &seen).code(), StatusCode::kInternal);
  EXPECT_FALSE(seen.header);
  EXPECT_EQ(seen.bytes, 0u);
  fake_.ScriptDecompress(
      {Header(v1::FLOAT32, {4}), Header(v1::FLOAT32, {4}), Data(std::string(16, '\1'))}, false);
  EXPECT_EQ(client->Decompress(std::vector<uint8_t>(100, 7)).status().code(),
            StatusCode::kInternal);
}

TEST_F(RemoteClientLimitsTest, TheLimitCanBeRaisedToAcceptALargeReply) {
  // 512 x 1024 float32, 2 MiB, in 64 KiB messages with a pattern that shows
  // order and position.
  const uint64_t bytes = 512 * 1024 * 4;
  std::vector<v1::DecompressResponse> reply = {Header(v1::FLOAT32, {512, 1024})};
  std::string expected;
  for (uint64_t at = 0; at < bytes; at += kEndlessMessageBytes) {
    std::string piece(kEndlessMessageBytes, '\0');
    for (size_t i = 0; i < piece.size(); ++i) piece[i] = static_cast<char>((at + i) * 131 >> 3);
    expected += piece;
    reply.push_back(Data(piece));
  }
  fake_.ScriptDecompress(reply, false);

  auto refused = Client(bytes - 1)->Decompress(std::vector<uint8_t>(100, 7));
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status();

  auto accepted = Client(bytes)->Decompress(std::vector<uint8_t>(100, 7));
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  EXPECT_EQ(accepted->spec.num_bytes(), bytes);
  EXPECT_EQ(accepted->spec.shape, (std::vector<uint64_t>{512, 1024}));
  ASSERT_EQ(accepted->data.size(), expected.size());
  EXPECT_EQ(std::memcmp(accepted->data.data(), expected.data(), expected.size()), 0);
  EXPECT_EQ(accepted->abs_bound, 0.5);
}

TEST_F(RemoteClientLimitsTest, EndlessCompressReplyIsAProtocolError) {
  fake_.ScriptCompress({}, true);
  auto client = Client();
  const ArraySpec spec{DType::kFloat32, {16}};
  const std::vector<uint8_t> data(spec.num_bytes(), 0);
  CompressOptions options;
  options.bound = 0.1;
  uint64_t handed = 0;
  auto summary = client->Compress(spec, data, options, [&](absl::Span<const uint8_t> b) {
    handed += b.size();
    return absl::OkStatus();
  });
  EXPECT_EQ(summary.status().code(), StatusCode::kInternal) << summary.status();
  EXPECT_LE(handed, MaxArchiveBytes(spec, options));
  EXPECT_LT(fake_.sent_endless(), kEndlessCap);

  fake_.ScriptCompress({}, true);
  auto archive = client->Compress(spec, data, options);
  EXPECT_EQ(archive.status().code(), StatusCode::kInternal) << archive.status();
  EXPECT_LT(fake_.sent_endless(), kEndlessCap);
}

TEST_F(RemoteClientLimitsTest, CompressReplyOutOfOrderIsAProtocolError) {
  auto client = Client();
  const ArraySpec spec{DType::kFloat32, {16}};
  const std::vector<uint8_t> data(spec.num_bytes(), 0);
  CompressOptions options;
  options.bound = 0.1;
  v1::CompressResponse archive, summary;
  archive.set_archive(std::string(100, '\1'));
  summary.mutable_summary()->set_archive_bytes(100);
  v1::CompressResponse wrong_size = summary;
  wrong_size.mutable_summary()->set_archive_bytes(99);
  const std::vector<std::pair<std::string, std::vector<v1::CompressResponse>>> cases = {
      {"archive after the summary", {archive, summary, archive}},
      {"a summary that disagrees", {archive, wrong_size}},
      {"no summary", {archive}},
  };
  for (const auto& [what, reply] : cases) {
    SCOPED_TRACE(what);
    fake_.ScriptCompress(reply, false);
    EXPECT_EQ(client->Compress(spec, data, options).status().code(), StatusCode::kInternal);
  }
  fake_.ScriptCompress({archive, summary}, false);  // the baseline is accepted
  auto ok = client->Compress(spec, data, options);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->size(), 100u);
}

// MaxArchiveBytes must hold for every archive an honest server can send:
// the local codec's archives (the server's are the same bytes) of arrays
// chosen to make each section as large as it gets.
TEST(MaxArchiveBytes, HoldsForAdversarialArrays) {
  std::mt19937_64 rng(42);
  struct Case {
    std::string what;
    ArraySpec spec;
    CompressOptions options;
    std::vector<uint8_t> data;
  };
  std::vector<Case> cases;
  auto add = [&](std::string what, ArraySpec spec, CompressOptions options, auto value) {
    Case c{std::move(what), spec, options, std::vector<uint8_t>(spec.num_bytes())};
    if (c.options.bound == 0) c.options.bound = 1e-30;
    for (uint64_t i = 0; i < spec.num_elements(); ++i) value(c.data.data(), i);
    cases.push_back(std::move(c));
  };
  auto f32 = [](uint8_t* p, uint64_t i, float v) { std::memcpy(p + 4 * i, &v, 4); };
  auto f64 = [](uint8_t* p, uint64_t i, double v) { std::memcpy(p + 8 * i, &v, 8); };
  CompressOptions defaults;
  // Every element verbatim: random subnormals.
  add("f32 subnormals", {DType::kFloat32, {1 << 16}}, defaults, [&](uint8_t* p, uint64_t i) {
    uint32_t bits = static_cast<uint32_t>(rng()) & 0x807FFFFFu;
    if ((bits & 0x7FFFFFu) == 0) bits |= 1;
    float v;
    std::memcpy(&v, &bits, 4);
    f32(p, i, v);
  });
  add("f64 subnormals", {DType::kFloat64, {256, 256}}, defaults, [&](uint8_t* p, uint64_t i) {
    uint64_t bits = rng() & 0x800FFFFFFFFFFFFFull;
    if ((bits & 0xFFFFFFFFFFFFFull) == 0) bits |= 1;
    double v;
    std::memcpy(&v, &bits, 8);
    f64(p, i, v);
  });
  // Noise far beyond the radius: outliers everywhere, with small chunks,
  // fine gap-array subsequences and tiny frames to multiply the overheads.
  CompressOptions fine = defaults;
  fine.radius = 2;
  fine.chunk_symbols = 1;
  fine.chunk_group = 1;
  fine.subsequence_bits = 32;
  fine.frame_elements = 1;
  add("f32 noise, fine options", {DType::kFloat32, {64, 64}}, fine,
      [&](uint8_t* p, uint64_t i) { f32(p, i, static_cast<float>(rng() % 1000000) - 5e5f); });
  CompressOptions single = defaults;
  single.frame_elements = 1;
  single.block = {1};
  add("f32 one element a frame", {DType::kFloat32, {2000}}, single,
      [&](uint8_t* p, uint64_t i) { f32(p, i, static_cast<float>(rng() % 1000)); });
  CompressOptions wide = defaults;
  wide.bound = 1e-3;
  add("f64 noise, every symbol used", {DType::kFloat64, {8, 8, 8, 64}}, wide,
      [&](uint8_t* p, uint64_t i) { f64(p, i, static_cast<double>(rng() % 65536) * 2e-3); });
  // Fill runs of one element between other values.
  CompressOptions fill = defaults;
  fill.fill_value = -1e34;
  add("f32 alternating fill", {DType::kFloat32, {128, 128}}, fill, [&](uint8_t* p, uint64_t i) {
    f32(p, i, i % 2 ? -1e34f : static_cast<float>(rng() % 1000));
  });

  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto archive = Compress(c.spec, c.data, c.options);
    ASSERT_TRUE(archive.ok()) << archive.status();
    EXPECT_LE(archive->size(), MaxArchiveBytes(c.spec, c.options))
        << "input " << c.spec.num_bytes() << " bytes";
  }
}

TEST(MaxArchiveBytes, StaysProportionalToTheInput) {
  // A bound as loose as "anything" would not stop a server that streams
  // without end; with the default options it stays a small multiple.
  CompressOptions defaults;
  for (const ArraySpec& spec :
       {ArraySpec{DType::kFloat32, {4096, 4096}}, ArraySpec{DType::kFloat64, {1 << 28}},
        ArraySpec{DType::kFloat32, {16, 64, 64, 64}}}) {
    SCOPED_TRACE(ShapeToString(spec.shape));
    EXPECT_GE(MaxArchiveBytes(spec, defaults), spec.num_bytes());
    // Version 2 adds a fill-mask token per element at worst and the metadata block.
    EXPECT_LE(MaxArchiveBytes(spec, defaults), 5 * spec.num_bytes() + (uint64_t{3} << 20));
  }
}

TEST(PhysicalMemoryBytes, IsWhatTheSystemReports) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  ASSERT_GT(pages, 0);
  ASSERT_GT(page, 0);
  EXPECT_EQ(PhysicalMemoryBytes(), static_cast<uint64_t>(pages) * static_cast<uint64_t>(page));
  EXPECT_EQ(RemoteOptions().max_output_bytes, PhysicalMemoryBytes());
}

}  // namespace
}  // namespace ebzip::client
