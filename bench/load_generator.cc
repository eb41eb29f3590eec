// ebzip_load: a load generator for ebzipd (bench/README.md).
//
// Sends float32 arrays of one size from --streams concurrent threads over
// --channels gRPC channels (each its own TCP connection) and reports
// throughput (GB/s of array bytes, requests/s) and latency percentiles per
// operation, errors by status code and the compression ratio.
//
//   --method compress     each request compresses the field
//   --method decompress   the field is compressed once (not timed); each
//                         request decompresses that archive
//   --method both         each request compresses the field, then
//                         decompresses the archive it got back
//
// Every reply is checked: the summary's byte counts, the decompressed
// header's shape and the decompressed size (--verify: every value against
// the bound too). GB/s counts array (uncompressed) bytes in both directions.
//
// Exit status: 0 when every request succeeded, 3 when some failed with a
// gRPC error (counted in the table), 1 when a reply was wrong or the server
// could not be reached, 2 on bad flags.
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/remote/remote_client.h"
#include "ebzip/v1/ebzip.grpc.pb.h"
#include "ebzip/v1/ebzip.pb.h"
#include "grpcpp/grpcpp.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "ebzipd address, HOST:PORT");
ABSL_FLAG(std::string, method, "compress", "compress, decompress or both");
ABSL_FLAG(uint64_t, array_bytes, uint64_t{256} << 10,
          "Bytes per array (float32; rounded down to whole elements)");
ABSL_FLAG(int64_t, requests, 1000, "Requests to measure (for --method both: round trips)");
ABSL_FLAG(int32_t, streams, 32, "Concurrent requests (one thread each)");
// One channel (TCP connection) per stream by default: on the 2-core
// development VM, 32 streams of 256 KiB compressions ran 12 % more requests/s
// that way than over one shared channel (1320-1362 vs 1149-1200 req/s, four
// interleaved runs each; bench/README.md).
ABSL_FLAG(int32_t, channels, 0,
          "gRPC channels, each its own TCP connection, shared by the streams round robin; "
          "0: one per stream");
ABSL_FLAG(double, rel, 1e-4, "Relative error bound (unless --abs is given)");
ABSL_FLAG(double, abs, 0, "Absolute error bound; > 0 overrides --rel");
ABSL_FLAG(std::string, field, "smooth",
          "smooth (separable sin/cos mixture plus a little noise) or noise (uniform random)");
ABSL_FLAG(std::string, token, "", "Bearer token (metadata \"authorization: Bearer TOKEN\")");
ABSL_FLAG(std::string, tls_ca, "", "PEM root certificates; given, the channel uses TLS");
ABSL_FLAG(std::string, tls_server_name, "",
          "With --tls_ca: the name to check the server's certificate against");
ABSL_FLAG(int64_t, warmup, 0, "Requests made first and not measured");
ABSL_FLAG(uint64_t, message_bytes, uint64_t{1} << 20, "Payload bytes per request message");
ABSL_FLAG(double, timeout_s, 0, "Per-request deadline in seconds; 0: none");
ABSL_FLAG(bool, verify, false, "Check every decompressed value against the bound");
ABSL_FLAG(std::string, predictor, "auto",
          "CompressOptions.predictor: auto (each frame chooses), lorenzo or interp");
ABSL_FLAG(std::string, lossless, "auto", "CompressOptions.lossless: auto, huffman, runs or run-values");
ABSL_FLAG(int32_t, parts, 0,
          "Through the C++ client library, each array split over this many calls at once, each "
          "on its own connection (RemoteOptions::streams); 0: one call per array on raw stubs");

