// The life of a streaming call, shared by Compress and Decompress: read the
// request stream (the subclass checks each message), build a Work, queue it,
// then write the result as a stream of messages (the subclass produces
// them), and finish exactly once whatever happens in between — a bad
// message, a full server, a cancelled or vanished client, a failed codec.
//
// Thread safety: gRPC runs the reactor's callbacks on its threads, and the
// scheduler runs the work's completion on a worker thread; `mu_` orders them.
// Once the work is queued, only its completion finishes the call, so the
// reactor outlives every callback that can reach it.
#ifndef EBZIP_SERVER_STREAMING_CALL_H_
#define EBZIP_SERVER_STREAMING_CALL_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "server/call_env.h"
#include "server/work.h"

namespace ebzip::server {

template <class Request, class Response>
class StreamingCall : public grpc::ServerBidiReactor<Request, Response> {
 public:
  void OnReadDone(bool ok) override {
    if (ok) {
      absl::Status s = OnMessage(request_);
      request_.Clear();
      if (!s.ok()) {
        FinishOnce(s);
        return;
      }
      this->StartRead(&request_);
      return;
    }
    // The client closed its side, or the call is gone.
    if (context_->IsCancelled()) {
      FinishOnce(GoneStatus("the client cancelled the call"));
      return;
    }
    absl::StatusOr<std::shared_ptr<Work>> work = OnEndOfInput();
    if (!work.ok()) {
      FinishOnce(work.status());
      return;
    }
    std::shared_ptr<Work> w = *std::move(work);
    w->request_id = request_id_;
    w->deadline = Deadline(*context_);
    w->on_done = [this] { OnWorkDone(); };
    {
      absl::MutexLock lock(&mu_);
      work_ = w;
    }
    env_.scheduler.Submit(std::move(w));
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      FinishOnce(GoneStatus("the client went away while the result was sent"));
      return;
    }
    WriteNext();
  }

  void OnCancel() override {
    std::shared_ptr<Work> work;
    {
      absl::MutexLock lock(&mu_);
      work = work_;
    }
    // Queued work finishes (CANCELLED) at once; running work sees the flag.
    if (work != nullptr) env_.scheduler.Cancel(work);
  }

  void OnDone() override {
    // A cancellation can reach the reactor after a failed read has already
    // ended the call (as an incomplete upload, say); by now gRPC knows, and
    // the metrics and logs say what really happened.
    const absl::Status recorded =
        context_->IsCancelled() && !final_status_.ok() ? GoneStatus("the client cancelled the call")
                                                       : final_status_;
    env_.EndCall(method_, request_id_, peer_, recorded, absl::Now() - start_, bytes_in_,
                 bytes_out_);
    delete this;
  }

 protected:
  StreamingCall(CallEnv& env, grpc::CallbackServerContext* context, Method method)
      : env_(env), context_(context), method_(method), start_(absl::Now()) {
    env_.StartCall(method_);
    request_id_ = RequestId(*context_, "");
    peer_ = context_->peer();  // gone once the call is cancelled
  }

  // Starts the call: reads, or refuses it. Call last in the subclass's
  // constructor, once the object is complete.
  void Begin() {
    if (absl::Status s = env_.Admit(*context_); !s.ok()) {
      FinishOnce(s);
      return;
    }
    this->StartRead(&request_);
  }

  // One request message; an error ends the call with it.
  virtual absl::Status OnMessage(const Request& message) = 0;
  // The request stream ended: the work to queue, or why not.
  virtual absl::StatusOr<std::shared_ptr<Work>> OnEndOfInput() = 0;
  // After the work succeeded: fills the next response message, or returns
  // false when the result has been sent.
  virtual bool NextResponse(const Work& work, Response* message) = 0;
  // After the work succeeded, before the first response.
  virtual void OnSuccess(const Work&) {}

  void set_request_id(std::string id) { request_id_ = std::move(id); }
  const std::string& request_id() const { return request_id_; }
  void count_in(uint64_t n) {
    bytes_in_ += n;
    env_.metrics.BytesIn(method_, n);
  }
  void count_out(uint64_t n) {
    bytes_out_ += n;
    env_.metrics.BytesOut(method_, n);
  }

  CallEnv& env_;
  grpc::CallbackServerContext* const context_;

 private:
  void OnWorkDone() {
    std::shared_ptr<Work> work;
    {
      absl::MutexLock lock(&mu_);
      work = work_;
    }
    if (work->status.code() == absl::StatusCode::kCancelled) {
      FinishOnce(GoneStatus(std::string(work->status.message()).c_str()));
      return;
    }
    if (!work->status.ok()) {
      FinishOnce(work->status);
      return;
    }
    if (context_->IsCancelled()) {
      FinishOnce(GoneStatus("the client cancelled the call"));
      return;
    }
    OnSuccess(*work);
    WriteNext();
  }

  void WriteNext() {
    std::shared_ptr<Work> work;
    {
      absl::MutexLock lock(&mu_);
      work = work_;
    }
    response_.Clear();
    if (!NextResponse(*work, &response_)) {
      FinishOnce(absl::OkStatus());
      return;
    }
    this->StartWrite(&response_);
  }

  // Why a call that gRPC cancelled ended: its deadline, or its client. The
  // client's clock runs out first (the server's deadline is the client's plus
  // the headers' transit), so a cancellation that close to the deadline is
  // the deadline's.
  absl::Status GoneStatus(const char* what) const {
    if (absl::Now() + absl::Milliseconds(100) >= Deadline(*context_)) {
      return absl::DeadlineExceededError("the call's deadline passed");
    }
    return absl::CancelledError(what);
  }

  void FinishOnce(const absl::Status& status) {
    {
      absl::MutexLock lock(&mu_);
      if (finished_) return;
      finished_ = true;
      final_status_ = status;
    }
    this->Finish(ToGrpc(status));
  }

  const Method method_;
  const absl::Time start_;
  std::string request_id_;
  std::string peer_;
  Request request_;
  Response response_;
  uint64_t bytes_in_ = 0;
  uint64_t bytes_out_ = 0;

  absl::Mutex mu_;
  std::shared_ptr<Work> work_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status final_status_;  // written once, before Finish
};

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_STREAMING_CALL_H_
