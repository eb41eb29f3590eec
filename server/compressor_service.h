// The ebzip.v1.Compressor service on gRPC's callback API: each call is a
// reactor (compress_call.h, decompress_call.h) sharing one CallEnv.
#ifndef EBZIP_SERVER_COMPRESSOR_SERVICE_H_
#define EBZIP_SERVER_COMPRESSOR_SERVICE_H_

#include <string>

#include "ebzip/v1/ebzip.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "server/call_env.h"

namespace ebzip::server {

class CompressorService final : public v1::Compressor::CallbackService {
 public:
  CompressorService(CallEnv& env, std::string version) : env_(env), version_(std::move(version)) {}

  // The generated base also declares the synchronous overloads.
  using v1::Compressor::CallbackService::Compress;
  using v1::Compressor::CallbackService::Decompress;
  using v1::Compressor::CallbackService::GetServerInfo;

  grpc::ServerBidiReactor<v1::CompressRequest, v1::CompressResponse>* Compress(
      grpc::CallbackServerContext* context) override;
  grpc::ServerBidiReactor<v1::DecompressRequest, v1::DecompressResponse>* Decompress(
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
