// GPU timings for ebzip_bench_region (built with CUDA): a full decode and
// regions on the first GPU, from an archive in host memory to values in
// host memory, each with device buffers made once beforehand.
#ifndef EBZIP_BENCH_GPU_REGION_TIMING_H_
#define EBZIP_BENCH_GPU_REGION_TIMING_H_

#include <array>
#include <cstddef>
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
  // Per region, through gpu::RegionReader: one time per kRegionVariants.
  std::vector<std::vector<double>> regions;
};

// How the regions are read: host memory, and the most groups the frames met
// are cut into (one group: no copy overlaps a decode).
struct RegionVariant {
  const char* label;
  bool page_locked;
  size_t groups;
};
inline constexpr std::array<RegionVariant, 6> kRegionVariants = {{{"page-locked", true, 6},
                                                                  {"pageable", false, 6},
                                                                  {"one group", true, 1},
                                                                  {"2 groups", true, 2},
                                                                  {"3 groups", true, 3},
                                                                  {"4 groups", true, 4}}};

// Times the full decode of `archive` and each region of `regions`, checking
// each region's bytes against `expected` (the CPU codec's).
GpuRegionTimes TimeGpuRegions(const std::vector<uint8_t>& archive,
                              const std::vector<Hyperslab>& regions,
                              const std::vector<std::vector<uint8_t>>& expected);

}  // namespace ebzip::bench

#endif  // EBZIP_BENCH_GPU_REGION_TIMING_H_
