// libFuzzer target for ebzipd at the gRPC level: one real EbzipServer in the
// process (CPU backend, limits small enough that every limit path is within
// reach), driven over loopback by a few calls per input, some at once. Each
// call is a script (grpc_fuzz_plan.h) of actions on a raw Compress or
// Decompress stream: headers with hostile fields, data of any length,
// archives made by the codec and then mutated, messages that are not valid
// protobuf (the stream is a byte-buffer one, so they reach the server as
// sent), half-closes, cancellations, manual reads and short deadlines.
//
// Beyond "no crash and no sanitizer report in the server", each input checks
// the service's contract, and aborts (a libFuzzer crash) when it is broken:
// - every call ends with a status within its deadline plus a margin;
// - the status is one the service documents for that method (UNKNOWN never);
// - an OK Compress was a complete, well-formed request, and its archive is
//   byte for byte what ebzip::Compress makes of the same array and options;
//   a complete, well-formed request the codec compresses is not refused with
//   INVALID_ARGUMENT;
// - an OK Decompress returns the header and the bytes ebzip::Decompress makes
//   of the archive sent; DATA_LOSS or UNIMPLEMENTED only for bytes the codec
//   rejects; INVALID_ARGUMENT only when a message does not parse;
// - once every call has ended, the server is idle again: no call in
//   progress, nothing queued, no byte of the admission budget held.
// INTERNAL is counted, its first messages printed and the inputs that caused
// it saved ($EBZIP_GRPC_FUZZ_FINDINGS), rather than aborting: a report at the
// end of the run says how often. EBZIP_GRPC_FUZZ_ABORT_ON_INTERNAL=1 makes it
// a crash, for reproducing one.
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "codec/archive.h"
#include "codec/crc32c.h"
#include "codec/types.h"
#include "ebzip/v1/ebzip.pb.h"
#include "google/protobuf/stubs/logging.h"
#include "grpc/support/log.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "server/log.h"
#include "server/request_parsing.h"
#include "server/server.h"
#include "tests/fuzz/archive_checksums.h"
#include "tests/fuzz/grpc_fuzz_plan.h"

namespace {

namespace v1 = ebzip::v1;
using ebzip::ArraySpec;
using ebzip::CompressOptions;
using ebzip::DType;
using ebzip::fuzz::ActionPlan;
using ebzip::fuzz::CallPlan;
using ebzip::fuzz::DimPlan;
using ebzip::fuzz::HeaderPlan;
using ebzip::fuzz::MutationPlan;
using ebzip::fuzz::Plan;
using ebzip::fuzz::RoundPlan;
using ebzip::server::EbzipServer;

// The server's limits: small, so that an input of a few kilobytes reaches
// RESOURCE_EXHAUSTED, the streamed paths' windows and multi-message replies.
// The budget holds a few of the largest arrays an input sends with the
// codec's worst-case working memory (server/cpu_codec.h), so that they are
// compressed as well as refused.
constexpr uint64_t kMaxRequestBytes = uint64_t{1} << 20;
constexpr uint64_t kMaxQueuedBytes = uint64_t{24} << 20;
constexpr size_t kStreamFrames = 2;
constexpr size_t kReplyMessageBytes = size_t{4} << 10;
constexpr uint64_t kMinFrameElements = 1024;

// What one call may send: the data of an array up to 1 MiB (a little more, so
// that "more data than the shape holds" stays reachable), in at most 64
// messages per action.
constexpr uint64_t kMaxArrayBytes = uint64_t{1} << 20;
constexpr uint64_t kMaxDataBytes = kMaxArrayBytes + ebzip::fuzz::kMaxMessageBytes;
constexpr uint64_t kMaxArchiveBytes = uint64_t{2} << 20;
constexpr size_t kMaxMessagesPerAction = 64;
// The local decode that checks a Decompress: an archive declares at most a bit
// per element (ReadArchiveInfo), so 2 MiB of archive could ask for 128 MiB;
// beyond this the reply is not checked (it cannot be OK within 2 s anyway).
constexpr uint64_t kMaxCheckedArrayBytes = uint64_t{64} << 20;

constexpr absl::Duration kMaxDeadline = absl::Seconds(2);
constexpr absl::Duration kOpenCallDeadline = absl::Milliseconds(100);  // see DeadlineOf
constexpr absl::Duration kMaxOpenCallDeadline = absl::Milliseconds(255);
// How long past its deadline a call may take to end before it counts as a
// hang. The client's own timer ends the call at the deadline; the margin
// covers a loaded machine with sanitizers (two cores shared by other builds).
constexpr absl::Duration kHangMargin = absl::Seconds(5);
// How long the server may take to let go of everything once every call has
// ended on the client's side (its reactors end on gRPC's threads, a cancelled
// work finishes on a scheduler thread). Only a leak ever waits this long.
constexpr absl::Duration kIdleWait = absl::Seconds(5);
constexpr int64_t kMaxSleepMsPerInput = 100;

constexpr char kCompressMethod[] = "/ebzip.v1.Compressor/Compress";
constexpr char kDecompressMethod[] = "/ebzip.v1.Compressor/Decompress";
constexpr char kServerInfoMethod[] = "/ebzip.v1.Compressor/GetServerInfo";
constexpr uint32_t kCompressDataField = 2;    // CompressRequest.data
constexpr uint32_t kDecompressDataField = 1;  // DecompressRequest.archive

// Where the target's own messages go: stderr as it was at start-up. The
// server logs a JSON line to stderr for every call that ends in DATA_LOSS,
// hundreds a second here, so scripts/fuzz.sh passes -close_fd_mask=2, which
// sends stderr to /dev/null once LLVMFuzzerInitialize has run (libFuzzer's
// and the sanitizers' reports go to their own copy of it).
std::FILE* g_report = stderr;
// EBZIP_GRPC_FUZZ_VERBOSE=1: a line per call, for reading what an input does.
bool g_verbose = false;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(g_report, "grpc_fuzzer: %s\n", what.c_str());
  std::fflush(g_report);
  std::abort();
}

std::string Hex(uint64_t v) { return absl::StrCat(absl::Hex(v, absl::kZeroPad16)); }

// ---------------------------------------------------------------------------
// Outcome counts, printed when the run ends.

constexpr int kCodes = 17;
std::atomic<uint64_t> g_status_counts[3][kCodes];
std::atomic<uint64_t> g_verified_ok[3];
std::atomic<uint64_t> g_internal_reported{0};
std::atomic<uint64_t> g_inputs{0};
const char* const kMethodNames[3] = {"Compress", "Decompress", "GetServerInfo"};

const char* CodeName(int code) {
  static const char* const kNames[kCodes] = {"OK",
                                             "CANCELLED",
                                             "UNKNOWN",
                                             "INVALID_ARGUMENT",
                                             "DEADLINE_EXCEEDED",
                                             "NOT_FOUND",
                                             "ALREADY_EXISTS",
                                             "PERMISSION_DENIED",
                                             "RESOURCE_EXHAUSTED",
                                             "FAILED_PRECONDITION",
                                             "ABORTED",
                                             "OUT_OF_RANGE",
                                             "UNIMPLEMENTED",
                                             "INTERNAL",
                                             "UNAVAILABLE",
                                             "DATA_LOSS",
                                             "UNAUTHENTICATED"};
  return code >= 0 && code < kCodes ? kNames[code] : "?";
}

