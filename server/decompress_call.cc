#include "server/decompress_call.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "codec/format.h"
#include "codec/slab.h"
#include "server/request_parsing.h"
#include "server/streaming_call.h"

namespace ebzip::server {
namespace {

// Two ways through a Decompress call, chosen by the file header (the first
// 96 bytes):
// - buffered: a one-frame archive arrives whole, then one work decodes it
//   (batched with other small requests), within --max_request_bytes.
// - streamed: an archive of several frames is cut at its frame boundaries as
//   it arrives (each frame header gives the frame's size); each frame becomes
//   a work of its own and its rows go out in order as soon as they are
//   decoded. The frame index and trailer, last in the archive, are checked
//   against the frames seen: a mismatch ends the call with DATA_LOSS, after
//   the rows of frames that were sound (each passed its own checksums).
class DecompressCall final : public StreamingCall<v1::DecompressRequest, v1::DecompressResponse> {
 public:
  DecompressCall(CallEnv& env, grpc::CallbackServerContext* context)
      : StreamingCall(
            env, context, Method::kDecompress,
            {v1::DecompressRequest::kArchiveFieldNumber, v1::DecompressResponse::kDataFieldNumber}),
        priority_(PriorityFromMetadata(*context)) {
    whole_->reservation = env.admission.Empty();
    frame_reservation_ = env.admission.Empty();
    Begin();
  }

 private:
  // A DecompressRequest holds nothing but its payload, the archive's bytes.
  absl::Status OnMessage(const v1::DecompressRequest& message) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return OnPayload(Payload::Of(message.archive()));
  }