namespace {

using ebzip::v1::Compressor;

// ---------------------------------------------------------------- the field

std::vector<uint64_t> ShapeFor(uint64_t elements) {
  constexpr uint64_t kPlane = 256 * 256;
  if (elements % kPlane == 0 && elements >= 2 * kPlane) return {elements / kPlane, 256, 256};
  if (elements % 256 == 0 && elements >= 512) return {elements / 256, 256};
  return {elements};
}

// A deterministic 3-D-ish field, generated on every core: smooth is
// A(z)B(y) + C(y)D(x) + E(x)F(z) plus noise of 1e-3 (the error bounds of
// interest sit around it); noise is uniform in [-1, 1).
std::vector<float> MakeField(const std::vector<uint64_t>& shape, bool smooth) {
  uint64_t dims[3] = {1, 1, 1};
  for (size_t i = 0; i < shape.size(); ++i) dims[3 - shape.size() + i] = shape[i];
  const uint64_t n = dims[0] * dims[1] * dims[2];
  std::vector<float> out(n);
  auto table = [](uint64_t len, double freq, double phase, bool cosine) {
    std::vector<double> t(len);
    for (uint64_t i = 0; i < len; ++i) {
      const double a = freq * static_cast<double>(i) + phase;
      t[i] = cosine ? std::cos(a) : std::sin(a);
    }
    return t;
  };
  const auto a = table(dims[0], 0.013, 0.3, false), f = table(dims[0], 0.007, 0.0, true);
  const auto b = table(dims[1], 0.021, 0.0, true), c = table(dims[1], 0.017, 1.0, false);
  const auto d = table(dims[2], 0.011, 0.0, true), e = table(dims[2], 0.009, 0.5, false);
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const uint64_t rows = dims[0] * dims[1];
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (uint64_t row = rows * t / threads; row < rows * (t + 1) / threads; ++row) {
        const uint64_t z = row / dims[1], y = row % dims[1];
        uint64_t state = 0x9E3779B97F4A7C15ull * (row + 1);
        float* p = out.data() + row * dims[2];
        for (uint64_t x = 0; x < dims[2]; ++x) {
          state ^= state << 13;
          state ^= state >> 7;
          state ^= state << 17;
          const double u = static_cast<double>(state >> 40) * 0x1p-23 - 1.0;  // [-1, 1)
          p[x] = smooth ? static_cast<float>(a[z] * b[y] + c[y] * d[x] + e[x] * f[z] + 1e-3 * u)
                        : static_cast<float>(u);
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  return out;
}

// ---------------------------------------------------------------- statistics

struct OpStats {
  uint64_t ok = 0;
  uint64_t array_bytes = 0;                  // of successful requests
  uint64_t archive_bytes = 0;                // archives received (compress) or sent (decompress)
  std::vector<double> latency_ms;            // of successful requests
  std::vector<double> queue_ms, compute_ms;  // compress: the server's, from the summaries
  std::map<std::string, uint64_t> errors;    // by status code name

  void Merge(const OpStats& o) {
    ok += o.ok;
    array_bytes += o.array_bytes;
    archive_bytes += o.archive_bytes;
    latency_ms.insert(latency_ms.end(), o.latency_ms.begin(), o.latency_ms.end());
    queue_ms.insert(queue_ms.end(), o.queue_ms.begin(), o.queue_ms.end());
    compute_ms.insert(compute_ms.end(), o.compute_ms.begin(), o.compute_ms.end());
    for (const auto& [k, v] : o.errors) errors[k] += v;
  }
  uint64_t failed() const {
    uint64_t n = 0;
    for (const auto& [k, v] : errors) n += v;
    return n;
  }
};

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::OK:
      return "OK";
    case grpc::CANCELLED:
      return "CANCELLED";
    case grpc::UNKNOWN:
      return "UNKNOWN";
    case grpc::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::ABORTED:
      return "ABORTED";
    case grpc::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::INTERNAL:
      return "INTERNAL";
    case grpc::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "?";
  }
}

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return NAN;
  // Nearest rank.
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

// ---------------------------------------------------------------- requests

constexpr uint64_t kPrebuiltBytes = uint64_t{256} << 20;

struct Config {
  std::vector<uint64_t> shape;
  const std::vector<float>* field = nullptr;
  // The field's data messages, made once and sent by every request (arrays
  // up to kPrebuiltBytes): the server, not the copy into the message, is
  // what the load measures, and the two share the host's cores.
  std::vector<ebzip::v1::CompressRequest> data_messages;
  ebzip::v1::ErrorBound bound;
  ebzip::v1::CompressOptions options;  // --predictor, --lossless
  std::string token;
  uint64_t message_bytes = 1 << 20;
  double timeout_s = 0;
  bool verify = false;
  int parts = 0;  // > 0: the client library, --parts
};

// Fatal: a reply that contradicts the request (not a gRPC error).
std::atomic<int> wrong_replies{0};
std::mutex print_mu;
void Wrong(const std::string& what) {
  wrong_replies.fetch_add(1);
  std::lock_guard<std::mutex> lock(print_mu);
  std::fprintf(stderr, "ebzip_load: WRONG REPLY: %s\n", what.c_str());
}
void NoteError(const char* op, const grpc::Status& s) {
  static std::atomic<int> printed{0};
  if (printed.fetch_add(1) < 5) {
    std::lock_guard<std::mutex> lock(print_mu);
    std::fprintf(stderr, "ebzip_load: %s failed: %s: %s\n", op, CodeName(s.error_code()),
                 s.error_message().c_str());
  }
}

void Prepare(const Config& cfg, grpc::ClientContext* ctx) {
  if (!cfg.token.empty()) ctx->AddMetadata("authorization", "Bearer " + cfg.token);
  if (cfg.timeout_s > 0) {
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::microseconds(static_cast<int64_t>(cfg.timeout_s * 1e6)));
  }
}

