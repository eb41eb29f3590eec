#include "server/compress_call.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/request_parsing.h"
#include "server/streaming_call.h"

namespace ebzip::server {
namespace {

class CompressCall final : public StreamingCall<v1::CompressRequest, v1::CompressResponse> {
 public:
  CompressCall(CallEnv& env, grpc::CallbackServerContext* context)
      : StreamingCall(env, context, Method::kCompress) {
    Begin();
  }

 private:
  absl::Status OnMessage(const v1::CompressRequest& message) override {
    switch (message.msg_case()) {
      case v1::CompressRequest::kHeader:
        return OnHeader(message.header());
      case v1::CompressRequest::kData: {
        if (pending_ == nullptr) {
          return absl::InvalidArgumentError("data before the header: send the header first");
        }
        const std::string& data = message.data();
        count_in(data.size());
        const uint64_t need = pending_->spec.num_bytes();
        if (data.size() > need - pending_->input.size()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "more data than the header's shape ", ShapeToString(pending_->spec.shape), " of ",
              DTypeName(pending_->spec.dtype), " holds (", need, " bytes)"));
        }
        pending_->input.insert(pending_->input.end(), data.begin(), data.end());
        return absl::OkStatus();
      }
      default:
        return absl::InvalidArgumentError("a CompressRequest with neither header nor data");
    }
  }

  absl::Status OnHeader(const v1::CompressHeader& header) {
    if (pending_ != nullptr) return absl::InvalidArgumentError("a second header");
    auto parsed = ParseCompressHeader(header);
    if (!parsed.ok()) return parsed.status();
    if (!header.request_id().empty()) set_request_id(header.request_id());
    const uint64_t bytes = parsed->spec.num_bytes();
    if (bytes > env_.limits.max_request_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the array holds ", bytes, " bytes, more than this server takes in one "
                       "request (--max_request_bytes ", env_.limits.max_request_bytes, ")"));
    }
    auto work = std::make_shared<Work>();
    work->reservation = env_.admission.Empty();
    // Admitted now, before a byte of data arrives: a full server says so at
    // once instead of after the upload.
    if (absl::Status s = work->reservation.Grow(bytes); !s.ok()) return s;
    work->method = Method::kCompress;
    work->priority = header.priority();
    work->spec = std::move(parsed->spec);
    work->options = std::move(parsed->options);
    work->input.reserve(bytes);
    pending_ = std::move(work);
    return absl::OkStatus();
  }

  absl::StatusOr<std::shared_ptr<Work>> OnEndOfInput() override {
    if (pending_ == nullptr) return absl::InvalidArgumentError("the stream ended before a header");
    const uint64_t need = pending_->spec.num_bytes();
    if (pending_->input.size() != need) {
      return absl::InvalidArgumentError(absl::StrCat(
          "received ", pending_->input.size(), " bytes of data, but shape ",
          ShapeToString(pending_->spec.shape), " of ", DTypeName(pending_->spec.dtype), " needs ",
          need));
    }
    return std::move(pending_);
  }

  void OnSuccess(const Work& work) override {
    if (!work.output.empty()) {
      env_.metrics.Ratio(static_cast<double>(work.spec.num_bytes()) /
                         static_cast<double>(work.output.size()));
    }
  }

  bool NextResponse(const Work& work, v1::CompressResponse* message) override {
    if (sent_ < work.output.size()) {
      const size_t n = std::min<uint64_t>(env_.limits.message_bytes, work.output.size() - sent_);
      message->set_archive(work.output.data() + sent_, n);
      sent_ += n;
      count_out(n);
      return true;
    }
    if (summary_sent_) return false;
    summary_sent_ = true;
    auto* s = message->mutable_summary();
    s->set_input_bytes(work.spec.num_bytes());
    s->set_archive_bytes(work.output.size());
    s->set_abs_error_bound(work.abs_bound);
    s->set_outliers(work.outliers);
    s->set_verbatim(work.verbatim);
    s->set_fill_runs(work.fill_runs);
    s->set_frames(work.frames);
    s->set_backend(work.device);
    s->set_request_id(request_id());
    s->set_queue_seconds(absl::ToDoubleSeconds(work.queue_time));
    s->set_compute_seconds(absl::ToDoubleSeconds(work.compute_time));
    return true;
  }

  std::shared_ptr<Work> pending_;  // while reading
  uint64_t sent_ = 0;
  bool summary_sent_ = false;
};

}  // namespace

grpc::ServerBidiReactor<v1::CompressRequest, v1::CompressResponse>* NewCompressCall(
    CallEnv& env, grpc::CallbackServerContext* context) {
  return new CompressCall(env, context);
}

}  // namespace ebzip::server