  absl::Status OnPayload(const Payload& data) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    count_in(data.size());
    if (header_) return Feed(data);
    if (data.size() > env_.limits.max_request_bytes - whole_->input.size()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the archive is larger than this server takes in one request "
                       "(--max_request_bytes ",
                       env_.limits.max_request_bytes, ")"));
    }
    // Admitted as it arrives: the archive's size is not known in advance.
    if (absl::Status s = whole_->reservation.Grow(data.size()); !s.ok()) return s;
    for (absl::Span<const uint8_t> piece : data.pieces()) AppendBytes(piece, &whole_->input);
    if (decided_ || whole_->input.size() < format::kFileHeaderSize) return absl::OkStatus();
    decided_ = true;
    auto header = format::ParseFileHeader(whole_->input);
    if (!header.ok()) return header.status();
    if (header->frame_count < 2) return absl::OkStatus();  // buffered

    header_ = *std::move(header);
    set_window(env_.limits.stream_frames);
    std::vector<uint8_t> rest(whole_->input.begin() + format::kFileHeaderSize, whole_->input.end());
    whole_.reset();  // and its reservation
    offset_ = format::kFileHeaderSize;
    return Feed(rest);
  }

  absl::Status Feed(const Payload& data) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (absl::Span<const uint8_t> piece : data.pieces()) {
      if (absl::Status s = Feed(piece); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // Streamed: cuts the bytes into frames, queueing each as it completes, then
  // keeps the frame index and trailer.
  absl::Status Feed(absl::Span<const uint8_t> bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint8_t* data = bytes.data();
    size_t size = bytes.size();
    while (size > 0) {
      if (next_frame_ == header_->frame_count) {
        const uint64_t tail = format::FrameIndexSize(header_->frame_count) + format::kTrailerSize;
        if (size > tail - tail_.size()) {
          return format::CorruptArchive("bytes after the trailer");
        }
        tail_.insert(tail_.end(), data, data + size);
        return absl::OkStatus();
      }
      // The frame header first (its size), then the rest of the frame.
      const uint64_t want = frame_size_ == 0 ? format::kFrameHeaderSize : frame_size_;
      const size_t n = std::min<uint64_t>(size, want - frame_.size());
      frame_.insert(frame_.end(), data, data + n);
      data += n;
      size -= n;
      if (frame_.size() < want) return absl::OkStatus();
      if (frame_size_ == 0) {
        auto h = format::ParseFrameHeader(frame_);
        if (!h.ok()) return h.status();
        frame_size_ = h->frame_size();
        // This frame's bytes, held until its work has them.
        if (absl::Status s = frame_reservation_.Grow(frame_size_); !s.ok()) return s;
        frame_.reserve(frame_size_);
        if (frame_.size() < frame_size_) continue;
      }
      if (absl::Status s = QueueFrame(); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status QueueFrame() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // A frame's result is admitted beyond the budget when it replaces the
    // frame's input (Reservation::Resize); with many streams at once that
    // can overfill it. Take no more frames then.
    if (env_.admission.held() > env_.admission.limit()) {
      return absl::ResourceExhaustedError(
          "server is full: requests in progress hold more than --max_queued_bytes; retry later");
    }
    auto slab = SlabArchiveOfFrame(*header_, next_frame_, frame_);
    if (!slab.ok()) return slab.status();
    auto info = ReadArchiveInfo(*slab);
    if (!info.ok()) return info.status();
    auto work = std::make_shared<Work>();
    work->method = Method::kDecompress;
    work->priority = priority_;
    work->reservation = env_.admission.Empty();
    work->reservation.Resize(slab->size());  // taken over from frame_reservation_
    frame_reservation_.Resize(0);
    work->input = *std::move(slab);
    work->info = *std::move(info);
    Submit(std::move(work));
    seen_.push_back({offset_, frame_.size()});
    offset_ += frame_.size();
    ++next_frame_;
    frame_.clear();
    frame_size_ = 0;
    return absl::OkStatus();
  }

  absl::Status OnEndOfInput() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (header_) return CheckIndexAndTrailer();
    if (whole_->input.empty()) return absl::DataLossError("empty archive: no bytes were sent");
    auto info = ReadArchiveInfo(whole_->input);
    if (!info.ok()) return info.status();
    const uint64_t out = info->spec().num_bytes();
    if (out > env_.limits.max_request_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the array holds ", out,
                       " bytes, more than this server returns in one "
                       "request (--max_request_bytes ",
                       env_.limits.max_request_bytes, ")"));
    }
    if (absl::Status s = whole_->reservation.Grow(out); !s.ok()) return s;
    whole_->method = Method::kDecompress;
    whole_->priority = priority_;
    whole_->info = *std::move(info);
    Submit(std::move(whole_));
    return absl::OkStatus();
  }

  absl::Status CheckIndexAndTrailer() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint64_t count = header_->frame_count;
    if (next_frame_ < count ||
        tail_.size() < format::FrameIndexSize(count) + format::kTrailerSize) {
      return format::CorruptArchive(
          absl::StrCat("truncated archive: the stream ended in ",
                       next_frame_ < count ? "frame " : "the index after frame ", next_frame_));
    }
    auto index_offset = format::ParseTrailer(tail_);
    if (!index_offset.ok()) return index_offset.status();
    if (*index_offset != offset_) {
      return format::CorruptArchive(absl::StrCat("the trailer puts the frame index at ",
                                                 *index_offset, ", the frames end at ", offset_));
    }
    auto index =
        format::ParseFrameIndex(absl::MakeConstSpan(tail_).first(format::FrameIndexSize(count)));
    if (!index.ok()) return index.status();
    for (uint64_t i = 0; i < count; ++i) {
      if ((*index)[i].offset != seen_[i].offset || (*index)[i].size != seen_[i].size) {
        return format::CorruptArchive(
            absl::StrCat("the frame index disagrees with frame ", i, " as streamed"));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Next> NextResponse(v1::DecompressResponse* message) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (sending_bytes()) return SendRows();
    if (header_ && rows_sent_ == header_->frame_count) {
      return input_done() ? Next::kDone : Next::kWait;
    }
    if (!header_ && sent_all_) return Next::kDone;
    Work* work = FrontWork();
    if (work == nullptr) return Next::kWait;
    if (!header_sent_) {
      header_sent_ = true;
      auto* h = message->mutable_header();
      if (header_) {
        *h->mutable_array() = ToProto(ArraySpec{header_->dtype, header_->shape});
        h->set_abs_error_bound(header_->abs_bound);
      } else {
        *h->mutable_array() = ToProto(work->info->spec());
        h->set_abs_error_bound(work->abs_bound);
      }
      h->set_request_id(request_id());
      h->set_backend(work->device);
      return Next::kSend;
    }
    if (work->output_block) {
      QueueBytes(std::move(work->output_block));
    } else {
      QueueBytes(std::move(work->output));
    }
    PopFront();
    if (header_) {
      ++rows_sent_;
    } else {
      sent_all_ = true;
    }
    return SendRows();
  }

  // The last rows, once the client has closed its side (what it sends after
  // a streamed archive's end is still checked).
  bool ReplyComplete() const override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const bool all_rows = header_ ? rows_sent_ == header_->frame_count : sent_all_;
    return all_rows && !sending_bytes() && input_done();
  }

  Next SendRows() {
    SendBytes();
    return Next::kSend;
  }

  const int priority_;
  // Buffered: the archive as it arrives. Streamed: released once the file
  // header has been read.
  std::shared_ptr<Work> whole_ = std::make_shared<Work>();
  bool decided_ = false;

  // Streamed only.
  std::optional<format::FileHeader> header_;
  std::vector<uint8_t> frame_;  // the frame arriving
  uint64_t frame_size_ = 0;     // 0 until its header has arrived
  Reservation frame_reservation_;
  uint64_t next_frame_ = 0;
  uint64_t offset_ = 0;  // where frame_ starts in the archive
  std::vector<format::FrameIndexEntry> seen_;
  std::vector<uint8_t> tail_;  // frame index and trailer

  // Writing.
  bool header_sent_ = false;
  uint64_t rows_sent_ = 0;  // frames whose rows were sent
  bool sent_all_ = false;
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* NewDecompressCall(
    CallEnv& env, grpc::CallbackServerContext* context) {
  return new DecompressCall(env, context);
}

}  // namespace ebzip::server
