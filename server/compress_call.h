// Compressor.Compress: a header, the array's bytes, then the archive and a
// summary back (docs/design.md §4).
#ifndef EBZIP_SERVER_COMPRESS_CALL_H_
#define EBZIP_SERVER_COMPRESS_CALL_H_

#include "ebzip/v1/ebzip.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "server/call_env.h"

namespace ebzip::server {

// Messages are v1::CompressRequest and CompressResponse, as gRPC byte buffers
// (streaming_call.h).
grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* NewCompressCall(
    CallEnv& env, grpc::CallbackServerContext* context);

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_COMPRESS_CALL_H_
