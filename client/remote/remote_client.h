// The C++ client of ebzipd: compress and decompress through the service,
// streaming in both directions so memory stays bounded by the caller's
// buffers, plus server info and the standard health check. Archives are the
// same bytes the local codec writes (the CLI's --server mode builds on this).
#ifndef EBZIP_CLIENT_REMOTE_REMOTE_CLIENT_H_
#define EBZIP_CLIENT_REMOTE_REMOTE_CLIENT_H_

#include <unistd.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/numeric/int128.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "codec/archive.h"
#include "codec/region.h"
#include "codec/types.h"

namespace ebzip::v1 {
class ServerInfo;
}

namespace ebzip::client {

// The machine's physical memory in bytes (sysconf), the default limit on a
// decompressed array; UINT64_MAX where the system does not say.
// Inline: the command line asks without linking this library
// (client/cli/modules.h).
inline uint64_t PhysicalMemoryBytes() {
  constexpr uint64_t kUnknown = std::numeric_limits<uint64_t>::max();
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return kUnknown;
  const absl::uint128 bytes =
      absl::uint128(static_cast<uint64_t>(pages)) * static_cast<uint64_t>(page_size);
  return bytes > kUnknown ? kUnknown : absl::Uint128Low64(bytes);
}

// The most bytes an honest archive of `spec` compressed with `options` can
// take (FORMAT.md's section sizes at their worst, plus slack): about 2 to 3
// times the array. A Compress reply longer than this is a protocol error, so
// that a broken or hostile server cannot make a client buffer without end.
uint64_t MaxArchiveBytes(const ArraySpec& spec, const CompressOptions& options);

// Long enough for the largest array the service takes by default (4 GiB)
// over a slow link; a deadline at all so that no call waits forever.
inline constexpr absl::Duration kDefaultTimeout = absl::Seconds(300);

struct RemoteOptions {
  std::string server;           // HOST:PORT, or any gRPC target (dns:///svc:50051)
  std::string tls_ca_file;      // PEM roots; non-empty: TLS
  std::string tls_server_name;  // override the name checked in the certificate
  std::string token;            // bearer token, sent on every call when set
  // Per call, its retries included: past it the call ends DEADLINE_EXCEEDED
  // rather than waiting on a server that stopped answering. Zero (or
  // InfiniteDuration): no deadline.
  absl::Duration timeout = kDefaultTimeout;
  size_t message_bytes = size_t{1} << 20;  // payload per sent message
  // Calls one array or archive of several frames is split over, by whole
  // frames, each on a connection of its own, at once (the archive is the
  // same bytes: codec/archive_parts.h). A connection carries a few GB/s;
  // several carry several times that. 0: one per 128 MiB of array, at most
  // 8 (16 measured no faster: bench/RESULTS.md); 1: one call; at most
  // kMaxStreams. While parts arrive out of order the sink forms below hold
  // up to the array's (or archive's) bytes in memory, so they split only
  // arrays of up to a quarter of physical memory.
  int streams = 0;
  std::string request_id;                  // appears in the server's logs
  int priority = 0;
  // The largest array a Decompress may return or stream: a reply header
  // describing more is refused (RESOURCE_EXHAUSTED) before anything is
  // allocated or handed to the caller.
  uint64_t max_output_bytes = PhysicalMemoryBytes();
};

inline constexpr int kMaxStreams = 16;

struct RemoteSummary {
  uint64_t input_bytes = 0;
  uint64_t archive_bytes = 0;
  double abs_bound = 0;
  uint64_t outliers = 0;
  uint64_t verbatim = 0;
  uint64_t frames = 0;
  std::string backend;
  std::string request_id;
};

struct RemoteArrayHeader {
  ArraySpec spec;  // of the bytes sent: the array, or the region
  double abs_bound = 0;
  std::string backend;
  // The archive's whole array (set when the request had options).
  ArraySpec archive_spec;
};

// What a Decompress asks for beyond decoding an uploaded archive whole
// (ebzip.proto's DecompressOptions).
struct DecompressRequestOptions {
  // Only the region's values, in its C order; the reply's spec has the
  // region's shape (count per dimension; 0 allowed).
  std::optional<Hyperslab> region;
  // An archive on the server, relative to its --archive_root, in place of
  // the uploaded bytes (pass none).
  std::string archive_path;
  // The header alone (the whole array's spec), no values.
  bool header_only = false;

