// The C++ client splitting one array or archive over several calls
// (RemoteOptions::streams, codec/archive_parts.h): the archive is the local
// codec's, byte for byte, for both bound modes (a relative bound's range is
// the client's), every predictor and dtype; each decompression form gives
// the local decode; the server really sees one call per part; a failure in
// one part fails the whole call and leaves nothing behind.
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/archive.h"
#include "gtest/gtest.h"
#include "tests/server/test_arrays.h"
#include "tests/server/test_server.h"

namespace ebzip::testing {
namespace {

double OkCalls(server::EbzipServer& s, const char* method) {
  return MetricValue(s.metrics().Render(),
                     absl::StrCat("ebzip_requests_total{code=\"OK\",method=\"", method, "\"}"));
}

struct Case {
  ArraySpec spec;
  BoundMode mode;
  Predictor predictor;
  bool specials;
  int streams;
};

class SplitCallsTest : public ::testing::TestWithParam<Case> {};

TEST_P(SplitCallsTest, PartsMakeTheLocalArchiveAndDecodeToTheLocalArray) {
  const Case& c = GetParam();
  START_TEST_SERVER(server, TestServerOptions());
  client::RemoteOptions ro;
  ro.streams = c.streams;
  auto client = ClientFor(*server, ro);
  ASSERT_NE(client, nullptr);
  const TestArray a = SmoothArray(c.spec, 17, c.specials);
  CompressOptions o;
  o.mode = c.mode;
  o.bound = c.mode == BoundMode::kRel ? 1e-4 : 0.01;
  o.predictor = c.predictor;
  o.frame_elements = 1 << 14;
  if (c.specials) o.fill_value = -1e34;
  auto local = Compress(a.spec, a.bytes, o);
  ASSERT_TRUE(local.ok()) << local.status();
  auto info = ReadArchiveInfo(*local);
  ASSERT_TRUE(info.ok());
  const uint64_t parts = std::min<uint64_t>(c.streams, info->header.frame_count);
  ASSERT_GT(parts, 1u) << "the case must split";

  const double compress_calls = OkCalls(*server, "compress");
  client::RemoteSummary summary;
  auto archive = client->Compress(a.spec, a.bytes, o, &summary);
  ASSERT_TRUE(archive.ok()) << archive.status();
  EXPECT_TRUE(*archive == *local) << "split archive differs from the local codec's ("
                                  << archive->size() << " vs " << local->size() << " bytes)";
  EXPECT_EQ(summary.archive_bytes, archive->size());
  EXPECT_EQ(summary.input_bytes, a.bytes.size());
  EXPECT_EQ(summary.frames, info->header.frame_count);
  EXPECT_EQ(summary.abs_bound, info->header.abs_bound);
  uint64_t outliers = 0, verbatim = 0;
  for (const auto& h : info->frame_headers) {
    outliers += h.outlier_count;
    verbatim += h.verbatim_count;
  }
  EXPECT_EQ(summary.outliers, outliers);
  EXPECT_EQ(summary.verbatim, verbatim);
  ASSERT_TRUE(WaitQuiet(*server));
  EXPECT_EQ(OkCalls(*server, "compress") - compress_calls, static_cast<double>(parts));

  auto expected = Decompress(*local);
  ASSERT_TRUE(expected.ok());
  const double decompress_calls = OkCalls(*server, "decompress");
  // In memory.
  auto decoded = client->Decompress(*local);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->spec.shape, a.spec.shape);
  EXPECT_EQ(decoded->abs_bound, expected->abs_bound);
  EXPECT_TRUE(decoded->data == expected->data);
  // Into the caller's memory.
  std::vector<uint8_t> into(a.bytes.size(), 0xAB);
  auto header = client->DecompressInto(
      *local, [&](const client::RemoteArrayHeader& h) -> absl::StatusOr<absl::Span<uint8_t>> {
        EXPECT_EQ(h.spec.shape, a.spec.shape);
        return absl::MakeSpan(into);
      });
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_TRUE(into == expected->data);
  // Through a sink, in order.
  std::vector<uint8_t> streamed;
  int headers = 0;
  auto sunk = client->Decompress(
      *local,
      [&](const client::RemoteArrayHeader& h) {
        ++headers;
        EXPECT_EQ(h.spec.shape, a.spec.shape);
        return absl::OkStatus();
      },
      [&](absl::Span<const uint8_t> bytes) {
        streamed.insert(streamed.end(), bytes.begin(), bytes.end());
        return absl::OkStatus();
      });
  ASSERT_TRUE(sunk.ok()) << sunk.status();
  EXPECT_EQ(headers, 1);
  EXPECT_TRUE(streamed == expected->data);
  ASSERT_TRUE(WaitQuiet(*server));
  EXPECT_EQ(OkCalls(*server, "decompress") - decompress_calls, static_cast<double>(3 * parts));
}

INSTANTIATE_TEST_SUITE_P(
    Arrays, SplitCallsTest,
    ::testing::Values(
        Case{{DType::kFloat32, {400000}}, BoundMode::kRel, Predictor::kAuto, false, 4},
        Case{{DType::kFloat64, {300, 700}}, BoundMode::kRel, Predictor::kLorenzo, true, 3},
        Case{{DType::kFloat32, {64, 40, 50}}, BoundMode::kAbs, Predictor::kInterp, false, 5},
        Case{{DType::kFloat32, {9, 16, 30, 40}}, BoundMode::kRel, Predictor::kInterp, true, 16},
        Case{{DType::kFloat64, {100000}}, BoundMode::kAbs, Predictor::kAuto, true, 2}));

TEST(SplitCalls, OneStreamIsOneCall) {
  START_TEST_SERVER(server, TestServerOptions());
  client::RemoteOptions ro;
  ro.streams = 1;
  auto client = ClientFor(*server, ro);
  ASSERT_NE(client, nullptr);
  const TestArray a = SmoothArray({DType::kFloat32, {200000}}, 3);
  CompressOptions o;
  o.mode = BoundMode::kRel;
  o.bound = 1e-3;
  o.frame_elements = 1 << 14;
  const double before = OkCalls(*server, "compress");
  auto archive = client->Compress(a.spec, a.bytes, o);
  ASSERT_TRUE(archive.ok()) << archive.status();
  auto local = Compress(a.spec, a.bytes, o);
  ASSERT_TRUE(local.ok());
  EXPECT_TRUE(*archive == *local);
  ASSERT_TRUE(WaitQuiet(*server));
  EXPECT_EQ(OkCalls(*server, "compress") - before, 1.0);
}

TEST(SplitCalls, AFailingSinkFailsTheCallAndLeavesNothingBehind) {
  START_TEST_SERVER(server, TestServerOptions());
  client::RemoteOptions ro;
  ro.streams = 4;
  auto client = ClientFor(*server, ro);
  ASSERT_NE(client, nullptr);
  const TestArray a = SmoothArray({DType::kFloat32, {500000}}, 5);
  CompressOptions o;
  o.bound = 0.01;
  o.frame_elements = 1 << 14;
  auto local = Compress(a.spec, a.bytes, o);
  ASSERT_TRUE(local.ok());
  uint64_t seen = 0;
  auto sunk = client->Decompress(
      *local, [](const client::RemoteArrayHeader&) { return absl::OkStatus(); },
      [&](absl::Span<const uint8_t> bytes) -> absl::Status {
        seen += bytes.size();
        if (seen > a.bytes.size() / 3) return absl::DataLossError("the disk is full");
        return absl::OkStatus();
      });
  EXPECT_EQ(sunk.status().code(), absl::StatusCode::kDataLoss) << sunk.status();
  // A destination of the wrong size is the caller's error, before any data.
  std::vector<uint8_t> small(16);
  auto into = client->DecompressInto(
      *local, [&](const client::RemoteArrayHeader&) -> absl::StatusOr<absl::Span<uint8_t>> {
        return absl::MakeSpan(small);
      });
  EXPECT_EQ(into.status().code(), absl::StatusCode::kInvalidArgument) << into.status();
  EXPECT_TRUE(WaitQuiet(*server));
}

TEST(SplitCalls, StreamsOutOfRangeAreRefused) {
  for (int streams : {-1, client::kMaxStreams + 1}) {
    client::RemoteOptions ro;
    ro.server = "127.0.0.1:1";
    ro.streams = streams;
    EXPECT_EQ(client::RemoteClient::Connect(ro).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace ebzip::testing
