// The ebzip.v1.Compressor service on gRPC's callback API: each call is a
// reactor (compress_call.h, decompress_call.h) sharing one CallEnv.
#ifndef EBZIP_SERVER_COMPRESSOR_SERVICE_H_
#define EBZIP_SERVER_COMPRESSOR_SERVICE_H_

#include <string>

#include "ebzip/v1/ebzip.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "server/call_env.h"

namespace ebzip::server {

// Compress and Decompress take gRPC's byte buffers rather than parsed
// messages, so that their bulk bytes skip protobuf's copies (payload.h).
using CompressorBase =
    v1::Compressor::WithRawCallbackMethod_Compress<v1::Compressor::WithRawCallbackMethod_Decompress<
        v1::Compressor::WithCallbackMethod_GetServerInfo<v1::Compressor::Service>>>;

class CompressorService final : public CompressorBase {
 public:
  CompressorService(CallEnv& env, std::string version) : env_(env), version_(std::move(version)) {}

  // The generated base also declares the synchronous overloads.
  using CompressorBase::Compress;
  using CompressorBase::Decompress;
  using CompressorBase::GetServerInfo;

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Compress(
      grpc::CallbackServerContext* context) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Decompress(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* context,
                                          const v1::GetServerInfoRequest* request,
                                          v1::ServerInfo* response) override;

 private:
  CallEnv& env_;
  const std::string version_;
};

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_COMPRESSOR_SERVICE_H_
