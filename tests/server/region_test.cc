// Decompress with options through ebzipd on loopback: regions equal the
// same slice of a full decode byte for byte (uploaded archives and archives
// under --archive_root), malformed regions and paths are refused with the
// documented statuses, the feature is off unless configured, and the
// metrics count what regions saved. Also CompressHeader.metadata: the
// server's archive equals the local codec's with the same metadata.
#include "codec/region.h"

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "codec/archive.h"
#include "gtest/gtest.h"
#include "tests/real_fields.h"
#include "tests/region_slice.h"
#include "tests/server/test_arrays.h"
#include "tests/server/test_server.h"

namespace ebzip::testing {
namespace {

namespace fs = std::filesystem;
using client::DecompressRequestOptions;

// A temporary --archive_root, removed with the test.
class TempRoot {
 public:
  TempRoot() {
    char tmpl[] = "/tmp/ebzip_region_test_XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  ~TempRoot() { fs::remove_all(dir_); }
  std::string Put(const std::string& name, const std::vector<uint8_t>& bytes) const {
    fs::create_directories((dir_ / name).parent_path());
    std::ofstream out(dir_ / name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    return name;
  }
  fs::path dir() const { return dir_; }

 private:
  fs::path dir_;
};

server::ServerOptions RootOptions(const TempRoot& root) {
  server::ServerOptions o = TestServerOptions();
  o.archive_root = root.dir().string();
  return o;
}

Hyperslab Slab(std::vector<uint64_t> start, std::vector<uint64_t> count,
               std::vector<uint64_t> step = {}) {
  if (step.empty()) step.assign(start.size(), 1);
  return Hyperslab{std::move(start), std::move(count), std::move(step)};
}

// A random region of `shape`: empty, single elements, whole dimensions,
// edges and steps all turn up.
Hyperslab RandomRegion(const std::vector<uint64_t>& shape, std::mt19937_64& rng) {
  Hyperslab r;
  for (uint64_t extent : shape) {
    const uint64_t kind = rng() % 6;
    uint64_t start = rng() % extent, step = 1 + rng() % 4, count;
    if (kind == 0) {  // whole
      start = 0;
      step = 1;
      count = extent;
    } else if (kind == 1) {  // one element, maybe the last
      if (rng() % 2) start = extent - 1;
      count = 1;
    } else if (kind == 2 && rng() % 4 == 0) {  // empty
      count = 0;
    } else {
      const uint64_t most = (extent - 1 - start) / step + 1;
      count = 1 + rng() % most;
    }
    r.start.push_back(start);
    r.count.push_back(count);
    r.step.push_back(step);
  }
  return r;
}

void ExpectRegion(client::RemoteClient& c, absl::Span<const uint8_t> upload,
                  const std::string& path, const DecompressedArray& full, const Hyperslab& r) {
  SCOPED_TRACE(absl::StrCat(path.empty() ? "uploaded" : path, " region ", r.ToString()));
  DecompressRequestOptions o;
  o.region = r;
  o.archive_path = path;
  auto got = c.Decompress(path.empty() ? upload : absl::Span<const uint8_t>(), o);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->spec.dtype, full.spec.dtype);
  EXPECT_EQ(got->spec.shape, r.count);
  EXPECT_EQ(got->abs_bound, full.abs_bound);
  const auto want = SliceOf(full.data, full.spec.shape, r, DTypeSize(full.spec.dtype));
  EXPECT_TRUE(got->data == want) << got->data.size() << " bytes vs " << want.size();
}

TEST(ServerRegion, RandomRegionsOfRandomArraysEqualTheSliceOfAFullDecode) {
  TempRoot root;
  START_TEST_SERVER(server, RootOptions(root));
  auto c = ClientFor(*server);
  std::mt19937_64 rng(25);
  int arrays = 0;
  for (int ndim = 1; ndim <= 4; ++ndim) {
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
      for (int rep = 0; rep < 2; ++rep) {
        std::vector<uint64_t> shape;
        for (int d = 0; d < ndim; ++d) {
          const uint64_t most = ndim == 1 ? 50000 : ndim == 2 ? 300 : ndim == 3 ? 40 : 14;
          shape.push_back(1 + rng() % most);
        }
        const TestArray a = SmoothArray({dtype, shape}, rng(), /*specials=*/rep == 1);
        CompressOptions co;
        co.mode = BoundMode::kAbs;
        co.bound = 1e-2;
        co.fill_value = -1e34;
        co.frame_elements = 1024;  // many frames
        auto archive = Compress(a.spec, a.bytes, co);
        ASSERT_TRUE(archive.ok()) << archive.status();
        auto full = Decompress(*archive);
        ASSERT_TRUE(full.ok());
        const std::string path =
            root.Put(absl::StrCat("d", ndim, "/a", arrays++, ".ebz"), *archive);
        std::vector<Hyperslab> regions = {WholeArray(shape)};
        for (int i = 0; i < 6; ++i) regions.push_back(RandomRegion(shape, rng));
        for (const Hyperslab& r : regions) {
          ExpectRegion(*c, *archive, "", *full, r);
          ExpectRegion(*c, {}, path, *full, r);
        }
      }
    }
  }
  EXPECT_TRUE(WaitQuiet(*server));
}

TEST(ServerRegion, RegionsOfARealField) {
  ASSERT_LOAD_REAL_FIELD(field, "temp");
  TempRoot root;
  START_TEST_SERVER(server, RootOptions(root));
  auto c = ClientFor(*server);
  CompressOptions co;
  co.mode = BoundMode::kRel;
  co.bound = 1e-4;
  co.fill_value = field.fill_value;
  co.frame_elements = 1 << 16;
  auto archive = Compress(field.spec, field.data, co);
  ASSERT_TRUE(archive.ok());
  auto info = ReadArchiveInfo(*archive);
  ASSERT_TRUE(info.ok());
  ASSERT_GE(info->frames.size(), 2u);
  auto full = Decompress(*archive);
  ASSERT_TRUE(full.ok());
  const std::string path = root.Put("ferret/temp.ebz", *archive);
  const auto& s = field.spec.shape;
  std::vector<Hyperslab> regions = {WholeArray(s)};
  // One step along dimension 0; the last; a box in the middle; strides.
  Hyperslab first = WholeArray(s);
  first.count[0] = 1;
  regions.push_back(first);
  Hyperslab last = first;
  last.start[0] = s[0] - 1;
  regions.push_back(last);
  Hyperslab box = WholeArray(s);
  for (size_t d = 0; d < s.size(); ++d) {
    box.start[d] = s[d] / 3;
    box.count[d] = std::max<uint64_t>(1, s[d] / 4);
  }
  regions.push_back(box);
  Hyperslab strided = WholeArray(s);
  for (size_t d = 0; d < s.size(); ++d) {
    strided.step[d] = 1 + d;
    strided.count[d] = (s[d] - 1) / strided.step[d] + 1;
  }
  regions.push_back(strided);
  for (const Hyperslab& r : regions) {
    ExpectRegion(*c, *archive, "", *full, r);
    ExpectRegion(*c, {}, path, *full, r);
  }
}

TEST(ServerRegion, HeaderOnlyAndWholeArchivesByPath) {
  TempRoot root;
  START_TEST_SERVER(server, RootOptions(root));
  auto c = ClientFor(*server);
  const TestArray a = SmoothArray({DType::kFloat64, {64, 33, 7}}, 3);
  CompressOptions co;
  co.mode = BoundMode::kRel;
  co.bound = 1e-3;
  co.frame_elements = 4096;
  auto archive = Compress(a.spec, a.bytes, co);
  ASSERT_TRUE(archive.ok());
  auto full = Decompress(*archive);
  ASSERT_TRUE(full.ok());
  const std::string path = root.Put("x.ebz", *archive);

  DecompressRequestOptions header_only;
  header_only.archive_path = path;
  header_only.header_only = true;
  client::RemoteArrayHeader seen;
  uint64_t bytes = 0;
  auto h = c->Decompress(
      {}, header_only,
      [&](const client::RemoteArrayHeader& hh) {
        seen = hh;
        return absl::OkStatus();
      },
      [&](absl::Span<const uint8_t> b) {
        bytes += b.size();
        return absl::OkStatus();
      });
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->spec.shape, a.spec.shape);
  EXPECT_EQ(h->archive_spec.shape, a.spec.shape);
  EXPECT_EQ(h->abs_bound, full->abs_bound);
  EXPECT_EQ(bytes, 0u);
  // Uploaded, too.
  header_only.archive_path.clear();
  auto uploaded = c->Decompress(*archive, header_only);
  ASSERT_TRUE(uploaded.ok()) << uploaded.status();
  EXPECT_EQ(uploaded->spec.shape, a.spec.shape);
  EXPECT_TRUE(uploaded->data.empty());

