// GPU timings for ebzip_bench_region (built with CUDA): a full decode and
// regions on the first GPU, from an archive in host memory to values in
// host memory, each with device buffers made once beforehand.
#ifndef EBZIP_BENCH_GPU_REGION_TIMING_H_
#define EBZIP_BENCH_GPU_REGION_TIMING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "codec/region.h"

namespace ebzip::bench {

struct GpuRegionTimes {
  std::string error;          // empty when everything ran
  std::string device;
  // Medians of 3, seconds; [0] with page-locked host memory at both ends,
  // [1] with ordinary (pageable) host memory, as a caller's arrays are.
  double full[2] = {0, 0};
  std::vector<std::vector<double>> regions;  // per region, the same two
};

// Times the full decode of `archive` and each region of `regions`, checking
// each region's bytes against `expected` (the CPU codec's).
GpuRegionTimes TimeGpuRegions(const std::vector<uint8_t>& archive,
                              const std::vector<Hyperslab>& regions,
                              const std::vector<std::vector<uint8_t>>& expected);

}  // namespace ebzip::bench

#endif  // EBZIP_BENCH_GPU_REGION_TIMING_H_
