// Outliers, verbatim values and fill runs in increasing index order
// (FORMAT.md §5.5-§5.7), compacted from the bit masks the prediction pass
// set: count per tile of mask words, scan (on the host's side of the call),
// then each tile re-scans its words and writes its entries in place.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "gpu/device_util.cuh"
#include "gpu/kernels.h"

namespace ebzip::gpu {

namespace {

// One mask word's special elements, with fill runs as start and end bits
// (bit j is element 32w + j; runs never cross a frame, whose words are its own).
struct WordBits {
  uint32_t outliers = 0, verbatim = 0, starts = 0, ends = 0;

  __device__ void Load(const Segment& seg, uint64_t w, const uint32_t* outlier_mask,
                       const uint32_t* verbatim_mask, const uint32_t* fill_mask) {
    const uint64_t words = (seg.geo.n + 31) / 32;
    if (w >= words) return;
    const uint64_t at = seg.mask_base + w;
    outliers = outlier_mask[at];
    verbatim = verbatim_mask[at];
    const uint32_t fill = fill_mask[at];
    const uint32_t prev = w > 0 ? fill_mask[at - 1] : 0;
    const uint32_t next = w + 1 < words ? fill_mask[at + 1] : 0;
    starts = fill & ~((fill << 1) | (prev >> 31));
    ends = fill & ~((fill >> 1) | (next << 31));
  }
  __device__ SpecialCounts Counts() const {
    return {static_cast<uint64_t>(__popc(outliers)), static_cast<uint64_t>(__popc(verbatim)),
            static_cast<uint64_t>(__popc(starts)), static_cast<uint64_t>(__popc(ends))};
  }
};

struct Add {
  __device__ SpecialCounts operator()(const SpecialCounts& a, const SpecialCounts& b) const {
    return a + b;
  }
};

__global__ void CountKernel(const Segment* segments, uint32_t num_segments,
                            const uint32_t* outlier_mask, const uint32_t* verbatim_mask,
                            const uint32_t* fill_mask, SpecialCounts* tile_counts) {
  using Reduce = cub::BlockReduce<SpecialCounts, kMaskTileWords>;
  __shared__ typename Reduce::TempStorage temp;
  const Segment& seg = segments[SegmentOfMaskTile(segments, num_segments, blockIdx.x)];
  WordBits bits;
  bits.Load(seg, (blockIdx.x - seg.mask_tile_base) * kMaskTileWords + threadIdx.x, outlier_mask,
            verbatim_mask, fill_mask);
  const SpecialCounts total = Reduce(temp).Reduce(bits.Counts(), Add());
  if (threadIdx.x == 0) tile_counts[blockIdx.x] = total;
}

template <typename T>
__global__ void WriteKernel(const Segment* segments, uint32_t num_segments, const Item* items,
                            const FrameLayout* layouts, const uint32_t* outlier_mask,
                            const uint32_t* verbatim_mask, const uint32_t* fill_mask,
                            const SpecialCounts* tile_counts, const SpecialCounts* tile_prefix,
                            const int32_t* deltas) {
  using Scan = cub::BlockScan<SpecialCounts, kMaskTileWords>;
  __shared__ typename Scan::TempStorage temp;
  // Given the tiles' counts (CountKernel's), a tile with nothing to write
  // leaves before it reads a mask or scans.
  if (tile_counts != nullptr) {
    const SpecialCounts mine = tile_counts[blockIdx.x];
    if ((mine.outliers | mine.verbatim | mine.run_starts | mine.run_ends) == 0) return;
  }
  const uint32_t s = SegmentOfMaskTile(segments, num_segments, blockIdx.x);
  const Segment& seg = segments[s];
  const FrameLayout& layout = layouts[s];
  if (items[seg.item].overflow) return;
  uint8_t* archive = items[seg.item].archive;
  const uint64_t w = (blockIdx.x - seg.mask_tile_base) * kMaskTileWords + threadIdx.x;
  WordBits bits;
  bits.Load(seg, w, outlier_mask, verbatim_mask, fill_mask);
  SpecialCounts rank;
  Scan(temp).ExclusiveScan(bits.Counts(), rank, Add());
  // Ranks within the frame: the scan over tiles restarts at each frame.
  const SpecialCounts& tile = tile_prefix[blockIdx.x];
  const SpecialCounts& first = tile_prefix[seg.mask_tile_base];
  if (threadIdx.x == 0) rank = SpecialCounts{};
  rank = rank + SpecialCounts{tile.outliers - first.outliers, tile.verbatim - first.verbatim,
                              tile.run_starts - first.run_starts, tile.run_ends - first.run_ends};

  const uint64_t element0 = w * 32;
  uint8_t* outliers = archive + layout.section_offset[format::kOutliers];
  for (uint32_t m = bits.outliers; m != 0; m &= m - 1) {
    const uint32_t i = static_cast<uint32_t>(element0 + __ffs(m) - 1);
    StoreBytes<uint32_t>(outliers + 4 * rank.outliers, i);
    StoreBytes<int32_t>(outliers + 4 * (layout.outliers + rank.outliers), deltas[seg.symbol_base + i]);
    ++rank.outliers;
  }
  uint8_t* verbatim = archive + layout.section_offset[format::kVerbatim];
  const T* x = static_cast<const T*>(seg.input);
  for (uint32_t m = bits.verbatim; m != 0; m &= m - 1) {
    const uint32_t i = static_cast<uint32_t>(element0 + __ffs(m) - 1);
    StoreBytes<uint32_t>(verbatim + 4 * rank.verbatim, i);
    StoreBytes<T>(verbatim + Align8(4 * layout.verbatim) + sizeof(T) * rank.verbatim, x[i]);
    ++rank.verbatim;
  }
  // Runs: the start goes in place; the end (exclusive) waits in the length
  // field until FinishSectionsKernel subtracts the start.
  uint8_t* runs = archive + layout.section_offset[format::kFillRuns];
  for (uint32_t m = bits.starts; m != 0; m &= m - 1) {
    StoreBytes<uint32_t>(runs + 8 * rank.run_starts++, static_cast<uint32_t>(element0 + __ffs(m) - 1));
  }
  for (uint32_t m = bits.ends; m != 0; m &= m - 1) {
    StoreBytes<uint32_t>(runs + 8 * rank.run_ends++ + 4, static_cast<uint32_t>(element0 + __ffs(m)));
  }
}

// Block per segment: run lengths from the ends, and the zero padding between
// the verbatim section's indices and values (FORMAT.md §5.7), which nothing
// else writes and a reused archive buffer may hold anything in.
__global__ void FinishSectionsKernel(const Segment* segments, const Item* items,
                                     const FrameLayout* layouts) {
  const Segment& seg = segments[blockIdx.x];
  const FrameLayout& layout = layouts[blockIdx.x];
  if (items[seg.item].overflow) return;
  if (threadIdx.x == 0 && layout.verbatim % 2 == 1) {
    uint8_t* verbatim = items[seg.item].archive + layout.section_offset[format::kVerbatim];
    StoreBytes<uint32_t>(verbatim + 4 * layout.verbatim, 0);
  }
  // A fill mask (fill coding 1) is no list of runs; its writer owns it.
  if (seg.fill_coding == format::kFillCodingMask) return;
  uint8_t* runs = items[seg.item].archive + layout.section_offset[format::kFillRuns];
  for (uint64_t k = threadIdx.x; k < layout.fill_runs; k += blockDim.x) {
    const uint32_t start = LoadBytes<uint32_t>(runs + 8 * k);
    const uint32_t end = LoadBytes<uint32_t>(runs + 8 * k + 4);
    StoreBytes<uint32_t>(runs + 8 * k + 4, end - start);
  }
}

}  // namespace

cudaError_t LaunchCountSpecials(const Segment* segments, uint32_t num_segments,
                                uint64_t num_mask_tiles, const uint32_t* outlier_mask,
                                const uint32_t* verbatim_mask, const uint32_t* fill_mask,
                                SpecialCounts* tile_counts, cudaStream_t stream) {
  CountKernel<<<num_mask_tiles, kMaskTileWords, 0, stream>>>(
      segments, num_segments, outlier_mask, verbatim_mask, fill_mask, tile_counts);
  return cudaGetLastError();
}

cudaError_t LaunchWriteSpecials(int elem_size, const Segment* segments, uint32_t num_segments,
                                uint64_t num_mask_tiles, const Item* items,
                                const FrameLayout* layouts, const uint32_t* outlier_mask,
                                const uint32_t* verbatim_mask, const uint32_t* fill_mask,
                                const SpecialCounts* tile_counts,
                                const SpecialCounts* tile_prefix, const int32_t* deltas,
                                cudaStream_t stream) {
  if (elem_size == 4) {
    WriteKernel<float><<<num_mask_tiles, kMaskTileWords, 0, stream>>>(
        segments, num_segments, items, layouts, outlier_mask, verbatim_mask, fill_mask,
        tile_counts, tile_prefix, deltas);
  } else {
    WriteKernel<double><<<num_mask_tiles, kMaskTileWords, 0, stream>>>(
        segments, num_segments, items, layouts, outlier_mask, verbatim_mask, fill_mask,
        tile_counts, tile_prefix, deltas);
  }
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  FinishSectionsKernel<<<num_segments, kThreads, 0, stream>>>(segments, items, layouts);
  return cudaGetLastError();
}

}  // namespace ebzip::gpu
