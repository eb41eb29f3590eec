#include "server/compress_call.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codec/frame_task.h"
#include "server/cpu_codec.h"
#include "server/request_parsing.h"
#include "server/streaming_call.h"

namespace ebzip::server {
namespace {

// Two ways through a Compress call:
// - buffered: the whole array arrives, then one work compresses it (and may
//   share a batched launch with other small requests). Needed for relative
//   bounds, which depend on the whole array's range (unless the client gave
//   it), and for one-frame arrays.
// - streamed: with an absolute bound (or a relative one with its range
//   given) and more than one frame, each frame
//   (FORMAT.md §2) becomes a work of its own as soon as its rows arrive, and
//   its bytes go out as soon as it and the frames before it are done. The
//   archive is byte-identical to the buffered one; at most --stream_frames
//   frames are queued, running or unsent, whatever the array's size.
//
// Memory (docs/operations.md, "Limits and abuse"): the header is checked
// against every limit and the request's whole cost against the budget, so a
// request that cannot fit is refused before its data is sent. The budget is
// then taken as the data arrives (a stalled client holds only what it sent,
// and only until --idle_timeout_seconds), plus each work's working memory
// when it is queued (cpu_codec.h), plus its output as the codec makes it.
class CompressCall final : public StreamingCall<v1::CompressRequest, v1::CompressResponse> {
 public:
  CompressCall(CallEnv& env, grpc::CallbackServerContext* context)
      : StreamingCall(
            env, context, Method::kCompress,
            {v1::CompressRequest::kDataFieldNumber, v1::CompressResponse::kArchiveFieldNumber}) {
    Begin();
  }

 private:
  absl::Status OnMessage(const v1::CompressRequest& message) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    switch (message.msg_case()) {
      case v1::CompressRequest::kHeader:
        return OnHeader(message.header());
      case v1::CompressRequest::kData:
        return ReceivePayload(Payload::Of(message.data()));
      default:
        return absl::InvalidArgumentError("a CompressRequest with neither header nor data");
    }
  }

  absl::Status OnHeader(const v1::CompressHeader& header) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (have_header_) return absl::InvalidArgumentError("a second header");
    auto parsed = ParseCompressHeader(header);
    if (!parsed.ok()) return parsed.status();
    // The streamed path writes this plan's file header: a given range
    // resolves the bound now.
    auto plan = PlanArchive(parsed->spec, parsed->options,
                            ResolveBound(parsed->options, parsed->spec.dtype,
                                         parsed->options.range.value_or(ValueRange{})));
    if (!plan.ok()) return plan.status();
    if (absl::Status s = CheckOptionLimits(*parsed, *plan, env_.limits.min_frame_elements);
        !s.ok()) {
      return env_.Refuse(Limit::kOptions, s);
    }
    have_header_ = true;
    if (!header.request_id().empty()) set_request_id(header.request_id());
    spec_ = std::move(parsed->spec);
    options_ = std::move(parsed->options);
    priority_ = header.priority();

    const uint64_t bytes = spec_.num_bytes();
    if (absl::Status s = env_.CheckSize(Limit::kOutputBytes, bytes, "the array holds"); !s.ok()) {
      return s;
    }
    // A relative bound whose range the client gave streams too: only the
    // range needed the whole array.
    if ((options_.mode == BoundMode::kAbs || options_.range) && plan->frame_count() > 1) {
      return StartStreamed(*std::move(plan));
    }
    if (absl::Status s = env_.CheckSize(
            Limit::kRequestBytes, bytes, "the array holds",
            "; with an absolute bound, or a relative one with the array's range "
            "(CompressOptions.value_range, which the ebzip clients send), arrays of many frames "
            "stream without this limit");
        !s.ok()) {
      return s;
    }
    // Reading goes on while the work runs: the half-close (or data beyond
    // the shape) follows its last byte.
    set_window(2);
    current_ = NewWork(spec_, options_);
    working_bytes_ = CompressWorkingBytes(*plan);  // the header's plan: not made twice
    // Checked now, before a byte of data arrives: a full server says so at
    // once instead of after the upload.
    if (absl::Status s = env_.CheckCost(SaturatingAdd(bytes, working_bytes_), "this array");
        !s.ok()) {
      return s;
    }
    return absl::OkStatus();
  }

