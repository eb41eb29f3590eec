// A run of unused symbols in the code-length section (FORMAT.md §5.1): a 0
// byte, then the run's length in LEB128. One definition for the CPU writer
// (huffman_code.cc) and the GPU's (gpu/code_build_kernels.cu), so the two
// write the same bytes.
#ifndef EBZIP_CODEC_ZERO_RUN_H_
#define EBZIP_CODEC_ZERO_RUN_H_

#include <cstdint>

#include "codec/host_device.h"

namespace ebzip {

// The most bytes WriteZeroRun writes: the 0 and ten LEB128 groups of 7 bits.
inline constexpr int kMaxZeroRunBytes = 11;

// Bytes WriteZeroRun writes for `run` (none for an empty run).
EBZIP_HD inline uint32_t ZeroRunBytes(uint64_t run) {
  if (run == 0) return 0;
  uint32_t n = 2;
  while (run >= 0x80) run >>= 7, ++n;
  return n;
}

// Writes the run at `out` (nothing for an empty run); returns its end.
EBZIP_HD inline uint8_t* WriteZeroRun(uint64_t run, uint8_t* out) {
  if (run == 0) return out;
  *out++ = 0;
  do {
    const uint8_t b = run & 0x7F;
    run >>= 7;
    *out++ = b | (run ? 0x80 : 0);
  } while (run);
  return out;
}

}  // namespace ebzip

#endif  // EBZIP_CODEC_ZERO_RUN_H_
