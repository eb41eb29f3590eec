// The bulk bytes of the service's messages — a CompressRequest's data, a
// DecompressRequest's archive, the replies' archive and data — moved between
// gRPC's buffers and the server's (or the C++ client's) without protobuf in
// between.
//
// Protobuf encodes a message whose only field set is one bytes field as that
// one length-delimited field: a tag, a length, the bytes. A received message
// of exactly that form is read where gRPC received it (protobuf would first
// copy the bytes into a std::string), and a reply of that form is sent from
// where the codec left its bytes (protobuf would copy them into the message,
// then into gRPC's buffer). Those copies were most of the server's user-space
// memcpy under the small-request load. Any
// other message, including a payload encoded some other valid way, goes
// through protobuf as before.
#ifndef EBZIP_PROTO_PAYLOAD_H_
#define EBZIP_PROTO_PAYLOAD_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"

namespace ebzip {

// The bytes of a payload field as pieces in order, each pointing into memory
// the Payload keeps alive (gRPC's slices, or the caller's string).
class Payload {
 public:
  // Moves only: a piece may point into a slice object itself (gRPC keeps
  // small slices inline), which a move of slices_ keeps in place and a copy
  // would not.
  Payload(Payload&&) = default;
  Payload& operator=(Payload&&) = default;
  Payload(const Payload&) = delete;
  Payload& operator=(const Payload&) = delete;

  // The payload of `buffer` when it is exactly one length-delimited field
  // numbered `field` (with any valid varint for the tag and the length);
  // nullopt otherwise, for protobuf to parse.
  static std::optional<Payload> Of(const grpc::ByteBuffer& buffer, uint32_t field);
  // The bytes of a field protobuf has parsed, or any others; `bytes` must
  // outlive the Payload.
  static Payload Of(const std::string& bytes);
  static Payload Of(absl::Span<const uint8_t> bytes);

  uint64_t size() const { return size_; }
  // The non-empty pieces, in order; their sizes add up to size().
  const std::vector<absl::Span<const uint8_t>>& pieces() const { return pieces_; }

 private:
  std::vector<grpc::Slice> slices_;  // the references that keep pieces_ alive
  std::vector<absl::Span<const uint8_t>> pieces_;
  uint64_t size_ = 0;

  Payload() = default;
};

// A message holding only `field` = `bytes`, encoded as protobuf would encode
// it, whose bytes gRPC sends from where they are: `owner` keeps them alive
// until gRPC lets go of them, which may be after the write completes.
grpc::ByteBuffer PayloadMessage(uint32_t field, absl::Span<const uint8_t> bytes,
                                std::shared_ptr<const void> owner);

}  // namespace ebzip

#endif  // EBZIP_PROTO_PAYLOAD_H_
