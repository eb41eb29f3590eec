// Server reflection in both versions, or in neither. Current tools (grpcurl,
// grpcui, Postman) ask for version 1 (grpc.reflection.v1.ServerReflection)
// first; Debian 12's gRPC (1.51) serves only v1alpha. Version 1 is answered
// here the way gRPC answers v1alpha: from protobuf's generated descriptor
// pool, listing the server's services.
#ifndef EBZIP_SERVER_REFLECTION_H_
#define EBZIP_SERVER_REFLECTION_H_

namespace grpc {
class ServerBuilder;
}

namespace ebzip::server {

// The server that `builder` builds serves reflection v1 and v1alpha when
// `enabled`, and neither otherwise (libgrpc++_reflection adds its v1alpha
// plugin to every builder once loaded, which is undone here).
void ConfigureReflection(grpc::ServerBuilder& builder, bool enabled);

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_REFLECTION_H_
