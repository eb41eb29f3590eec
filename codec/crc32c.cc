#include "codec/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace ebzip {
namespace {

// Slicing-by-8 tables. Abseil's CRC32C arrived after the 20220623 release
// Debian ships, and the codec may depend on nothing else, so this stays here.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  }
  return t;
}

constexpr Tables kTables = MakeTables();

}  // namespace

#if defined(__x86_64__)
// SSE 4.2's crc32 instruction computes this very CRC (checked at run time;
// the build targets the x86-64 baseline). Three independent streams hide
// the instruction's latency, and are joined by the zero-bytes operators:
// several times faster than the tables, which matters to a region, whose
// frames' sections are checked whole while only part of them is decoded.
[[gnu::target("sse4.2")]] static uint32_t ExtendSse42(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = ~crc;
  constexpr size_t kStream = 4096;  // bytes per stream and round
  while (n >= 3 * kStream) {
    uint64_t c1 = 0, c2 = 0;
    for (size_t i = 0; i < kStream; i += 8) {
      uint64_t a, b, d;
      std::memcpy(&a, p + i, 8);
      std::memcpy(&b, p + kStream + i, 8);
      std::memcpy(&d, p + 2 * kStream + i, 8);
      c = _mm_crc32_u64(c, a);
      c1 = _mm_crc32_u64(c1, b);
      c2 = _mm_crc32_u64(c2, d);
    }
    // Shift each stream's register past the bytes that follow it.
    static const uint32_t kShift = crc_internal::XPow8nModP(kStream);
    c = crc_internal::MultiplyModP(static_cast<uint32_t>(c), kShift) ^ c1;
    c = crc_internal::MultiplyModP(static_cast<uint32_t>(c), kShift) ^ c2;
    p += 3 * kStream;
    n -= 3 * kStream;
  }
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  for (; n > 0; --n) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}

static bool HasSse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
  if (HasSse42()) return ExtendSse42(crc, p, n);
#endif
  uint32_t c = ~crc;
  while (n >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^
        kTables[4][lo >> 24] ^ kTables[3][hi & 0xFF] ^ kTables[2][(hi >> 8) & 0xFF] ^
        kTables[1][(hi >> 16) & 0xFF] ^ kTables[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xFF];
  return ~c;
}

}  // namespace ebzip
