#include "client/remote/remote_client.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <optional>
#include <limits>
#include <new>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "absl/numeric/int128.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "client/remote/retry.h"
#include "codec/archive_parts.h"
#include "proto/payload.h"
#include "proto/raw_stream.h"
#include "ebzip/v1/ebzip.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace ebzip::client {
namespace {

constexpr int kMaxReceiveMessageBytes = 64 << 20;
// Round robin over every address the target resolves to, skipping servers
// whose grpc.health.v1 status is not SERVING. A call a draining server
// refuses (UNAVAILABLE, before it did any work) runs again on another, by
// CallWithRetries rather than a retryPolicy here (retry.h says why). Both
// methods are pure functions of their input, so running one again is safe.
constexpr char kServiceConfig[] = R"({
  "loadBalancingConfig": [{"round_robin": {}}],
  "healthCheckConfig": {"serviceName": ""}
})";
constexpr RetryPolicy kRetryPolicy;

// The two streaming methods, opened on raw byte buffers: a message that is
// only bulk bytes (proto/payload.h) is sent from the caller's memory and read
// where gRPC received it, skipping protobuf's two copies each way; the rest
// goes through protobuf (Serialize, Parse). The method names are static:
// gRPC keeps a pointer to them for the call's life (proto/raw_stream.h).
constexpr char kCompressMethod[] = "/ebzip.v1.Compressor/Compress";
constexpr char kDecompressMethod[] = "/ebzip.v1.Compressor/Decompress";

template <class Message>
grpc::ByteBuffer Serialize(const Message& message) {
  grpc::ByteBuffer buffer;
  bool own = false;
  // Serializing a message built here cannot fail short of memory.
  (void)grpc::SerializationTraits<Message>::Serialize(message, &buffer, &own);
  return buffer;
}

template <class Message>
absl::Status Parse(grpc::ByteBuffer& buffer, Message* message) {
  if (!grpc::SerializationTraits<Message>::Deserialize(&buffer, message).ok()) {
    return absl::InternalError("protocol error: the server sent a message that does not parse");
  }
  return absl::OkStatus();
}

absl::Status FromGrpc(const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

v1::CompressHeader MakeHeader(const ArraySpec& spec, const CompressOptions& o,
                              const RemoteOptions& r) {
  v1::CompressHeader h;
  auto* array = h.mutable_array();
  array->set_dtype(spec.dtype == DType::kFloat32 ? v1::FLOAT32 : v1::FLOAT64);
  for (uint64_t d : spec.shape) array->add_shape(d);
  h.mutable_error_bound()->set_mode(o.mode == BoundMode::kAbs ? v1::ABS : v1::REL);
  h.mutable_error_bound()->set_value(o.bound);
  auto* opt = h.mutable_options();
  opt->set_frame_elements(o.frame_elements);
  opt->set_gap_array(o.gap_array);
  if (o.fill_value) opt->set_fill_value(*o.fill_value);
  opt->set_radius(o.radius);
  opt->set_chunk_symbols(o.chunk_symbols);
  opt->set_subsequence_bits(o.subsequence_bits);
  opt->set_chunk_group(o.chunk_group);
  for (uint16_t b : o.block) opt->add_block(b);
  switch (o.predictor) {
    case Predictor::kAuto:
      opt->set_predictor(v1::PREDICTOR_AUTO);
      break;
    case Predictor::kLorenzo:
      opt->set_predictor(v1::LORENZO);
      break;
    case Predictor::kInterp:
      opt->set_predictor(v1::INTERPOLATION);
      break;
  }
  switch (o.lossless) {
    case Lossless::kAuto:
      opt->set_lossless(v1::LOSSLESS_AUTO);
      break;
    case Lossless::kHuffman:
      opt->set_lossless(v1::HUFFMAN);
      break;
    case Lossless::kZeroRuns:
      opt->set_lossless(v1::ZERO_RUNS);
      break;
    case Lossless::kRunValues:
      opt->set_lossless(v1::RUN_VALUES);
      break;
  }
  opt->set_interp_order(static_cast<uint32_t>(o.interp_order));
  if (o.range) {
    opt->mutable_value_range()->set_any(o.range->any);
    opt->mutable_value_range()->set_min(o.range->min);
    opt->mutable_value_range()->set_max(o.range->max);
  }
  h.set_metadata(o.metadata);
  h.set_request_id(r.request_id);
  h.set_priority(r.priority);
  return h;
}

// A reply that breaks the API's contract: the server is broken or hostile,
// which is neither the caller's fault nor the archive's.
absl::Status ProtocolError(absl::string_view what) {
  return absl::InternalError(absl::StrCat("protocol error: the server ", what));
}

// The reply header's array, checked before anything is sized from it:
// shape and dtype as the proto demands, a byte count that fits 64 bits, and
// at most `max_output_bytes`.
absl::StatusOr<ArraySpec> FromProto(const v1::ArraySpec& p, uint64_t max_output_bytes) {
  ArraySpec spec;
  if (p.dtype() == v1::FLOAT32) {
    spec.dtype = DType::kFloat32;
  } else if (p.dtype() == v1::FLOAT64) {
    spec.dtype = DType::kFloat64;
  } else {
    return ProtocolError(absl::StrCat("sent an unknown dtype (", p.dtype(), ")"));
  }
  spec.shape.assign(p.shape().begin(), p.shape().end());
  if (auto s = ValidateArraySpec(spec); !s.ok()) {
    return ProtocolError(absl::StrCat("sent a bad array header: ", s.message()));
  }
  if (spec.num_bytes() > max_output_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the server's reply describes an array of ", spec.num_bytes(), " bytes (",
                     DTypeName(spec.dtype), " ", ShapeToString(spec.shape),
                     "), more than max_output_bytes=", max_output_bytes, "; raise it to accept"));
  }
  return spec;
}

