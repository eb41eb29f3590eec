// Server reflection, version 1 (grpc.reflection.v1.ServerReflection), which
// current tools (grpcurl, grpcui, Postman) ask for first. Debian 12's gRPC
// serves only v1alpha; this answers v1 the way gRPC answers v1alpha: from
// protobuf's generated descriptor pool, listing the server's services.
#ifndef EBZIP_SERVER_REFLECTION_V1_H_
#define EBZIP_SERVER_REFLECTION_V1_H_

namespace grpc {
class ServerBuilder;
}

namespace ebzip::server {

// The server that `builder` builds serves reflection v1.
void AddReflectionV1(grpc::ServerBuilder& builder);

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_REFLECTION_V1_H_
