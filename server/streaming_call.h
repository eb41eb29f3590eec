// The life of a streaming call, shared by Compress and Decompress: read the
// request stream (the subclass checks each message), queue the works it
// makes, write their results in order as a stream of messages (the subclass
// produces them), and finish exactly once whatever happens in between — a
// bad message, a full server, a cancelled or vanished client, a failed codec.
//
// A call makes one work (a whole array or archive, queued when the input
// ends) or many (the frames of a streamed array, queued as each arrives, so
// that receiving, computing and sending overlap). While `window` works are
// queued, running or waiting to be sent, the call stops reading and gRPC's
// flow control holds the client back: memory stays bounded however large
// the array, and however much faster the codec is than the client. A message
// that holds several frames is taken only as far as the window allows: the
// rest waits (Defer) until a work leaves the window. A client
// must therefore read the reply while it sends (both ebzip clients do); one
// that sends everything first waits on a streamed request until its
// deadline (ebzip.proto says so).
//
// Messages travel as gRPC byte buffers: payload messages (the bulk bytes)
// are read and written in place (payload.h), any other through protobuf.
//
// Thread safety: gRPC runs the reactor's callbacks on its threads, and the
// scheduler runs each work's completion on one of its threads; `mu_` orders
// them, and every subclass hook runs under it. The call finishes only once
// no queued work is left and no write is in flight. gRPC calls OnDone only
// after its own callbacks have returned, but not after a completion's: so
// the reactor is counted (refs_), one reference for gRPC until OnDone and
// one for each completion while it runs, and the last to let go deletes it.
//
// Where the call is lies in three small state machines (call_state.h), each
// moved only along the edges it allows: the call (running, failing,
// finished), its request stream (reading, paused on a full window, closed
// by the client, ...) and its reply stream (a write in flight or not).
//
// A call that waits on its client (a read it started, a write not taken)
// for --idle_timeout_seconds is ended by the server's IdleWatch: a client
// that stalls cannot hold what its call reserved for longer than that.
#ifndef EBZIP_SERVER_STREAMING_CALL_H_
#define EBZIP_SERVER_STREAMING_CALL_H_

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "proto/payload.h"
#include "server/call_env.h"
#include "server/call_state.h"
#include "server/idle_watch.h"
#include "server/work.h"

