#include "codec/crc32c.h"

#include <cstring>
#include <string>

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

TEST(Crc32c, ExtendEqualsWhole) {
  std::string s(1000, '\0');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i * 7 + 3);
  for (size_t cut : {0, 1, 7, 8, 9, 500, 999, 1000}) {
    EXPECT_EQ(Crc32cExtend(Crc32c(s.data(), cut), s.data() + cut, s.size() - cut),
              Crc32c(s.data(), s.size()));
  }
}

}  // namespace
}  // namespace ebzip
