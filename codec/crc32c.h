// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) as used by iSCSI,
// ext4 and LevelDB. Every archive header and section carries one.
#ifndef EBZIP_CODEC_CRC32C_H_
#define EBZIP_CODEC_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace ebzip {

// Extends `crc` (the CRC of some preceding bytes, 0 for none) over `n` bytes.
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n);
inline uint32_t Crc32c(const void* data, size_t n) { return Crc32cExtend(0, data, n); }

}  // namespace ebzip

#endif  // EBZIP_CODEC_CRC32C_H_
