// Compressor.Decompress: an archive's bytes, then a header and the array's
// bytes back (DESIGN §4).
#ifndef EBZIP_SERVER_DECOMPRESS_CALL_H_
#define EBZIP_SERVER_DECOMPRESS_CALL_H_

#include "ebzip/v1/ebzip.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "server/call_env.h"

namespace ebzip::server {

grpc::ServerBidiReactor<v1::DecompressRequest, v1::DecompressResponse>* NewDecompressCall(
    CallEnv& env, grpc::CallbackServerContext* context);

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_DECOMPRESS_CALL_H_