  DecompressRequestOptions whole;
  whole.archive_path = path;
  auto got = c->Decompress({}, whole);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->spec.shape, a.spec.shape);
  EXPECT_TRUE(got->data == full->data);
}

absl::StatusCode RegionCode(client::RemoteClient& c, absl::Span<const uint8_t> archive,
                            const Hyperslab& r) {
  DecompressRequestOptions o;
  o.region = r;
  return c.Decompress(archive, o).status().code();
}

TEST(ServerRegion, MalformedRegionsAreInvalidArguments) {
  START_TEST_SERVER(server, TestServerOptions());
  auto c = ClientFor(*server);
  const TestArray a = SmoothArray({DType::kFloat32, {20, 30}}, 4);
  CompressOptions co;
  co.bound = 1e-3;
  auto archive = Compress(a.spec, a.bytes, co);
  ASSERT_TRUE(archive.ok());
  for (const Hyperslab& r : {Slab({0, 0}, {21, 1}), Slab({20, 0}, {1, 1}), Slab({0, 29}, {1, 2}),
                             Slab({0, 0}, {1, 1}, {0, 1}), Slab({0}, {1}),
                             Slab({0, 0, 0}, {1, 1, 1}), Slab({0, 0}, {2, 11}, {1, 3}),
                             Slab({0, 0}, {1, 1}, {1}), Slab({0, ~uint64_t{0}}, {1, 2})}) {
    EXPECT_EQ(RegionCode(*c, *archive, r), absl::StatusCode::kInvalidArgument) << r.ToString();
  }
  // A region with header_only.
  DecompressRequestOptions o;
  o.region = Slab({0, 0}, {1, 1});
  o.header_only = true;
  EXPECT_EQ(c->Decompress(*archive, o).status().code(), absl::StatusCode::kInvalidArgument);
  // Empty and edge regions are fine.
  EXPECT_EQ(RegionCode(*c, *archive, Slab({20, 0}, {0, 30})), absl::StatusCode::kOk);
  EXPECT_EQ(RegionCode(*c, *archive, Slab({19, 29}, {1, 1})), absl::StatusCode::kOk);
  EXPECT_TRUE(WaitQuiet(*server));
}

