#include "server/compressor_service.h"

#include "codec/format.h"
#include "server/compress_call.h"
#include "server/decompress_call.h"

namespace ebzip::server {

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* CompressorService::Compress(
    grpc::CallbackServerContext* context) {
  return NewCompressCall(env_, context);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* CompressorService::Decompress(
    grpc::CallbackServerContext* context) {
  return NewDecompressCall(env_, context);
}

grpc::ServerUnaryReactor* CompressorService::GetServerInfo(grpc::CallbackServerContext* context,
                                                           const v1::GetServerInfoRequest*,
                                                           v1::ServerInfo* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status s = env_.Admit(*context); !s.ok()) {
    reactor->Finish(ToGrpc(s));
    return reactor;
  }
  response->set_version(version_);
  response->set_backend(env_.backend.name());
  for (const std::string& d : env_.backend.devices()) response->add_devices(d);
  response->set_max_request_bytes(env_.limits.max_request_bytes);
  response->set_max_queued_bytes(env_.admission.limit());
  response->set_max_output_bytes(env_.limits.max_output_bytes);
  response->set_format_version(format::kVersion);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace ebzip::server