namespace ebzip::server {

template <class Request, class Response>
class StreamingCall : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
                      public IdleCall {
 public:
  void OnReadDone(bool ok) override {
    const bool cancelled = !ok && context_->IsCancelled();
    std::vector<std::shared_ptr<Work>> submit, cancel;
    bool read_more = false;
    {
      absl::MutexLock lock(&mu_);
      MoveRead(ReadState::kReceived);
      // A closed side is progress; a message, only by the bytes it brings.
      if (!ok) {
        last_progress_ = absl::Now();
      } else {
        Progress(request_.Length());
      }
      absl::Status status;
      if (cancelled) {
        MoveRead(ReadState::kStopped);
        status = GoneStatus("the client cancelled the call");
      } else if (call_ != CallState::kRunning) {
        // The call is ending: read no more (Pump, below, may finish it now).
        MoveRead(ReadState::kStopped);
      } else if (ok) {
        status = OnReceived();
        request_.Clear();
        if (!status.ok()) {
          MoveRead(ReadState::kStopped);
        } else if (works_.size() >= window_ || deferred_at_ < deferred_.size()) {
          MoveRead(ReadState::kPaused);
        } else {
          MoveRead(ReadState::kReading);
          read_more = true;
        }
      } else {  // the client closed its side
        MoveRead(ReadState::kClosed);
        status = OnEndOfInput();
      }
      submit.swap(to_submit_);
      // Failed in the same breath, so that no write can finish the call as
      // a success in between.
      if (!status.ok()) cancel = FailLocked(status);
    }
    for (const auto& w : cancel) env_.scheduler.Cancel(w);
    SubmitAll(std::move(submit));
    if (read_more) this->StartRead(&request_);
    Pump();
  }

  void OnWriteDone(bool ok) override {
    {
      absl::MutexLock lock(&mu_);
      MoveWrite(WriteState::kIdle);
      Progress(written_);
      // gRPC holds its own references to what it still has to send; the
      // call's would keep the reply's buffer (a pool block, say) alive
      // until the next message.
      to_send_.Clear();
      // The last message of a buffer held the whole buffer: it is gone now.
      sent_held_.Release();
    }
    if (!ok) Fail(GoneStatus("the client went away while the result was sent"));
    Pump();
  }

  void OnCancel() override {
    Fail(GoneStatus("the client cancelled the call"));
    Pump();
  }

  void OnDone() override {
    // A cancellation can reach the reactor after a failed read has already
    // ended the call (as an incomplete upload, say); by now gRPC knows, and
    // the metrics and logs say what really happened.
    bool ended_here;
    {
      absl::MutexLock lock(&mu_);
      ended_here = idle_ended_;
    }
    const absl::Status recorded = context_->IsCancelled() && !final_status_.ok() && !ended_here
                                      ? GoneStatus("the client cancelled the call")
                                      : final_status_;
    env_.EndCall(method_, request_id_, peer_, recorded, absl::Now() - start_, bytes_in_,
                 bytes_out_);
    env_.idle_watch().Leave(this);
    Unref();
  }

  // IdleCall.
  absl::Time WaitingSince() override {
    absl::MutexLock lock(&mu_);
    return call_ != CallState::kFinished && WaitsOnClient() ? last_progress_
                                                            : absl::InfiniteFuture();
  }
  void Ref() override {
    absl::MutexLock lock(&mu_);
    ++refs_;
  }
  void Unref() override {
    bool last;
    {
      absl::MutexLock lock(&mu_);
      last = --refs_ == 0;
    }
    if (last) delete this;
  }
  void ExpireIdle(absl::Duration idle) override {
    bool write_stuck, limit_hit = false;
    std::vector<std::shared_ptr<Work>> cancel;
    {
      absl::MutexLock lock(&mu_);
      if (call_ == CallState::kFinished) return;
      write_stuck = write_ == WriteState::kWriting;
      idle_ended_ = true;
      if (call_ == CallState::kRunning) {
        limit_hit = true;
        // CANCELLED, not DEADLINE_EXCEEDED: the client's doing, which the
        // alerting rules do not count against the server.
        cancel = FailLocked(absl::CancelledError(absl::StrCat(
            "the client ", write_stuck ? "read nothing of the reply" : "sent nothing", " for ",
            absl::FormatDuration(idle), " (--idle_timeout_seconds): the server ended the call")));
      }
      // Until TryCancel has returned the call must not finish: gRPC frees
      // the context once it has.
      ++outside_;
    }
    if (limit_hit) env_.metrics.LimitHit(Limit::kIdleTimeout);
    for (const auto& w : cancel) env_.scheduler.Cancel(w);
    // A write the client does not take never completes by itself, and the
    // call cannot finish under it: cancelling the stream completes it.
    if (write_stuck) context_->TryCancel();
    {
      absl::MutexLock lock(&mu_);
      --outside_;
    }
    Pump();
  }

 protected:
  // What NextResponse made: a message to send, nothing until a work
  // finishes or more input arrives, or the end of the reply.
  enum class Next { kSend, kWait, kDone };

  // The payload fields (payload.h): the request's and the reply's bytes
  // field numbers.
  struct PayloadFields {
    uint32_t request;
    uint32_t response;
  };

  StreamingCall(CallEnv& env, grpc::CallbackServerContext* context, Method method,
                PayloadFields payload_fields)
      : env_(env),
        context_(context),
        method_(method),
        payload_fields_(payload_fields),
        start_(absl::Now()) {
    env_.StartCall(method_);
    deferred_held_ = env_.admission.Empty();
    last_progress_ = start_;
    request_id_ = RequestId(*context_, "");
    peer_ = context_->peer();  // gone once the call is cancelled
  }

  // Starts the call: reads, or refuses it. Call last in the subclass's
  // constructor, once the object is complete.
  void Begin() {
    // Watched from here, once the object is complete.
    env_.idle_watch().Join(this);
    if (absl::Status s = env_.Admit(*context_); !s.ok()) {
      Fail(s);
      Pump();
      return;
    }
    {
      absl::MutexLock lock(&mu_);
      MoveRead(ReadState::kReading);
    }
    this->StartRead(&request_);
  }

  // Hooks, each called under mu_. One request message other than a payload
  // message; an error ends the call.
  virtual absl::Status OnMessage(const Request& message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;
  // The bytes of one payload message (a message whose only field is the
  // request's payload field, however it arrived: OnMessage hands on the
  // others through ReceivePayload), or what it deferred of them; an error
  // ends the call.
  virtual absl::Status OnPayload(const Payload& bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;
  // The request stream ended; an error ends the call.
  virtual absl::Status OnEndOfInput() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;
  // Fills the next response message from the finished works (FrontWork), or
  // calls SendBytes; an error ends the call.
  virtual absl::StatusOr<Next> NextResponse(Response* message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;
  // After NextResponse made a message: true when it is the reply's last, so
  // that it leaves with the call's status in one operation instead of two
  // (a small request's round trip is a handful of them).
  virtual bool ReplyComplete() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return false; }

  // For the hooks: queue a work (after the hook returns); its result comes
  // back through FrontWork in the order works were queued.
  void Submit(std::shared_ptr<Work> work) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    work->request_id = request_id_;
    work->deadline = Deadline(*context_);
    Work* raw = work.get();
    work->on_done = [this, raw] { OnWorkDone(raw); };
    works_.push_back({work, false});
    ++outstanding_;
    to_submit_.push_back(std::move(work));
  }
  // The oldest work not yet popped, if it finished (successfully: a failed
  // work ends the call); nullptr otherwise.
  Work* FrontWork() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !works_.empty() && works_.front().done ? works_.front().work.get() : nullptr;
  }
  // Done with the front work's result: frees it, and makes room in the window.
  void PopFront() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { works_.pop_front(); }
  bool input_done() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return read_ == ReadState::kClosed; }
  void set_window(size_t works) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { window_ = works; }
  bool window_full() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return works_.size() >= window_; }

  // For OnMessage: a payload that arrived inside a message protobuf parsed.
  absl::Status ReceivePayload(const Payload& bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    count_in(bytes.size());
    return OnPayload(bytes);
  }
  // For OnPayload, once the window is full: keeps the rest of the payload,
  // `pieces` from `first` on (the first of them from byte `at`), and hands
  // it to OnPayload again when a work has left the window. The copy joins
  // the budget; RESOURCE_EXHAUSTED when it does not fit. What is handed
  // back and deferred again is not copied again: only where it starts moves.
  absl::Status Defer(const std::vector<absl::Span<const uint8_t>>& pieces, size_t first, size_t at)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (read_ == ReadState::kResuming) {  // one piece, inside deferred_
      deferred_at_ = static_cast<size_t>(pieces[first].data() + at -
                                         reinterpret_cast<const uint8_t*>(deferred_.data()));
      return absl::OkStatus();
    }
    uint64_t bytes = 0;
    for (size_t i = first; i < pieces.size(); ++i)
      bytes += pieces[i].size() - (i == first ? at : 0);
    if (bytes == 0) return absl::OkStatus();
    if (absl::Status s = deferred_held_.Grow(bytes); !s.ok()) {
      return env_.Refuse(Limit::kQueuedBytes, s);
    }
    deferred_.reserve(bytes);
    for (size_t i = first; i < pieces.size(); ++i) {
      const absl::Span<const uint8_t> p = pieces[i].subspan(i == first ? at : 0);
      deferred_.append(reinterpret_cast<const char*>(p.data()), p.size());
    }
    deferred_at_ = 0;
    return absl::OkStatus();
  }

  // Bytes to send in messages of at most --message_bytes (an archive, a
  // frame, an array), freed once sent, and the part of the budget that holds
  // them until then.
  // Each message that carries some of them shares their ownership with gRPC,
  // which sends them from where they are.
  void QueueBytes(std::vector<uint8_t> bytes, Reservation held) {
    auto owner = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
    out_ = absl::MakeConstSpan(*owner);
    out_owner_ = std::move(owner);
    out_at_ = 0;
    out_held_ = std::move(held);
  }
  void QueueBytes(HostBlock bytes, Reservation held) {
    auto owner = std::make_shared<const HostBlock>(std::move(bytes));
    out_ = owner->bytes();
    out_owner_ = std::move(owner);
    out_at_ = 0;
    out_held_ = std::move(held);
  }
  bool sending_bytes() const { return out_at_ < out_.size(); }
  // Makes the next payload message of the queued bytes the one to send;
  // returns its size.
  uint64_t SendBytes() {
    const size_t n = std::min<size_t>(env_.limits.message_bytes, out_.size() - out_at_);
    payload_message_ =
        PayloadMessage(payload_fields_.response, out_.subspan(out_at_, n), out_owner_);
    out_at_ += n;
    count_out(n);
    if (out_at_ == out_.size()) {
      out_ = {};
      out_owner_.reset();
      // The message holds the whole buffer until it has been sent.
      sent_held_ = std::move(out_held_);
    }
    return n;
  }

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
  absl::Mutex mu_;

 private:
  struct Slot {
    std::shared_ptr<Work> work;
    bool done = false;
  };

  void OnWorkDone(Work* work) {
    absl::Status failure;
    {
      absl::MutexLock lock(&mu_);
      // Held until this completion is done with the call: once outstanding_
      // falls, another thread may finish it and gRPC may call OnDone.
      ++refs_;
      --outstanding_;
      for (Slot& slot : works_) {
        if (slot.work.get() == work) slot.done = true;
      }
      if (work->status.code() == absl::StatusCode::kCancelled) {
        failure = GoneStatus(std::string(work->status.message()).c_str());
      } else if (!work->status.ok()) {
        failure = work->status;
        if (failure.code() == absl::StatusCode::kResourceExhausted) {
          env_.metrics.LimitHit(Limit::kQueuedBytes);
        }
      } else if (context_->IsCancelled()) {
        failure = GoneStatus("the client cancelled the call");
      }
    }
    if (!failure.ok()) Fail(failure);
    Pump();
    Unref();
  }

  void SubmitAll(std::vector<std::shared_ptr<Work>> works) {
    for (const auto& w : works) env_.scheduler.Submit(w);
    // The call may have failed meanwhile, after its failure cancelled what it
    // knew of: cancel these too (a finished work ignores it).
    bool failed;
    {
      absl::MutexLock lock(&mu_);
      failed = call_ != CallState::kRunning;
    }
    if (failed) {
      for (const auto& w : works) env_.scheduler.Cancel(w);
    }
  }

  // Ends the call with `status` (the first failure wins): queued works are
  // cancelled, and Pump finishes once they and any write have completed.
  void Fail(const absl::Status& status) {
    std::vector<std::shared_ptr<Work>> cancel;
    {
      absl::MutexLock lock(&mu_);
      cancel = FailLocked(status);
    }
    // Queued work finishes (CANCELLED) at once; running work sees the flag.
    for (const auto& w : cancel) env_.scheduler.Cancel(w);
  }
  // Marks the call failed and stops its reading, unless a read is in flight
  // (its completion stops it) or the input is complete; returns the works
  // to cancel.
  std::vector<std::shared_ptr<Work>> FailLocked(const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::vector<std::shared_ptr<Work>> cancel;
    if (call_ != CallState::kRunning) return cancel;
    call_.MoveTo(CallState::kFailing);
    final_status_ = status;
    if (read_ == ReadState::kIdle || read_ == ReadState::kPaused) MoveRead(ReadState::kStopped);
    for (const Slot& slot : works_) {
      if (!slot.done) cancel.push_back(slot.work);
    }
    return cancel;
  }

  // Moves the call on: starts the next write, resumes reading when the
  // window has room, or finishes.
  void Pump() {
    bool write = false, last = false, read = false, finish = false, again = false;
    absl::Status status;
    std::vector<std::shared_ptr<Work>> cancel, submit;
    {
      absl::MutexLock lock(&mu_);
      if (call_ == CallState::kFinished) return;
      if (call_ == CallState::kFailing) {
        // Those outside mu_ (a read being started, ExpireIdle) call Pump
        // when done.
        if (outstanding_ == 0 && write_ == WriteState::kIdle && outside_ == 0) {
          call_.MoveTo(CallState::kFinished);
          finish = true;
          status = final_status_;
        }
      } else if (write_ == WriteState::kIdle) {
        response_.Clear();
        payload_message_.reset();
        absl::StatusOr<Next> next = NextResponse(&response_);
        if (next.ok() && *next == Next::kSend) next = ToSend();
        if (!next.ok()) {
          cancel = FailLocked(next.status());
          again = true;  // to finish, once nothing is outstanding
        } else if (*next == Next::kSend) {
          written_ = to_send_.Length();
          write = true;
          if (ReplyComplete()) {
            MoveWrite(WriteState::kWritingLast);
            call_.MoveTo(CallState::kFinished);
            last = true;
            final_status_ = absl::OkStatus();
          } else {
            MoveWrite(WriteState::kWriting);
          }
        } else if (*next == Next::kDone) {
          call_.MoveTo(CallState::kFinished);
          finish = true;
          final_status_ = absl::OkStatus();
        }
      }
      if (call_ == CallState::kRunning && read_ == ReadState::kPaused && works_.size() < window_) {
        // What a message held beyond the window first, then more messages.
        if (deferred_at_ < deferred_.size()) {
          const absl::Span<const uint8_t> rest =
              absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(deferred_.data()),
                                  deferred_.size())
                  .subspan(deferred_at_);
          deferred_at_ = deferred_.size();  // all taken, unless deferred again
          MoveRead(ReadState::kResuming);
          const absl::Status s = OnPayload(Payload::Of(rest));
          MoveRead(ReadState::kPaused);
          if (deferred_at_ == deferred_.size()) {
            std::string().swap(deferred_);
            deferred_at_ = 0;
            deferred_held_.Release();
          }
          submit.swap(to_submit_);
          if (!s.ok()) {
            std::vector<std::shared_ptr<Work>> more = FailLocked(s);
            cancel.insert(cancel.end(), more.begin(), more.end());
            again = true;
          }
        }
        if (call_ == CallState::kRunning && deferred_at_ == deferred_.size() &&
            works_.size() < window_) {
          MoveRead(ReadState::kReading);
          ++outside_;
          read = true;
        }
      }
    }
    for (const auto& w : cancel) env_.scheduler.Cancel(w);
    if (!submit.empty()) {
      SubmitAll(std::move(submit));
      again = true;  // the window may have moved meanwhile
    }
    // No buffer_hint to send two messages in one write: the hinted write
    // completes (OnWriteDone) only once it has left, and with one write in
    // flight at a time the next write, which would flush it, never starts;
    // calls stall until something else on the connection flushes (tried,
    // and seen to stall).
    if (last) {
      this->StartWriteAndFinish(&to_send_, grpc::WriteOptions(), grpc::Status::OK);
    } else if (write) {
      this->StartWrite(&to_send_);
    }
    if (read) {
      // Pump may run on a scheduler thread, outside any reaction: until the
      // read has started, a call that fails meanwhile (OnCancel) must not
      // finish, or gRPC could free the stream under StartRead.
      this->StartRead(&request_);
      absl::MutexLock lock(&mu_);
      --outside_;
      again = again || call_ != CallState::kRunning;
    }
    if (finish) this->Finish(ToGrpc(status));
    if (again) Pump();
  }

  // `bytes` moved to or from the client: progress each time they add up to
  // kProgressBytes, so that a trickle of empty or tiny messages does not
  // keep a call alive that holds the budget.
  static constexpr uint64_t kProgressBytes = 64 << 10;
  void Progress(uint64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    moved_ += bytes;
    if (moved_ >= kProgressBytes) {
      moved_ = 0;
      last_progress_ = absl::Now();
    }
  }

  // Whether the call waits on its client: a read or a write it started has
  // not completed. A read just completed (kReceived, seen only under mu_
  // inside OnReadDone) still counts: the next read it starts goes on with
  // the same wait, so that a trickle of messages without progress's bytes
  // cannot restart the clock with each one.
  bool WaitsOnClient() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return read_ == ReadState::kReading || read_ == ReadState::kReceived ||
           write_ != WriteState::kIdle;
  }
  // The read and write sides move through these: the wait counts from when
  // the call began to wait on its client since it last did not.
  void MoveRead(ReadState next) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const bool waited = WaitsOnClient();
    read_.MoveTo(next);
    if (!waited && WaitsOnClient()) last_progress_ = absl::Now();
  }
  void MoveWrite(WriteState next) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const bool waited = WaitsOnClient();
    write_.MoveTo(next);
    if (!waited && WaitsOnClient()) last_progress_ = absl::Now();
  }

  // A request message: a payload message is read where gRPC received it,
  // any other is parsed by protobuf.
  absl::Status OnReceived() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (std::optional<Payload> payload = Payload::Of(request_, payload_fields_.request)) {
      return ReceivePayload(*payload);
    }
    Request message;
    if (!grpc::SerializationTraits<Request>::Deserialize(&request_, &message).ok()) {
      return absl::InvalidArgumentError(absl::StrCat("a request message that does not parse as ",
                                                     Request::descriptor()->full_name()));
    }
    return OnMessage(message);
  }

  // The message NextResponse made, in to_send_: the payload message
  // SendBytes made, or response_ serialized.
  absl::StatusOr<Next> ToSend() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (payload_message_) {
      to_send_ = *std::move(payload_message_);
      payload_message_.reset();
      return Next::kSend;
    }
    bool own = false;
    to_send_.Clear();
    if (!grpc::SerializationTraits<Response>::Serialize(response_, &to_send_, &own).ok()) {
      return absl::InternalError(
          absl::StrCat("cannot serialize a ", Response::descriptor()->full_name()));
    }
    return Next::kSend;
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

  const Method method_;
  const PayloadFields payload_fields_;
  const absl::Time start_;
  std::string request_id_;
  std::string peer_;
  grpc::ByteBuffer request_;
  Response response_;
  std::optional<grpc::ByteBuffer> payload_message_;  // made by SendBytes
  grpc::ByteBuffer to_send_;                         // being written
  uint64_t bytes_in_ = 0;
  uint64_t bytes_out_ = 0;
  // The bytes QueueBytes was given, and what keeps them alive.
  absl::Span<const uint8_t> out_;
  std::shared_ptr<const void> out_owner_;
  size_t out_at_ = 0;
  Reservation out_held_;
  Reservation sent_held_;                      // the last message's buffer, until it is sent
  uint64_t written_ ABSL_GUARDED_BY(mu_) = 0;  // bytes of the write in flight
  uint64_t moved_ ABSL_GUARDED_BY(mu_) = 0;    // since the last progress
  // What a payload held beyond a full window (Defer) from deferred_at_ on,
  // and its budget.
  std::string deferred_ ABSL_GUARDED_BY(mu_);
  size_t deferred_at_ ABSL_GUARDED_BY(mu_) = 0;
  Reservation deferred_held_ ABSL_GUARDED_BY(mu_);

  std::deque<Slot> works_ ABSL_GUARDED_BY(mu_);  // queued or unsent, in order
  std::vector<std::shared_ptr<Work>> to_submit_ ABSL_GUARDED_BY(mu_);
  size_t outstanding_ ABSL_GUARDED_BY(mu_) = 0;  // queued or running
  size_t window_ ABSL_GUARDED_BY(mu_) = 1;       // of works_
  // The call's phases (call_state.h).
  StateMachine<CallState> call_ ABSL_GUARDED_BY(mu_){CallState::kRunning};
  StateMachine<ReadState> read_ ABSL_GUARDED_BY(mu_){ReadState::kIdle};
  StateMachine<WriteState> write_ ABSL_GUARDED_BY(mu_){WriteState::kIdle};
  // Threads that use the stream or the context outside mu_ (Pump starting
  // a read, ExpireIdle cancelling): a failed call does not finish under
  // them, and they call Pump when done.
  int outside_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_progress_ ABSL_GUARDED_BY(mu_);  // for WaitingSince
  int refs_ ABSL_GUARDED_BY(mu_) = 1;              // gRPC's, until OnDone
  absl::Status final_status_;                      // written once, before Finish
  // The IdleWatch ended the call: its status, not gRPC's cancellation that
  // came of it, is what happened (OnDone).
  bool idle_ended_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_STREAMING_CALL_H_
