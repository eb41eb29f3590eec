#include "server/decompress_call.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/request_parsing.h"
#include "server/streaming_call.h"

namespace ebzip::server {
namespace {

class DecompressCall final
    : public StreamingCall<v1::DecompressRequest, v1::DecompressResponse> {
 public:
  DecompressCall(CallEnv& env, grpc::CallbackServerContext* context)
      : StreamingCall(env, context, Method::kDecompress) {
    pending_->method = Method::kDecompress;
    pending_->priority = PriorityFromMetadata(*context);
    pending_->reservation = env.admission.Empty();
    Begin();
  }

 private:
  absl::Status OnMessage(const v1::DecompressRequest& message) override {
    const std::string& data = message.archive();
    count_in(data.size());
    if (data.size() > env_.limits.max_request_bytes - pending_->input.size()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the archive is larger than this server takes in one request "
                       "(--max_request_bytes ",
                       env_.limits.max_request_bytes, ")"));
    }
    // Admitted as it arrives: the archive's size is not known in advance.
    if (absl::Status s = pending_->reservation.Grow(data.size()); !s.ok()) return s;
    pending_->input.insert(pending_->input.end(), data.begin(), data.end());
    return absl::OkStatus();
  }

  absl::StatusOr<std::shared_ptr<Work>> OnEndOfInput() override {
    if (pending_->input.empty()) return absl::DataLossError("empty archive: no bytes were sent");
    auto info = ReadArchiveInfo(pending_->input);
    if (!info.ok()) return info.status();
    const uint64_t out = info->spec().num_bytes();
    if (out > env_.limits.max_request_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the array holds ", out, " bytes, more than this server returns in one "
                       "request (--max_request_bytes ",
                       env_.limits.max_request_bytes, ")"));
    }
    if (absl::Status s = pending_->reservation.Grow(out); !s.ok()) return s;
    pending_->info = *std::move(info);
    return std::move(pending_);
  }

  bool NextResponse(const Work& work, v1::DecompressResponse* message) override {
    if (!header_sent_) {
      header_sent_ = true;
      auto* h = message->mutable_header();
      *h->mutable_array() = ToProto(work.info->spec());
      h->set_abs_error_bound(work.abs_bound);
      h->set_request_id(request_id());
      h->set_backend(work.device);
      return true;
    }
    if (sent_ == work.output.size()) return false;
    const size_t n = std::min<uint64_t>(env_.limits.message_bytes, work.output.size() - sent_);
    message->set_data(work.output.data() + sent_, n);
    sent_ += n;
    count_out(n);
    return true;
  }

  std::shared_ptr<Work> pending_ = std::make_shared<Work>();  // while reading
  uint64_t sent_ = 0;
  bool header_sent_ = false;
};

}  // namespace

grpc::ServerBidiReactor<v1::DecompressRequest, v1::DecompressResponse>* NewDecompressCall(
    CallEnv& env, grpc::CallbackServerContext* context) {
  return new DecompressCall(env, context);
}

}  // namespace ebzip::server