void PrintStats() {
  std::fprintf(g_report, "grpc_fuzzer: %llu inputs; statuses by method:\n",
               static_cast<unsigned long long>(g_inputs.load()));
  for (int m = 0; m < 3; ++m) {
    std::string line;
    for (int c = 0; c < kCodes; ++c) {
      if (const uint64_t n = g_status_counts[m][c].load(); n > 0) {
        absl::StrAppend(&line, " ", CodeName(c), "=", n);
      }
    }
    std::fprintf(g_report, "grpc_fuzzer:   %s:%s (OK replies checked against the codec: %llu)\n",
                 kMethodNames[m], line.empty() ? " none" : line.c_str(),
                 static_cast<unsigned long long>(g_verified_ok[m].load()));
  }
  std::fflush(g_report);
  const uint64_t internal =
      g_status_counts[0][13] + g_status_counts[1][13] + g_status_counts[2][13];
  if (internal > 0) {
    std::fprintf(g_report,
                 "grpc_fuzzer: FINDING: %llu calls ended INTERNAL; inputs saved under "
                 "$EBZIP_GRPC_FUZZ_FINDINGS (%s)\n",
                 static_cast<unsigned long long>(internal),
                 std::getenv("EBZIP_GRPC_FUZZ_FINDINGS") ? std::getenv("EBZIP_GRPC_FUZZ_FINDINGS")
                                                         : "unset");
  }
}

// The input being run, for saving it when a call ends INTERNAL.
absl::Span<const uint8_t> g_input;

void ReportInternal(const char* method, const grpc::Status& status) {
  if (const char* abort_on = std::getenv("EBZIP_GRPC_FUZZ_ABORT_ON_INTERNAL");
      abort_on != nullptr && std::string(abort_on) == "1") {
    Fail(absl::StrCat(method, " ended INTERNAL: ", status.error_message()));
  }
  const uint64_t n = g_internal_reported.fetch_add(1);
  if (n < 20) {
    std::fprintf(g_report, "grpc_fuzzer: %s ended INTERNAL: %s\n", method,
                 status.error_message().c_str());
  }
  const char* dir = std::getenv("EBZIP_GRPC_FUZZ_FINDINGS");
  if (dir == nullptr || n >= 200) return;
  const std::string path = absl::StrCat(
      dir, "/internal-", Hex(ebzip::Crc32c(g_input.data(), g_input.size()) | g_input.size() << 32));
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(g_input.data()),
            static_cast<std::streamsize>(g_input.size()));
  if (n < 20) std::fprintf(g_report, "grpc_fuzzer:   input saved as %s\n", path.c_str());
  std::fflush(g_report);
}

// ---------------------------------------------------------------------------
// Arrays and archives.

// A smooth field, or (pattern 1) one with NaN, infinities, -0.0, subnormals,
// fill values and spikes mixed in: element i of the array.
double FieldValue(uint64_t i, int pattern, size_t element_size) {
  if (pattern == 1) {
    switch (i % 23) {
      case 3:
        return NAN;
      case 7:
        return i % 2 ? INFINITY : -INFINITY;
      case 11:
        return -0.0;
      case 13:
        return element_size == 4 ? 1e-40 : 1e-310;
      case 17:
        return -9999;
      case 19:
        return 1e30;
      default:
        break;
    }
  }
  const double x = static_cast<double>(i);
  return 10 * std::sin(0.05 * x) + 3 * std::cos(0.11 * x) + 1e-3 * x;
}

// Appends bytes [offset, offset + n) of such an array, little-endian.
void AppendField(uint64_t offset, uint64_t n, size_t element_size, int pattern, std::string* out) {
  const uint64_t end = offset + n;
  for (uint64_t e = offset / element_size; e * element_size < end; ++e) {
    uint8_t bytes[8];
    const double v = FieldValue(e, pattern, element_size);
    if (element_size == 4) {
      const float f = static_cast<float>(v);
      std::memcpy(bytes, &f, 4);
    } else {
      std::memcpy(bytes, &v, 8);
    }
    const uint64_t from = std::max(offset, e * element_size);
    const uint64_t to = std::min(end, (e + 1) * element_size);
    out->append(reinterpret_cast<const char*>(bytes) + (from - e * element_size), to - from);
  }
}

std::vector<uint8_t> SeedArchive(DType dtype, std::vector<uint64_t> shape,
                                 const CompressOptions& options, int pattern) {
  const ArraySpec spec{dtype, std::move(shape)};
  std::string data;
  AppendField(0, spec.num_bytes(), ebzip::DTypeSize(dtype), pattern, &data);
  auto archive = ebzip::Compress(
      spec, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(data.data()), data.size()),
      options);
  if (!archive.ok())
    Fail(absl::StrCat("cannot make a seed archive: ", archive.status().ToString()));
  return *std::move(archive);
}

CompressOptions Options(ebzip::BoundMode mode, double bound) {
  CompressOptions o;
  o.mode = mode;
  o.bound = bound;
  return o;
}

// The valid archives every input starts from (grpc_fuzz_plan.h's
// kSeedArchives says how many; the seed corpus refers to them by index).
std::vector<std::shared_ptr<const std::vector<uint8_t>>> MakeSeedArchives() {
  using ebzip::BoundMode;
  std::vector<std::vector<uint8_t>> seeds;
  {
    // 0: eight frames: a streamed Decompress, beyond the window of two.
    CompressOptions o = Options(BoundMode::kAbs, 1e-2);
    o.frame_elements = 128;
    o.radius = 16;
    o.chunk_symbols = 64;
    o.subsequence_bits = 32;
    o.chunk_group = 2;
    seeds.push_back(SeedArchive(DType::kFloat32, {1000}, o, 1));
  }
  {
    // 1: one frame, relative bound, fill runs.
    CompressOptions o = Options(BoundMode::kRel, 1e-3);
    o.fill_value = -9999;
    seeds.push_back(SeedArchive(DType::kFloat64, {32, 20}, o, 1));
  }
  // 2, 3: three and four dimensions; most residuals outliers in 3.
  seeds.push_back(SeedArchive(DType::kFloat32, {8, 8, 8}, Options(BoundMode::kAbs, 0.05), 0));
  {
    CompressOptions o = Options(BoundMode::kAbs, 1e-2);
    o.gap_array = false;
    o.radius = 4;
    seeds.push_back(SeedArchive(DType::kFloat64, {2, 2, 6, 6}, o, 0));
  }
  // 4: one element.
  seeds.push_back(SeedArchive(DType::kFloat32, {1}, Options(BoundMode::kAbs, 0.1), 0));
  // 5: 256 KiB of array in one frame: a reply of many messages.
  seeds.push_back(SeedArchive(DType::kFloat32, {256, 256}, Options(BoundMode::kAbs, 1e-3), 0));
  {
    // 6: 1.2 MiB in five frames: streamed, so past --max_request_bytes.
    CompressOptions o = Options(BoundMode::kAbs, 1e-2);
    o.frame_elements = 65536;
    seeds.push_back(SeedArchive(DType::kFloat32, {300000}, o, 0));
  }
  // 7: the same in one frame: refused, more than --max_request_bytes out.
  seeds.push_back(SeedArchive(DType::kFloat32, {300000}, Options(BoundMode::kAbs, 1e-2), 0));
  if (seeds.size() != ebzip::fuzz::kSeedArchives) Fail("kSeedArchives is out of date");
  std::vector<std::shared_ptr<const std::vector<uint8_t>>> out;
  for (auto& s : seeds) out.push_back(std::make_shared<const std::vector<uint8_t>>(std::move(s)));
  return out;
}

