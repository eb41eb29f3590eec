// Small device-side helpers shared by the kernels.
#ifndef EBZIP_GPU_DEVICE_UTIL_CUH_
#define EBZIP_GPU_DEVICE_UTIL_CUH_

#include <cstdint>

#include "gpu/segment.h"

namespace ebzip::gpu {

inline constexpr int kThreads = 256;  // threads per block in most kernels

// Records the first error of a launch sequence; later ones are dropped.
__device__ inline void ReportError(DeviceStatus* status, DeviceError error, uint32_t segment,
                                   uint32_t section = 0) {
  if (atomicCAS(&status->error, 0u, static_cast<uint32_t>(error)) == 0u) {
    status->segment = segment;
    status->section = section;
  }
}

__device__ inline uint32_t SegmentOfTile(const Segment* s, uint32_t n, uint64_t tile) {
  return FindSegment(n, tile, [s](uint32_t i) { return s[i].tile_base; });
}
__device__ inline uint32_t SegmentOfChunk(const Segment* s, uint32_t n, uint64_t chunk) {
  return FindSegment(n, chunk, [s](uint32_t i) { return s[i].chunk_base; });
}
__device__ inline uint32_t SegmentOfMaskTile(const Segment* s, uint32_t n, uint64_t tile) {
  return FindSegment(n, tile, [s](uint32_t i) { return s[i].mask_tile_base; });
}

// Element index (within the frame) of in-block element j of block b.
struct BlockView {
  uint64_t origin[kDims];
  uint32_t extent[kDims];
  uint64_t stride[kDims];  // of the frame
  uint32_t volume;

  __device__ void Init(const Geometry& g, uint64_t b) {
    uint64_t rest = b;
    for (int d = kDims - 1; d >= 0; --d) {
      const uint64_t k = rest % g.grid[d];
      rest /= g.grid[d];
      origin[d] = k * g.block[d];
      extent[d] = g.Extent(d, k);
    }
    stride[kDims - 1] = 1;
    for (int d = kDims - 2; d >= 0; --d) stride[d] = stride[d + 1] * g.dims[d + 1];
    volume = extent[0] * extent[1] * extent[2] * extent[3];
  }
  // In-block coordinates of j (row-major over the extents).
  __device__ void Coords(uint32_t j, uint32_t c[kDims]) const {
    for (int d = kDims - 1; d >= 0; --d) {
      c[d] = j % extent[d];
      j /= extent[d];
    }
  }
  __device__ uint64_t Index(const uint32_t c[kDims]) const {
    uint64_t i = 0;
    for (int d = 0; d < kDims; ++d) i += (origin[d] + c[d]) * stride[d];
    return i;
  }
  // In-block stride of dimension d.
  __device__ uint32_t InnerStride(int d) const {
    uint32_t s = 1;
    for (int k = kDims - 1; k > d; --k) s *= extent[k];
    return s;
  }
};

// CRC-32C tables for slicing by 8, built by each block in shared memory.
struct CrcTables {
  uint32_t t[8][256];

  __device__ void Build() {
    for (uint32_t i = threadIdx.x; i < 256; i += blockDim.x) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
      t[0][i] = c;
    }
    __syncthreads();
    for (int s = 1; s < 8; ++s) {
      for (uint32_t i = threadIdx.x; i < 256; i += blockDim.x) {
        t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
      }
      __syncthreads();
    }
  }

  // CRC-32C of n bytes (the same function as codec/crc32c.cc's Crc32c).
  __device__ uint32_t Compute(const uint8_t* p, uint64_t n) const { return Extend(0, p, n); }

  // Extends `crc` (of the bytes before) over n bytes, 64 at a time where it
  // can: their eight loads go out together, where a load per 8 bytes had one
  // thread wait on memory 128 times per KiB.
  __device__ uint32_t Extend(uint32_t crc, const uint8_t* p, uint64_t n) const {
    uint32_t c = ~crc;
    while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
      c = (c >> 8) ^ t[0][(c ^ *p++) & 0xFF];
      --n;
    }
    for (; n >= 64; n -= 64, p += 64) {
      uint2 v[8];
#pragma unroll
      for (int k = 0; k < 8; ++k) v[k] = reinterpret_cast<const uint2*>(p)[k];
#pragma unroll
      for (int k = 0; k < 8; ++k) c = Step(c, v[k]);
    }
    for (; n >= 8; n -= 8, p += 8) c = Step(c, *reinterpret_cast<const uint2*>(p));
    while (n-- > 0) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xFF];
    return ~c;
  }

 private:
  __device__ uint32_t Step(uint32_t c, uint2 v) const {
    const uint32_t lo = v.x ^ c;
    const uint32_t hi = v.y;
    return t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
           t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
  }
};

template <typename T>
__device__ inline void StoreBytes(uint8_t* dst, T v) {
  memcpy(dst, &v, sizeof(T));
}
template <typename T>
__device__ inline T LoadBytes(const uint8_t* src) {
  T v;
  memcpy(&v, src, sizeof(T));
  return v;
}

}  // namespace ebzip::gpu

#endif  // EBZIP_GPU_DEVICE_UTIL_CUH_
