// Symbol streams and fill masks for the tests of version 2's zero-run and
// run-value tokens and fill mask on the GPU (tests/gpu/run_kernels_test.cc) and of the steps
// they share with a CPU simulation (tests/codec/run_steps_test.cc): runs of
// the zero residual of every length that matters (1, 2, the class edges,
// 8191, 8192 and beyond), runs across chunk ends, none, only zeros, the
// largest radius; masks of random blobs, repeated rows, long runs.
#ifndef EBZIP_TESTS_RUN_STREAMS_H_
#define EBZIP_TESTS_RUN_STREAMS_H_

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace ebzip::testing {

struct SymbolStream {
  std::string name;
  std::vector<uint16_t> symbols;
  uint32_t radius;
  uint32_t chunk_symbols;
};

// Residual symbols near `radius` with runs of it whose lengths are drawn
// from `run_lengths` (cycled), separated by 1 to `gap` other symbols; symbol
// 0 (an outlier) now and then.
inline std::vector<uint16_t> RunsStream(uint64_t n, uint32_t radius,
                                        const std::vector<uint64_t>& run_lengths, uint32_t gap,
                                        uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint16_t> s;
  s.reserve(n);
  const uint32_t spread = std::min<uint32_t>(radius - 1, 60);
  std::uniform_int_distribution<uint32_t> off(1, spread);
  std::uniform_int_distribution<uint32_t> between(1, gap);
  std::uniform_int_distribution<int> coin(0, 99);
  size_t k = 0;
  while (s.size() < n) {
    const uint64_t run = run_lengths.empty() ? 0 : run_lengths[k++ % run_lengths.size()];
    for (uint64_t i = 0; i < run && s.size() < n; ++i) s.push_back(static_cast<uint16_t>(radius));
    const uint32_t others = between(rng);
    for (uint32_t i = 0; i < others && s.size() < n; ++i) {
      const int c = coin(rng);
      uint32_t v = c < 50 ? radius + off(rng) : radius - off(rng);
      // Half the runs end on a residual of -3 .. +3, which run-value tokens
      // (FORMAT.md §15.4.1) take into the run's token for +-1 and +-2.
      if (i == 0 && c % 2 == 0) v = radius + (c % 7) - 3 + (c % 7 == 3 ? 1 : 0);
      if (c == 99) v = 0;
      s.push_back(static_cast<uint16_t>(v));
    }
  }
  return s;
}

// Geometric runs: what a smooth field's residuals look like at a loose bound.
inline std::vector<uint16_t> RandomStream(uint64_t n, uint32_t radius, double zero_share,
                                          double mean_run, uint32_t seed) {
  std::mt19937 rng(seed);
  std::geometric_distribution<uint64_t> run(1.0 / mean_run);
  std::bernoulli_distribution zero(zero_share);
  std::normal_distribution<double> noise(0, 6);
  std::vector<uint16_t> s;
  s.reserve(n);
  while (s.size() < n) {
    if (zero(rng)) {
      const uint64_t k = 1 + run(rng);
      for (uint64_t i = 0; i < k && s.size() < n; ++i) s.push_back(static_cast<uint16_t>(radius));
    } else {
      int64_t v = static_cast<int64_t>(radius) + static_cast<int64_t>(std::lround(noise(rng)));
      if (v == static_cast<int64_t>(radius)) v += 1;
      v = std::clamp<int64_t>(v, 1, 2 * static_cast<int64_t>(radius) - 1);
      s.push_back(static_cast<uint16_t>(v));
    }
  }
  return s;
}

// Every case the tests run, at a size scaled by `scale` (1 for the CPU
// simulation, larger on the GPU).
inline std::vector<SymbolStream> SymbolStreams(uint64_t scale) {
  std::vector<SymbolStream> v;
  const uint64_t n = 200000 * scale;
  // Class edges and the split rule: 8191 is one token, 8192 a token and a
  // symbol, 16382 two tokens, 16383 two and a symbol.
  const std::vector<uint64_t> edges = {
      1,    2,    3,    4,     7,     8,     15,    16,    255,   256,   4095,  4096,  8190,
      8191, 8192, 8193, 16381, 16382, 16383, 16384, 24573, 24574, 30000, 65536, 100000};
  v.push_back({"random", RandomStream(n, 512, 0.5, 12, 1), 512, 4096});
  v.push_back({"random_big_chunks", RandomStream(n, 512, 0.7, 200, 2), 512, 65536});
  v.push_back({"class_edges", RunsStream(n * 2, 512, edges, 3, 3), 512, 65536});
  v.push_back({"class_edges_small_chunks", RunsStream(n, 512, edges, 2, 4), 512, 1000});
  v.push_back({"tiny_chunks", RandomStream(n / 4, 64, 0.6, 4, 5), 64, 7});
  v.push_back({"chunks_of_64", RandomStream(n / 2, 64, 0.8, 30, 6), 64, 64});
  v.push_back({"no_zeros", RunsStream(n, 512, {}, 5, 7), 512, 4096});
  v.push_back({"all_zero", std::vector<uint16_t>(n, 512), 512, 65536});
  v.push_back({"all_zero_odd_chunks", std::vector<uint16_t>(n + 13, 100), 100, 12345});
  v.push_back({"isolated_zeros", RunsStream(n, 512, {1}, 1, 8), 512, 4096});
  v.push_back({"pairs", RunsStream(n, 512, {2, 1, 3}, 1, 9), 512, 8192});
  v.push_back({"radius_32762", RunsStream(n, 32762, {1, 5, 9000, 2, 100}, 40, 10), 32762, 16384});
  // The largest radius run-value tokens allow (FORMAT.md §15.2).
  v.push_back({"radius_32736", RunsStream(n, 32736, {1, 3, 8191, 2, 40}, 20, 12), 32736, 16384});
  // Chunk ends inside runs: runs of about a chunk, chunks of 4096.
  v.push_back({"runs_across_chunks", RunsStream(n, 512, {4000, 4097, 12000, 5}, 2, 11), 512, 4096});
  v.push_back({"one_symbol", std::vector<uint16_t>(1, 512), 512, 4096});
  v.push_back({"one_zero_then_other", std::vector<uint16_t>{512, 513}, 512, 4096});
  return v;
}

struct MaskCase {
  std::string name;
  std::vector<uint8_t> mask;
  uint64_t row;  // elements per index along dimension 0 (n for 1-D)
};

// Blobs of fill on a rows x cols grid (land under an ocean field), the same
// in every one of `levels` repeats (so rows XOR to zero), plus noise.
inline std::vector<uint8_t> BlobMask(uint64_t rows, uint64_t cols, uint64_t levels, int blobs,
                                     double noise, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<uint8_t> plane(rows * cols, 0);
  for (int b = 0; b < blobs; ++b) {
    const double cy = u(rng) * rows, cx = u(rng) * cols;
    const double ry = 1 + u(rng) * rows / 4, rx = 1 + u(rng) * cols / 4;
    for (uint64_t y = 0; y < rows; ++y) {
      for (uint64_t x = 0; x < cols; ++x) {
        const double dy = (y - cy) / ry, dx = (x - cx) / rx;
        if (dy * dy + dx * dx < 1) plane[y * cols + x] = 1;
      }
    }
  }
  std::vector<uint8_t> m;
  m.reserve(plane.size() * levels);
  for (uint64_t l = 0; l < levels; ++l) {
    for (uint8_t v : plane) m.push_back(u(rng) < noise ? v ^ 1 : v);
  }
  return m;
}

inline std::vector<MaskCase> MaskCases(uint64_t scale) {
  std::vector<MaskCase> v;
  std::mt19937 rng(42);
  std::bernoulli_distribution half(0.5);
  // 2-D: rows of 360 (dimension 0 of 180); 3-D levels repeat the plane.
  v.push_back({"blobs_2d", BlobMask(180 * scale, 360, 1, 12, 0, 1), 360});
  v.push_back({"blobs_3d_levels", BlobMask(90, 180, 8 * scale, 9, 0, 2), 90 * 180});
  v.push_back({"blobs_noisy", BlobMask(100 * scale, 123, 1, 5, 0.01, 3), 123});
  std::vector<uint8_t> random(50000 * scale);
  for (auto& b : random) b = half(rng);
  v.push_back({"random_bits_1d", random, random.size()});
  v.push_back({"random_bits_rows_of_7", random, 7});
  // A row repeated: XOR makes everything after the first row zero, one
  // run far longer than 8190.
  std::vector<uint8_t> repeated;
  std::vector<uint8_t> row(1000);
  for (auto& b : row) b = half(rng);
  for (uint64_t r = 0; r < 200 * scale; ++r)
    repeated.insert(repeated.end(), row.begin(), row.end());
  v.push_back({"repeated_rows", repeated, row.size()});
  v.push_back({"all_fill_1d", std::vector<uint8_t>(100000 * scale, 1), 100000 * scale});
  v.push_back({"all_fill_2d", std::vector<uint8_t>(100000 * scale, 1), 500});
  v.push_back({"no_fill", std::vector<uint8_t>(70000 * scale, 0), 700});
  v.push_back({"one_element_fill", std::vector<uint8_t>(1, 1), 1});
  v.push_back({"one_element_not_fill", std::vector<uint8_t>(1, 0), 1});
  // Runs of exactly 8190 and 8191 (the split edge), and alternating bits:
  // over 4096 tokens, so several mask chunks.
  std::vector<uint8_t> edges;
  for (uint64_t len : {8190, 8191, 8189, 16380, 16381, 1, 2, 24571, 8190}) {
    const uint8_t bit = edges.empty() ? 0 : edges.back() ^ 1;
    edges.insert(edges.end(), len, bit);
  }
  v.push_back({"split_edges_1d", edges, edges.size()});
  std::vector<uint8_t> alternating(30000 * scale);
  for (uint64_t i = 0; i < alternating.size(); ++i) alternating[i] = (i / 3) % 2;
  v.push_back({"alternating_1d", alternating, alternating.size()});
  v.push_back({"alternating_rows_of_5", alternating, 5});
  // A mask chunk (4096 tokens) that starts inside a long run's split pairs,
  // at an odd and an even token of them: short runs, then a long one.
  for (uint64_t lead : {4091u, 4090u}) {
    std::vector<uint8_t> m;
    for (uint64_t t = 0; t < lead; ++t) m.insert(m.end(), 3, t % 2);
    m.insert(m.end(), 200000, lead % 2);
    m.insert(m.end(), 5, (lead + 1) % 2);
    v.push_back({"chunk_start_in_pairs_" + std::to_string(lead), m, m.size()});
  }
  // Rows whose length is not a multiple of 64, nor does it divide n.
  std::vector<uint8_t> ragged(12345);
  for (auto& b : ragged) b = half(rng) && half(rng);
  v.push_back({"ragged_rows", ragged, 100});
  return v;
}

}  // namespace ebzip::testing

#endif  // EBZIP_TESTS_RUN_STREAMS_H_