using Pool = std::vector<std::shared_ptr<const std::vector<uint8_t>>>;

// Where a mutation applies in an archive of `size` bytes (MutationPlan::pos).
size_t Position(uint32_t pos, size_t size) {
  constexpr uint32_t kFromEnd = uint32_t{1} << 31;
  if (pos & kFromEnd) return size - (pos & ~kFromEnd) % (size + 1);
  return pos % (size + 1);
}

std::vector<uint8_t> MutatedArchive(const Pool& pool, const ActionPlan& a) {
  std::vector<uint8_t> b = *pool[a.source % pool.size()];
  for (const MutationPlan& m : a.mutations) {
    const size_t pos = Position(m.pos, b.size());
    const size_t len = std::min<size_t>(m.len, b.size() - pos);
    switch (m.kind) {
      case MutationPlan::kFlipBit:
        if (pos < b.size()) b[pos] ^= static_cast<uint8_t>(1u << (m.value % 8));
        break;
      case MutationPlan::kSetByte:
        if (pos < b.size()) b[pos] = static_cast<uint8_t>(m.value);
        break;
      case MutationPlan::kTruncate:
        b.resize(pos);
        break;
      case MutationPlan::kErase:
        b.erase(b.begin() + static_cast<ptrdiff_t>(pos),
                b.begin() + static_cast<ptrdiff_t>(pos + len));
        break;
      case MutationPlan::kInsert:
        b.insert(b.begin() + static_cast<ptrdiff_t>(pos), m.bytes.begin(), m.bytes.end());
        break;
      case MutationPlan::kSplice: {
        const std::vector<uint8_t>& other = *pool[m.value % pool.size()];
        const size_t from = m.len % (other.size() + 1);
        b.resize(pos);
        b.insert(b.end(), other.begin() + static_cast<ptrdiff_t>(from), other.end());
        break;
      }
      case MutationPlan::kDuplicate: {
        // Repeated, so that an archive can outgrow --max_request_bytes.
        const std::vector<uint8_t> range(b.begin() + static_cast<ptrdiff_t>(pos),
                                         b.begin() + static_cast<ptrdiff_t>(pos + len));
        for (uint64_t i = 0; i <= m.value % 32 && b.size() + len <= kMaxArchiveBytes; ++i) {
          b.insert(b.begin() + static_cast<ptrdiff_t>(pos + len), range.begin(), range.end());
        }
        break;
      }
      case MutationPlan::kFixChecksums:
        ebzip::fuzz::FixChecksums(b.data(), b.size());
        break;
      case MutationPlan::kStoreU64: {
        const size_t at = pos / 8 * 8;
        for (size_t i = 0; i < 8 && at + i < b.size(); ++i) {
          b[at + i] = static_cast<uint8_t>(m.value >> (8 * i));
        }
        break;
      }
      default:
        break;
    }
    if (b.size() > kMaxArchiveBytes) b.resize(kMaxArchiveBytes);
  }
  return b;
}

// ---------------------------------------------------------------------------
// Messages on the wire.

void PutVarint(uint64_t v, int pad, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
  // Overlong: the same value with `pad` more bytes of zero bits.
  for (int i = 0; i < pad; ++i) {
    out->back() = static_cast<char>(out->back() | 0x80);
    out->push_back(0);
  }
}

// A length-delimited field as protobuf encodes it, optionally with overlong
// varints or a length that is off.
std::string Field(uint32_t field, std::string_view bytes, int tag_pad = 0, int length_pad = 0,
                  int64_t length_delta = 0) {
  std::string out;
  PutVarint(uint64_t{field} << 3 | 2, tag_pad, &out);
  PutVarint(static_cast<uint64_t>(static_cast<int64_t>(bytes.size()) + length_delta), length_pad,
            &out);
  out.append(bytes);
  return out;
}

double BoundValue(const HeaderPlan& h) {
  switch (h.bound) {
    case 0:
      return 1e-2;
    case 1:
      return 1e-4;
    case 2:
      return 0.5;
    case 3:
      return NAN;
    case 4:
      return -1;
    case 5:
      return 0;
    case 6:
      return INFINITY;
    case 7:
      return 1e-300;
    case 8:
      return 1e300;
    default: {
      double d;
      std::memcpy(&d, &h.bound_bits, 8);
      return d;
    }
  }
}

uint32_t SmallOrAny(uint8_t choice, uint32_t value, uint32_t small_base, uint32_t small_step) {
  return choice == 1 ? small_base + value * small_step : value;
}

uint64_t DimValue(const DimPlan& d) {
  switch (d.kind) {
    case 0:
    case 1:
      return 1 + d.value;
    case 2:
      return 0;
    default:
      return d.value;
  }
}