// One Compress call. Returns the status; on OK, `archive` holds the archive
// and `summary` the server's summary.
//
// ebzipd streams large requests (several frames) back while they arrive, so
// a large request is sent from a thread of its own while the caller reads;
// a small one is sent first, sparing the thread.
class SendWhileReading {
 public:
  SendWhileReading(uint64_t bytes, const std::function<void()>& send) {
    if (bytes > (uint64_t{8} << 20)) {
      thread_ = std::thread(send);
    } else {
      send();
    }
  }
  // Before the stream's Finish.
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  ~SendWhileReading() { Join(); }

 private:
  std::thread thread_;
};

grpc::Status Compress(Compressor::Stub& stub, const Config& cfg, std::string* archive,
                      ebzip::v1::CompressSummary* summary) {
  grpc::ClientContext ctx;
  Prepare(cfg, &ctx);
  auto stream = stub.Compress(&ctx);
  ebzip::v1::CompressRequest req;
  auto* header = req.mutable_header();
  header->mutable_array()->set_dtype(ebzip::v1::FLOAT32);
  for (uint64_t d : cfg.shape) header->mutable_array()->add_shape(d);
  *header->mutable_error_bound() = cfg.bound;
  *header->mutable_options() = cfg.options;
  const char* data = reinterpret_cast<const char*>(cfg.field->data());
  const uint64_t bytes = cfg.field->size() * sizeof(float);
  // As the client library sends (client/remote): the header waits for the
  // first data, the last data carries the half-close.
  auto send = [&] {
    bool open = stream->Write(req, grpc::WriteOptions().set_buffer_hint());
    bool closed = false;
    if (!cfg.data_messages.empty()) {
      for (size_t i = 0; open && i < cfg.data_messages.size(); ++i) {
        closed = i + 1 == cfg.data_messages.size();
        open = stream->Write(cfg.data_messages[i], closed ? grpc::WriteOptions().set_last_message()
                                                          : grpc::WriteOptions());
      }
    }
    for (uint64_t off = 0; open && cfg.data_messages.empty() && off < bytes;
         off += cfg.message_bytes) {
      req.Clear();
      const uint64_t n = std::min(cfg.message_bytes, bytes - off);
      req.set_data(data + off, n);
      closed = off + n == bytes;
      open = stream->Write(req,
                           closed ? grpc::WriteOptions().set_last_message() : grpc::WriteOptions());
    }
    if (!closed) stream->WritesDone();
  };
  SendWhileReading sender(bytes, send);
  archive->clear();
  ebzip::v1::CompressResponse resp;
  bool have_summary = false;
  summary->Clear();
  while (stream->Read(&resp)) {
    if (resp.has_summary()) {
      *summary = resp.summary();
      have_summary = true;
    } else {
      archive->append(resp.archive());
    }
  }
  sender.Join();
  grpc::Status status = stream->Finish();
  if (status.ok() && (!have_summary || summary->input_bytes() != bytes ||
                      summary->archive_bytes() != archive->size() || archive->empty())) {
    Wrong(absl::StrCat("compress: summary says ", summary->input_bytes(), " in / ",
                       summary->archive_bytes(), " out, received ", archive->size(),
                       " archive bytes for ", bytes, " sent", have_summary ? "" : " (no summary)"));
  }
  return status;
}

