// The placeholder rule of FORMAT.md §10.2, checked from outside the codec:
// every fill and verbatim element gets the q of the first quantized element
// of its own Lorenzo block (row-major within the block), or 0 when the block
// has none.
//
// The placeholders never reach the decoded array, so the test looks at the
// residuals instead. With radius 1 the only symbol is residual 0 and every
// other residual is an outlier stored with its value, so the outlier
// sections spell out the encoder's whole residual array. The test rebuilds
// that array from the spec alone (QuantizePoint, the rule, the textbook
// Lorenzo residual) and compares.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "codec/archive.h"
#include "codec/quantize_point.h"
#include "gtest/gtest.h"

namespace ebzip {
namespace {

template <typename T>
constexpr DType DTypeOf() {
  return sizeof(T) == 4 ? DType::kFloat32 : DType::kFloat64;
}

uint64_t Product(const std::vector<uint64_t>& v) {
  uint64_t n = 1;
  for (uint64_t x : v) n *= x;
  return n;
}

// C-order coordinates of index i.
std::vector<uint64_t> Coords(uint64_t i, const std::vector<uint64_t>& dims) {
  std::vector<uint64_t> c(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    c[d] = i % dims[d];
    i /= dims[d];
  }
  return c;
}

uint64_t Index(const std::vector<uint64_t>& c, const std::vector<uint64_t>& dims) {
  uint64_t i = 0;
  for (size_t d = 0; d < dims.size(); ++d) i = i * dims[d] + c[d];
  return i;
}

// The residuals FORMAT.md §10 prescribes for one frame (`dims` its own shape).
template <typename T>
std::vector<int64_t> ExpectedResiduals(const T* data, const std::vector<uint64_t>& dims,
                                       const std::vector<uint64_t>& block,
                                       const format::FrameHeader& h) {
  const uint64_t n = Product(dims);
  QuantRule rule{h.abs_bound, h.quant_step, h.fill_value.has_value(), 0};
  if (h.fill_value) rule.fill_bits = ToBits(static_cast<T>(*h.fill_value));
  std::vector<int32_t> q(n);
  std::vector<bool> special(n);
  for (uint64_t i = 0; i < n; ++i) {
    special[i] = QuantizePoint(data[i], rule, &q[i]) != PointKind::kQuantized;
  }

  // C order restricted to one block is that block's row-major order, so the
  // first quantized element met in C order is the block's first.
  auto block_of = [&](uint64_t i) {
    std::vector<uint64_t> c = Coords(i, dims);
    for (size_t d = 0; d < c.size(); ++d) c[d] /= block[d];
    return c;
  };
  std::map<std::vector<uint64_t>, int32_t> first_q;
  for (uint64_t i = 0; i < n; ++i) {
    if (!special[i]) first_q.emplace(block_of(i), q[i]);  // keeps the first
  }
  for (uint64_t i = 0; i < n; ++i) {
    if (!special[i]) continue;
    auto it = first_q.find(block_of(i));
    q[i] = it == first_q.end() ? 0 : it->second;
  }

  // The textbook Lorenzo residual: neighbours over every subset of
  // dimensions with alternating signs; those outside the block count as 0.
  std::vector<int64_t> residual(n);
  const size_t nd = dims.size();
  for (uint64_t i = 0; i < n; ++i) {
    const std::vector<uint64_t> at = Coords(i, dims);
    for (uint32_t mask = 0; mask < (1u << nd); ++mask) {
      std::vector<uint64_t> p = at;
      bool inside = true;
      int64_t sign = 1;
      for (size_t d = 0; d < nd; ++d) {
        if (!(mask & (1u << d))) continue;
        if (p[d] % block[d] == 0) inside = false;
        --p[d];
        sign = -sign;
      }
      if (inside) residual[i] += sign * q[Index(p, dims)];
    }
  }
  return residual;
}

// The residuals the encoder wrote into frame `f`'s outlier section; with
// radius 1 every element not listed there has residual 0.
std::vector<int64_t> WrittenResiduals(const std::vector<uint8_t>& archive, const ArchiveInfo& info,
                                      uint64_t f) {
  const format::FrameHeader& h = info.frame_headers[f];
  uint64_t at = info.frames[f].offset + format::kFrameHeaderSize;
  for (int s = 0; s < format::kOutliers; ++s) {
    at += (h.sections[s].length + format::kAlignment - 1) / format::kAlignment * format::kAlignment;
  }
  std::vector<int64_t> residual(h.num_elements());
  const uint64_t count = h.outlier_count;
  for (uint64_t k = 0; k < count; ++k) {
    uint32_t index;
    int32_t delta;
    std::memcpy(&index, &archive[at + 4 * k], 4);
    std::memcpy(&delta, &archive[at + 4 * count + 4 * k], 4);
    residual.at(index) = delta;
  }
  return residual;
}

// Radius 1 leaves residual 0 as the only symbol: every other residual
// becomes an outlier and is written out with its value.
template <typename T>
std::vector<uint8_t> CompressWithRadius1(const std::vector<T>& data,
                                         const std::vector<uint64_t>& shape,
                                         CompressOptions options) {
  options.radius = 1;
  auto archive =
      Compress({DTypeOf<T>(), shape},
               {reinterpret_cast<const uint8_t*>(data.data()), data.size() * sizeof(T)}, options);
  EXPECT_TRUE(archive.ok()) << archive.status();
  return archive.ok() ? *archive : std::vector<uint8_t>{};
}

// Checks every frame's residuals against the rule.
template <typename T>
void ExpectRuleFollowed(const std::vector<uint8_t>& archive, const std::vector<T>& data,
                        const std::vector<uint64_t>& shape, const std::vector<uint16_t>& block) {
  auto info = ReadArchiveInfo(archive);
  ASSERT_TRUE(info.ok()) << info.status();
  const std::vector<uint64_t> block64(block.begin(), block.end());
  const uint64_t row = Product(shape) / shape[0];
  for (uint64_t f = 0; f < info->frames.size(); ++f) {
    SCOPED_TRACE("frame " + std::to_string(f));
    const format::FrameHeader& h = info->frame_headers[f];
    std::vector<uint64_t> dims = shape;
    dims[0] = h.shape[0];
    const std::vector<int64_t> written = WrittenResiduals(archive, *info, f);
    const std::vector<int64_t> expected =
        ExpectedResiduals(data.data() + h.first_row * row, dims, block64, h);
    ASSERT_EQ(written.size(), expected.size());
    uint64_t wrong = 0, first = 0;
    for (uint64_t i = 0; i < written.size(); ++i) {
      if (written[i] != expected[i] && wrong++ == 0) first = i;
    }
    EXPECT_EQ(wrong, 0u) << "first at element " << first << " of the frame: residual "
                         << written[first] << ", expected " << expected[first];
  }
}

template <typename T>
void CheckResiduals(const std::vector<T>& data, const std::vector<uint64_t>& shape,
                    const CompressOptions& options) {
  ExpectRuleFollowed(CompressWithRadius1(data, shape, options), data, shape, options.block);
}

// Integers, so that with step 1 every q is the value itself.
template <typename T>
std::vector<T> Wavy(const std::vector<uint64_t>& shape) {
  std::vector<T> v(Product(shape));
  for (uint64_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<T>(std::round(60 + 30 * std::sin(i * 0.37) + 20 * std::cos(i * 0.011)));
  }
  return v;
}

// Placeholders are the Lorenzo predictor's (FORMAT.md §10.2): these tests
// write version 1, Lorenzo with plain Huffman.
CompressOptions AbsHalf(std::vector<uint16_t> block) {
  CompressOptions o;
  o.predictor = Predictor::kLorenzo;
  o.lossless = Lossless::kHuffman;
  o.mode = BoundMode::kAbs;
  o.bound = 0.5;  // step 1
  o.block = std::move(block);
  return o;
}

TEST(Placeholder, TwoDimensionalBlocksByHand) {
  // 40x37 in 16x16 blocks, frames of 16 rows: three frames, each one block
  // high and three wide, the last column of blocks 5 wide.
  const uint64_t rows = 40, cols = 37;
  std::vector<float> v = Wavy<float>({rows, cols});
  auto at = [&](uint64_t r, uint64_t c) -> float& { return v[r * cols + c]; };
  const float fill = -999;
  // Frame 0, block 0: all fill, so its placeholder is 0.
  for (uint64_t r = 0; r < 16; ++r) {
    for (uint64_t c = 0; c < 16; ++c) at(r, c) = fill;
  }
  // Frame 0, block 1: its first two rows and five more elements are fill,
  // and a NaN sits further in; the first quantized element is (2, 21).
  for (uint64_t r = 0; r < 2; ++r) {
    for (uint64_t c = 16; c < 32; ++c) at(r, c) = fill;
  }
  for (uint64_t c = 16; c < 21; ++c) at(2, c) = fill;
  at(5, 20) = std::numeric_limits<float>::quiet_NaN();
  // Frame 1, the cut-short block: fill, then Inf, then the first quantized.
  at(16, 32) = fill;
  at(16, 33) = std::numeric_limits<float>::infinity();
  at(20, 36) = fill;
  // Frame 2: -0.0 inside a block that starts quantized; a run across all
  // three blocks of a row; a run from the end of one row into the next.
  at(33, 7) = -0.0f;
  for (uint64_t c = 10; c < cols; ++c) at(35, c) = fill;
  for (uint64_t c = 30; c < cols; ++c) at(37, c) = fill;
  for (uint64_t c = 0; c < 4; ++c) at(38, c) = fill;

  CompressOptions o = AbsHalf({16, 16});
  o.fill_value = fill;
  o.frame_elements = 16 * cols;
  const std::vector<uint8_t> archive = CompressWithRadius1(v, {rows, cols}, o);
  ExpectRuleFollowed(archive, v, {rows, cols}, o.block);

  // The corners of the blocks above spelled out (a corner's residual is its q).
  auto info = ReadArchiveInfo(archive);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->frames.size(), 3u);
  const std::vector<int64_t> frame0 = WrittenResiduals(archive, *info, 0);
  const std::vector<int64_t> frame1 = WrittenResiduals(archive, *info, 1);
  EXPECT_EQ(frame0[0], 0);
  EXPECT_EQ(frame0[16], static_cast<int64_t>(at(2, 21)));
  EXPECT_EQ(frame1[32], static_cast<int64_t>(at(16, 34)));
}

TEST(Placeholder, RandomFillAndVerbatimInEveryRank) {
  std::mt19937_64 rng(7);
  for (const std::vector<uint64_t>& shape :
       std::vector<std::vector<uint64_t>>{{700}, {13, 10, 11}, {8, 6, 9, 7}}) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    std::vector<double> v = Wavy<double>(shape);
    const double fill = 1e30;
    // Patches of fill (in 1-D, some cover whole blocks) and a few verbatim
    // elements.
    for (int patch = 0; patch < 6; ++patch) {
      const uint64_t start = rng() % v.size();
      const uint64_t length = rng() % 150;
      for (uint64_t i = start; i < std::min<uint64_t>(v.size(), start + length); ++i) v[i] = fill;
    }
    for (int k = 0; k < 10; ++k) {
      v[rng() % v.size()] = k % 2 ? std::numeric_limits<double>::quiet_NaN() : -0.0;
    }
    std::vector<uint16_t> block = {3};
    block.resize(shape.size(), 4);
    CompressOptions o = AbsHalf(block);
    o.fill_value = fill;
    o.frame_elements = 6 * Product(shape) / shape[0];  // frames of 6 rows, then fewer
    CheckResiduals(v, shape, o);
  }
}

TEST(Placeholder, FrameWithoutFillOrVerbatimIsUnchanged) {
  // Nothing to place: the residuals are the plain Lorenzo ones.
  CheckResiduals(Wavy<float>({20, 30}), {20, 30}, AbsHalf({8, 8}));
}

}  // namespace
}  // namespace ebzip