TEST(ServerRegion, OptionsOnlyInTheFirstMessage) {
  START_TEST_SERVER(server, TestServerOptions());
  auto stub = StubFor(*server);
  const TestArray a = SmoothArray({DType::kFloat32, {20, 30}}, 4);
  CompressOptions co;
  co.bound = 1e-3;
  auto archive = Compress(a.spec, a.bytes, co);
  ASSERT_TRUE(archive.ok());
  grpc::ClientContext context;
  auto stream = stub->Decompress(&context);
  v1::DecompressRequest m;
  m.set_archive(archive->data(), 100);
  ASSERT_TRUE(stream->Write(m));
  m.set_archive(archive->data() + 100, archive->size() - 100);
  m.mutable_options()->set_header_only(true);
  stream->Write(m);
  stream->WritesDone();
  v1::DecompressResponse r;
  while (stream->Read(&r)) {
  }
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(ServerRegion, ArchivePathsAreOffByDefault) {
  START_TEST_SERVER(server, TestServerOptions());
  auto c = ClientFor(*server);
  DecompressRequestOptions o;
  o.archive_path = "x.ebz";
  auto got = c->Decompress({}, o);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition) << got.status();
}

TEST(ServerRegion, PathEscapesAreRefused) {
  TempRoot root;
  const TestArray a = SmoothArray({DType::kFloat32, {20, 30}}, 5);
  CompressOptions co;
  co.bound = 1e-3;
  auto archive = Compress(a.spec, a.bytes, co);
  ASSERT_TRUE(archive.ok());
  root.Put("ok.ebz", *archive);
  // An archive outside the root, and links to it from inside.
  TempRoot outside;
  outside.Put("secret.ebz", *archive);
  fs::create_symlink(outside.dir() / "secret.ebz", root.dir() / "link.ebz");
  fs::create_symlink(outside.dir(), root.dir() / "out");
  fs::create_symlink("ok.ebz", root.dir() / "inner_link.ebz");
  fs::create_directories(root.dir() / "sub");
  ASSERT_EQ(mkfifo((root.dir() / "fifo.ebz").c_str(), 0600), 0);
  START_TEST_SERVER(server, RootOptions(root));
  auto c = ClientFor(*server);
  auto code = [&](const std::string& path) {
    DecompressRequestOptions o;
    o.archive_path = path;
    return c->Decompress({}, o).status().code();
  };
  EXPECT_EQ(code("ok.ebz"), absl::StatusCode::kOk);
  const std::string outside_rel =
      absl::StrCat("../", outside.dir().filename().string(), "/secret.ebz");
  for (const std::string& p :
       {outside_rel, std::string("sub/../../x"), (outside.dir() / "secret.ebz").string(),
        std::string("./ok.ebz"), std::string("sub//ok.ebz"), std::string("ok.ebz\0", 7)}) {
    EXPECT_EQ(code(p), absl::StatusCode::kInvalidArgument) << absl::CHexEscape(p);
  }
  for (const char* p : {"link.ebz", "out/secret.ebz", "inner_link.ebz", "sub", "fifo.ebz"}) {
    EXPECT_EQ(code(p), absl::StatusCode::kPermissionDenied) << p;
  }
  EXPECT_EQ(code("missing.ebz"), absl::StatusCode::kNotFound);
  // Bytes with a path: refused.
  DecompressRequestOptions both;
  both.archive_path = "ok.ebz";
  grpc::ClientContext context;
  auto stub = StubFor(*server);
  auto stream = stub->Decompress(&context);
  v1::DecompressRequest m;
  m.mutable_options()->set_archive_path("ok.ebz");
  m.set_archive(archive->data(), archive->size());
  stream->Write(m);
  stream->WritesDone();
  v1::DecompressResponse r;
  while (stream->Read(&r)) {
  }
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(WaitQuiet(*server));
}