  absl::Status StartStreamed(ArchivePlan plan) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    plan_ = std::move(plan);
    writer_.emplace(*plan_);
    const size_t window = env_.limits.stream_frames;
    set_window(window);
    // The frames in flight and the one arriving, each with its rows and
    // working memory (the first frame is the largest).
    auto first = NewFrameWork(0);
    if (!first.ok()) return first.status();
    working_bytes_ = CpuWorkingBytes(**first);
    const uint64_t frame_cost = SaturatingAdd(plan_->FrameDataBytes(0), working_bytes_);
    if (absl::Status s =
            env_.CheckCost(SaturatingMul(window + 1, frame_cost), "this streamed array");
        !s.ok()) {
      return s;
    }
    current_ = *std::move(first);
    block_tried_ = false;
    return absl::OkStatus();
  }

  std::shared_ptr<Work> NewWork(const ArraySpec& spec, const CompressOptions& options) {
    auto work = std::make_shared<Work>();
    work->method = Method::kCompress;
    work->priority = priority_;
    work->spec = spec;
    work->options = options;
    work->reservation = env_.admission.Empty();
    return work;
  }

  // Frame `index` of the streamed array as a work of its own: its bytes come
  // back as they lie in the array's archive (codec/frame_task.h).
  absl::StatusOr<std::shared_ptr<Work>> NewFrameWork(uint64_t index)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto task = FrameTaskOf(*plan_, options_, index);
    if (!task.ok()) return task.status();
    auto work = NewWork(task->spec, task->options);
    work->frame_first_row = task->first_row;
    return work;
  }

  absl::Status StartFrame() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto work = NewFrameWork(next_frame_);
    if (!work.ok()) return work.status();
    current_ = *std::move(work);
    block_tried_ = false;  // each frame may have a block of its own
    return absl::OkStatus();
  }

  // Data bytes join the budget as they arrive, and no memory is taken for
  // an array before its data does. The GPU backend's page-locked block for
  // an array or a streamed frame is taken with its first bytes (a whole block: the pool's
  // memory is page-locked from the start, and held in the budget by size).
  absl::Status Keep(absl::Span<const uint8_t> bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Work& w = *current_;
    const uint64_t need = w.spec.num_bytes();
    if (!block_tried_) {
      block_tried_ = true;
      w.input_block = env_.backend.InputBlock(need);
    }
    absl::Status s;
    if (w.input_block) {
      s = w.reservation.Grow(bytes.size());
      if (s.ok()) w.input_block.Append(bytes.data(), bytes.size());
    } else {
      s = AppendHeld(bytes, need, &w.input, &w.reservation);
    }
    return s.ok() ? s : env_.Refuse(Limit::kQueuedBytes, s);
  }

  // A complete work, with the working memory it will need.
  absl::Status SubmitCurrent() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (absl::Status s = current_->reservation.Grow(working_bytes_); !s.ok()) {
      return env_.Refuse(Limit::kQueuedBytes, s);
    }
    Submit(std::move(current_));
    return absl::OkStatus();
  }

  // A data message.
  absl::Status OnPayload(const Payload& data) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!have_header_) {
      return absl::InvalidArgumentError("data before the header: send the header first");
    }
    const uint64_t need = spec_.num_bytes();
    if (data.size() > need - received_) {
      return absl::InvalidArgumentError(
          absl::StrCat("more data than the header's shape ", ShapeToString(spec_.shape), " of ",
                       DTypeName(spec_.dtype), " holds (", need, " bytes)"));
    }
    if (!plan_) {
      received_ += data.size();
      if (data.size() == 0) return absl::OkStatus();  // also once the work is queued
      for (absl::Span<const uint8_t> piece : data.pieces()) {
        if (absl::Status s = Keep(piece); !s.ok()) return s;
      }
      // Queued with its last byte, not at the half-close that follows it:
      // the read that brings the half-close overlaps the work. The summary
      // still waits for it, so that data beyond the shape is refused.
      if (received_ == need) return SubmitCurrent();
      return absl::OkStatus();
    }
    // Streamed: cut the bytes into frames, queueing each as it fills; what
    // is left once the window is full waits for room (Defer).
    const auto& pieces = data.pieces();
    for (size_t i = 0; i < pieces.size(); ++i) {
      absl::Span<const uint8_t> piece = pieces[i];
      while (!piece.empty()) {
        if (window_full()) return Defer(pieces, i, pieces[i].size() - piece.size());
        const size_t room = current_->spec.num_bytes() - current_->input_bytes().size();
        const size_t n = std::min(room, piece.size());
        if (absl::Status s = Keep(piece.first(n)); !s.ok()) return s;
        received_ += n;
        piece.remove_prefix(n);
        if (current_->input_bytes().size() == current_->spec.num_bytes()) {
          if (absl::Status s = SubmitCurrent(); !s.ok()) return s;
          if (++next_frame_ < plan_->frame_count()) {
            if (absl::Status s = StartFrame(); !s.ok()) return s;
          }
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status OnEndOfInput() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!have_header_) return absl::InvalidArgumentError("the stream ended before a header");
    const uint64_t need = spec_.num_bytes();
    if (received_ != need) {
      return absl::InvalidArgumentError(absl::StrCat(
          "received ", received_, " bytes of data, but shape ", ShapeToString(spec_.shape), " of ",
          DTypeName(spec_.dtype), " needs ", need));
    }
    if (!plan_ && current_) return SubmitCurrent();  // an array of no bytes
    return absl::OkStatus();
  }

  absl::StatusOr<Next> NextResponse(v1::CompressResponse* message) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (sending_bytes()) return SendArchive();
    if (plan_) return NextStreamed(message);
    if (summary_sent_) return Next::kDone;
    Work* work = FrontWork();
    if (work == nullptr) return Next::kWait;
    if (!archive_taken_) {
      archive_taken_ = true;
      Account(*work);
      QueueBytes(std::move(work->output), std::move(work->reservation));
      if (sending_bytes()) return SendArchive();
    }
    if (!input_done()) return Next::kWait;
    PopFront();
    return SendSummary(message);
  }

  absl::StatusOr<Next> NextStreamed(v1::CompressResponse* message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!file_header_sent_) {
      file_header_sent_ = true;
      QueueBytes(writer_->Begin(), Reservation());
      return SendArchive();
    }
    if (frames_sent_ < plan_->frame_count()) {
      Work* work = FrontWork();
      if (work == nullptr) return Next::kWait;
      // The work's output is the frame's bytes in the array's archive: sent
      // as they are, held until they are.
      Account(*work);
      ++frames_sent_;
      writer_->AddFrame(work->output.size());
      QueueBytes(std::move(work->output), std::move(work->reservation));
      PopFront();
      return SendArchive();
    }
    if (!index_sent_) {
      index_sent_ = true;
      QueueBytes(writer_->Finish(), Reservation());
      return SendArchive();
    }
    // The archive is complete; the summary waits for the client's half-close
    // so that data beyond the shape is still refused.
    if (!input_done()) return Next::kWait;
    if (summary_sent_) return Next::kDone;
    return SendSummary(message);
  }

  // The summary is always last (a streamed array's waits for the client's
  // half-close).
  bool ReplyComplete() const override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return summary_sent_; }

  Next SendArchive() {
    archive_bytes_ += SendBytes();
    return Next::kSend;
  }

  // Adds a finished work's figures to the summary (a streamed array's frames
  // add up; the summary's times are sums over them).
  void Account(const Work& work) {
    abs_bound_ = work.abs_bound;
    outliers_ += work.outliers;
    verbatim_ += work.verbatim;
    fill_runs_ += work.fill_runs;
    frames_ += work.frames;
    queue_time_ += work.queue_time;
    compute_time_ += work.compute_time;
    // Frames spread over devices: the summary names each once.
    if (std::find(devices_.begin(), devices_.end(), work.device) == devices_.end()) {
      devices_.push_back(work.device);
    }
  }

  Next SendSummary(v1::CompressResponse* message) {
    summary_sent_ = true;
    if (archive_bytes_ > 0) {
      env_.metrics.Ratio(static_cast<double>(spec_.num_bytes()) /
                         static_cast<double>(archive_bytes_));
    }
    auto* s = message->mutable_summary();
    s->set_input_bytes(spec_.num_bytes());
    s->set_archive_bytes(archive_bytes_);
    s->set_abs_error_bound(abs_bound_);
    s->set_outliers(outliers_);
    s->set_verbatim(verbatim_);
    s->set_fill_runs(fill_runs_);
    s->set_frames(frames_);
    s->set_backend(absl::StrJoin(devices_, ","));
    s->set_request_id(request_id());
    s->set_queue_seconds(absl::ToDoubleSeconds(queue_time_));
    s->set_compute_seconds(absl::ToDoubleSeconds(compute_time_));
    return Next::kSend;
  }

  // Reading.
  bool have_header_ = false;
  ArraySpec spec_;
  CompressOptions options_;
  int priority_ = 0;
  std::shared_ptr<Work> current_;  // being filled
  uint64_t working_bytes_ = 0;     // what current_ will need when queued
  bool block_tried_ = false;       // InputBlock asked for once per work
  uint64_t received_ = 0;
  // Streamed only.
  std::optional<ArchivePlan> plan_;
  std::optional<ArchiveWriter> writer_;
  uint64_t next_frame_ = 0;

  // Writing.
  bool archive_taken_ = false;
  bool file_header_sent_ = false;
  uint64_t frames_sent_ = 0;
  bool index_sent_ = false;
  bool summary_sent_ = false;
  uint64_t archive_bytes_ = 0;
  double abs_bound_ = 0;
  uint64_t outliers_ = 0, verbatim_ = 0, fill_runs_ = 0, frames_ = 0;
  absl::Duration queue_time_, compute_time_;
  std::vector<std::string> devices_;
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* NewCompressCall(
    CallEnv& env, grpc::CallbackServerContext* context) {
  return new CompressCall(env, context);
}

}  // namespace ebzip::server
