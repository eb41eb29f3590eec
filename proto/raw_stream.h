// A client's bidirectional stream of raw byte buffers on any method: a call
// opened without generated stubs, whose bulk bytes skip protobuf
// (proto/payload.h). The C++ client opens the service's streaming methods
// this way, and the benchmarks their own.
#ifndef EBZIP_PROTO_RAW_STREAM_H_
#define EBZIP_PROTO_RAW_STREAM_H_

#include <memory>

#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/impl/codegen/sync_stream.h"
#include "grpcpp/support/byte_buffer.h"

namespace ebzip {

using RawStream = grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>;

// `method` ("/package.Service/Method") must outlive the call: gRPC keeps a
// pointer to it. A string literal does.
inline std::unique_ptr<RawStream> OpenRawStream(grpc::Channel& channel, const char* method,
                                                grpc::ClientContext* context) {
  return std::unique_ptr<RawStream>(
      grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, grpc::ByteBuffer>::Create(
          &channel, grpc::internal::RpcMethod(method, grpc::internal::RpcMethod::BIDI_STREAMING),
          context));
}

}  // namespace ebzip

#endif  // EBZIP_PROTO_RAW_STREAM_H_