TEST(ServerRegion, ArchivesByPathMeetTheLimitsAndTheirDamageIsDataLoss) {
  TempRoot root;
  const TestArray a = SmoothArray({DType::kFloat32, {200, 300}}, 6);
  CompressOptions co;
  co.bound = 1e-3;
  co.frame_elements = 4096;
  auto archive = Compress(a.spec, a.bytes, co);
  ASSERT_TRUE(archive.ok());
  root.Put("ok.ebz", *archive);
  std::vector<uint8_t> damaged = *archive;
  damaged[damaged.size() / 2] ^= 0x40;
  root.Put("damaged.ebz", damaged);
  root.Put("short.ebz", std::vector<uint8_t>(archive->begin(), archive->begin() + 50));
  root.Put("truncated.ebz", std::vector<uint8_t>(archive->begin(), archive->end() - 9));
  auto code = [&](client::RemoteClient& c, const std::string& path,
                  std::optional<Hyperslab> region = std::nullopt) {
    DecompressRequestOptions o;
    o.archive_path = path;
    o.region = region;
    return c.Decompress({}, o).status().code();
  };
  {
    START_TEST_SERVER(server, RootOptions(root));
    auto c = ClientFor(*server);
    EXPECT_EQ(code(*c, "damaged.ebz", WholeArray(a.spec.shape)), absl::StatusCode::kDataLoss);
    EXPECT_EQ(code(*c, "damaged.ebz"), absl::StatusCode::kDataLoss);
    EXPECT_EQ(code(*c, "short.ebz"), absl::StatusCode::kDataLoss);
    EXPECT_EQ(code(*c, "truncated.ebz"), absl::StatusCode::kDataLoss);
    EXPECT_TRUE(WaitQuiet(*server));
  }
  server::ServerOptions options = RootOptions(root);
  options.max_request_bytes = archive->size() - 1;
  START_TEST_SERVER(server, options);
  auto c = ClientFor(*server);
  EXPECT_EQ(code(*c, "ok.ebz"), absl::StatusCode::kResourceExhausted);
  // A region is held to what is read of the file for it: the frames it
  // meets, not the whole archive; one that meets every frame reads it all.
  EXPECT_EQ(code(*c, "ok.ebz", Slab({0, 0}, {1, 1})), absl::StatusCode::kOk);
  EXPECT_EQ(code(*c, "ok.ebz", Slab({100, 0}, {40, 300})), absl::StatusCode::kOk);
  EXPECT_EQ(code(*c, "ok.ebz", Slab({0, 0}, {200, 1})), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(WaitQuiet(*server));

  // --max_output_bytes counts the region's bytes, not the array's.
  server::ServerOptions small = RootOptions(root);
  small.max_output_bytes = 4000;
  START_TEST_SERVER(capped, small);
  auto cc = ClientFor(*capped);
  DecompressRequestOptions o;
  o.archive_path = "ok.ebz";
  EXPECT_EQ(cc->Decompress({}, o).status().code(), absl::StatusCode::kResourceExhausted);
  o.region = Slab({10, 0}, {3, 300});
  EXPECT_EQ(cc->Decompress({}, o).status().code(), absl::StatusCode::kOk);
  o.region = Slab({10, 0}, {4, 300});
  EXPECT_EQ(cc->Decompress({}, o).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(ServerRegion, MetricsCountRegionsAndTheBytesNotSent) {
  START_TEST_SERVER(server, TestServerOptions());
  auto c = ClientFor(*server);
  const TestArray a = SmoothArray({DType::kFloat32, {40, 50}}, 7);
  CompressOptions co;
  co.bound = 1e-3;
  auto archive = Compress(a.spec, a.bytes, co);
  ASSERT_TRUE(archive.ok());
  const std::string before = server->metrics().Render();
  EXPECT_EQ(MetricValue(before, "ebzip_region_requests_total"), 0);
  EXPECT_EQ(MetricValue(before, "ebzip_region_saved_bytes_total"), 0);
  DecompressRequestOptions o;
  o.region = Slab({5, 10}, {2, 3});
  ASSERT_TRUE(c->Decompress(*archive, o).ok());
  o.region = Slab({0, 0}, {40, 25}, {1, 2});
  ASSERT_TRUE(c->Decompress(*archive, o).ok());
  ASSERT_TRUE(c->Decompress(*archive).ok());  // no region: not counted
  const std::string after = server->metrics().Render();
  EXPECT_EQ(MetricValue(after, "ebzip_region_requests_total"), 2);
  EXPECT_EQ(MetricValue(after, "ebzip_region_saved_bytes_total"),
            2.0 * 40 * 50 * 4 - 2 * 3 * 4 - 40 * 25 * 4);
}

// CompressHeader.metadata: the server writes the metadata block the local
// codec writes, buffered (relative bound) and streamed (absolute, frames).
TEST(ServerMetadata, ArchivesWithMetadataEqualTheLocalCodecs) {
  START_TEST_SERVER(server, TestServerOptions());
  auto c = ClientFor(*server);
  const TestArray a = SmoothArray({DType::kFloat32, {64, 40, 30}}, 8);
  for (BoundMode mode : {BoundMode::kRel, BoundMode::kAbs}) {
    for (Predictor predictor : {Predictor::kAuto, Predictor::kLorenzo}) {
      CompressOptions co;
      co.mode = mode;
      co.bound = mode == BoundMode::kRel ? 1e-4 : 1e-2;
      co.frame_elements = 8192;
      co.predictor = predictor;
      co.lossless = predictor == Predictor::kLorenzo ? Lossless::kHuffman : Lossless::kAuto;
      co.metadata = R"({"name": "temp", "dims": ["t", "y", "x"], "attributes": {"units": "K"}})";
      auto remote = c->Compress(a.spec, a.bytes, co);
      ASSERT_TRUE(remote.ok()) << remote.status();
      auto local = Compress(a.spec, a.bytes, co);
      ASSERT_TRUE(local.ok());
      EXPECT_TRUE(*remote == *local) << "mode " << static_cast<int>(mode);
      auto info = ReadArchiveInfo(*remote);
      ASSERT_TRUE(info.ok());
      EXPECT_EQ(info->metadata, co.metadata);
    }
  }
  CompressOptions bad;
  bad.bound = 1e-3;
  bad.metadata = "[1, 2]";
  EXPECT_EQ(c->Compress(a.spec, a.bytes, bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad.metadata = "{" + std::string(format::kMaxMetadataDocument, ' ') + "}";
  EXPECT_EQ(c->Compress(a.spec, a.bytes, bad).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ebzip::testing
