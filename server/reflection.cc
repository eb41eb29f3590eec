#include "server/reflection.h"

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "grpc/health/v1/health.pb.h"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/server_builder_option.h"
#include "grpcpp/impl/server_builder_plugin.h"
#include "grpcpp/impl/server_initializer.h"

namespace ebzip::server {
namespace {

namespace pb = google::protobuf;
using grpc::reflection::v1::FileDescriptorResponse;
using grpc::reflection::v1::ServerReflectionRequest;
using grpc::reflection::v1::ServerReflectionResponse;

class ReflectionService final : public grpc::reflection::v1::ServerReflection::Service {
 public:
  // The server's list of its services' full names, which lives as long as
  // the server (and so this service) does.
  void SetServices(const std::vector<std::string>* services) { services_ = services; }

  grpc::Status ServerReflectionInfo(
      grpc::ServerContext* /*context*/,
      grpc::ServerReaderWriter<ServerReflectionResponse, ServerReflectionRequest>* stream)
      override {
    ServerReflectionRequest request;
    while (stream->Read(&request)) {
      ServerReflectionResponse response;
      response.set_valid_host(request.host());
      *response.mutable_original_request() = request;
      if (const grpc::Status s = Answer(request, &response); !s.ok()) {
        response.mutable_error_response()->set_error_code(s.error_code());
        response.mutable_error_response()->set_error_message(s.error_message());
      }
      if (!stream->Write(response)) break;
    }
    return grpc::Status::OK;
  }

 private:
  grpc::Status Answer(const ServerReflectionRequest& request,
                      ServerReflectionResponse* response) const {
    const pb::DescriptorPool* pool = pb::DescriptorPool::generated_pool();
    switch (request.message_request_case()) {
      case ServerReflectionRequest::kListServices:
        response->mutable_list_services_response();
        if (services_ != nullptr) {
          for (const std::string& name : *services_) {
            response->mutable_list_services_response()->add_service()->set_name(name);
          }
        }
        return grpc::Status::OK;
      case ServerReflectionRequest::kFileByFilename:
        return AddFile(pool->FindFileByName(request.file_by_filename()), "file", response);
      case ServerReflectionRequest::kFileContainingSymbol:
        return AddFile(pool->FindFileContainingSymbol(request.file_containing_symbol()), "symbol",
                       response);
      case ServerReflectionRequest::kFileContainingExtension: {
        const auto& e = request.file_containing_extension();
        const pb::Descriptor* type = pool->FindMessageTypeByName(e.containing_type());
        if (type == nullptr) return NotFound("type");
        const pb::FieldDescriptor* field = pool->FindExtensionByNumber(type, e.extension_number());
        return AddFile(field != nullptr ? field->file() : nullptr, "extension", response);
      }
      case ServerReflectionRequest::kAllExtensionNumbersOfType: {
        const pb::Descriptor* type =
            pool->FindMessageTypeByName(request.all_extension_numbers_of_type());
        if (type == nullptr) return NotFound("type");
        std::vector<const pb::FieldDescriptor*> extensions;
        pool->FindAllExtensions(type, &extensions);
        auto* numbers = response->mutable_all_extension_numbers_response();
        numbers->set_base_type_name(type->full_name());
        for (const pb::FieldDescriptor* field : extensions) {
          numbers->add_extension_number(field->number());
        }
        return grpc::Status::OK;
      }
      default:
        return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "the request is not supported");
    }
  }

  static grpc::Status NotFound(const char* what) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, std::string(what) + " not found");
  }

  // The file and, depth first, every file it imports, each once: a client
  // needs them all to build the file's descriptors.
  static grpc::Status AddFile(const pb::FileDescriptor* file, const char* what,
                              ServerReflectionResponse* response) {
    if (file == nullptr) return NotFound(what);
    std::unordered_set<std::string> seen;
    AddFileOnce(*file, &seen, response->mutable_file_descriptor_response());
    return grpc::Status::OK;
  }

  static void AddFileOnce(const pb::FileDescriptor& file, std::unordered_set<std::string>* seen,
                          FileDescriptorResponse* out) {
    if (!seen->insert(file.name()).second) return;
    pb::FileDescriptorProto proto;
    file.CopyTo(&proto);
    proto.SerializeToString(out->add_file_descriptor_proto());
    for (int i = 0; i < file.dependency_count(); ++i) AddFileOnce(*file.dependency(i), seen, out);
  }

  const std::vector<std::string>* services_ = nullptr;
};

// Registers the service once the server exists, as gRPC's v1alpha plugin
// does: the server then owns it, and its list of services is complete.
class ReflectionPlugin final : public grpc::ServerBuilderPlugin {
 public:
  std::string name() override { return "ebzip_reflection_v1"; }
  void InitServer(grpc::ServerInitializer* si) override {
    si->RegisterService(service_);
    service_->SetServices(si->GetServiceList());
  }
  void Finish(grpc::ServerInitializer* /*si*/) override {}
  void ChangeArguments(const std::string& /*name*/, void* /*value*/) override {}
  // A synchronous service: the server must start its threads for it.
  bool has_sync_methods() const override { return true; }

 private:
  std::shared_ptr<ReflectionService> service_ = std::make_shared<ReflectionService>();
};

// The name gRPC's v1alpha plugin goes by (ProtoServerReflectionPlugin).
constexpr char kGrpcReflectionPlugin[] = "proto_server_reflection";

// A builder option is how one builder, rather than every builder in the
// process (InternalAddPluginFactory), gets or loses a plugin.
class ReflectionOption final : public grpc::ServerBuilderOption {
 public:
  explicit ReflectionOption(bool enabled) : enabled_(enabled) {}
  void UpdateArguments(grpc::ChannelArguments* /*args*/) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    if (enabled_) {
      plugins->push_back(std::make_unique<ReflectionPlugin>());
      return;
    }
    std::erase_if(*plugins, [](const auto& p) { return p->name() == kGrpcReflectionPlugin; });
  }

 private:
  bool enabled_;
};

}  // namespace

void ConfigureReflection(grpc::ServerBuilder& builder, bool enabled) {
  if (enabled) {
    // Idempotent; also what keeps libgrpc++_reflection linked.
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
    // gRPC's built-in health service has no protobuf descriptors of its
    // own; naming the health proto's links them in, so that reflection
    // describes grpc.health.v1.Health too.
    grpc::health::v1::HealthCheckRequest::descriptor();
  }
  builder.SetOption(std::make_unique<ReflectionOption>(enabled));
}

}  // namespace ebzip::server
