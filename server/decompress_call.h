// Compressor.Decompress: an archive's bytes, then a header and the array's
// bytes back (docs/design.md §4).
#ifndef EBZIP_SERVER_DECOMPRESS_CALL_H_
#define EBZIP_SERVER_DECOMPRESS_CALL_H_

#include "ebzip/v1/ebzip.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "server/call_env.h"

namespace ebzip::server {

// Messages are v1::DecompressRequest and DecompressResponse, as gRPC byte buffers
// (streaming_call.h).
grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* NewDecompressCall(
    CallEnv& env, grpc::CallbackServerContext* context);

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_DECOMPRESS_CALL_H_