v1::DecompressOptions ToProto(const DecompressRequestOptions& o) {
  v1::DecompressOptions p;
  if (o.region) {
    auto* r = p.mutable_region();
    for (uint64_t v : o.region->start) r->add_start(v);
    for (uint64_t v : o.region->count) r->add_count(v);
    for (uint64_t v : o.region->step) r->add_step(v);
  }
  p.set_archive_path(o.archive_path);
  p.set_header_only(o.header_only);
  return p;
}

// A reply header to a request with options, checked against what was
// asked: the whole array valid, and the array sent the region's (or, for
// a path or the header alone, the whole array).
absl::Status CheckOptionsReply(const v1::DecompressHeader& h, const DecompressRequestOptions& o,
                               uint64_t max_output_bytes, RemoteArrayHeader* out) {
  if (!h.has_archive_array()) {
    return absl::FailedPreconditionError(
        "the server ignored the request's options (region, archive path, header only): it "
        "predates them; upgrade it, or decompress the whole uploaded archive");
  }
  auto whole = FromProto(h.archive_array(), std::numeric_limits<uint64_t>::max());
  if (!whole.ok()) return whole.status();
  out->archive_spec = *whole;
  out->abs_bound = h.abs_error_bound();
  out->backend = h.backend();
  if (!o.region) {
    if (h.array().SerializeAsString() != h.archive_array().SerializeAsString()) {
      return ProtocolError("sent an array that is not the archive's");
    }
    out->spec = *whole;
    if (!o.header_only && whole->num_bytes() > max_output_bytes) {
      return FromProto(h.array(), max_output_bytes).status();
    }
    return absl::OkStatus();
  }
  ArraySpec region{whole->dtype, o.region->count};
  if (h.array().dtype() != h.archive_array().dtype() ||
      !std::equal(h.array().shape().begin(), h.array().shape().end(), region.shape.begin(),
                  region.shape.end())) {
    return ProtocolError("sent an array that is not the region asked for");
  }
  if (region.num_bytes() > max_output_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the region holds ", region.num_bytes(),
        " bytes, more than max_output_bytes=", max_output_bytes, "; raise it to accept"));
  }
  out->spec = std::move(region);
  return absl::OkStatus();
}

}  // namespace

uint64_t MaxArchiveBytes(const ArraySpec& spec, const CompressOptions& options) {
  // Sizes from FORMAT.md, each at its worst; 128-bit, so no shape overflows.
  constexpr uint64_t kSlack = uint64_t{1} << 20;
  if (spec.shape.empty()) return kSlack;
  absl::uint128 n = 1, row = 1;
  for (size_t i = 0; i < spec.shape.size(); ++i) {
    n *= spec.shape[i];
    if (i > 0) row *= spec.shape[i];
  }
  if (row == 0) return kSlack;
  // Frames: PlanArchive cuts rows = max(1, L / row) rounded down to the
  // Lorenzo block b, but at least b; whatever b is, that is at least half of
  // L / row + 1 (or the whole first dimension). A 0 option is the server's
  // default, which is CompressOptions' default.
  const CompressOptions defaults;
  const uint64_t frame_elements =
      std::min(options.frame_elements == 0 ? defaults.frame_elements : options.frame_elements,
               format::kMaxFrameElements);
  const absl::uint128 rows_at_least =
      std::max<absl::uint128>(1, (std::max<absl::uint128>(1, frame_elements / row) + 1) / 2);
  const absl::uint128 frames = (spec.shape[0] + rows_at_least - 1) / rows_at_least;
  const absl::uint128 chunk_symbols =
      options.chunk_symbols == 0 ? defaults.chunk_symbols : options.chunk_symbols;
  const absl::uint128 radius = options.radius == 0 ? defaults.radius : options.radius;
  const absl::uint128 chunks = n / chunk_symbols + frames;
  const uint64_t element_bytes = spec.dtype == DType::kFloat32 ? 4 : 8;
  // The file header, the frame index's own 16 bytes and the trailer.
  absl::uint128 bytes = format::kFileHeaderSize + 16 + format::kTrailerSize;
  // Per frame: its header, its index entry, up to 7 bytes of padding after
  // each section and 4 inside the verbatim section.
  bytes += frames * (format::kFrameHeaderSize + 16 + 7 * format::kSectionCount + 4);
  // Code lengths: at most 1.5 bytes a symbol (a length, then a run of one
  // zero), and no more than 5 bytes per used symbol, which an element is.
  bytes += std::min(frames * (3 * radius + 4), 5 * n + 4 * frames);
  // Per chunk: a group offset (8), its length (4), the gap array's rounding
  // up (1) and the bitstream's word padding (4).
  bytes += chunks * 17;
  // Per element: at most a 24-bit codeword, a gap-array byte per 32 bits,
  // and one outlier (8), verbatim (4 + the value) or fill-run (8) entry;
  // in version 2 also a fill-mask token (4).
  bytes += n * (3 + 1 + 4 + std::max<uint64_t>(8, 4 + element_bytes));
  // Version 2's metadata block, and its fill masks' fixed parts.
  bytes += format::MetadataBlockBytes(format::kMaxMetadataDocument) + frames * 64;
  bytes += kSlack;
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  return bytes > kMax ? kMax : absl::Uint128Low64(bytes);
}