void Verify(const Config& cfg, double bound, const std::string& array) {
  const float* got = reinterpret_cast<const float*>(array.data());
  uint64_t bad = 0;
  for (size_t i = 0; i < cfg.field->size(); ++i) {
    const double x = (*cfg.field)[i], y = got[i];
    if (!(std::fabs(x - y) <= bound)) ++bad;
  }
  if (bad != 0) Wrong(absl::StrCat("decompress: ", bad, " values beyond the bound ", bound));
}

grpc::Status Decompress(Compressor::Stub& stub, const Config& cfg, const std::string& archive,
                        std::string* array) {
  grpc::ClientContext ctx;
  Prepare(cfg, &ctx);
  auto stream = stub.Decompress(&ctx);
  auto send = [&] {
    ebzip::v1::DecompressRequest req;
    bool open = true, closed = false;
    for (uint64_t off = 0; open && off < archive.size(); off += cfg.message_bytes) {
      const uint64_t n = std::min<uint64_t>(cfg.message_bytes, archive.size() - off);
      req.set_archive(archive.data() + off, n);
      closed = off + n == archive.size();
      open = stream->Write(req,
                           closed ? grpc::WriteOptions().set_last_message() : grpc::WriteOptions());
    }
    if (!closed) stream->WritesDone();
  };
  SendWhileReading sender(archive.size(), send);
  const uint64_t bytes = cfg.field->size() * sizeof(float);
  array->clear();
  array->reserve(bytes);  // a no-op once a reply's buffer has been swapped in below
  ebzip::v1::DecompressResponse resp;
  bool have_header = false;
  ebzip::v1::DecompressHeader header;
  while (stream->Read(&resp)) {
    if (resp.has_header()) {
      header = resp.header();
      have_header = true;
    } else if (array->empty() && resp.data().size() == bytes) {
      array->swap(*resp.mutable_data());  // small arrays come in one message
    } else {
      array->append(resp.data());
    }
  }
  sender.Join();
  grpc::Status status = stream->Finish();
  if (!status.ok()) return status;
  const std::vector<uint64_t> shape(header.array().shape().begin(), header.array().shape().end());
  if (!have_header || shape != cfg.shape || header.array().dtype() != ebzip::v1::FLOAT32 ||
      array->size() != bytes) {
    Wrong(absl::StrCat("decompress: header shape [", absl::StrJoin(shape, ","), "], ",
                       array->size(), " bytes received, want [", absl::StrJoin(cfg.shape, ","),
                       "] and ", bytes));
  } else if (cfg.verify) {
    Verify(cfg, header.abs_error_bound(), *array);
  }
  return status;
}

// The same two calls through the client library (--parts): the array split
// over several calls, the archive assembled; decompression writes the parts
// into one buffer the thread keeps, as a client reusing its array would.
ebzip::CompressOptions LibraryOptions(const Config& cfg) {
  ebzip::CompressOptions o;
  o.mode = cfg.bound.mode() == ebzip::v1::ABS ? ebzip::BoundMode::kAbs : ebzip::BoundMode::kRel;
  o.bound = cfg.bound.value();
  o.predictor = cfg.options.predictor() == ebzip::v1::LORENZO         ? ebzip::Predictor::kLorenzo
                : cfg.options.predictor() == ebzip::v1::INTERPOLATION ? ebzip::Predictor::kInterp
                                                                      : ebzip::Predictor::kAuto;
  o.lossless = cfg.options.lossless() == ebzip::v1::HUFFMAN     ? ebzip::Lossless::kHuffman
               : cfg.options.lossless() == ebzip::v1::ZERO_RUNS  ? ebzip::Lossless::kZeroRuns
               : cfg.options.lossless() == ebzip::v1::RUN_VALUES ? ebzip::Lossless::kRunValues
                                                                 : ebzip::Lossless::kAuto;
  return o;
}