// The header a plan describes; *element_size and *declared_bytes say what
// data fits it (4 for a dtype that is neither, so that data still flows;
// declared_bytes saturates).
v1::CompressHeader MakeHeader(const HeaderPlan& h, size_t* element_size, uint64_t* declared_bytes) {
  v1::CompressHeader header;
  v1::ArraySpec* array = header.mutable_array();
  switch (h.dtype) {
    case 0:
      array->set_dtype(v1::FLOAT32);
      break;
    case 1:
      array->set_dtype(v1::FLOAT64);
      break;
    case 2:
      array->set_dtype(v1::DTYPE_UNSPECIFIED);
      break;
    default:
      array->set_dtype(static_cast<v1::DType>(h.dtype_raw));
      break;
  }
  *element_size = h.dtype == 1 ? 8 : 4;
  uint64_t elements = h.dims.empty() ? 0 : 1;
  for (const DimPlan& d : h.dims) {
    const uint64_t v = DimValue(d);
    array->add_shape(v);
    if (v != 0 && elements > UINT64_MAX / v) {
      elements = UINT64_MAX;
    } else {
      elements *= v;
    }
  }
  *declared_bytes = elements > UINT64_MAX / *element_size ? UINT64_MAX : elements * *element_size;

  v1::ErrorBound* bound = header.mutable_error_bound();
  switch (h.mode) {
    case 0:
      bound->set_mode(v1::ABS);
      break;
    case 1:
      bound->set_mode(v1::REL);
      break;
    case 2:
      bound->set_mode(v1::ERROR_BOUND_MODE_UNSPECIFIED);
      break;
    default:
      bound->set_mode(static_cast<v1::ErrorBoundMode>(h.mode_raw));
      break;
  }
  bound->set_value(BoundValue(h));

  v1::CompressOptions* o = header.mutable_options();
  if (h.frame_elements != 0) o->set_frame_elements(h.frame_elements_value);
  if (h.gap_array != 0) o->set_gap_array(h.gap_array == 1);
  switch (h.fill) {
    case 1:
      o->set_fill_value(-9999);
      break;
    case 2:
      o->set_fill_value(NAN);
      break;
    case 3:
      o->set_fill_value(1e300);
      break;
    case 4: {
      double d;
      std::memcpy(&d, &h.fill_bits, 8);
      o->set_fill_value(d);
      break;
    }
    default:
      break;
  }
  if (h.radius != 0) o->set_radius(SmallOrAny(h.radius, h.radius_value, 1, 1));
  if (h.chunk_symbols != 0) {
    o->set_chunk_symbols(SmallOrAny(h.chunk_symbols, h.chunk_symbols_value, 1, 1));
  }
  if (h.subsequence_bits != 0) {
    o->set_subsequence_bits(SmallOrAny(h.subsequence_bits, h.subsequence_bits_value, 32, 32));
  }
  if (h.chunk_group != 0) o->set_chunk_group(SmallOrAny(h.chunk_group, h.chunk_group_value, 1, 1));
  for (const DimPlan& b : h.block) {
    o->add_block(b.kind == 0 ? static_cast<uint32_t>(b.value + 1)
                             : static_cast<uint32_t>(b.kind == 1 ? 0 : b.value));
  }
  // Whatever bytes the input holds: invalid UTF-8 makes the message
  // unparseable, which the model below knows as well as the server does.
  header.set_request_id(std::string(h.request_id.begin(), h.request_id.end()));
  header.set_priority(h.priority);
  return header;
}

std::string HeaderMessage(const v1::CompressHeader& header) {
  v1::CompressRequest request;
  *request.mutable_header() = header;
  return request.SerializeAsString();
}

std::string RawMessage(const ActionPlan& a, uint32_t field) {
  const std::string bytes(a.bytes.begin(), a.bytes.end());
  size_t element_size;
  uint64_t declared;
  switch (a.raw_kind) {
    case 0:
      return bytes;
    case 1:
      return Field(field, bytes, a.param & 7, (a.param >> 3) & 7);
    case 2:
      return Field(field, bytes, 0, 0, static_cast<int64_t>(a.param) - 128);
    case 3: {
      const size_t cut = a.param % (bytes.size() + 1);
      return Field(field, std::string_view(bytes).substr(0, cut)) +
             Field(field, std::string_view(bytes).substr(cut));
    }
    case 4: {
      std::string unknown;
      PutVarint(15 << 3 | 0, 0, &unknown);  // field 15, a varint
      PutVarint(a.param, 0, &unknown);
      return a.param & 1 ? unknown + Field(field, bytes) : Field(field, bytes) + unknown;
    }
    case 5:
      return HeaderMessage(MakeHeader(HeaderPlan{}, &element_size, &declared)) + bytes;
    case 6:
      return std::string();
    default: {
      const std::string header =
          MakeHeader(HeaderPlan{}, &element_size, &declared).SerializeAsString();
      return a.param & 1 ? Field(2, bytes) + Field(1, header) : Field(1, header) + Field(2, bytes);
    }
  }
}

// Message size for `total` payload bytes: at most kMaxMessagesPerAction.
size_t ChunkSize(uint8_t choice, uint64_t total) {
  static constexpr size_t kSizes[8] = {65536, 4096, 1, 7, 96, 256, 1000, 16384};
  const size_t fewest =
      static_cast<size_t>((total + kMaxMessagesPerAction - 1) / kMaxMessagesPerAction);
  return std::max<size_t>({kSizes[choice % 8], fewest, 1});
}

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Valid() || !buffer.Dump(&slices).ok()) return out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

grpc::ByteBuffer ToBuffer(const std::string& bytes) {
  grpc::Slice slice(bytes.data(), bytes.size());
  return grpc::ByteBuffer(&slice, 1);
}

// Metadata values must be printable: map the input's bytes onto a safe set.
std::string MetadataValue(const std::vector<uint8_t>& bytes) {
  static constexpr char kChars[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";
  std::string out;
  for (uint8_t b : bytes) out.push_back(kChars[b % 64]);
  return out;
}

// ---------------------------------------------------------------------------
// The server.

struct Fixture {
  EbzipServer* server;  // never destroyed: libFuzzer exits with it running
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<grpc::GenericStub> stub;
  Pool seeds;
};

Fixture& TheFixture() {
  static Fixture* const fixture = [] {
    ebzip::server::ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.metrics_listen = "";
    o.backend = ebzip::server::BackendChoice::kCpu;
    o.cpu_workers = 2;
    o.max_request_bytes = kMaxRequestBytes;
    o.max_queued_bytes = kMaxQueuedBytes;
    o.stream_frames = kStreamFrames;
    o.message_bytes = kReplyMessageBytes;
    o.batching.enabled = true;
    o.batching.max_batch_bytes = uint64_t{256} << 10;
    o.batching.max_batch_requests = 8;
    o.batching.max_queue_delay = absl::Microseconds(200);
    // No ageing out of connections: a GOAWAY in the middle of a run would
    // make the calls of one input depend on when the run started.
    o.max_connection_age = absl::ZeroDuration();
    // Small frames stream within the inputs' small arrays; the option
    // limits below this are still reached (the oracle knows them).
    o.min_frame_elements = kMinFrameElements;
    // Inputs that stall reach the idle watch within their deadlines.
    o.idle_timeout = absl::Seconds(1);
    auto server = EbzipServer::Start(o);
    if (!server.ok()) Fail(absl::StrCat("cannot start ebzipd: ", server.status().ToString()));
    auto* f = new Fixture;
    f->server = server->release();
    f->channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", f->server->port()),
                                     grpc::InsecureChannelCredentials());
    f->stub = std::make_unique<grpc::GenericStub>(f->channel);
    f->seeds = MakeSeedArchives();
    return f;
  }();
  return *fixture;
}

// ---------------------------------------------------------------------------
// One streaming call, driven from a script thread.

