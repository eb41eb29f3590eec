#include "server/decompress_call.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "codec/format.h"
#include "codec/frame_task.h"
#include "codec/memory_bounds.h"
#include "server/cpu_codec.h"
#include "server/region_call.h"
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
//
// Memory (docs/operations.md, "Limits and abuse"): the file header says
// what the array will cost before any of it is decoded, so an archive that
// would decode past a limit (a "bomb": a few bytes of constant data claiming
// gigabytes) is refused at its first 96 bytes. Archive bytes join the budget
// as they arrive; a work's array and working memory when it is queued.
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
  // A DecompressRequest holds the archive's bytes and, in the first
  // message only, options (region_call.h).
  absl::Status OnMessage(const v1::DecompressRequest& message) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (message.has_options()) {
      if (absl::Status s = TakeOptions(message.options()); !s.ok()) return s;
    }
    return ReceivePayload(Payload::Of(message.archive()));
  }

  absl::Status TakeOptions(const v1::DecompressOptions& options)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (choice_ || payload_seen_) {
      return absl::InvalidArgumentError("options are taken in the first message only");
    }
    auto choice = DecompressChoice::Parse(options, env_.limits);
    if (!choice.ok()) return choice.status();
    choice_ = *std::move(choice);
    if (!choice_->by_path()) return absl::OkStatus();
    decided_ = true;  // buffered, whatever the frames
    return choice_->ReadArchive(env_, *whole_);
  }

  absl::Status OnPayload(const Payload& data) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    payload_seen_ = true;
    if (choice_ && choice_->by_path() && data.size() > 0) {
      return absl::InvalidArgumentError(
          "a request naming options.archive_path sends no archive bytes");
    }
    if (header_) return Feed(data.pieces(), 0, 0);
    const auto& pieces = data.pieces();
    for (size_t i = 0; i < pieces.size(); ++i) {
      absl::Span<const uint8_t> piece = pieces[i];
      if (!decided_) {
        // The file header first: it says which way the rest goes.
        const size_t n =
            std::min<size_t>(piece.size(), format::kFileHeaderSize - whole_->input.size());
        if (absl::Status s = Keep(piece.first(n), format::kFileHeaderSize); !s.ok()) return s;
        piece.remove_prefix(n);
        if (whole_->input.size() < format::kFileHeaderSize) continue;
        decided_ = true;
        auto header = format::ParseFileHeader(whole_->input);
        if (!header.ok()) return header.status();
        if (absl::Status s =
                choice_ ? choice_->CheckFileHeader(env_, *header, 0) : CheckFileHeader(*header);
            !s.ok()) {
          return s;
        }
        if (header->frame_count >= 2 && !choice_) {
          // Streamed: the rest goes to the frames, and only the frames in
          // flight are held, however large the archive.
          header_ = *std::move(header);
          set_window(env_.limits.stream_frames);
          whole_.reset();  // and its reservation
          offset_ = format::kFileHeaderSize;
          return Feed(pieces, i, pieces[i].size() - piece.size());
        }
      }
      if (absl::Status s = env_.CheckSize(Limit::kRequestBytes, whole_->input.size() + piece.size(),
                                          "the archive holds at least");
          !s.ok()) {
        return s;
      }
      if (absl::Status s = Keep(piece, env_.limits.max_request_bytes); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // Buffered: the archive's bytes, held as they arrive, in a buffer of at
  // most `most` bytes.
  absl::Status Keep(absl::Span<const uint8_t> bytes, uint64_t most)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (absl::Status s = AppendHeld(bytes, most, &whole_->input, &whole_->reservation); !s.ok()) {
      return env_.Refuse(Limit::kQueuedBytes, s);
    }
    return absl::OkStatus();
  }

  // What the file header says the array will cost, against every limit.
  absl::Status CheckFileHeader(const format::FileHeader& h) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint64_t out = ArraySpec{h.dtype, h.shape}.num_bytes();
    if (absl::Status s = env_.CheckSize(Limit::kOutputBytes, out, "the archive decodes to");
        !s.ok()) {
      return s;
    }
    if (h.frame_count > kMaxFrames) {
      return env_.Refuse(Limit::kOptions, absl::ResourceExhaustedError(absl::StrCat(
                                              "the archive has ", h.frame_count,
                                              " frames, more than this server's ", kMaxFrames)));
    }
    const uint64_t frame_out = out / h.shape[0] * h.frame_rows;
    const uint64_t at_once = std::min<uint64_t>(kFramesAtOnce, h.frame_count);
    if (h.frame_count < 2) {
      if (absl::Status s = env_.CheckSize(Limit::kRequestBytes, out, "the array holds"); !s.ok()) {
        return s;
      }
      // The archive's own size is not known yet: a frame is taken to be as
      // large as its array, as a first look (the exact cost is reserved
      // when the archive is complete).
      return env_.CheckCost(SaturatingAdd(frame_out, DecompressHeapBytes(h, frame_out, at_once)),
                            "this archive");
    }
    // The frame index as streamed, checked against the archive's own at
    // its end.
    index_held_ = env_.admission.Empty();
    if (absl::Status s = index_held_.Grow(h.frame_count * sizeof(format::FrameIndexEntry));
        !s.ok()) {
      return env_.Refuse(Limit::kQueuedBytes, s);
    }
    seen_.reserve(h.frame_count);
    // The frames in flight, each with its bytes, rows and working memory.
    const uint64_t frame_cost = SaturatingAdd(
        frame_out, DecompressHeapBytes(FrameFileHeader(h), frame_out, /*concurrent_frames=*/1));
    return env_.CheckCost(SaturatingMul(env_.limits.stream_frames + 1, frame_cost),
                          "this streamed archive");
  }

  // The file header of one frame of `h` alone (as FramePart makes it).
  static format::FileHeader FrameFileHeader(const format::FileHeader& h) {
    format::FileHeader one = h;
    one.shape[0] = h.frame_rows;
    one.frame_count = 1;
    return one;
  }

  // Streamed: feeds the pieces in order, from byte `at` of piece `first`;
  // what is left once the window is full waits for room (Defer).
  absl::Status Feed(const std::vector<absl::Span<const uint8_t>>& pieces, size_t first, size_t at)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (size_t i = first; i < pieces.size(); ++i) {
      const size_t from = i == first ? at : 0;
      auto fed = Feed(pieces[i].subspan(from));
      if (!fed.ok()) return fed.status();
      if (from + *fed < pieces[i].size()) return Defer(pieces, i, from + *fed);
    }
    return absl::OkStatus();
  }

  // Cuts the bytes into frames, queueing each as it completes, then keeps
  // the frame index and trailer; stops after a frame that fills the window.
  // The bytes taken.
  absl::StatusOr<size_t> Feed(absl::Span<const uint8_t> bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint8_t* data = bytes.data();
    size_t size = bytes.size();
    while (size > 0) {
      if (window_full()) return bytes.size() - size;
      if (next_frame_ == header_->frame_count) {
        const uint64_t tail = format::FrameIndexSize(header_->frame_count) + format::kTrailerSize;
        if (size > tail - tail_.size()) {
          return format::CorruptArchive("bytes after the trailer");
        }
        if (absl::Status s = AppendHeld({data, size}, tail, &tail_, &index_held_); !s.ok()) {
          return env_.Refuse(Limit::kQueuedBytes, s);
        }
        return bytes.size();
      }
      // The frame header first (its size), then the rest of the frame.
      const uint64_t want = frame_size_ == 0 ? format::kFrameHeaderSize : frame_size_;
      const size_t n = std::min<uint64_t>(size, want - frame_.size());
      if (absl::Status s = AppendHeld({data, n}, want, &frame_, &frame_reservation_); !s.ok()) {
        return env_.Refuse(Limit::kQueuedBytes, s);
      }
      data += n;
      size -= n;
      if (frame_.size() < want) return bytes.size();
      if (frame_size_ == 0) {
        auto h = format::ParseFrameHeader(frame_);
        if (!h.ok()) return h.status();
        if (absl::Status s = CheckFrameHeader(*h); !s.ok()) return s;
        frame_size_ = h->frame_size();
        if (frame_.size() < frame_size_) continue;
      }
      if (absl::Status s = QueueFrame(); !s.ok()) return s;
    }
    return bytes.size();
  }

  // A frame decodes to at most --max_ratio times its size.
  absl::Status CheckFrameHeader(const format::FrameHeader& h) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint64_t out = SaturatingMul(h.num_elements(), DTypeSize(h.dtype));
    return CheckRatio(out, h.frame_size());
  }

  absl::Status CheckRatio(uint64_t array_bytes, uint64_t archive_bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (static_cast<double>(array_bytes) >
        env_.limits.max_ratio * static_cast<double>(archive_bytes)) {
      return env_.Refuse(
          Limit::kRatio,
          absl::ResourceExhaustedError(absl::StrCat(
              archive_bytes, " bytes of archive decode to ", array_bytes,
              " bytes, more than this server's --max_ratio of ", env_.limits.max_ratio)));
    }
    return absl::OkStatus();
  }

  absl::Status QueueFrame() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // The frame's bytes, as received, decode as a one-frame archive of their
    // own (codec/frame_task.h); held with the array and working memory its
    // decoding needs.
    auto part = FramePart(*header_, next_frame_, frame_);
    if (!part.ok()) return part.status();
    seen_.push_back({offset_, frame_.size()});
    offset_ += frame_.size();
    auto work = std::make_shared<Work>();
    work->method = Method::kDecompress;
    work->priority = priority_;
    work->reservation = std::move(frame_reservation_);
    frame_reservation_ = env_.admission.Empty();
    work->input = std::move(frame_);
    frame_ = std::vector<uint8_t>();
    work->info = *std::move(part);
    if (absl::Status s = work->reservation.Grow(CpuWorkingBytes(*work)); !s.ok()) {
      return env_.Refuse(Limit::kQueuedBytes, s);
    }
    Submit(std::move(work));
    ++next_frame_;
    frame_size_ = 0;
    return absl::OkStatus();
  }

  absl::Status OnEndOfInput() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (header_) return CheckIndexAndTrailer();
    if (whole_->input.empty()) return absl::DataLossError("empty archive: no bytes were sent");
    auto info = ReadArchiveInfo(whole_->input);
    if (!info.ok()) return info.status();
    if (absl::Status s = CheckRatio(info->spec().num_bytes(), whole_->input.size()); !s.ok()) {
      return s;
    }
    whole_->method = Method::kDecompress;
    whole_->priority = priority_;
    whole_->info = *std::move(info);
    if (choice_) {
      if (absl::Status s = choice_->Apply(*whole_); !s.ok()) return s;
    }
    if (absl::Status s = whole_->reservation.Grow(CpuWorkingBytes(*whole_)); !s.ok()) {
      return env_.Refuse(Limit::kQueuedBytes, s);
    }
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
        if (choice_) choice_->Describe(*work, env_.metrics, h);
      }
      h->set_request_id(request_id());
      h->set_backend(work->device);
      return Next::kSend;
    }
    if (work->output_block) {
      QueueBytes(std::move(work->output_block), std::move(work->reservation));
    } else {
      QueueBytes(std::move(work->output), std::move(work->reservation));
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
  // The first message's options, when it had any: always buffered.
  std::optional<DecompressChoice> choice_;
  bool payload_seen_ = false;

  // Streamed only.
  std::optional<format::FileHeader> header_;
  std::vector<uint8_t> frame_;  // the frame arriving
  uint64_t frame_size_ = 0;     // 0 until its header has arrived
  Reservation frame_reservation_;
  uint64_t next_frame_ = 0;
  uint64_t offset_ = 0;  // where frame_ starts in the archive
  std::vector<format::FrameIndexEntry> seen_;
  std::vector<uint8_t> tail_;  // frame index and trailer
  Reservation index_held_;     // for seen_ and tail_

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
