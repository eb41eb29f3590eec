#include "codec/crc32c.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ebzip {
namespace {

// Check values from RFC 3720 §B.4 and the common "123456789" check.
TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  unsigned char zeros[32] = {0};
  EXPECT_EQ(Crc32c(zeros, 32), 0x8A9136AAu);
  unsigned char ones[32];
  std::memset(ones, 0xFF, 32);
  EXPECT_EQ(Crc32c(ones, 32), 0x62A8AB43u);
  unsigned char inc[32];
  for (int i = 0; i < 32; ++i) inc[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(Crc32c(inc, 32), 0x46DD794Eu);
}

// Bit by bit, from the definition: the reference for every length, the
// long ones that the three-stream path (SSE 4.2) takes included.
uint32_t BitwiseCrc32c(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return ~c;
}

TEST(Crc32c, EqualsTheDefinitionAtEveryLength) {
  std::vector<uint8_t> s(3 * 4096 * 2 + 100);
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{15}, size_t{4096},
                   size_t{12287}, size_t{12288}, size_t{12289}, size_t{24575}, size_t{24576},
                   size_t{24676}}) {
    for (size_t offset : {0, 1, 5}) {
      if (offset + n > s.size()) continue;
      EXPECT_EQ(Crc32c(s.data() + offset, n), BitwiseCrc32c(s.data() + offset, n))
          << n << " bytes at offset " << offset;
    }
  }
}

TEST(Crc32c, ExtendEqualsWhole) {
  std::string s(1000, '\0');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i * 7 + 3);
  for (size_t cut : {0, 1, 7, 8, 9, 500, 999, 1000}) {
    EXPECT_EQ(Crc32cExtend(Crc32c(s.data(), cut), s.data() + cut, s.size() - cut),
              Crc32c(s.data(), s.size()));
  }
}

// What lets the GPU writer checksum a section in parallel pieces.
TEST(Crc32c, CombineEqualsWhole) {
  std::string s(5000, '\0');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i * 131 + (i >> 5));
  const uint32_t whole = Crc32c(s.data(), s.size());
  for (size_t cut : {0, 1, 3, 8, 64, 1000, 4095, 4999, 5000}) {
    const uint32_t a = Crc32c(s.data(), cut);
    const uint32_t b = Crc32c(s.data() + cut, s.size() - cut);
    EXPECT_EQ(Crc32cCombine(a, b, s.size() - cut), whole) << "cut at " << cut;
  }
  // Three pieces, combined in either grouping.
  const uint32_t p1 = Crc32c(s.data(), 100), p2 = Crc32c(s.data() + 100, 1900),
                 p3 = Crc32c(s.data() + 2000, 3000);
  EXPECT_EQ(Crc32cCombine(Crc32cCombine(p1, p2, 1900), p3, 3000), whole);
  EXPECT_EQ(Crc32cCombine(p1, Crc32cCombine(p2, p3, 3000), 4900), whole);
}

// What the GPU does: the XOR of every piece's share, in any order, pieces of
// any sizes (1 KiB ones and a short last one, single bytes, empty ones).
TEST(Crc32c, SharesOfPiecesXorToWhole) {
  std::string s(5000, '\0');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i * 29 + (i >> 3));
  const uint32_t whole = Crc32c(s.data(), s.size());
  for (size_t piece : {1, 7, 8, 1000, 1024, 4999, 5000}) {
    uint32_t x = 0;
    for (size_t begin = 0; begin < s.size(); begin += piece) {
      const size_t n = std::min(piece, s.size() - begin);
      x ^= Crc32cShift(Crc32c(s.data() + begin, n), s.size() - begin - n);
    }
    EXPECT_EQ(x, whole) << "pieces of " << piece;
  }
  // An empty piece has no share; a wrong offset gives a wrong CRC.
  EXPECT_EQ(Crc32cShift(Crc32c(s.data(), 0), 123), 0u);
  const uint32_t a = Crc32c(s.data(), 2000), b = Crc32c(s.data() + 2000, 3000);
  EXPECT_EQ(Crc32cShift(a, 3000) ^ b, whole);
  EXPECT_NE(Crc32cShift(a, 2999) ^ b, whole);
}

}  // namespace
}  // namespace ebzip
