// gRPC's own ceiling on this host (issue #24): bulk bytes moved by streaming
// calls of raw messages between two processes, with no codec, no protobuf and
// no copy out of gRPC's buffers on either side. The service's figures are
// read against it beside the plain sockets' (transfer_limits.cc): what lies
// between the socket and this line is gRPC's, what lies below it ebzip's.
#ifndef EBZIP_BENCH_GRPC_TRANSFER_H_
#define EBZIP_BENCH_GRPC_TRANSFER_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"

namespace ebzip::bench {

enum class GrpcDirection {
  kUp,    // client to server: the way a compression's array goes
  kDown,  // server to client: the way a decompression's array comes back
};

enum class GrpcTransport { kTcp, kUnix };  // loopback TCP, or a Unix-domain socket

struct GrpcTransferPlan {
  uint64_t bytes = 0;  // per measurement, split evenly over the calls
  std::vector<GrpcTransport> transports;
  std::vector<int> connections;  // one call per connection, all at once
  int repeats = 3;
  uint64_t message_bytes = 1 << 20;  // ebzip's client and server default
};

struct GrpcRate {
  GrpcTransport transport;
  GrpcDirection direction;
  int connections = 0;
  absl::Status status;       // not OK: no rates
  std::vector<double> gbps;  // one per repetition, 1e9 bytes per second
};

// gRPC's own ceiling on many small calls (the service's small-request
// workload, ebzip_load --method both): `streams` threads, a connection each,
// each making round trips one after another, `round_trips` in all per
// repetition. A round trip is two calls with the messages of ebzip's: a
// compression (a small header, then the array's bytes up; the archive's
// bytes and a small summary down) and a decompression (the archive up; a
// small header and the array down). Each call's first message is a small
// one saying what to answer: the compression's header stands there, the
// decompression sends one small message more than ebzip's. No codec, no
// protobuf, no copy out of gRPC's buffers: what a small request spends
// beyond this is ebzip's.
struct GrpcCallPlan {
  std::vector<GrpcTransport> transports;
  int streams = 32;
  int64_t round_trips = 10000;
  uint64_t array_bytes = uint64_t{256} << 10;
  uint64_t archive_bytes = uint64_t{11} << 10;
  int repeats = 3;
};

struct GrpcCallRate {
  GrpcTransport transport;
  int streams = 0;
  absl::Status status;              // not OK: no rates
  std::vector<double> calls_per_s;  // one per repetition; two calls a round trip
};

struct GrpcLimits {
  std::vector<GrpcRate> transfers;  // for each transport and connection count: up, down
  std::vector<GrpcCallRate> calls;  // for each of the call plan's transports
};

// Forks a server process (the ebzipd side: ebzipd's message and memory
// limits; listening on loopback TCP and on a Unix-domain socket, as ebzipd
// can) and, as its client, measures both directions for each transport and
// connection count of `transfers` (each connection a channel of its own, as
// ebzip's client library opens one per part), then the calls of `calls`.
// Connections are set up before the timing starts.
// Call with no other thread running and before anything else in this process
// has used gRPC (the child forks a copy of this thread alone), once: both
// plans are measured against one server.
GrpcLimits MeasureGrpc(const GrpcTransferPlan& transfers, const GrpcCallPlan& calls);

}  // namespace ebzip::bench

#endif  // EBZIP_BENCH_GRPC_TRANSFER_H_
