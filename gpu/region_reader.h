// Regions of archives in host memory, decoded on the GPU into host memory.
// The frames a region meets (codec/region_plan.h) go in groups, each on a
// stream of its own with its own buffers, so one group's bytes go up while
// others decode and come down; each group rebuilds only the interpolation
// tiles the region meets (DecompressTask::wanted) and the region is
// gathered on the device, so only its own bytes cross the bus. The copies
// overlap the work where the host memory is page-locked; with pageable
// memory they are correct and slower.
#ifndef EBZIP_GPU_REGION_READER_H_
#define EBZIP_GPU_REGION_READER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "codec/archive.h"
#include "codec/huffman_decoder.h"
#include "codec/region.h"
#include "gpu/gpu_codec.h"

namespace ebzip::gpu {

class RegionReader {
 public:
  // `max_groups`: how many groups a region's frames are cut into at most.
  // On the H100 a 3-D box meeting 15 frames of 64 MiB took 6.4 ms in one
  // group, 5.7 in 2 or 3, 5.6 in 4 and 5.3 in 6; before chunk lists 8
  // groups were slower than 4 (bench/RESULTS.md): each group's own planning
  // and launches then cost more than the overlap gains.
  static constexpr size_t kDefaultGroups = 6;
  explicit RegionReader(size_t max_groups = kDefaultGroups,
                        DecoderKind decoder = DecoderKind::kAuto);
  RegionReader(const RegionReader&) = delete;
  RegionReader& operator=(const RegionReader&) = delete;
  ~RegionReader();  // waits for its streams, then frees

  // Writes `region` of the archive (`info` parsed from `archive`) to `out`,
  // region.NumElements() elements in its C order: the CPU codec's
  // DecompressRegion bytes. INVALID_ARGUMENT for a region that does not fit
  // the array, DATA_LOSS for a damaged frame it meets. Device buffers are
  // kept from one call to the next and grow as regions need.
  absl::Status Read(const ArchiveInfo& info, absl::Span<const uint8_t> archive,
                    const Hyperslab& region, void* out);

 private:
  struct Buffer {
    void* p = nullptr;
    size_t bytes = 0;
  };
  // A group's stream and buffers (its frames' rows and its workspace).
  struct Slot {
    Stream stream = nullptr;
    Buffer rows, ws_device, ws_host;
  };
  static absl::Status Grow(Buffer* b, size_t bytes, bool host);
  static void Free(Buffer* b, bool host);
  absl::Status Sync();

  const size_t max_groups_;
  const DecoderKind decoder_;
  Buffer archive_, out_;
  std::vector<Slot> slots_;  // one per group, made as regions need them
};

}  // namespace ebzip::gpu

#endif  // EBZIP_GPU_REGION_READER_H_