class StreamCall final : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  enum class WriteResult { kNotSent, kOk, kFailed };

  // Starts the call; it holds a reference to itself until OnDone.
  static std::shared_ptr<StreamCall> Start(grpc::GenericStub& stub, const char* method,
                                           const CallPlan& plan, absl::Time deadline,
                                           absl::Time limit) {
    std::shared_ptr<StreamCall> call(new StreamCall(limit));
    call->self_ = call;
    call->context_.set_deadline(absl::ToChronoTime(deadline));
    if (plan.flags & CallPlan::kGzip) call->context_.set_compression_algorithm(GRPC_COMPRESS_GZIP);
    if (plan.flags & CallPlan::kRequestIdMeta) {
      call->context_.AddMetadata("ebzip-request-id", MetadataValue(plan.request_id));
    }
    if (plan.flags & CallPlan::kPriorityMeta) {
      call->context_.AddMetadata("ebzip-priority", absl::StrCat(plan.priority));
    }
    stub.PrepareBidiStreamingCall(&call->context_, method, grpc::StubOptions(), call.get());
    // Operations start from the script thread, outside reactions: the hold
    // keeps OnDone back until Finish.
    call->AddHold();
    call->StartCall();
    return call;
  }

  WriteResult Write(const std::string& message) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (broken_ || closing_ || done_) return WriteResult::kNotSent;
      writing_ = true;
    }
    out_ = ToBuffer(message);
    StartWrite(&out_);
    std::unique_lock<std::mutex> lock(mu_);
    Await(
        lock, [this] { return !writing_; }, "a write");
    if (!write_ok_) broken_ = true;
    return write_ok_ ? WriteResult::kOk : WriteResult::kFailed;
  }

  // Returns whether the half-close was started; *ok whether it completed well.
  bool HalfClose(bool* ok) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_ || broken_ || done_) return false;
      closing_ = true;
    }
    StartWritesDone();
    std::unique_lock<std::mutex> lock(mu_);
    Await(
        lock, [this] { return closed_; }, "a half-close");
    *ok = closed_ok_;
    return true;
  }

  void Cancel() { context_.TryCancel(); }

  // Starts a read unless one is in flight; with `all`, keeps reading to the
  // end of the stream from now on.
  void Read(bool all) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (all) read_all_ = true;
      if (reading_ || reads_ended_) return;
      reading_ = true;
    }
    StartRead(&in_);
  }

  // The script is done starting operations; waits for the status.
  void Finish(grpc::Status* status, std::vector<std::string>* replies) {
    RemoveHold();
    std::unique_lock<std::mutex> lock(mu_);
    Await(
        lock, [this] { return done_; }, "the call's status");
    *status = status_;
    *replies = std::move(replies_);
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    write_ok_ = ok;
    cv_.notify_all();
  }
  void OnWritesDoneDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    closed_ok_ = ok;
    cv_.notify_all();
  }
  void OnReadDone(bool ok) override {
    bool again = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      reading_ = false;
      if (ok) {
        replies_.push_back(Flatten(in_));
        in_.Clear();
        again = reading_ = read_all_;
      } else {
        reads_ended_ = true;
      }
    }
    if (again) StartRead(&in_);
  }
  void OnDone(const grpc::Status& status) override {
    std::shared_ptr<StreamCall> self;
    {
      std::lock_guard<std::mutex> lock(mu_);
      status_ = status;
      done_ = true;
      self = std::move(self_);
      cv_.notify_all();
    }
    // `self` may be the last reference: the call goes here, after the lock.
  }

 private:
  explicit StreamCall(absl::Time limit) : limit_(absl::ToChronoTime(limit)) {}

  template <class Pred>
  void Await(std::unique_lock<std::mutex>& lock, Pred done, const char* what) {
    if (!cv_.wait_until(lock, limit_, done)) {
      Fail(absl::StrCat(what, " did not complete within the call's deadline + ",
                        absl::FormatDuration(kHangMargin), " (a hang)"));
    }
  }

  const std::chrono::system_clock::time_point limit_;
  grpc::ClientContext context_;
  grpc::ByteBuffer out_;
  grpc::ByteBuffer in_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool writing_ = false, write_ok_ = true, broken_ = false;
  bool closing_ = false, closed_ = false, closed_ok_ = false;
  bool reading_ = false, read_all_ = false, reads_ended_ = false;
  bool done_ = false;
  grpc::Status status_;
  std::vector<std::string> replies_;
  std::shared_ptr<StreamCall> self_;  // until OnDone
};

// What a call sent and got, for the checks.
struct CallRecord {
  uint8_t method = CallPlan::kCompress;
  std::string request_id_meta;
  std::vector<std::string> sent;  // every message a write was started for, in order
  bool writes_ok = true;
  bool half_close_started = false;
  bool half_closed_ok = false;
  bool cancelled = false;
  grpc::Status status;
  std::vector<std::string> replies;
  uint8_t flags = 0;
  uint8_t end = 0;
  absl::Duration deadline;
  absl::Duration took;
};

// Sleeps of one input, in all.
class SleepBudget {
 public:
  void Sleep(int64_t ms) {
    const int64_t granted = std::min(ms, left_.fetch_sub(ms));
    if (granted > 0) absl::SleepFor(absl::Milliseconds(granted));
  }

 private:
  std::atomic<int64_t> left_{kMaxSleepMsPerInput};
};

absl::Duration DeadlineOf(const CallPlan& plan) {
  // A call that never half-closes always runs to its deadline, which is the
  // point of it (the server's deadline paths); they are the same at 100 ms
  // as at 2 s, and most of a run's time would otherwise go into waiting.
  if (plan.end == CallPlan::kReadOpen) {
    return plan.deadline == 0 ? kOpenCallDeadline
                              : std::min(kMaxOpenCallDeadline, absl::Milliseconds(plan.deadline));
  }
  return plan.deadline == 0 ? kMaxDeadline
                            : std::min(kMaxDeadline, absl::Milliseconds(8 * plan.deadline));
}

std::vector<ActionPlan> DefaultActions(uint8_t method) {
  std::vector<ActionPlan> actions(1);
  if (method == CallPlan::kDecompress) {
    actions[0].kind = ActionPlan::kArchive;
  } else {
    actions.resize(2);
    actions[0].kind = ActionPlan::kHeader;
    actions[1].kind = ActionPlan::kDataRest;
  }
  return actions;
}

void RunServerInfo(const CallPlan& plan, Fixture& f, CallRecord* record) {
  struct State {
    grpc::ClientContext context;
    grpc::ByteBuffer request, response;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    grpc::Status status;
  };
  auto state = std::make_shared<State>();
  const absl::Time deadline = absl::Now() + DeadlineOf(plan);
  state->context.set_deadline(absl::ToChronoTime(deadline));
  state->request = ToBuffer(v1::GetServerInfoRequest().SerializeAsString());
  f.stub->UnaryCall(&state->context, kServerInfoMethod, grpc::StubOptions(), &state->request,
                    &state->response, [state](grpc::Status status) {
                      std::lock_guard<std::mutex> lock(state->mu);
                      state->status = std::move(status);
                      state->done = true;
                      state->cv.notify_all();
                    });
  std::unique_lock<std::mutex> lock(state->mu);
  if (!state->cv.wait_until(lock, absl::ToChronoTime(deadline + kHangMargin),
                            [&] { return state->done; })) {
    Fail("GetServerInfo did not end within its deadline + margin (a hang)");
  }
  record->status = state->status;
  if (state->status.ok()) record->replies.push_back(Flatten(state->response));
}