  bool any() const { return region.has_value() || !archive_path.empty() || header_only; }
};

using ByteSink = std::function<absl::Status(absl::Span<const uint8_t>)>;

class RemoteClient {
 public:
  static absl::StatusOr<std::unique_ptr<RemoteClient>> Connect(const RemoteOptions& options);
  ~RemoteClient();

  // Sends the array, hands the archive to `sink` as it arrives. A failing
  // sink cancels the call and its status is returned. A call a server
  // refuses before `sink` saw a byte runs again (retry.h). A reply that
  // breaks the protocol (more than MaxArchiveBytes, bytes after the summary,
  // a summary whose size disagrees) is INTERNAL.
  absl::StatusOr<RemoteSummary> Compress(const ArraySpec& spec, absl::Span<const uint8_t> data,
                                         const CompressOptions& options, const ByteSink& sink);
  absl::StatusOr<std::vector<uint8_t>> Compress(const ArraySpec& spec,
                                                absl::Span<const uint8_t> data,
                                                const CompressOptions& options,
                                                RemoteSummary* summary = nullptr);

  // Sends the archive; `on_header` sees the array's spec before `sink` sees
  // its bytes. A call a server refuses before `on_header` runs again.
  // The reply header is checked before `on_header` runs: an array larger
  // than max_output_bytes is RESOURCE_EXHAUSTED; a header that is no valid
  // array (dtype, 1 to 4 dimensions each >= 1, a byte count that fits 64
  // bits), data before the header, or more or fewer bytes than the header's
  // shape are INTERNAL (the server broke the protocol). More bytes fail as
  // soon as they arrive, before `sink` sees them.
  absl::StatusOr<RemoteArrayHeader> Decompress(
      absl::Span<const uint8_t> archive,
      const std::function<absl::Status(const RemoteArrayHeader&)>& on_header, const ByteSink& sink);
  // The same into memory; an allocation that fails is RESOURCE_EXHAUSTED.
  absl::StatusOr<DecompressedArray> Decompress(absl::Span<const uint8_t> archive);
  // The same into the caller's memory: `destination` sees the reply's
  // header first and returns where its array goes (exactly its bytes; a
  // NumPy array, a mapped file). The parts of a split call write their rows
  // there at once, so nothing is copied or held twice.
  using Destination =
      std::function<absl::StatusOr<absl::Span<uint8_t>>(const RemoteArrayHeader&)>;
  absl::StatusOr<RemoteArrayHeader> DecompressInto(absl::Span<const uint8_t> archive,
                                                   const Destination& destination);
  // Both with options: a region, a server-side archive, or the header
  // alone. A reply that ignores them (a server older than the options:
  // no archive_array in its header) is FAILED_PRECONDITION; one whose
  // shape is not the region's is INTERNAL.
  absl::StatusOr<RemoteArrayHeader> Decompress(
      absl::Span<const uint8_t> archive, const DecompressRequestOptions& request,
      const std::function<absl::Status(const RemoteArrayHeader&)>& on_header, const ByteSink& sink);
  absl::StatusOr<DecompressedArray> Decompress(absl::Span<const uint8_t> archive,
                                               const DecompressRequestOptions& request);

  absl::StatusOr<v1::ServerInfo> Info();
  // OK when the server (or `service`) reports SERVING; UNAVAILABLE with the
  // reported state otherwise.
  absl::Status Health(const std::string& service = "");

 private:
  struct Impl;
  // A call split into part calls by whole frames (RemoteOptions::streams).
  // Each part's bytes go to write(part, offset in the part, bytes) as they
  // arrive, from the part's own thread; done(part) follows its last byte.
  using PartWrite = std::function<absl::Status(size_t, uint64_t, absl::Span<const uint8_t>)>;
  using PartDone = std::function<absl::Status(size_t)>;
  absl::StatusOr<RemoteSummary> CompressInParts(const ArraySpec& spec,
                                                absl::Span<const uint8_t> data,
                                                const CompressOptions& options, uint64_t parts,
                                                const ByteSink& sink);
  absl::StatusOr<RemoteArrayHeader> DecompressInParts(
      absl::Span<const uint8_t> archive, const ArchiveInfo& info, uint64_t parts,
      const std::function<absl::Status(const RemoteArrayHeader&)>& on_header,
      const PartWrite& write, const PartDone& done);
  explicit RemoteClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ebzip::client

#endif  // EBZIP_CLIENT_REMOTE_REMOTE_CLIENT_H_