grpc::Status FromAbsl(const absl::Status& s) {
  return s.ok() ? grpc::Status::OK
                : grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

grpc::Status LibraryCompress(ebzip::client::RemoteClient& client, const Config& cfg,
                             std::string* archive, ebzip::v1::CompressSummary* summary) {
  const ebzip::ArraySpec spec{ebzip::DType::kFloat32, cfg.shape};
  const auto* data = reinterpret_cast<const uint8_t*>(cfg.field->data());
  archive->clear();
  auto s = client.Compress(spec, {data, spec.num_bytes()}, LibraryOptions(cfg),
                           [&](absl::Span<const uint8_t> bytes) {
                             archive->append(reinterpret_cast<const char*>(bytes.data()),
                                             bytes.size());
                             return absl::OkStatus();
                           });
  summary->Clear();
  if (s.ok()) {
    summary->set_input_bytes(s->input_bytes);
    summary->set_archive_bytes(s->archive_bytes);
  }
  return FromAbsl(s.status());
}

grpc::Status LibraryDecompress(ebzip::client::RemoteClient& client, const Config& cfg,
                               const std::string& archive, std::string* array) {
  auto h = client.DecompressInto(
      {reinterpret_cast<const uint8_t*>(archive.data()), archive.size()},
      [&](const ebzip::client::RemoteArrayHeader& header)
          -> absl::StatusOr<absl::Span<uint8_t>> {
        array->resize(header.spec.num_bytes());  // once per thread: the buffer is kept
        return absl::MakeSpan(reinterpret_cast<uint8_t*>(array->data()), array->size());
      });
  if (h.ok() && (h->spec.shape != cfg.shape || h->spec.dtype != ebzip::DType::kFloat32)) {
    Wrong(absl::StrCat("decompress: header shape [", absl::StrJoin(h->spec.shape, ","), "]"));
  } else if (h.ok() && cfg.verify) {
    Verify(cfg, h->abs_bound, *array);
  }
  return FromAbsl(h.status());
}

// ---------------------------------------------------------------- the run

enum class Method { kCompress, kDecompress, kBoth };

struct Phase {
  OpStats compress, decompress, round_trip;
};

// Runs `count` requests from `stubs.size()` threads; returns merged stats.
// Each stream decompresses into its own buffer of `arrays`, kept across
// phases: the warm-up's requests pay for first touching it (1 GiB of fresh
// pages cost the first measured request 0.5 s otherwise), as a client
// reusing its array would.
Phase RunPhase(std::vector<std::unique_ptr<Compressor::Stub>>& stubs,
               std::vector<std::unique_ptr<ebzip::client::RemoteClient>>& clients,
               std::vector<std::string>& arrays, const Config& cfg, Method method,
               const std::string& shared_archive, int64_t count) {
  std::atomic<int64_t> next{0};
  std::vector<Phase> per(stubs.size());
  std::vector<std::thread> threads;
  const uint64_t bytes = cfg.field->size() * sizeof(float);
  for (size_t s = 0; s < stubs.size(); ++s) {
    threads.emplace_back([&, s] {
      Phase& mine = per[s];
      std::string archive;
      std::string& array = arrays[s];
      ebzip::v1::CompressSummary summary;
      while (next.fetch_add(1) < count) {
        const absl::Time t0 = absl::Now();
        const std::string* to_decompress = &shared_archive;
        if (method != Method::kDecompress) {
          grpc::Status st = cfg.parts > 0 ? LibraryCompress(*clients[s], cfg, &archive, &summary)
                                          : Compress(*stubs[s], cfg, &archive, &summary);
          const absl::Time t1 = absl::Now();
          if (!st.ok()) {
            mine.compress.errors[CodeName(st.error_code())]++;
            if (method == Method::kBoth) mine.round_trip.errors[CodeName(st.error_code())]++;
            NoteError("compress", st);
            continue;
          }
          mine.compress.ok++;
          mine.compress.array_bytes += bytes;
          mine.compress.archive_bytes += archive.size();
          mine.compress.latency_ms.push_back(absl::ToDoubleMilliseconds(t1 - t0));
          // The client library's split calls return no server timings.
          if (cfg.parts == 0) {
            mine.compress.queue_ms.push_back(summary.queue_seconds() * 1e3);
            mine.compress.compute_ms.push_back(summary.compute_seconds() * 1e3);
          }
          to_decompress = &archive;
          if (method == Method::kCompress) continue;
        }
        const absl::Time t1 = absl::Now();
        grpc::Status st = cfg.parts > 0
                              ? LibraryDecompress(*clients[s], cfg, *to_decompress, &array)
                              : Decompress(*stubs[s], cfg, *to_decompress, &array);
        const absl::Time t2 = absl::Now();
        if (!st.ok()) {
          mine.decompress.errors[CodeName(st.error_code())]++;
          if (method == Method::kBoth) mine.round_trip.errors[CodeName(st.error_code())]++;
          NoteError("decompress", st);
          continue;
        }
        mine.decompress.ok++;
        mine.decompress.array_bytes += bytes;
        mine.decompress.archive_bytes += to_decompress->size();
        mine.decompress.latency_ms.push_back(absl::ToDoubleMilliseconds(t2 - t1));
        if (method == Method::kBoth) {
          mine.round_trip.ok++;
          mine.round_trip.array_bytes += bytes;
          mine.round_trip.archive_bytes += to_decompress->size();
          mine.round_trip.latency_ms.push_back(absl::ToDoubleMilliseconds(t2 - t0));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  Phase all;
  for (const Phase& p : per) {
    all.compress.Merge(p.compress);
    all.decompress.Merge(p.decompress);
    all.round_trip.Merge(p.round_trip);
  }
  return all;
}

void PrintRow(const char* name, OpStats s, double seconds) {
  std::sort(s.latency_ms.begin(), s.latency_ms.end());
  const double gb = static_cast<double>(s.array_bytes) * 1e-9;
  std::printf("%-11s %9" PRIu64 " %7" PRIu64 " %9.3f %9.3f %8.3f %9.1f %9.2f %9.2f %9.2f %9.2f\n",
              name, s.ok, s.failed(), gb, seconds, gb / seconds,
              static_cast<double>(s.ok) / seconds, Percentile(s.latency_ms, 0.50),
              Percentile(s.latency_ms, 0.90), Percentile(s.latency_ms, 0.99),
              s.latency_ms.empty() ? NAN : s.latency_ms.back());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "ebzip_load: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "ebzip_load --server HOST:PORT [--method compress|decompress|both] [--array_bytes N]\n"
      "           [--requests N] [--streams N] [--channels N] [--rel E | --abs E] ...\n"
      "Load generator for ebzipd: throughput and latency (bench/README.md).");
  absl::ParseCommandLine(argc, argv);
  // As ebzipd does (server/main.cc): the deadlock detector Debian's Abseil
  // leaves on would serialize the client's threads.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // And the same malloc thresholds, so that the client's buffers are not
  // faulted in anew for every request either.
  if (const char* t = std::getenv("GLIBC_TUNABLES");
      t == nullptr || std::strstr(t, "glibc.malloc.") == nullptr) {
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
    mallopt(M_TRIM_THRESHOLD, 16 << 20);
  }

  const std::string method_name = absl::GetFlag(FLAGS_method);
  Method method;
  if (method_name == "compress") {
    method = Method::kCompress;
  } else if (method_name == "decompress") {
    method = Method::kDecompress;
  } else if (method_name == "both") {
    method = Method::kBoth;
  } else {
    std::fprintf(stderr, "ebzip_load: --method must be compress, decompress or both\n");
    return 2;
  }
  const std::string field_name = absl::GetFlag(FLAGS_field);
  if (field_name != "smooth" && field_name != "noise") {
    std::fprintf(stderr, "ebzip_load: --field must be smooth or noise\n");
    return 2;
  }
  const uint64_t elements = absl::GetFlag(FLAGS_array_bytes) / sizeof(float);
  const int streams = absl::GetFlag(FLAGS_streams);
  const int64_t requests = absl::GetFlag(FLAGS_requests);
  const int64_t warmup = absl::GetFlag(FLAGS_warmup);
  if (elements == 0 || streams < 1 || requests < 1 || warmup < 0 ||
      absl::GetFlag(FLAGS_message_bytes) == 0 || absl::GetFlag(FLAGS_channels) < 0) {
    std::fprintf(stderr,
                 "ebzip_load: --array_bytes >= 4, --streams >= 1, --requests >= 1, "
                 "--warmup >= 0, --message_bytes >= 1 and --channels >= 0, please\n");
    return 2;
  }
  const int channels = absl::GetFlag(FLAGS_channels) == 0
                           ? streams
                           : std::min(streams, absl::GetFlag(FLAGS_channels));

  Config cfg;
  cfg.shape = ShapeFor(elements);
  cfg.token = absl::GetFlag(FLAGS_token);
  cfg.message_bytes = absl::GetFlag(FLAGS_message_bytes);
  cfg.timeout_s = absl::GetFlag(FLAGS_timeout_s);
  cfg.verify = absl::GetFlag(FLAGS_verify);
  cfg.parts = absl::GetFlag(FLAGS_parts);
  const std::string predictor = absl::GetFlag(FLAGS_predictor);
  const std::string lossless = absl::GetFlag(FLAGS_lossless);
  if (predictor == "lorenzo") {
    cfg.options.set_predictor(ebzip::v1::LORENZO);
  } else if (predictor == "interp") {
    cfg.options.set_predictor(ebzip::v1::INTERPOLATION);
  } else if (predictor != "auto") {
    std::fprintf(stderr, "ebzip_load: --predictor must be auto, lorenzo or interp\n");
    return 2;
  }
  if (lossless == "huffman") {
    cfg.options.set_lossless(ebzip::v1::HUFFMAN);
  } else if (lossless == "runs") {
    cfg.options.set_lossless(ebzip::v1::ZERO_RUNS);
  } else if (lossless == "run-values") {
    cfg.options.set_lossless(ebzip::v1::RUN_VALUES);
  } else if (lossless != "auto") {
    std::fprintf(stderr, "ebzip_load: --lossless must be auto, huffman, runs or run-values\n");
    return 2;
  }
  if (absl::GetFlag(FLAGS_abs) > 0) {
    cfg.bound.set_mode(ebzip::v1::ABS);
    cfg.bound.set_value(absl::GetFlag(FLAGS_abs));
  } else {
    cfg.bound.set_mode(ebzip::v1::REL);
    cfg.bound.set_value(absl::GetFlag(FLAGS_rel));
  }

  const absl::Time g0 = absl::Now();
  const std::vector<float> field = MakeField(cfg.shape, field_name == "smooth");
  cfg.field = &field;
  if (const uint64_t bytes = field.size() * sizeof(float); bytes <= kPrebuiltBytes) {
    const char* data = reinterpret_cast<const char*>(field.data());
    for (uint64_t off = 0; off < bytes; off += cfg.message_bytes) {
      cfg.data_messages.emplace_back().set_data(data + off,
                                                std::min(cfg.message_bytes, bytes - off));
    }
  }
  const double gen_s = absl::ToDoubleSeconds(absl::Now() - g0);

  // Channels: separate connections (a local subchannel pool each; channels
  // with equal arguments would otherwise share one connection).
  std::shared_ptr<grpc::ChannelCredentials> creds;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  if (const std::string ca = absl::GetFlag(FLAGS_tls_ca); !ca.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ReadFile(ca);
    creds = grpc::SslCredentials(ssl);
    if (const std::string name = absl::GetFlag(FLAGS_tls_server_name); !name.empty()) {
      args.SetSslTargetNameOverride(name);
    }
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  const std::string server = absl::GetFlag(FLAGS_server);
  std::vector<std::shared_ptr<grpc::Channel>> chans;
  for (int c = 0; c < channels; ++c) {
    chans.push_back(grpc::CreateCustomChannel(server, creds, args));
    if (!chans.back()->WaitForConnected(std::chrono::system_clock::now() +
                                        std::chrono::seconds(30))) {
      std::fprintf(stderr, "ebzip_load: cannot connect to %s\n", server.c_str());
      return 1;
    }
  }
  std::vector<std::unique_ptr<Compressor::Stub>> stubs;
  for (int s = 0; s < streams; ++s) stubs.push_back(Compressor::NewStub(chans[s % channels]));
  std::vector<std::unique_ptr<ebzip::client::RemoteClient>> clients;
  for (int s = 0; cfg.parts > 0 && s < streams; ++s) {
    ebzip::client::RemoteOptions ro;
    ro.server = server;
    ro.streams = cfg.parts;
    ro.token = cfg.token;
    ro.tls_ca_file = absl::GetFlag(FLAGS_tls_ca);
    ro.tls_server_name = absl::GetFlag(FLAGS_tls_server_name);
    ro.message_bytes = cfg.message_bytes;
    ro.timeout = cfg.timeout_s > 0 ? absl::Seconds(cfg.timeout_s) : absl::ZeroDuration();
    auto c = ebzip::client::RemoteClient::Connect(ro);
    if (!c.ok()) {
      std::fprintf(stderr, "ebzip_load: %s\n", std::string(c.status().message()).c_str());
      return 1;
    }
    clients.push_back(*std::move(c));
  }

  std::string server_desc = "?";
  {
    grpc::ClientContext ctx;
    Prepare(cfg, &ctx);
    ebzip::v1::ServerInfo info;
    grpc::Status st = stubs[0]->GetServerInfo(&ctx, {}, &info);
    if (st.ok()) {
      server_desc = absl::StrCat(info.version(), ", backend ", info.backend(), " (",
                                 absl::StrJoin(info.devices(), "; "), ")");
    } else {
      server_desc = absl::StrCat("GetServerInfo failed: ", CodeName(st.error_code()));
    }
  }

  const uint64_t bytes = elements * sizeof(float);
  std::string shared_archive;
  if (method == Method::kDecompress) {
    ebzip::v1::CompressSummary summary;
    grpc::Status st = Compress(*stubs[0], cfg, &shared_archive, &summary);
    if (!st.ok()) {
      std::fprintf(stderr, "ebzip_load: the initial compress failed: %s: %s\n",
                   CodeName(st.error_code()), st.error_message().c_str());
      return 1;
    }
  }

  std::printf("ebzip_load: server %s: ebzipd %s\n", server.c_str(), server_desc.c_str());
  std::printf("ebzip_load: method %s, %" PRIu64
              " B arrays (float32 [%s], %s field, made in %.1f s), "
              "bound %s %g, %d streams over %d channels, %" PRId64 " requests after %" PRId64
              " warm-up, %" PRIu64 " B messages%s%s, predictor %s, lossless %s\n",
              method_name.c_str(), bytes, absl::StrJoin(cfg.shape, " x ").c_str(),
              field_name.c_str(), gen_s, cfg.bound.mode() == ebzip::v1::ABS ? "ABS" : "REL",
              cfg.bound.value(), streams, channels, requests, warmup, cfg.message_bytes,
              cfg.verify ? ", verified" : "",
              cfg.parts > 0 ? absl::StrCat(", client library, ", cfg.parts,
                                           " parts per array (own connections)").c_str()
                            : "",
              predictor.c_str(), lossless.c_str());
  std::fflush(stdout);

  std::vector<std::string> arrays(stubs.size());
  if (warmup > 0) RunPhase(stubs, clients, arrays, cfg, method, shared_archive, warmup);
  const absl::Time t0 = absl::Now();
  Phase p = RunPhase(stubs, clients, arrays, cfg, method, shared_archive, requests);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - t0);

  std::printf("%-11s %9s %7s %9s %9s %8s %9s %9s %9s %9s %9s\n", "op", "requests", "errors",
              "array GB", "seconds", "GB/s", "req/s", "p50 ms", "p90 ms", "p99 ms", "max ms");
  std::vector<std::pair<const char*, const OpStats*>> rows;
  if (method != Method::kDecompress) rows.push_back({"compress", &p.compress});
  if (method != Method::kCompress) rows.push_back({"decompress", &p.decompress});
  if (method == Method::kBoth) rows.push_back({"round trip", &p.round_trip});
  for (const auto& [name, s] : rows) PrintRow(name, *s, seconds);

  if (!p.compress.compute_ms.empty()) {
    auto q = p.compress.queue_ms, c = p.compress.compute_ms;
    std::sort(q.begin(), q.end());
    std::sort(c.begin(), c.end());
    std::printf(
        "compress, server side (summaries): queue p50 %.2f p99 %.2f ms, compute p50 %.2f "
        "p99 %.2f ms (a batch's time is each of its requests')\n",
        Percentile(q, 0.5), Percentile(q, 0.99), Percentile(c, 0.5), Percentile(c, 0.99));
  }
  const OpStats& ratio_from = method == Method::kDecompress ? p.decompress : p.compress;
  if (ratio_from.archive_bytes > 0) {
    std::printf(
        "ratio %.3f (array bytes / archive bytes%s)\n",
        static_cast<double>(ratio_from.array_bytes) / static_cast<double>(ratio_from.archive_bytes),
        method == Method::kDecompress ? ", of the one archive decompressed" : "");
  }
  uint64_t failed = 0;
  std::string errors;
  for (const auto& [name, s] : rows) {
    if (s == &p.round_trip) continue;
    failed += s->failed();
    for (const auto& [code, n] : s->errors) absl::StrAppend(&errors, " ", name, ":", code, "=", n);
  }
  std::printf("errors:%s\n", errors.empty() ? " none" : errors.c_str());
  if (wrong_replies.load() > 0) {
    std::printf("WRONG REPLIES: %d (see stderr)\n", wrong_replies.load());
    return 1;
  }
  return failed > 0 ? 3 : 0;
}
