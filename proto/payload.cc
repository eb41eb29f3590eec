#include "proto/payload.h"

#include <cstddef>
#include <limits>
#include <utility>

namespace ebzip {
namespace {

constexpr uint32_t kLengthDelimited = 2;  // protobuf's wire type for bytes
// What protobuf's own parser reads for a tag (a varint32) and a length (a
// varint32 below 2^31). Only encodings it takes the same way take the fast
// path; it judges the rest.
constexpr int kMaxVarintBytes = 5;
constexpr uint64_t kMaxTag = std::numeric_limits<uint32_t>::max();
constexpr uint64_t kMaxLength = std::numeric_limits<int32_t>::max();

// Reads bytes across a message's slices.
class Cursor {
 public:
  explicit Cursor(const std::vector<grpc::Slice>& slices) : slices_(slices) {}

  std::optional<uint64_t> Varint(uint64_t max) {
    uint64_t value = 0;
    for (int i = 0; i < kMaxVarintBytes; ++i) {
      const std::optional<uint8_t> byte = Next();
      if (!byte) return std::nullopt;
      value |= static_cast<uint64_t>(*byte & 0x7f) << (7 * i);
      if ((*byte & 0x80) == 0) {
        if (value > max) return std::nullopt;
        return value;
      }
    }
    return std::nullopt;
  }
  uint64_t consumed() const { return consumed_; }
  // The pieces from here to the end.
  std::vector<absl::Span<const uint8_t>> Rest() const {
    std::vector<absl::Span<const uint8_t>> pieces;
    for (size_t s = slice_, at = at_; s < slices_.size(); ++s, at = 0) {
      if (slices_[s].size() > at)
        pieces.emplace_back(slices_[s].begin() + at, slices_[s].size() - at);
    }
    return pieces;
  }

 private:
  std::optional<uint8_t> Next() {
    while (slice_ < slices_.size() && at_ == slices_[slice_].size()) {
      ++slice_;
      at_ = 0;
    }
    if (slice_ == slices_.size()) return std::nullopt;
    ++consumed_;
    return slices_[slice_].begin()[at_++];
  }

  const std::vector<grpc::Slice>& slices_;
  size_t slice_ = 0;
  size_t at_ = 0;
  uint64_t consumed_ = 0;
};

size_t PutVarint(uint64_t value, uint8_t* out) {
  size_t n = 0;
  while (value >= 0x80) {
    out[n++] = static_cast<uint8_t>(value | 0x80);
    value >>= 7;
  }
  out[n++] = static_cast<uint8_t>(value);
  return n;
}

void ReleaseOwner(void* owner) { delete static_cast<std::shared_ptr<const void>*>(owner); }

}  // namespace

std::optional<Payload> Payload::Of(const grpc::ByteBuffer& buffer, uint32_t field) {
  Payload p;
  if (!buffer.Valid() || !buffer.Dump(&p.slices_).ok()) return std::nullopt;
  Cursor cursor(p.slices_);
  const std::optional<uint64_t> tag = cursor.Varint(kMaxTag);
  if (!tag || *tag != (uint64_t{field} << 3 | kLengthDelimited)) return std::nullopt;
  const std::optional<uint64_t> length = cursor.Varint(kMaxLength);
  // The slices' sum, not buffer.Length(): a compressed message's slices are
  // its bytes after decompression.
  uint64_t total = 0;
  for (const grpc::Slice& slice : p.slices_) total += slice.size();
  if (!length || *length != total - cursor.consumed()) return std::nullopt;
  p.pieces_ = cursor.Rest();
  p.size_ = *length;
  return p;
}

Payload Payload::Of(const std::string& bytes) {
  return Of(absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

Payload Payload::Of(absl::Span<const uint8_t> bytes) {
  Payload p;
  if (!bytes.empty()) p.pieces_.push_back(bytes);
  p.size_ = bytes.size();
  return p;
}

grpc::ByteBuffer PayloadMessage(uint32_t field, absl::Span<const uint8_t> bytes,
                                std::shared_ptr<const void> owner) {
  uint8_t head[2 * 10];
  size_t n = PutVarint(uint64_t{field} << 3 | kLengthDelimited, head);
  n += PutVarint(bytes.size(), head + n);
  grpc::Slice slices[2] = {grpc::Slice(head, n), grpc::Slice()};
  if (bytes.empty()) return grpc::ByteBuffer(slices, 1);
  // gRPC frees the slice, and with it this reference, once the bytes are
  // on the wire.
  slices[1] = grpc::Slice(const_cast<uint8_t*>(bytes.data()), bytes.size(), ReleaseOwner,
                          new std::shared_ptr<const void>(std::move(owner)));
  return grpc::ByteBuffer(slices, 2);
}

}  // namespace ebzip
