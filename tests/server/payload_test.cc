// The payload fast path (server/payload.h) against protobuf itself: what it
// reads from a message must be what protobuf parses, and what it writes
// must be what protobuf would have written.
#include "proto/payload.h"

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ebzip/v1/ebzip.pb.h"
#include "gtest/gtest.h"

namespace ebzip::server {
namespace {

constexpr uint32_t kData = v1::CompressRequest::kDataFieldNumber;
constexpr uint32_t kArchive = v1::DecompressRequest::kArchiveFieldNumber;

// `bytes` as gRPC might have received them: in slices of `cut` bytes (the
// last one shorter).
grpc::ByteBuffer Received(const std::string& bytes, size_t cut) {
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += cut) {
    slices.emplace_back(bytes.data() + at, std::min(cut, bytes.size() - at));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

std::string Joined(const Payload& p) {
  std::string out;
  for (absl::Span<const uint8_t> piece : p.pieces()) {
    EXPECT_FALSE(piece.empty());
    out.append(reinterpret_cast<const char*>(piece.data()), piece.size());
  }
  return out;
}

std::string BytesOf(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices)
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  std::mt19937 rng(seed);
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

TEST(Payload, DataMessagesAreReadInPlaceWhateverTheSlicing) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{127}, size_t{128}, size_t{300000}}) {
    v1::CompressRequest req;
    req.set_data(Pattern(n, static_cast<uint32_t>(n)));
    const std::string wire = req.SerializeAsString();
    for (size_t cut : {size_t{1}, size_t{2}, size_t{7}, size_t{8192}, wire.size() + 1}) {
      std::optional<Payload> p = Payload::Of(Received(wire, cut), kData);
      ASSERT_TRUE(p.has_value()) << n << " bytes cut every " << cut;
      EXPECT_EQ(p->size(), n);
      EXPECT_EQ(Joined(*p), req.data()) << n << " bytes cut every " << cut;
    }
  }
}

TEST(Payload, OtherMessagesAreLeftToProtobuf) {
  v1::CompressRequest header;
  header.mutable_header()->mutable_array()->add_shape(4);
  v1::CompressRequest data;
  data.set_data("abcd");
  const std::string wire = data.SerializeAsString();
  // A header; data under the other field number; nothing at all.
  EXPECT_FALSE(Payload::Of(Received(header.SerializeAsString(), 3), kData));
  EXPECT_FALSE(Payload::Of(Received(wire, 3), kArchive));
  EXPECT_FALSE(Payload::Of(grpc::ByteBuffer(), kData));
  EXPECT_FALSE(Payload::Of(Received("", 1), kData));
  // Truncated, or followed by more fields (protobuf merges those).
  EXPECT_FALSE(Payload::Of(Received(wire.substr(0, wire.size() - 1), 2), kData));
  EXPECT_FALSE(Payload::Of(Received(wire + wire, 2), kData));
  // A five-byte tag whose bits beyond 32 protobuf drops (reading field 2):
  // left to protobuf.
  EXPECT_FALSE(
      Payload::Of(Received(std::string("\x92\x80\x80\x80\x10\x04", 6) + "abcd", 2), kData));
  // A length longer than protobuf reads (six varint bytes).
  EXPECT_FALSE(
      Payload::Of(Received(std::string("\x12\x84\x80\x80\x80\x80\x00", 7) + "abcd", 3), kData));
}

TEST(Payload, NonMinimalVarintsAreReadAsProtobufReadsThem) {
  // Length 4 as a three-byte varint, and the tag as a two-byte one: valid
  // protobuf, which reads field 2 = "wxyz" from both.
  for (const std::string& wire :
       {std::string("\x12\x84\x80\x00", 4) + "wxyz", std::string("\x92\x00\x04", 3) + "wxyz"}) {
    v1::CompressRequest parsed;
    ASSERT_TRUE(parsed.ParseFromString(wire));
    ASSERT_EQ(parsed.data(), "wxyz");
    std::optional<Payload> p = Payload::Of(Received(wire, 1), kData);
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(Joined(*p), "wxyz");
  }
}

// Whatever bytes arrive, a payload taken on the fast path is exactly what
// protobuf parses from them: edited valid messages and random bytes.
TEST(Payload, WhatTheFastPathTakesProtobufParsesTheSame) {
  std::mt19937 rng(7);
  int taken = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string wire;
    if (trial % 2 == 0) {
      v1::CompressRequest req;
      req.set_data(Pattern(rng() % 200, trial));
      wire = req.SerializeAsString();
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits && !wire.empty(); ++e) {
        switch (rng() % 3) {
          case 0:
            wire[rng() % wire.size()] = static_cast<char>(rng());
            break;
          case 1:
            wire.erase(rng() % wire.size(), 1);
            break;
          default:
            wire.insert(wire.begin() + rng() % (wire.size() + 1), static_cast<char>(rng()));
        }
      }
    } else {
      wire = Pattern(rng() % 8, trial);
    }
    std::optional<Payload> p = Payload::Of(Received(wire, 1 + rng() % 5), kData);
    if (!p) continue;
    ++taken;
    v1::CompressRequest parsed;
    ASSERT_TRUE(parsed.ParseFromString(wire)) << "trial " << trial;
    ASSERT_EQ(parsed.msg_case(), v1::CompressRequest::kData) << "trial " << trial;
    ASSERT_EQ(Joined(*p), parsed.data()) << "trial " << trial;
    // Nothing else in it: unknown fields would be written back too.
    v1::CompressRequest just_data;
    just_data.set_data(parsed.data());
    ASSERT_EQ(parsed.SerializeAsString(), just_data.SerializeAsString()) << "trial " << trial;
  }
  EXPECT_GT(taken, 1000);  // the edits leave many messages valid
}

TEST(Payload, RepliesAreWhatProtobufWrites) {
  for (size_t n : {size_t{0}, size_t{5}, size_t{200}, size_t{1} << 20}) {
    auto bytes = std::make_shared<const std::string>(Pattern(n, 3));
    const absl::Span<const uint8_t> span(reinterpret_cast<const uint8_t*>(bytes->data()), n);
    v1::DecompressResponse data;
    data.set_data(*bytes);
    EXPECT_EQ(BytesOf(PayloadMessage(v1::DecompressResponse::kDataFieldNumber, span, bytes)),
              data.SerializeAsString());
    v1::CompressResponse archive;
    archive.set_archive(*bytes);
    EXPECT_EQ(BytesOf(PayloadMessage(v1::CompressResponse::kArchiveFieldNumber, span, bytes)),
              archive.SerializeAsString());
  }
}

TEST(Payload, ARepliesBytesLiveUntilGrpcLetsGo) {
  auto bytes = std::make_shared<const std::string>(Pattern(1000, 5));
  std::weak_ptr<const std::string> watch = bytes;
  const absl::Span<const uint8_t> span(reinterpret_cast<const uint8_t*>(bytes->data()), 1000);
  auto message = std::make_unique<grpc::ByteBuffer>(PayloadMessage(kData, span, bytes));
  bytes.reset();
  EXPECT_FALSE(watch.expired());    // the message holds them
  grpc::ByteBuffer copy(*message);  // as gRPC's own references do
  message.reset();
  EXPECT_FALSE(watch.expired());
  copy.Clear();
  EXPECT_TRUE(watch.expired());
}

}  // namespace
}  // namespace ebzip::server