struct RemoteClient::Impl {
  RemoteOptions options;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Compressor::Stub> stub;
  // A split call's parts, one connection each; part 0 takes `channel`.
  std::vector<std::shared_ptr<grpc::Channel>> part_channels;

  grpc::Channel& ChannelFor(size_t part) {
    return part == 0 ? *channel : *part_channels[(part - 1) % part_channels.size()];
  }

  // How many calls an array of `bytes` in `frames` frames is split over.
  uint64_t PartsFor(uint64_t bytes, uint64_t frames, bool in_order) const {
    constexpr uint64_t kBytesPerAutoStream = uint64_t{128} << 20;
    constexpr uint64_t kMaxAutoStreams = 8;
    if (options.streams == 1 || frames < 2 || part_channels.empty()) return 1;
    if (in_order && bytes > PhysicalMemoryBytes() / 4) return 1;
    const uint64_t wanted =
        options.streams > 0
            ? static_cast<uint64_t>(options.streams)
            : std::min<uint64_t>(kMaxAutoStreams, std::max<uint64_t>(1, bytes / kBytesPerAutoStream));
    return std::min(wanted, frames);
  }

  // When a call, all of its attempts together, must have ended.
  absl::Time Deadline() const {
    return options.timeout == absl::ZeroDuration() || options.timeout == absl::InfiniteDuration()
               ? absl::InfiniteFuture()
               : absl::Now() + options.timeout;
  }

  void Prepare(grpc::ClientContext* context, absl::Time deadline) const {
    if (!options.token.empty()) context->AddMetadata("authorization", "Bearer " + options.token);
    if (!options.request_id.empty()) context->AddMetadata("ebzip-request-id", options.request_id);
    if (options.priority != 0) {
      context->AddMetadata("ebzip-priority", absl::StrCat(options.priority));
    }
    if (deadline != absl::InfiniteFuture()) context->set_deadline(absl::ToChronoTime(deadline));
  }

  absl::StatusOr<RemoteSummary> CompressOnce(grpc::Channel& on, const ArraySpec& spec,
                                             absl::Span<const uint8_t> data,
                                             const CompressOptions& codec_options,
                                             absl::Time deadline, const ByteSink& sink);
  absl::StatusOr<RemoteArrayHeader> DecompressOnce(
      grpc::Channel& on, absl::Span<const uint8_t> archive,
      const DecompressRequestOptions& request,
      const std::function<absl::Status(const RemoteArrayHeader&)>& on_header, const ByteSink& sink,
      absl::Time deadline);
};

RemoteClient::RemoteClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RemoteClient::~RemoteClient() = default;

