// Groups of whole Lorenzo blocks of a default shape (codec/lorenzo.h's
// DefaultBlock: 256, 16x16, 8x8x8 and 1x8x8x8), which the prediction and
// reconstruction kernels take several at a time with extents known at compile
// time (prediction also blocks cut short along dimension 1: Groupable). Other
// edge blocks and other shapes go through the kernels' per-block path.
// Why a second path: with the extents fixed, coordinates are shifts instead of
// 64-bit divisions, a group of blocks shares each barrier, and every thread
// keeps kGroupElements / kThreads loads in flight.
#ifndef EBZIP_GPU_BLOCK_GROUP_CUH_
#define EBZIP_GPU_BLOCK_GROUP_CUH_

#include <cstdint>

#include "gpu/device_util.cuh"
#include "gpu/segment.h"

namespace ebzip::gpu {

// Elements of one group, whatever the shape.
inline constexpr uint32_t kGroupElements = 4096;

// A block of E1 x E2 x E3 (Geometry's dimensions 1-3; dimension 0 is 1).
// In reconstruction's shared memory the block's elements sit in rows of
// `Row`, each row padded by one word: the lines it scans along any dimension,
// and the rows of 8 that a 1-D block's lanes own, then fall in distinct banks.
// (Prediction keeps its own unpadded layout of rows: predict_kernels.cu.)
template <uint32_t E1, uint32_t E2, uint32_t E3, uint32_t Row>
struct FixedBlock {
  static constexpr uint32_t kE1 = E1, kE2 = E2, kE3 = E3;
  static constexpr uint32_t kVolume = E1 * E2 * E3;
  static constexpr uint32_t kBlocks = kGroupElements / kVolume;  // per group
  static constexpr uint32_t kPerThread = kGroupElements / kThreads;
  // Distinct in-block positions a thread takes (the same in every block).
  static constexpr uint32_t kPositions = kVolume / kThreads;
  static constexpr uint32_t kRowWords = Row + 1;
  static constexpr uint32_t kBlockWords = kVolume / Row * kRowWords;
  static constexpr uint32_t kWords = kBlocks * kBlockWords;
  static_assert(kVolume % kThreads == 0 && kBlocks < 32 && E3 % Row == 0);

  // Shared-memory word of in-block element jj (row-major) of group block blk.
  __device__ static uint32_t Word(uint32_t blk, uint32_t jj) {
    return blk * kBlockWords + jj / Row * kRowWords + jj % Row;
  }
  // In-block coordinates of jj.
  __device__ static uint32_t C1(uint32_t jj) { return E1 > 1 ? jj / (E2 * E3) : 0; }
  __device__ static uint32_t C2(uint32_t jj) { return E2 > 1 ? jj / E3 % E2 : 0; }
  __device__ static uint32_t C3(uint32_t jj) { return jj % E3; }