// Runs one call's script; fills *record.
void RunCall(const CallPlan& plan, const Pool& pool, Fixture& f, SleepBudget& sleep,
             CallRecord* record) {
  record->method = plan.method;
  record->flags = plan.flags;
  record->end = plan.end;
  record->deadline = DeadlineOf(plan);
  const absl::Time start = absl::Now();
  if (plan.method == CallPlan::kServerInfo) {
    RunServerInfo(plan, f, record);
    record->took = absl::Now() - start;
    return;
  }
  if (plan.flags & CallPlan::kRequestIdMeta)
    record->request_id_meta = MetadataValue(plan.request_id);
  const bool compress = plan.method == CallPlan::kCompress;
  const uint32_t field = compress ? kCompressDataField : kDecompressDataField;
  const absl::Time deadline = absl::Now() + DeadlineOf(plan);
  std::shared_ptr<StreamCall> call =
      StreamCall::Start(*f.stub, compress ? kCompressMethod : kDecompressMethod, plan, deadline,
                        deadline + kHangMargin);
  if (!(plan.flags & CallPlan::kManualReading)) call->Read(/*all=*/true);

  auto send = [&](const std::string& message) {
    switch (call->Write(message)) {
      case StreamCall::WriteResult::kNotSent:
        return false;
      case StreamCall::WriteResult::kFailed:
        record->sent.push_back(message);
        record->writes_ok = false;
        return false;
      case StreamCall::WriteResult::kOk:
        record->sent.push_back(message);
        return true;
    }
    return false;
  };
  // Payload bytes in messages of `chunk`, at most kMaxMessagesPerAction.
  auto send_payload = [&](const std::string& bytes, size_t chunk) {
    for (size_t at = 0; at < bytes.size(); at += chunk) {
      if (!send(Field(field, std::string_view(bytes).substr(at, chunk)))) return;
    }
  };

  size_t element_size = 4;
  uint64_t declared = 0;
  bool have_header = false;
  uint64_t data_sent = 0;  // payload bytes
  const std::vector<ActionPlan> actions =
      plan.actions.empty() ? DefaultActions(plan.method) : plan.actions;
  for (const ActionPlan& a : actions) {
    if (record->cancelled) break;
    switch (a.kind) {
      case ActionPlan::kHeader: {
        size_t size;
        uint64_t bytes;
        const v1::CompressHeader header = MakeHeader(a.header, &size, &bytes);
        if (!have_header) {
          have_header = true;
          element_size = size;
          declared = bytes;
        }
        send(HeaderMessage(header));
        break;
      }
      case ActionPlan::kData: {
        std::string bytes;
        if (a.content == 2) {
          bytes.assign(a.bytes.begin(), a.bytes.end());
        } else {
          const uint64_t n = std::min<uint64_t>(a.length, kMaxDataBytes - data_sent);
          AppendField(data_sent, n, element_size, a.content, &bytes);
        }
        data_sent += bytes.size();
        send(Field(field, bytes));
        break;
      }
      case ActionPlan::kDataRest: {
        const uint64_t cap = kMaxArrayBytes - std::min(data_sent, kMaxArrayBytes);
        const uint64_t rest = std::min(declared - std::min(declared, data_sent), cap);
        std::string bytes;
        AppendField(data_sent, rest, element_size, a.content, &bytes);
        data_sent += rest;
        send_payload(bytes, ChunkSize(a.chunking, rest));
        break;
      }
      case ActionPlan::kArchive: {
        const std::vector<uint8_t> archive = MutatedArchive(pool, a);
        const std::string bytes(archive.begin(), archive.end());
        data_sent += bytes.size();
        send_payload(bytes, ChunkSize(a.chunking, bytes.size()));
        break;
      }
      case ActionPlan::kRaw:
        send(RawMessage(a, field));
        break;
      case ActionPlan::kHalfClose:
        record->half_close_started =
            call->HalfClose(&record->half_closed_ok) || record->half_close_started;
        break;
      case ActionPlan::kCancel:
        call->Cancel();
        record->cancelled = true;
        break;
      case ActionPlan::kReadOne:
        call->Read(/*all=*/false);
        break;
      case ActionPlan::kReadAll:
        call->Read(/*all=*/true);
        break;
      case ActionPlan::kSleep:
        sleep.Sleep(a.length);
        break;
      default:
        break;
    }
  }
  if (!record->cancelled) {
    switch (plan.end) {
      case CallPlan::kHalfCloseAndRead:
        record->half_close_started =
            call->HalfClose(&record->half_closed_ok) || record->half_close_started;
        call->Read(/*all=*/true);
        break;
      case CallPlan::kCancelAtEnd:
        call->Cancel();
        record->cancelled = true;
        break;
      default:  // kReadOpen
        call->Read(/*all=*/true);
        break;
    }
  }
  call->Finish(&record->status, &record->replies);
  record->took = absl::Now() - start;
}

// ---------------------------------------------------------------------------
// The checks.

bool SameDouble(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

std::string Describe(const CallRecord& r) {
  return absl::StrCat(kMethodNames[r.method], " (deadline ", absl::FormatDuration(r.deadline),
                      ", took ", absl::FormatDuration(r.took), ", flags ", r.flags, ", end ", r.end,
                      ", ", r.sent.size(), " messages sent", r.writes_ok ? "" : ", a write failed",
                      r.half_close_started ? ", half-closed" : "", r.cancelled ? ", cancelled" : "",
                      "; status ", CodeName(r.status.error_code()), ": \"",
                      r.status.error_message(), "\")");
}

// The codec's own decode of `archive`; OUT_OF_RANGE when it declares more
// than the check decodes.
absl::StatusOr<ebzip::DecompressedArray> DecodeLocally(const std::string& archive) {
  const auto bytes =
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(archive.data()), archive.size());
  auto info = ebzip::ReadArchiveInfo(bytes);
  if (!info.ok()) return info.status();
  if (info->spec().num_bytes() > kMaxCheckedArrayBytes) {
    return absl::OutOfRangeError("too large to check");
  }
  return ebzip::Decompress(bytes);
}

// What the server should make of a Compress call's messages.
struct CompressModel {
  bool well_formed = true;  // each message parses, one header first, no excess data
  std::string why;          // when not
  std::optional<ebzip::server::CompressRequestSpec> parsed;
  std::string header_request_id;
  std::string data;
};

CompressModel ModelCompress(const CallRecord& r) {
  CompressModel m;
  bool have_header = false;
  for (size_t i = 0; i < r.sent.size() && m.well_formed; ++i) {
    v1::CompressRequest request;
    if (!request.ParseFromString(r.sent[i])) {
      m.well_formed = false;
      m.why = absl::StrCat("message ", i, " does not parse");
    } else if (request.msg_case() == v1::CompressRequest::kHeader) {
      if (have_header) {
        m.well_formed = false;
        m.why = absl::StrCat("message ", i, " is a second header");
        break;
      }
      have_header = true;
      auto parsed = ebzip::server::ParseCompressHeader(request.header());
      if (!parsed.ok()) {
        m.well_formed = false;
        m.why = absl::StrCat("the header is invalid: ", parsed.status().message());
        break;
      }
      m.parsed = *std::move(parsed);
      m.header_request_id = request.header().request_id();
    } else if (request.msg_case() == v1::CompressRequest::kData) {
      if (!have_header) {
        m.well_formed = false;
        m.why = absl::StrCat("message ", i, " is data before the header");
        break;
      }
      m.data += request.data();
      if (m.data.size() > m.parsed->spec.num_bytes()) {
        m.well_formed = false;
        m.why = "more data than the shape holds";
      }
    } else {
      m.well_formed = false;
      m.why = absl::StrCat("message ", i, " is neither header nor data");
    }
  }
  if (m.well_formed && !have_header) {
    m.well_formed = false;
    m.why = "no header";
  }
  return m;
}

