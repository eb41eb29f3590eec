// HTTP/2 settings both ends of the service's connections use. Experiment
// hook: EBZIP_GRPC_TUNE="lookahead=N,bdp=0|1,frame=N,write_buffer=N" sets
// gRPC's stream lookahead, BDP probing, maximum frame size and write buffer
// on the server and in the C++ client (bench/RESULTS.md measures them).
#ifndef EBZIP_PROTO_TRANSPORT_ARGS_H_
#define EBZIP_PROTO_TRANSPORT_ARGS_H_

#include <cstdlib>
#include <functional>
#include <string>

#include "grpc/grpc.h"

namespace ebzip {

inline void ApplyTransportArgs(const std::function<void(const char*, int)>& set) {
  const char* tune = std::getenv("EBZIP_GRPC_TUNE");
  if (tune == nullptr) return;
  std::string s = tune;
  size_t at = 0;
  while (at < s.size()) {
    size_t end = s.find(',', at);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(at, end - at);
    at = end + 1;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = item.substr(0, eq);
    const int value = std::atoi(item.c_str() + eq + 1);
    if (key == "lookahead") set(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, value);
    if (key == "bdp") set(GRPC_ARG_HTTP2_BDP_PROBE, value);
    if (key == "frame") set(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, value);
    if (key == "write_buffer") set(GRPC_ARG_HTTP2_WRITE_BUFFER_SIZE, value);
  }
}

}  // namespace ebzip

#endif  // EBZIP_PROTO_TRANSPORT_ARGS_H_