  // With kShallow, also a frame of fewer than E1 rows along dimension 1,
  // whose block MakeGeometry cuts to them: its blocks are Groupable<kShallow>.
  template <bool kShallow = false>
  EBZIP_HD static bool Matches(const Geometry& g) {
    const bool rows = g.block[1] == E1 || (kShallow && g.block[1] < E1 && g.block[1] == g.dims[1]);
    return g.block[0] == 1 && rows && g.block[2] == E2 && g.block[3] == E3;
  }
};

using Block3D = FixedBlock<8, 8, 8, 8>;  // also 4-D's 1x8x8x8
using Block2D = FixedBlock<1, 16, 16, 16>;
using Block1D = FixedBlock<1, 1, 256, 8>;

// Words of the largest group in reconstruction's padded layout.
inline constexpr uint32_t kGroupWords = Block3D::kWords > Block2D::kWords
                                            ? (Block3D::kWords > Block1D::kWords ? Block3D::kWords
                                                                                 : Block1D::kWords)
                                            : (Block2D::kWords > Block1D::kWords ? Block2D::kWords
                                                                                 : Block1D::kWords);

enum class BlockShape : uint32_t { kOther, k1D, k2D, k3D };

// The group path's shape for the frame's blocks; with kShallow (prediction)
// also 3-D blocks cut to a frame of fewer than 8 rows.
template <bool kShallow = false>
EBZIP_HD inline BlockShape ShapeOf(const Geometry& g) {
  if (Block3D::Matches<kShallow>(g)) return BlockShape::k3D;
  if (Block2D::Matches(g)) return BlockShape::k2D;
  if (Block1D::Matches(g)) return BlockShape::k1D;
  return BlockShape::kOther;
}

// Whether some blocks of the frame are cut short by its edges (the group
// path leaves them to the per-block path).
EBZIP_HD inline bool HasEdgeBlocks(const Geometry& g) {
  for (int d = 0; d < kDims; ++d) {
    if (g.dims[d] % g.block[d] != 0) return true;
  }
  return false;
}

// Where a group's blocks start, and (prediction) each block's first
// quantized element.
struct GroupState {
  uint64_t origin[32];  // element index of the block's first element
  uint32_t first[32];   // its first quantized element, in-block (prediction)
  uint32_t count;
  uint32_t depth;  // the blocks' extent along dimension 1 (Shape::kE1 when whole)
};

// Whether the group path can take a block of these extents: a whole one, or
// with kShallow one cut short along dimension 1 alone. In row-major order a
// cut block's elements sit where the whole block's first planes do, so the
// group's rows past the cut simply stay idle. Frames of a few rows have
// nothing but such blocks (the predictor survey's two-row samples of large
// 3-D frames, FORMAT.md §15.9), and frames whose rows are not a multiple of
// 8 have a plane of them.
template <class Shape, bool kShallow>
__device__ inline bool Groupable(const BlockView& view) {
  if (!kShallow) return view.volume == Shape::kVolume;
  // Extents never exceed the block: the others whole, any depth.
  return view.volume == view.extent[1] * Shape::kE2 * Shape::kE3;
}

// How many of blocks b, b+1, ... (before b_end, at most Shape::kBlocks) the
// group path can take (Groupable, all of block b's depth); 0 when it cannot
// take block b. Fills st.origin and st.depth and resets st.first for them.
// Starts with a barrier: the previous group's readers of `st` (and of the
// kernel's q) are done.
//
// kPack > 1 (prediction, a frame of Shape::kE1 / kPack rows along dimension
// 1, so that every block is cut to that depth): kPack such blocks stacked
// make one of the group's kBlocks, at most kBlocks * kPack of them (32).
template <class Shape, bool kShallow = false, uint32_t kPack = 1>
__device__ uint32_t StartGroup(const Geometry& g, uint64_t b, uint64_t b_end, GroupState& st) {
  static_assert(Shape::kBlocks * kPack <= 32 && Shape::kE1 % kPack == 0);
  __syncthreads();
  if (threadIdx.x < 32) {
    bool fits = false;
    uint32_t depth = 0;
    if (threadIdx.x < Shape::kBlocks * kPack && b + threadIdx.x < b_end) {
      BlockView view;
      view.Init(g, b + threadIdx.x);
      fits = Groupable<Shape, kShallow>(view);
      depth = view.extent[1];
      const uint32_t zero[kDims] = {};
      st.origin[threadIdx.x] = view.Index(zero);
      st.first[threadIdx.x] = Shape::kVolume;
    }
    const uint32_t group_depth = __shfl_sync(0xFFFFFFFFu, depth, 0);
    const unsigned mask = __ballot_sync(0xFFFFFFFFu, fits && depth == group_depth);
    if (threadIdx.x == 0) {
      st.count = mask == 0xFFFFFFFFu ? 32 : __ffs(~mask) - 1;
      st.depth = group_depth;
    }
  }
  __syncthreads();
  return st.count;
}

// Offset from its block's first element of each in-block position this
// thread takes (position p: jj = threadIdx.x + p * kThreads).
template <class Shape>
__device__ void PositionOffsets(const Geometry& g, uint64_t offsets[Shape::kPositions]) {
  const uint64_t row = g.dims[3];
  const uint64_t plane = g.dims[2] * g.dims[3];
#pragma unroll
  for (uint32_t p = 0; p < Shape::kPositions; ++p) {
    const uint32_t jj = threadIdx.x + p * kThreads;
    offsets[p] = Shape::C1(jj) * plane + Shape::C2(jj) * row + Shape::C3(jj);
  }
}

}  // namespace ebzip::gpu

#endif  // EBZIP_GPU_BLOCK_GROUP_CUH_