// Returns the archive of an OK Compress, checked.
std::string CheckCompressOk(const CallRecord& r, const CompressModel& m) {
  if (!m.well_formed) Fail("Compress answered OK to a request where " + m.why + ": " + Describe(r));
  if (!r.half_close_started) Fail("Compress answered OK before the half-close: " + Describe(r));
  const ArraySpec& spec = m.parsed->spec;
  if (m.data.size() != spec.num_bytes()) {
    Fail(absl::StrCat("Compress answered OK after ", m.data.size(), " bytes of data for ",
                      spec.num_bytes(), ": ", Describe(r)));
  }
  std::string archive;
  std::optional<v1::CompressSummary> summary;
  for (size_t i = 0; i < r.replies.size(); ++i) {
    v1::CompressResponse reply;
    if (!reply.ParseFromString(r.replies[i])) {
      Fail(absl::StrCat("Compress reply ", i, " does not parse: ", Describe(r)));
    }
    if (summary) Fail(absl::StrCat("Compress reply ", i, " follows the summary: ", Describe(r)));
    if (reply.msg_case() == v1::CompressResponse::kArchive) {
      archive += reply.archive();
    } else if (reply.msg_case() == v1::CompressResponse::kSummary) {
      summary = reply.summary();
    } else {
      Fail(absl::StrCat("Compress reply ", i, " is neither archive nor summary: ", Describe(r)));
    }
  }
  if (!summary) Fail("Compress answered OK without a summary: " + Describe(r));
  auto local = ebzip::Compress(
      spec, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(m.data.data()), m.data.size()),
      m.parsed->options);
  if (!local.ok()) {
    Fail(absl::StrCat("Compress answered OK where ebzip::Compress fails (",
                      local.status().ToString(), "): ", Describe(r)));
  }
  if (archive.size() != local->size() ||
      std::memcmp(archive.data(), local->data(), archive.size()) != 0) {
    Fail(absl::StrCat("Compress's archive (", archive.size(),
                      " bytes) differs from ebzip::Compress of the same array and options (",
                      local->size(), " bytes): ", Describe(r)));
  }
  auto info = ebzip::ReadArchiveInfo(*local);
  if (!info.ok()) Fail("ebzip::Compress wrote an archive ReadArchiveInfo rejects");
  if (summary->input_bytes() != spec.num_bytes() || summary->archive_bytes() != archive.size() ||
      summary->frames() != info->frames.size() ||
      !SameDouble(summary->abs_error_bound(), info->header.abs_bound)) {
    Fail(absl::StrCat("Compress's summary disagrees with its archive: ",
                      summary->ShortDebugString(), ": ", Describe(r)));
  }
  const std::string& want_id =
      m.header_request_id.empty() ? r.request_id_meta : m.header_request_id;
  if (!want_id.empty() && summary->request_id() != want_id) {
    Fail(absl::StrCat("Compress's summary has request id \"", summary->request_id(), "\", not \"",
                      want_id, "\""));
  }
  return archive;
}

void CheckCompress(const CallRecord& r, Pool* pool) {
  const CompressModel m = ModelCompress(r);
  const grpc::StatusCode code = r.status.error_code();
  if (code == grpc::StatusCode::OK) {
    const std::string archive = CheckCompressOk(r, m);
    ++g_verified_ok[CallPlan::kCompress];
    pool->push_back(std::make_shared<const std::vector<uint8_t>>(archive.begin(), archive.end()));
    return;
  }
  if (code == grpc::StatusCode::INVALID_ARGUMENT && m.well_formed && r.writes_ok &&
      r.half_closed_ok && !r.cancelled && m.data.size() == m.parsed->spec.num_bytes()) {
    // Options the codec takes and the server does not (server/limits.h).
    auto plan = ebzip::PlanArchive(m.parsed->spec, m.parsed->options,
                                   ebzip::ResolveBound(m.parsed->options, m.parsed->spec.dtype,
                                                       ebzip::ValueRange{}));
    if (plan.ok() && !ebzip::server::CheckOptionLimits(*m.parsed, *plan, kMinFrameElements).ok()) {
      return;
    }
    auto local = ebzip::Compress(
        m.parsed->spec,
        absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(m.data.data()), m.data.size()),
        m.parsed->options);
    if (local.ok()) {
      Fail(
          "Compress refused with INVALID_ARGUMENT a complete, well-formed request that "
          "ebzip::Compress compresses: " +
          Describe(r));
    }
  }
}

void CheckDecompress(const CallRecord& r) {
  // The archive: the payloads of the messages before the first that does not
  // parse (the server stops there).
  std::string archive;
  bool well_formed = true, options = false;
  for (const std::string& message : r.sent) {
    v1::DecompressRequest request;
    if (!request.ParseFromString(message)) {
      well_formed = false;
      break;
    }
    options |= request.has_options();
    archive += request.archive();
  }
  // Options (a region, an archive path, header only; the first message's
  // alone) may be refused as INVALID_ARGUMENT and change the reply: this
  // oracle is the whole archive's decode, and the region and service tests
  // check the options' answers. The call still must not crash or hang.
  if (options) return;
  const grpc::StatusCode code = r.status.error_code();
  if (code == grpc::StatusCode::INVALID_ARGUMENT && well_formed) {
    Fail("Decompress answered INVALID_ARGUMENT though every message parses: " + Describe(r));
  }
  if (code == grpc::StatusCode::DATA_LOSS || code == grpc::StatusCode::UNIMPLEMENTED) {
    // No prefix of a sound archive is corrupt, so whatever part of it the
    // server saw, it had no reason for these.
    if (DecodeLocally(archive).ok()) {
      Fail("Decompress refused an archive that ebzip::Decompress decodes: " + Describe(r));
    }
    return;
  }
  if (code != grpc::StatusCode::OK) return;

  if (!well_formed) Fail("Decompress answered OK though a message does not parse: " + Describe(r));
  if (!r.half_close_started) Fail("Decompress answered OK before the half-close: " + Describe(r));
  auto local = DecodeLocally(archive);
  if (!local.ok()) {
    if (local.status().code() == absl::StatusCode::kOutOfRange) return;
    Fail(absl::StrCat("Decompress answered OK for an archive that ebzip::Decompress rejects (",
                      local.status().ToString(), "): ", Describe(r)));
  }
  std::string data;
  for (size_t i = 0; i < r.replies.size(); ++i) {
    v1::DecompressResponse reply;
    if (!reply.ParseFromString(r.replies[i])) {
      Fail(absl::StrCat("Decompress reply ", i, " does not parse: ", Describe(r)));
    }
    if (i == 0) {
      if (reply.msg_case() != v1::DecompressResponse::kHeader) {
        Fail("Decompress's first reply is not the header: " + Describe(r));
      }
      const v1::DecompressHeader& h = reply.header();
      const ArraySpec& spec = local->spec;
      bool same =
          h.array().dtype() == (spec.dtype == DType::kFloat32 ? v1::FLOAT32 : v1::FLOAT64) &&
          static_cast<size_t>(h.array().shape_size()) == spec.shape.size();
      for (size_t d = 0; same && d < spec.shape.size(); ++d) {
        same = h.array().shape(static_cast<int>(d)) == spec.shape[d];
      }
      if (!same || !SameDouble(h.abs_error_bound(), local->abs_bound)) {
        Fail(absl::StrCat("Decompress's header ", h.ShortDebugString(),
                          " disagrees with the archive's: ", Describe(r)));
      }
      if (!r.request_id_meta.empty() && h.request_id() != r.request_id_meta) {
        Fail(absl::StrCat("Decompress's header has request id \"", h.request_id(), "\", not \"",
                          r.request_id_meta, "\""));
      }
    } else if (reply.msg_case() != v1::DecompressResponse::kData) {
      Fail(absl::StrCat("Decompress reply ", i, " is not data: ", Describe(r)));
    } else {
      data += reply.data();
    }
  }
  if (r.replies.empty()) Fail("Decompress answered OK without a header: " + Describe(r));
  if (data.size() != local->data.size() ||
      std::memcmp(data.data(), local->data.data(), data.size()) != 0) {
    Fail(absl::StrCat("Decompress returned ", data.size(),
                      " bytes that differ from ebzip::Decompress's ", local->data.size(), ": ",
                      Describe(r)));
  }
  ++g_verified_ok[CallPlan::kDecompress];
}

