// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) as used by iSCSI,
// ext4 and LevelDB. Every archive header and section carries one.
#ifndef EBZIP_CODEC_CRC32C_H_
#define EBZIP_CODEC_CRC32C_H_

#include <cstddef>
#include <cstdint>

#include "codec/host_device.h"

namespace ebzip {

inline constexpr uint32_t kCrc32cPolynomial = 0x82F63B78u;  // reflected

// Extends `crc` (the CRC of some preceding bytes, 0 for none) over `n` bytes.
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n);
inline uint32_t Crc32c(const void* data, size_t n) { return Crc32cExtend(0, data, n); }

// The CRC arithmetic that lets pieces of a buffer be checksummed in parallel
// (the GPU writer does): polynomials over GF(2) modulo the CRC polynomial, in
// the reflected bit order, where bit 31 holds x^0.
namespace crc_internal {

// a(x) * b(x) mod P.
EBZIP_HD constexpr uint32_t MultiplyModP(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t m = 1u << 31; m != 0; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kCrc32cPolynomial : b >> 1;
  }
  return product;
}

// x^(8 * 2^k) mod P for k = 0..63, the operators that append 2^k zero bytes,
// so that appending n costs one multiplication per set bit of n instead of
// a squaring per bit as well (the GPU combines many pieces per frame).
struct ZeroBytesOperators {
  uint32_t power_of_two[64];
};
constexpr ZeroBytesOperators MakeZeroBytesOperators() {
  ZeroBytesOperators ops{};
  uint32_t square = 1u << 23;  // x^8
  for (int k = 0; k < 64; ++k) {
    ops.power_of_two[k] = square;
    square = MultiplyModP(square, square);
  }
  return ops;
}
#if defined(__CUDACC__)
// Each CUDA translation unit its own copy (no relocatable device code).
static __constant__ ZeroBytesOperators kZeroBytesDevice = MakeZeroBytesOperators();
#endif
inline constexpr ZeroBytesOperators kZeroBytes = MakeZeroBytesOperators();

// x^(8n) mod P: the operator that appends n zero bytes to a CRC register.
EBZIP_HD inline uint32_t XPow8nModP(uint64_t n) {
#if defined(__CUDA_ARCH__)
  const ZeroBytesOperators& ops = kZeroBytesDevice;
#else
  const ZeroBytesOperators& ops = kZeroBytes;
#endif
  uint32_t power = 1u << 31;  // x^0
  for (int k = 0; n != 0; ++k, n >>= 1) {
    if (n & 1) power = MultiplyModP(ops.power_of_two[k], power);
  }
  return power;
}

}  // namespace crc_internal

// A piece's share of the CRC of a buffer in which `after` more bytes follow
// it: Crc32c of the buffer is the XOR of its pieces' shares, whatever their
// number and sizes (the pre- and post-inversion of CRC-32C cancel out, so
// finished CRCs combine directly). The GPU checksums pieces in parallel and
// XORs their shares, in any order.
EBZIP_HD inline uint32_t Crc32cShift(uint32_t crc, uint64_t after) {
  return crc_internal::MultiplyModP(crc_internal::XPow8nModP(after), crc);
}

// The CRC of A followed by B, from Crc32c(A), Crc32c(B) and B's length.
EBZIP_HD inline uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, uint64_t length_b) {
  return Crc32cShift(crc_a, length_b) ^ crc_b;
}

}  // namespace ebzip

#endif  // EBZIP_CODEC_CRC32C_H_