absl::StatusOr<std::unique_ptr<RemoteClient>> RemoteClient::Connect(const RemoteOptions& o) {
  if (o.server.empty()) return absl::InvalidArgumentError("no server address given");
  if (o.message_bytes == 0) return absl::InvalidArgumentError("message size must be positive");
  if (o.streams < 0 || o.streams > kMaxStreams) {
    return absl::InvalidArgumentError(
        absl::StrCat("streams must be 0 (automatic) to ", kMaxStreams, ", got ", o.streams));
  }
  if (o.timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("the timeout must not be negative (zero: none)");
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (o.tls_ca_file.empty()) {
    credentials = grpc::InsecureChannelCredentials();
  } else {
    std::ifstream in(o.tls_ca_file, std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", o.tls_ca_file));
    std::ostringstream pem;
    pem << in.rdbuf();
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = pem.str();
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  if (!o.tls_server_name.empty()) args.SetSslTargetNameOverride(o.tls_server_name);
  // A target that resolves to many servers (dns:///headless-service:50051)
  // spreads calls over all of them, and a server that is draining (health
  // NOT_SERVING) leaves the rotation at once, before its endpoint is removed.
  args.SetServiceConfigJSON(kServiceConfig);
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);  // CallWithRetries instead (retry.h)
  auto impl = std::make_unique<Impl>();
  impl->options = o;
  impl->channel = grpc::CreateCustomChannel(o.server, credentials, args);
  impl->stub = v1::Compressor::NewStub(impl->channel);
  // Channels of one process share connections (gRPC's global subchannel
  // pool); a pool of its own gives each part's channel a connection of its
  // own. They connect on their first call.
  const int parts = o.streams == 0 ? 8 : o.streams;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  for (int i = 1; i < parts; ++i) {
    impl->part_channels.push_back(grpc::CreateCustomChannel(o.server, credentials, args));
  }
  return std::unique_ptr<RemoteClient>(new RemoteClient(std::move(impl)));
}

absl::StatusOr<RemoteSummary> RemoteClient::Compress(const ArraySpec& spec,
                                                     absl::Span<const uint8_t> data,
                                                     const CompressOptions& options,
                                                     const ByteSink& sink) {
  if (data.size() != spec.num_bytes()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the array has ", data.size(), " bytes; its shape needs ", spec.num_bytes()));
  }
  // The frame count needs no bound; a plan that fails is the server's to
  // refuse, in one call.
  CompressOptions sent = options;
  if (auto plan = PlanArchive(spec, options, ResolvedBound{1, 2});
      plan.ok() && ValidateCompressOptions(spec, options).ok()) {
    const uint64_t parts = impl_->PartsFor(spec.num_bytes(), plan->frame_count(), true);
    if (parts > 1) return CompressInParts(spec, data, options, parts, sink);
    // A relative bound over several frames goes with the array's range
    // (one pass here, on every core), so that the server streams it frame
    // by frame as it does an absolute bound instead of holding the whole
    // array first: the same archive, since the server would find the same
    // range.
    if (options.mode == BoundMode::kRel && !options.range && plan->frame_count() > 1) {
      sent.range = RangeFor(spec, data, options);
    }
  }
  const absl::Time deadline = impl_->Deadline();
  RemoteSummary summary;
  absl::Status s = CallWithRetries(kRetryPolicy, deadline, [&](bool* delivered) {
    auto once = impl_->CompressOnce(
        *impl_->channel, spec, data, sent, deadline, [&](absl::Span<const uint8_t> bytes) {
          *delivered = true;
          return sink(bytes);
        });
    if (once.ok()) summary = *std::move(once);
    return once.status();
  });
  if (!s.ok()) return s;
  return summary;
}

absl::StatusOr<RemoteSummary> RemoteClient::Impl::CompressOnce(
    grpc::Channel& on, const ArraySpec& spec, absl::Span<const uint8_t> data,
    const CompressOptions& codec_options, absl::Time deadline, const ByteSink& sink) {
  grpc::ClientContext context;
  Prepare(&context, deadline);
  auto stream = OpenRawStream(on, kCompressMethod, &context);
  // The server streams an archive back while the array is still arriving
  // (absolute bounds, several frames) and stops reading when its window is
  // full: send on a thread of its own while this one reads.
  std::thread sender([&] {
    v1::CompressRequest request;
    *request.mutable_header() = MakeHeader(spec, codec_options, options);
    // The header waits for the first data and the last data carries the
    // half-close: a small array goes out in one transport write, not three.
    bool sending = stream->Write(Serialize(request), grpc::WriteOptions().set_buffer_hint());
    bool closed = false;
    for (size_t at = 0; sending && at < data.size(); at += options.message_bytes) {
      const size_t n = std::min(options.message_bytes, data.size() - at);
      closed = at + n == data.size();
      // Sent from the caller's array, which outlives the call.
      sending = stream->Write(
          PayloadMessage(v1::CompressRequest::kDataFieldNumber, data.subspan(at, n), nullptr),
          closed ? grpc::WriteOptions().set_last_message() : grpc::WriteOptions());
    }
    // A failed write means the server has ended the call; its status says why.
    if (!closed) stream->WritesDone();
  });
  grpc::ByteBuffer buffer;
  v1::CompressResponse response;
  RemoteSummary summary;
  bool have_summary = false;
  const uint64_t max_archive_bytes = MaxArchiveBytes(spec, codec_options);
  uint64_t received = 0;
  absl::Status local;  // a failure on this side: the sink's, or the reply's
  while (stream->Read(&buffer)) {
    if (!local.ok()) continue;
    // The archive's bytes are read where gRPC received them.
    std::optional<Payload> archive_bytes =
        Payload::Of(buffer, v1::CompressResponse::kArchiveFieldNumber);
    response.Clear();
    if (!archive_bytes) {
      local = Parse(buffer, &response);
      archive_bytes = Payload::Of(response.archive());
    }
    if (!local.ok()) {
      // the reply does not parse
    } else if (have_summary) {
      local = ProtocolError("sent a message after the summary");
    } else if (response.has_summary()) {
      const auto& s = response.summary();
      summary = {s.input_bytes(), s.archive_bytes(), s.abs_error_bound(), s.outliers(),
                 s.verbatim(),    s.frames(),        s.backend(),         s.request_id()};
      have_summary = true;
    } else {
      received += archive_bytes->size();
      // Checked before the sink sees the bytes: a server that streams
      // without end is stopped here, not by the caller's memory.
      if (received > max_archive_bytes) {
        local = ProtocolError(absl::StrCat("sent more than ", max_archive_bytes,
                                           " archive bytes, more than any archive of a ",
                                           spec.num_bytes(), "-byte array can take"));
      }
      for (absl::Span<const uint8_t> piece : archive_bytes->pieces()) {
        if (local.ok()) local = sink(piece);
      }
    }
    if (!local.ok()) context.TryCancel();
  }
  sender.join();
  const grpc::Status status = stream->Finish();
  if (!local.ok()) return local;
  if (!status.ok()) return FromGrpc(status);
  if (!have_summary) return ProtocolError("ended the call without a summary");
  if (summary.archive_bytes != received) {
    return ProtocolError(absl::StrCat("sent ", received, " archive bytes; its summary says ",
                                      summary.archive_bytes));
  }
  return summary;
}

absl::StatusOr<std::vector<uint8_t>> RemoteClient::Compress(const ArraySpec& spec,
                                                            absl::Span<const uint8_t> data,
                                                            const CompressOptions& options,
                                                            RemoteSummary* summary) {
  std::vector<uint8_t> archive;
  auto s = Compress(spec, data, options, [&](absl::Span<const uint8_t> bytes) -> absl::Status {
    // An exception must not cross the call's read loop (its sender thread
    // would still be running): a failed allocation becomes a status.
    try {
      archive.insert(archive.end(), bytes.begin(), bytes.end());
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError(
          absl::StrCat("out of memory holding ", archive.size(), " archive bytes"));
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s.status();
  if (summary != nullptr) *summary = *s;
  return archive;
}

absl::StatusOr<RemoteArrayHeader> RemoteClient::Decompress(
    absl::Span<const uint8_t> archive,
    const std::function<absl::Status(const RemoteArrayHeader&)>& on_header, const ByteSink& sink) {
  return Decompress(archive, DecompressRequestOptions(), on_header, sink);
}

absl::StatusOr<RemoteArrayHeader> RemoteClient::Decompress(
    absl::Span<const uint8_t> archive, const DecompressRequestOptions& request,
    const std::function<absl::Status(const RemoteArrayHeader&)>& on_header, const ByteSink& sink) {
  if (!request.archive_path.empty() && !archive.empty()) {
    return absl::InvalidArgumentError("an archive path and archive bytes: send one or the other");
  }
  // A region, a path or the header alone is one call; a whole uploaded
  // archive may be split.
  absl::StatusOr<ArchiveInfo> info = absl::FailedPreconditionError("not split");
  if (!request.any()) info = ReadArchiveInfo(archive);  // invalid: the server says why
  if (info.ok()) {
    const uint64_t parts =
        impl_->PartsFor(info->spec().num_bytes(), info->header.frame_count, true);
    if (parts > 1) {
      // Parts arrive at once; the sink takes bytes in order. The earliest
      // unfinished part writes straight through, later ones are held until
      // it is done.
      absl::Mutex mu;
      size_t head = 0;
      std::vector<std::vector<uint8_t>> held(parts);
      std::vector<bool> finished(parts, false);
      return DecompressInParts(
          archive, *info, parts, on_header,
          [&](size_t part, uint64_t, absl::Span<const uint8_t> bytes) -> absl::Status {
            absl::MutexLock lock(&mu);
            if (part == head) return sink(bytes);
            try {
              held[part].insert(held[part].end(), bytes.begin(), bytes.end());
            } catch (const std::bad_alloc&) {
              return absl::ResourceExhaustedError("out of memory holding a part of the array");
            }
            return absl::OkStatus();
          },
          [&](size_t part) -> absl::Status {
            absl::MutexLock lock(&mu);
            finished[part] = true;
            while (head < parts && finished[head]) {
              if (++head == parts) break;
              absl::Status s = sink(held[head]);
              std::vector<uint8_t>().swap(held[head]);
              if (!s.ok()) return s;
            }
            return absl::OkStatus();
          });
    }
  }
  const absl::Time deadline = impl_->Deadline();
  RemoteArrayHeader header;
  absl::Status s = CallWithRetries(kRetryPolicy, deadline, [&](bool* delivered) {
    auto once = impl_->DecompressOnce(
        *impl_->channel, archive, request,
        [&](const RemoteArrayHeader& h) {
          *delivered = true;
          return on_header(h);
        },
        sink, deadline);
    if (once.ok()) header = *std::move(once);
    return once.status();
  });
  if (!s.ok()) return s;
  return header;
}

absl::StatusOr<RemoteArrayHeader> RemoteClient::Impl::DecompressOnce(
    grpc::Channel& on, absl::Span<const uint8_t> archive,
    const DecompressRequestOptions& request,
    const std::function<absl::Status(const RemoteArrayHeader&)>& on_header, const ByteSink& sink,
    absl::Time deadline) {
  grpc::ClientContext context;
  Prepare(&context, deadline);
  auto stream = OpenRawStream(on, kDecompressMethod, &context);
  // Rows come back while the archive is still arriving (archives of several
  // frames): send on a thread of its own while this one reads.
  std::thread sender([&] {
    v1::DecompressRequest message;
    bool sending = true, closed = false;
    // The options ride in the first message, with the first archive bytes
    // or alone.
    if (request.any()) *message.mutable_options() = ToProto(request);
    if (archive.empty() && request.any()) {
      closed = true;
      sending = stream->Write(Serialize(message), grpc::WriteOptions().set_last_message());
    }
    for (size_t at = 0; sending && at < archive.size(); at += options.message_bytes) {
      const size_t n = std::min(options.message_bytes, archive.size() - at);
      closed = at + n == archive.size();  // the last message carries the half-close
      const grpc::WriteOptions write =
          closed ? grpc::WriteOptions().set_last_message() : grpc::WriteOptions();
      if (at == 0 && request.any()) {
        message.set_archive(archive.data(), n);
        sending = stream->Write(Serialize(message), write);
      } else {
        // Sent from the caller's archive, which outlives the call.
        sending = stream->Write(PayloadMessage(v1::DecompressRequest::kArchiveFieldNumber,
                                               archive.subspan(at, n), nullptr),
                                write);
      }
    }
    if (!closed) stream->WritesDone();
  });
  grpc::ByteBuffer buffer;
  v1::DecompressResponse response;
  RemoteArrayHeader header;
  bool have_header = false;
  uint64_t received = 0;
  absl::Status local;  // a failure on this side
  while (stream->Read(&buffer)) {
    if (!local.ok()) continue;
    // The array's bytes are read where gRPC received them.
    std::optional<Payload> data = Payload::Of(buffer, v1::DecompressResponse::kDataFieldNumber);
    response.Clear();
    if (!data) {
      local = Parse(buffer, &response);
      data = Payload::Of(response.data());
    }
    if (!local.ok()) {
      // the reply does not parse
    } else if (response.has_header()) {
      if (have_header) {
        local = ProtocolError("sent a second header");
      } else if (request.any()) {
        local = CheckOptionsReply(response.header(), request, options.max_output_bytes, &header);
        have_header = local.ok();
        if (local.ok()) local = on_header(header);
      } else if (auto spec = FromProto(response.header().array(), options.max_output_bytes);
                 !spec.ok()) {
        local = spec.status();
      } else {
        header = {*spec, response.header().abs_error_bound(), response.header().backend(), {}};
        have_header = true;
        local = on_header(header);
      }
    } else if (!have_header) {
      local = ProtocolError("sent data before the header");
    } else {
      received += data->size();
      const uint64_t expected = request.header_only ? 0 : header.spec.num_bytes();
      if (received > expected) {
        local =
            ProtocolError(absl::StrCat("sent more data than the header's ", expected, " bytes"));
      }
      for (absl::Span<const uint8_t> piece : data->pieces()) {
        if (local.ok()) local = sink(piece);
      }
    }
    if (!local.ok()) context.TryCancel();
  }
  sender.join();
  const grpc::Status status = stream->Finish();
  if (!local.ok()) return local;
  if (!status.ok()) return FromGrpc(status);
  if (!have_header) return ProtocolError("ended the call without a header");
  if (received != (request.header_only ? 0 : header.spec.num_bytes())) {
    return ProtocolError(absl::StrCat("ended the call after ", received, " bytes of a ",
                                      header.spec.num_bytes(), "-byte array"));
  }
  return header;
}

absl::StatusOr<DecompressedArray> RemoteClient::Decompress(absl::Span<const uint8_t> archive) {
  return Decompress(archive, DecompressRequestOptions());
}

absl::StatusOr<DecompressedArray> RemoteClient::Decompress(
    absl::Span<const uint8_t> archive, const DecompressRequestOptions& request) {
  if (request.any()) {
    DecompressedArray out;
    auto h = Decompress(
        archive, request,
        [&](const RemoteArrayHeader& header) -> absl::Status {
          try {
            out.data.reserve(request.header_only ? 0 : header.spec.num_bytes());
          } catch (const std::bad_alloc&) {
            return absl::ResourceExhaustedError(
                absl::StrCat("cannot allocate ", header.spec.num_bytes(), " bytes for the array"));
          } catch (const std::length_error&) {
            return absl::ResourceExhaustedError(absl::StrCat(
                "an array of ", header.spec.num_bytes(), " bytes is beyond this process"));
          }
          return absl::OkStatus();
        },
        [&](absl::Span<const uint8_t> bytes) {
          out.data.insert(out.data.end(), bytes.begin(), bytes.end());
          return absl::OkStatus();
        });
    if (!h.ok()) return h.status();
    out.spec = h->spec;
    out.abs_bound = h->abs_bound;
    return out;
  }
  DecompressedArray out;
  auto h = DecompressInto(
      archive, [&](const RemoteArrayHeader& header) -> absl::StatusOr<absl::Span<uint8_t>> {
        // Within max_output_bytes, which may still be more than this process
        // can have; the exception must not cross the call's read loop.
        try {
          out.data.resize(header.spec.num_bytes());
        } catch (const std::bad_alloc&) {
          return absl::ResourceExhaustedError(
              absl::StrCat("cannot allocate ", header.spec.num_bytes(), " bytes for the array"));
        } catch (const std::length_error&) {
          return absl::ResourceExhaustedError(absl::StrCat("an array of ", header.spec.num_bytes(),
                                                           " bytes is beyond this process"));
        }
        return absl::MakeSpan(out.data);
      });
  if (!h.ok()) return h.status();
  out.spec = h->spec;
  out.abs_bound = h->abs_bound;
  return out;
}

absl::StatusOr<RemoteArrayHeader> RemoteClient::DecompressInto(absl::Span<const uint8_t> archive,
                                                               const Destination& destination) {
  absl::Span<uint8_t> out;
  auto take = [&](const RemoteArrayHeader& header) -> absl::Status {
    auto span = destination(header);
    if (!span.ok()) return span.status();
    if (span->size() != header.spec.num_bytes()) {
      return absl::InvalidArgumentError(absl::StrCat("the destination holds ", span->size(),
                                                     " bytes; the array has ",
                                                     header.spec.num_bytes()));
    }
    out = *span;
    return absl::OkStatus();
  };
  if (auto info = ReadArchiveInfo(archive); info.ok()) {
    const uint64_t parts =
        impl_->PartsFor(info->spec().num_bytes(), info->header.frame_count, false);
    if (parts > 1) {
      const uint64_t row_bytes = info->spec().num_bytes() / info->header.shape[0];
      const std::vector<FrameRange> ranges = SplitFrames(info->header.frame_count, parts);
      return DecompressInParts(
          archive, *info, parts, take,
          [&](size_t part, uint64_t at, absl::Span<const uint8_t> bytes) {
            const uint64_t offset = ranges[part].first * info->header.frame_rows * row_bytes + at;
            std::memcpy(out.data() + offset, bytes.data(), bytes.size());
            return absl::OkStatus();
          },
          [](size_t) { return absl::OkStatus(); });
    }
  }
  uint64_t at = 0;
  return Decompress(archive, take, [&](absl::Span<const uint8_t> bytes) {
    std::memcpy(out.data() + at, bytes.data(), bytes.size());
    at += bytes.size();
    return absl::OkStatus();
  });
}

namespace {

// Runs part(i) for i in [0, n) on threads of their own; the first failure.
// Once one part fails, `stop` is set so the others give up.
absl::Status RunParts(size_t n, std::atomic<bool>& stop,
                      const std::function<absl::Status(size_t)>& part) {
  std::vector<absl::Status> status(n);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      status[i] = part(i);
      if (!status[i].ok()) stop = true;
    });
  }
  for (std::thread& t : threads) t.join();
  // The first part that failed of its own accord, not because another did.
  for (const absl::Status& s : status) {
    if (!s.ok() && !absl::IsCancelled(s)) return s;
  }
  for (const absl::Status& s : status) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status OtherPartFailed() {
  return absl::CancelledError("another part of the call failed");
}

}  // namespace

absl::StatusOr<RemoteSummary> RemoteClient::CompressInParts(const ArraySpec& spec,
                                                            absl::Span<const uint8_t> data,
                                                            const CompressOptions& options,
                                                            uint64_t parts, const ByteSink& sink) {
  // Every part is quantized against the whole array's range.
  const ValueRange range = RangeFor(spec, data, options);
  auto plan = PlanArchive(spec, options, ResolveBound(options, spec.dtype, range));
  if (!plan.ok()) return plan.status();
  const CompressOptions part_options = PartOptions(options, range);
  const std::vector<FrameRange> ranges = SplitFrames(plan->frame_count(), parts);
  const absl::Time deadline = impl_->Deadline();
  std::vector<std::vector<uint8_t>> archives(ranges.size());
  std::vector<RemoteSummary> summaries(ranges.size());
  std::atomic<bool> stop{false};
  absl::Status s = RunParts(ranges.size(), stop, [&](size_t i) {
    const ArraySpec part = PartSpec(*plan, ranges[i]);
    const absl::Span<const uint8_t> rows =
        data.subspan(PartDataOffset(*plan, ranges[i]), part.num_bytes());
    return CallWithRetries(kRetryPolicy, deadline, [&](bool* delivered) -> absl::Status {
      archives[i].clear();
      auto once = impl_->CompressOnce(
          impl_->ChannelFor(i), part, rows, part_options, deadline,
          [&](absl::Span<const uint8_t> bytes) -> absl::Status {
            if (stop) return OtherPartFailed();
            *delivered = true;
            try {
              archives[i].insert(archives[i].end(), bytes.begin(), bytes.end());
            } catch (const std::bad_alloc&) {
              return absl::ResourceExhaustedError("out of memory holding a part's archive");
            }
            return absl::OkStatus();
          });
      if (once.ok()) summaries[i] = *std::move(once);
      return once.status();
    });
  });
  if (!s.ok()) return s;

  ArchiveAssembler assembler(*plan);
  RemoteSummary summary;
  summary.input_bytes = spec.num_bytes();
  summary.abs_bound = plan->header.abs_bound;
  std::vector<uint8_t> bytes = assembler.Begin();
  for (size_t i = 0; i <= ranges.size(); ++i) {
    if (i > 0) {
      const RemoteSummary& p = summaries[i - 1];
      summary.outliers += p.outliers;
      summary.verbatim += p.verbatim;
      summary.frames += p.frames;
      if (summary.request_id.empty()) summary.request_id = p.request_id;
      if (summary.backend.find(p.backend) == std::string::npos) {
        summary.backend += summary.backend.empty() ? p.backend : "," + p.backend;
      }
    }
    absl::Status added = i < ranges.size() ? assembler.AddPart(archives[i], &bytes)
                                           : assembler.Finish(&bytes);
    if (!added.ok()) return ProtocolError(absl::StrCat("sent a part archive that ", added.message()));
    if (i < ranges.size()) std::vector<uint8_t>().swap(archives[i]);
    summary.archive_bytes += bytes.size();
    if (absl::Status sunk = sink(bytes); !sunk.ok()) return sunk;
    bytes.clear();
  }
  return summary;
}

absl::StatusOr<RemoteArrayHeader> RemoteClient::DecompressInParts(
    absl::Span<const uint8_t> archive, const ArchiveInfo& info, uint64_t parts,
    const std::function<absl::Status(const RemoteArrayHeader&)>& on_header,
    const PartWrite& write, const PartDone& done) {
  const ArraySpec spec = info.spec();
  if (spec.num_bytes() > impl_->options.max_output_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the archive holds an array of ", spec.num_bytes(),
                     " bytes, more than max_output_bytes=", impl_->options.max_output_bytes,
                     "; raise it to accept"));
  }
  const std::vector<FrameRange> ranges = SplitFrames(info.header.frame_count, parts);
  const uint64_t row_bytes = spec.num_bytes() / spec.shape[0];
  const absl::Time deadline = impl_->Deadline();
  RemoteArrayHeader header{spec, info.header.abs_bound, "", spec};
  std::vector<std::string> backends(ranges.size());
  // The caller sees the array's header once, before any part's bytes: the
  // parts' replies are checked against their share of it.
  if (absl::Status s = on_header(header); !s.ok()) return s;
  std::atomic<bool> stop{false};
  absl::Status s = RunParts(ranges.size(), stop, [&](size_t i) -> absl::Status {
    auto part = PartArchive(info, archive, ranges[i]);
    if (!part.ok()) return part.status();
    const uint64_t part_bytes =
        std::min(ranges[i].count * info.header.frame_rows,
                 spec.shape[0] - ranges[i].first * info.header.frame_rows) *
        row_bytes;
    uint64_t at = 0;
    absl::Status called = CallWithRetries(kRetryPolicy, deadline, [&](bool* delivered) {
      auto once = impl_->DecompressOnce(
          impl_->ChannelFor(i), *part, DecompressRequestOptions(),
          [&](const RemoteArrayHeader& h) -> absl::Status {
            if (h.spec.dtype != spec.dtype || h.spec.num_bytes() != part_bytes ||
                h.abs_bound != header.abs_bound) {
              return ProtocolError(absl::StrCat("answered part ", i, " with another array (",
                                                h.spec.num_bytes(), " bytes, bound ",
                                                h.abs_bound, ")"));
            }
            backends[i] = h.backend;
            return absl::OkStatus();
          },
          [&](absl::Span<const uint8_t> bytes) -> absl::Status {
            if (stop) return OtherPartFailed();
            *delivered = true;
            absl::Status w = write(i, at, bytes);
            at += bytes.size();
            return w;
          },
          deadline);
      return once.status();
    });
    if (!called.ok()) return called;
    return done(i);
  });
  if (!s.ok()) return s;
  for (const std::string& b : backends) {
    if (header.backend.find(b) == std::string::npos) {
      header.backend += header.backend.empty() ? b : "," + b;
    }
  }
  return header;
}

absl::StatusOr<v1::ServerInfo> RemoteClient::Info() {
  grpc::ClientContext context;
  impl_->Prepare(&context, impl_->Deadline());
  v1::ServerInfo info;
  grpc::Status s = impl_->stub->GetServerInfo(&context, v1::GetServerInfoRequest(), &info);
  if (!s.ok()) return FromGrpc(s);
  return info;
}

absl::Status RemoteClient::Health(const std::string& service) {
  grpc::ClientContext context;
  impl_->Prepare(&context, impl_->Deadline());
  auto stub = grpc::health::v1::Health::NewStub(impl_->channel);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status s = stub->Check(&context, request, &response);
  if (!s.ok()) return FromGrpc(s);
  if (response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    return absl::UnavailableError(
        absl::StrCat("the server reports ",
                     grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status())));
  }
  return absl::OkStatus();
}

}  // namespace ebzip::client