void CheckServerInfo(const CallRecord& r) {
  if (!r.status.ok()) return;
  v1::ServerInfo info;
  if (r.replies.size() != 1 || !info.ParseFromString(r.replies[0])) {
    Fail("GetServerInfo's reply does not parse");
  }
  if (info.max_request_bytes() != kMaxRequestBytes || info.max_queued_bytes() != kMaxQueuedBytes ||
      info.backend() != "cpu") {
    Fail("GetServerInfo disagrees with the server's options: " + info.ShortDebugString());
  }
  ++g_verified_ok[CallPlan::kServerInfo];
}

// The statuses each method may end with (ebzip.proto, the server's code,
// and gRPC's own for deadlines, cancellations and transport failures).
bool Documented(uint8_t method, grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::INTERNAL:  // counted and reported, see the top
      return true;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return method != CallPlan::kServerInfo;
    case grpc::StatusCode::DATA_LOSS:
    case grpc::StatusCode::UNIMPLEMENTED:  // an archive of another format version
      return method == CallPlan::kDecompress;
    default:
      return false;
  }
}

void Check(const CallRecord& r, Pool* pool) {
  if (g_verbose) std::fprintf(g_report, "grpc_fuzzer: %s\n", Describe(r).c_str());
  const int code = static_cast<int>(r.status.error_code());
  if (code >= 0 && code < kCodes) ++g_status_counts[r.method][code];
  if (!Documented(r.method, r.status.error_code())) {
    Fail(absl::StrCat("a call ended with a status the service does not document: ", Describe(r)));
  }
  if (r.status.error_code() == grpc::StatusCode::INTERNAL) {
    ReportInternal(kMethodNames[r.method], r.status);
  }
  switch (r.method) {
    case CallPlan::kCompress:
      CheckCompress(r, pool);
      break;
    case CallPlan::kDecompress:
      CheckDecompress(r);
      break;
    default:
      CheckServerInfo(r);
      break;
  }
}

// Protobuf complains at ERROR about every string field with invalid UTF-8
// the fuzzer sends; only a FATAL one (an abort follows) is worth a line.
void ProtobufLog(google::protobuf::LogLevel level, const char* file, int line,
                 const std::string& message) {
  if (level < google::protobuf::LOGLEVEL_FATAL) return;
  std::fprintf(g_report, "grpc_fuzzer: protobuf %s:%d: %s\n", file, line, message.c_str());
  std::fflush(g_report);
}

void GrpcLog(gpr_log_func_args* args) {
  if (args->severity < GPR_LOG_SEVERITY_ERROR) return;
  std::fprintf(g_report, "grpc_fuzzer: gRPC %s:%d: %s\n", args->file, args->line, args->message);
  std::fflush(g_report);
}

void AwaitIdle(const EbzipServer& server) {
  const absl::Time limit = absl::Now() + kIdleWait;
  while (true) {
    const uint64_t held = server.held_bytes();
    const size_t queued = server.queued_requests();
    const int calls = server.calls_in_progress();
    if (held == 0 && queued == 0 && calls == 0) return;
    if (absl::Now() > limit) {
      Fail(absl::StrCat("the server is not idle ", absl::FormatDuration(kIdleWait),
                        " after every call ended: held_bytes ", held, ", queued_requests ", queued,
                        ", calls_in_progress ", calls));
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
}

}  // namespace

// LeakSanitizer's suppressions, built in so that a rerun by hand has them
// too. gRPC hands a new thread its state (gpr_malloc'd, pointing to what
// grpc_core::Thread allocated) through pthread_create; until the thread runs,
// nothing LeakSanitizer scans points to it, and libFuzzer's leak check after
// an input that made gRPC start a thread reports it (seen once in a 30-minute
// run; a rerun of that input was clean). Only gRPC's allocations are
// suppressed: the server's own objects (calls, works, buffers) are allocated
// by its code and still reported.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:grpc_core::Thread::Thread\n"
         "leak:gpr_malloc\n";
}

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // One codec thread: the machine has few cores to spare, and the server's
  // two workers already run works in parallel.
  setenv("EBZIP_THREADS", "1", /*overwrite=*/0);
  // One JSON line per call, and protobuf's complaints about the invalid
  // UTF-8 the fuzzer sends, would drown libFuzzer's output.
  ebzip::server::SetLogQuiet(true);
  google::protobuf::SetLogHandler(ProtobufLog);
  // gRPC's errors (its assertion failures among them) would go to the
  // stderr that -close_fd_mask=2 closes.
  gpr_set_log_function(GrpcLog);
  if (const int fd = dup(STDERR_FILENO); fd >= 0) {
    if (std::FILE* f = fdopen(fd, "w"); f != nullptr) g_report = f;
  }
  if (const char* v = std::getenv("EBZIP_GRPC_FUZZ_VERBOSE"); v != nullptr && v[0] == '1') {
    g_verbose = true;
  }
  std::atexit(PrintStats);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Fixture& f = TheFixture();
  ++g_inputs;
  g_input = absl::MakeConstSpan(data, size);
  const Plan plan = ebzip::fuzz::ReadPlan(data, size);
  Pool pool = f.seeds;
  SleepBudget sleep;
  for (const RoundPlan& round : plan.rounds) {
    std::vector<CallRecord> records(round.calls.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < round.calls.size(); ++i) {
      threads.emplace_back([&, i] { RunCall(round.calls[i], pool, f, sleep, &records[i]); });
    }
    for (std::thread& t : threads) t.join();
    // Archives the round's Compress calls made join the pool for the next.
    for (const CallRecord& r : records) Check(r, &pool);
  }
  AwaitIdle(*f.server);
  return 0;
}
