#include "codec/lorenzo.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "codec/lorenzo_frame.h"
#include "codec/quantize_point.h"
#include "gtest/gtest.h"

namespace ebzip {
namespace {

std::vector<int32_t> RandomQ(uint64_t n, int seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> u(-(1 << 26), 1 << 26);
  std::vector<int32_t> q(n);
  for (auto& v : q) v = u(rng);
  return q;
}

// The textbook N-D Lorenzo residual: sum over neighbour subsets with
// alternating signs, neighbours outside the point's block counting as 0.
int64_t BruteResidual(const std::vector<int32_t>& q, const std::vector<uint64_t>& dims,
                      const std::vector<uint64_t>& block, const std::vector<uint64_t>& at) {
  const size_t nd = dims.size();
  int64_t sum = 0;
  for (uint32_t mask = 0; mask < (1u << nd); ++mask) {
    std::vector<uint64_t> p = at;
    bool inside = true;
    int sign = 1;
    for (size_t d = 0; d < nd; ++d) {
      if (mask & (1u << d)) {
        if (p[d] % block[d] == 0) inside = false;
        p[d] -= 1;
        sign = -sign;
      }
    }
    if (!inside) continue;
    uint64_t idx = 0;
    for (size_t d = 0; d < nd; ++d) idx = idx * dims[d] + p[d];
    sum += sign * static_cast<int64_t>(q[idx]);
  }
  return sum;
}

struct Case {
  std::vector<uint64_t> dims;
  std::vector<uint16_t> block;
};

TEST(Lorenzo, ForwardMatchesTextbookAndInverseUndoesIt) {
  const std::vector<Case> cases = {{{1000}, {256}},
                                   {{37}, {256}},
                                   {{33, 47}, {16, 16}},
                                   {{5, 300}, {16, 16}},
                                   {{17, 9, 11}, {8, 8, 8}},
                                   {{3, 10, 9, 12}, {1, 8, 8, 8}},
                                   {{4, 6, 5, 7}, {2, 3, 4, 5}},
                                   {{64, 64}, {64, 1}}};
  int seed = 0;
  for (const Case& c : cases) {
    uint64_t n = 1;
    for (uint64_t d : c.dims) n *= d;
    std::vector<int32_t> q = RandomQ(n, ++seed);
    std::vector<int32_t> v = q;
    BlockGrid grid = BlockGrid::Make(c.dims, c.block);
    LorenzoForward(grid, v.data());
    std::vector<uint64_t> block(c.block.begin(), c.block.end());
    for (uint64_t i = 0; i < n; ++i) {
      std::vector<uint64_t> at(c.dims.size());
      uint64_t r = i;
      for (size_t d = c.dims.size(); d-- > 0;) {
        at[d] = r % c.dims[d];
        r /= c.dims[d];
      }
      ASSERT_EQ(v[i], BruteResidual(q, c.dims, block, at)) << "element " << i;
    }
    LorenzoInverse(grid, v.data());
    EXPECT_EQ(v, q);
  }
}

TEST(LorenzoEncode, QuantizesEveryElementAsQuantizePointDoes) {
  // With blocks of 1 the residual is q itself: the encoder's quantization
  // (vectorized where the processor allows) against QuantizePoint, on
  // values at every edge: specials, fill, the float range, bound misses,
  // ties of the rounding.
  std::mt19937 rng(3);
  std::vector<float> x;
  const float fill = -1e30f;
  const float edges[] = {std::numeric_limits<float>::quiet_NaN(),
                         std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity(),
                         -0.0f,
                         0.0f,
                         std::numeric_limits<float>::denorm_min(),
                         -1e-40f,
                         std::numeric_limits<float>::max(),
                         -std::numeric_limits<float>::max(),
                         fill,
                         0.25f,
                         0.75f,
                         -0.25f,
                         1e7f,
                         6.7e6f,
                         -6.7e6f};
  for (int i = 0; i < 70001; ++i) {
    const uint32_t pick = rng() % 24;
    x.push_back(pick < 16 ? edges[pick] : std::ldexp(static_cast<float>(rng() % 2000) - 1000.0f,
                                                      static_cast<int>(rng() % 8) - 6));
  }
  for (double abs_bound : {0.25, 0.1, 1e-9}) {
    FrameParams p;
    p.version = 2;
    p.shape = {x.size()};
    p.block = {1, 0, 0, 0};
    p.abs_bound = abs_bound;
    p.quant_step = 2 * abs_bound;
    p.fill_value = fill;
    p.radius = 32768;
    LorenzoEncoded e;
    ASSERT_TRUE(LorenzoEncode(p, reinterpret_cast<const uint8_t*>(x.data()), &e, nullptr).ok());
    QuantRule rule{p.abs_bound, p.quant_step, true, 0};
    uint32_t fill_bits;
    std::memcpy(&fill_bits, &fill, 4);
    rule.fill_bits = fill_bits;
    for (size_t i = 0; i < x.size(); ++i) {
      int32_t q;
      QuantizePoint(x[i], rule, &q);
      ASSERT_EQ(e.residuals[i], q) << "element " << i << " = " << x[i] << ", bound " << abs_bound;
    }
  }
}

}  // namespace
}  // namespace ebzip
