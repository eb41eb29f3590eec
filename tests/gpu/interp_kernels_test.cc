// The interpolation predictor's GPU kernels (gpu/interp_kernels.h) against
// the CPU module (codec/interp_predictor.h), byte for byte: symbols in symbol
// order, verbatim elements, the anchors' outliers, and decoded working
// values, for every rank, both dtypes and orders, batch dimensions, edge
// tiles, fill masks and special values.
//
// Two drivers run gpu/interp_tile.h's code. The GPU tests (InterpKernels.*)
// skip where no CUDA device is visible. The emulation tests
// (InterpEmulation.*) run the same per-tile, per-anchor and per-entry
// functions on the host, in the order the launchers run them, one tile at a
// time by 1 or by several threads with barriers, so the algorithm is checked
// everywhere; only what is CUDA's own (warp scans, shared-memory layout,
// launch configuration) needs the device.
//
// Failure messages name the first differing position or element with its
// tile, rank and coordinates and both values, so one device run tells where.
#include "gpu/interp_kernels.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "codec/interp_predictor.h"
#include "codec/types.h"
#include "gpu/gpu_codec.h"
#include "gtest/gtest.h"

namespace ebzip::gpu {
namespace {

using interp::Geometry;
using interp::KeyHeader;

#define SKIP_WITHOUT_GPU()                                                        \
  do {                                                                            \
    if (absl::Status s = DeviceAvailable(); !s.ok()) GTEST_SKIP() << s.message(); \
  } while (0)

uint64_t Product(const std::vector<uint64_t>& v) {
  uint64_t n = 1;
  for (uint64_t x : v) n *= x;
  return n;
}

std::vector<uint64_t> CoordsOf(uint64_t i, const std::vector<uint64_t>& shape) {
  std::vector<uint64_t> c(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    c[d] = i % shape[d];
    i /= shape[d];
  }
  return c;
}

std::string CoordsString(uint64_t i, const std::vector<uint64_t>& shape) {
  std::string s = "(";
  const std::vector<uint64_t> c = CoordsOf(i, shape);
  for (size_t d = 0; d < c.size(); ++d) s += (d ? "," : "") + std::to_string(c[d]);
  return s + ")";
}

template <typename T>
std::string ValueString(T v) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%.17g [0x%0*" PRIx64 "]", static_cast<double>(v),
                static_cast<int>(2 * sizeof(T)), static_cast<uint64_t>(ToBits<T>(v)));
  return buf;
}

// ---------------------------------------------------------------------------
// Frames.

// A smooth field of amplitude ~1 plus uniform noise of `noise`.
template <typename T>
std::vector<T> Field(const std::vector<uint64_t>& shape, double noise, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<std::vector<double>> wave(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    for (uint64_t c = 0; c < shape[d]; ++c) {
      wave[d].push_back(
          std::sin(0.07 * static_cast<double>(c) * static_cast<double>(d + 1) + 0.5 * d));
    }
  }
  const uint64_t n = Product(shape);
  std::vector<T> v(n);
  std::vector<uint64_t> c(shape.size(), 0);
  for (uint64_t i = 0; i < n; ++i) {
    double s = 0.3;
    for (size_t d = 0; d < c.size(); ++d) s += wave[d][c[d]];
    v[i] = static_cast<T>(s / static_cast<double>(c.size()) + noise * u(rng));
    for (size_t d = c.size(); d-- > 0;) {
      if (++c[d] < shape[d]) break;
      c[d] = 0;
    }
  }
  return v;
}

// NaN, ±Inf, -0.0, subnormals, huge values and spikes at random places,
// element 0 (an anchor) among them.
template <typename T>
void AddSpecials(std::vector<T>& v, uint32_t seed) {
  std::mt19937 rng(seed);
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(),
                        std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(),
                        T(-0.0),
                        std::numeric_limits<T>::denorm_min(),
                        -std::numeric_limits<T>::denorm_min() * 3,
                        std::numeric_limits<T>::max(),
                        T(1e30),
                        T(-3e20),
                        std::numeric_limits<T>::lowest(),
                        T(0.0),
                        T(40)};
  for (uint64_t k = 0; k < v.size() / 40 + 1; ++k) {
    v[rng() % v.size()] = specials[rng() % (sizeof(specials) / sizeof(specials[0]))];
  }
  v[0] = std::numeric_limits<T>::quiet_NaN();
}

// Blobs covering about `fraction` of the frame become fill; returns the mask.
template <typename T>
std::vector<uint8_t> AddFill(std::vector<T>& v, const std::vector<uint64_t>& shape, double fraction,
                             double fill, uint32_t seed) {
  std::mt19937 rng(seed);
  const uint64_t n = v.size();
  std::vector<uint8_t> mask(n, 0);
  uint64_t filled = 0;
  const size_t rank = shape.size();
  while (static_cast<double>(filled) < fraction * static_cast<double>(n)) {
    const std::vector<uint64_t> centre = CoordsOf(rng() % n, shape);
    const int64_t radius = 1 + static_cast<int64_t>(rng() % 6);
    std::vector<uint64_t> lo(rank), hi(rank);
    for (size_t d = 0; d < rank; ++d) {
      lo[d] = static_cast<uint64_t>(std::max<int64_t>(0, static_cast<int64_t>(centre[d]) - radius));
      hi[d] = std::min<uint64_t>(shape[d], centre[d] + static_cast<uint64_t>(radius) + 1);
    }
    std::vector<uint64_t> c = lo;
    for (bool more = true; more;) {
      double dist = 0;
      uint64_t i = 0;
      for (size_t d = 0; d < rank; ++d) {
        const double x = static_cast<double>(c[d]) - static_cast<double>(centre[d]);
        dist += x * x;
        i = i * shape[d] + c[d];
      }
      if (dist <= static_cast<double>(radius * radius) && !mask[i]) {
        mask[i] = 1;
        ++filled;
      }
      more = false;
      for (size_t d = rank; d-- > 0;) {
        if (++c[d] < hi[d]) {
          more = true;
          break;
        }
        c[d] = lo[d];
      }
    }
  }
  for (uint64_t i = 0; i < n; ++i) {
    if (mask[i]) v[i] = static_cast<T>(fill);
  }
  return mask;
}

// Every anchor of the first anchor block (8 along each anchor-grid
// dimension) NaN: the block has no quantized anchor, so its placeholder is 0.
template <typename T>
void PoisonFirstAnchorBlock(std::vector<T>& v, const std::vector<uint64_t>& shape,
                            const std::vector<uint16_t>& tile) {
  for (uint64_t i = 0; i < v.size(); ++i) {
    const std::vector<uint64_t> c = CoordsOf(i, shape);
    bool in = true;
    for (size_t d = 0; d < c.size(); ++d) {
      const uint64_t t = tile[d];
      in = in && c[d] % t == 0 && c[d] / t < 8;
    }
    if (in) v[i] = std::numeric_limits<T>::quiet_NaN();
  }
}

struct Frame {
  std::string label;
  InterpParams p;
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> mask;  // empty: no fill mask
  const uint8_t* fill() const { return mask.empty() ? nullptr : mask.data(); }
  uint64_t n() const { return Product(p.shape); }
};

struct Case {
  std::vector<uint64_t> shape;
  std::vector<uint16_t> tile;
};

enum class Variant {
  kSmooth,
  kNoisy,
  kSpecials,
  kFill,
  kSmallRadius,
  kAllFill,
  kPoisoned,
  kExact,
  kTies
};

const char* VariantName(Variant v) {
  switch (v) {
    case Variant::kSmooth:
      return "smooth";
    case Variant::kNoisy:
      return "noisy";
    case Variant::kSpecials:
      return "specials";
    case Variant::kFill:
      return "fill+specials";
    case Variant::kSmallRadius:
      return "radius 4, fill+specials";
    case Variant::kAllFill:
      return "all fill";
    case Variant::kPoisoned:
      return "NaN anchor block, specials";
    case Variant::kExact:
      return "integers, bound 0";
    case Variant::kTies:
      return "odd multiples of half the step";
  }
  return "?";
}

template <typename T>
Frame MakeFrameT(const Case& c, InterpOrder order, Variant variant, uint32_t seed) {
  const double bound = sizeof(T) == 4 ? 1e-3 : 1e-5;
  Frame f;
  f.p.dtype = sizeof(T) == 4 ? DType::kFloat32 : DType::kFloat64;
  f.p.shape = c.shape;
  for (size_t d = 0; d < c.tile.size(); ++d) f.p.tile[d] = c.tile[d];
  f.p.order = order;
  f.p.abs_bound = bound;
  f.p.quant_step = 2 * bound;
  std::vector<T> x = Field<T>(c.shape, variant == Variant::kSmooth ? 0 : 20 * bound, seed);
  switch (variant) {
    case Variant::kSmooth:
    case Variant::kNoisy:
      break;
    case Variant::kSpecials:
      AddSpecials(x, seed + 1);
      break;
    case Variant::kFill:
    case Variant::kSmallRadius:
      AddSpecials(x, seed + 1);
      f.mask = AddFill(x, c.shape, 0.25, -9999.0, seed + 2);
      if (variant == Variant::kSmallRadius) f.p.radius = 4;
      break;
    case Variant::kAllFill:
      f.mask.assign(x.size(), 1);
      for (T& v : x) v = static_cast<T>(-9999.0);
      break;
    case Variant::kPoisoned:
      AddSpecials(x, seed + 1);
      PoisonFirstAnchorBlock(x, c.shape, c.tile);
      break;
    case Variant::kExact: {
      std::mt19937 rng(seed);
      for (T& v : x) v = static_cast<T>(std::round(v * 50) + static_cast<double>(rng() % 3));
      f.p.abs_bound = 0;
      f.p.quant_step = 1;
      f.p.radius = 64;
      break;
    }
    case Variant::kTies: {
      // Step 0.2, whose reciprocal 5 is not its exact inverse: residuals of
      // x = (k + 0.5) * 0.2 from such neighbours fall on or next to ties,
      // where §15.8's product and a quotient round differently (0.3 * 5 is
      // 1.5, 0.3 / 0.2 is 1.4999999999999998) and one side misses the bound.
      f.p.abs_bound = 0.1;
      f.p.quant_step = 0.2;
      for (T& v : x) v = static_cast<T>((std::round(v * 20) + 0.5) * 0.2);
      break;
    }
  }
  f.bytes.resize(x.size() * sizeof(T));
  std::memcpy(f.bytes.data(), x.data(), f.bytes.size());
  std::ostringstream label;
  label << ShapeToString(c.shape) << " tile ";
  for (size_t d = 0; d < c.tile.size(); ++d) label << (d ? "x" : "") << c.tile[d];
  label << " f" << 8 * sizeof(T) << " order " << static_cast<int>(order) << " "
        << VariantName(variant) << " (seed " << seed << ")";
  f.label = label.str();
  return f;
}

Frame MakeFrame(DType dtype, const Case& c, InterpOrder order, Variant variant, uint32_t seed) {
  return dtype == DType::kFloat32 ? MakeFrameT<float>(c, order, variant, seed)
                                  : MakeFrameT<double>(c, order, variant, seed);
}

// Shapes: every rank; edge tiles cut short and exact; batch dimensions
// before, between and after interpolated ones; an interpolated dimension of
// extent 1; frames smaller than a tile; the default tiles
// (codec/predictor_choice.cc: 256; 32^2 and 64^2; 16^3 over the last three
// and 64^2 over the last two dimensions).
const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {{1000}, {256}},
      {{4096}, {256}},
      {{777}, {64}},
      {{5}, {32768}},
      {{1}, {2}},
      {{301}, {2}},
      {{96, 80}, {32, 32}},
      {{97, 83}, {32, 32}},
      {{64, 64}, {64, 64}},
      {{130, 200}, {64, 64}},
      {{61, 45}, {16, 16}},
      {{9, 7}, {16, 16}},
      {{40, 33}, {1, 8}},
      {{30, 17}, {2, 1}},
      {{33, 1}, {32, 32}},
      {{17, 33, 31}, {1, 16, 16}},
      {{18, 19, 21}, {16, 16, 16}},
      {{33, 40, 17}, {16, 16, 16}},
      {{12, 35, 10}, {4, 4, 1}},
      {{40, 3, 40}, {16, 1, 16}},
      {{7, 70, 65}, {1, 64, 64}},
      {{5, 9, 10, 11}, {1, 4, 4, 4}},
      {{6, 7, 8, 9}, {2, 2, 2, 2}},
      {{3, 10, 1, 20}, {8, 8, 8, 8}},
      {{2, 17, 18, 19}, {1, 16, 16, 16}},
      {{3, 4, 70, 65}, {1, 1, 64, 64}},
  };
  return cases;
}

// Calls fn(frame) for every case x dtype x order x variant (a subset of the
// variants per order, so each case meets each variant at least once); fn
// says whether the frame matched. Stops after a few frames that did not, so
// that a systematic bug does not bury the first message.
void ForEachFrame(const std::function<bool(const Frame&)>& fn) {
  constexpr int kMaxFailedFrames = 6;
  int failed = 0;
  uint32_t seed = 1;
  for (const Case& c : Cases()) {
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
      for (InterpOrder order : {InterpOrder::kCubic, InterpOrder::kLinear}) {
        std::vector<Variant> variants = {Variant::kSpecials, Variant::kFill};
        if (order == InterpOrder::kCubic) {
          variants.insert(variants.end(), {Variant::kSmooth, Variant::kSmallRadius,
                                           Variant::kPoisoned, Variant::kExact});
        } else {
          variants.insert(variants.end(), {Variant::kNoisy, Variant::kAllFill, Variant::kTies});
        }
        for (Variant v : variants) {
          if (!fn(MakeFrame(dtype, c, order, v, seed++)) && ++failed == kMaxFailedFrames) {
            ADD_FAILURE() << "stopping after " << failed << " frames that differ";
            return;
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Results, and how they are compared.

struct Encoded {
  std::vector<uint16_t> symbols;
  std::vector<uint32_t> verbatim_index;
  std::vector<uint32_t> outlier_index;
  std::vector<int32_t> outlier_residual;
};

struct Decoded {
  std::vector<uint8_t> bytes;
  uint32_t error = 0;
};

std::vector<uint32_t> MaskToIndices(const std::vector<uint32_t>& mask, uint64_t n) {
  std::vector<uint32_t> out;
  for (uint64_t i = 0; i < n; ++i) {
    if ((mask[i / 32] >> (i % 32)) & 1) out.push_back(static_cast<uint32_t>(i));
  }
  return out;
}

// The host's view of the frame's layout, from gpu/interp_tile.h itself: the
// key tables and each tile's first position (lanes: threads per tile).
struct HostTables {
  Geometry g{};
  std::vector<KeyHeader> headers;
  std::vector<uint32_t> entries;
  std::vector<uint32_t> far;  // FarEntry beside far-face entries
  std::vector<uint64_t> boxes;
  std::vector<uint32_t> tile_start;
};

// The threads of one tile in the emulation: real threads with a barrier.
struct LaneGroup {
  explicit LaneGroup(uint32_t lanes) : barrier(lanes), values(lanes) {}
  std::barrier<> barrier;
  std::vector<uint32_t> values;
};

struct HostExec {
  uint32_t lane = 0;
  uint32_t threads = 1;
  LaneGroup* group = nullptr;  // null: one thread

  uint32_t Lane() const { return lane; }
  uint32_t Threads() const { return threads; }
  void Sync() const {
    if (group != nullptr) group->barrier.arrive_and_wait();
  }
  uint32_t ExclusiveSum(uint32_t v, uint32_t* total) const {
    if (group == nullptr) {
      *total = v;
      return 0;
    }
    group->values[lane] = v;
    Sync();
    uint32_t before = 0, sum = 0;
    for (uint32_t u = 0; u < threads; ++u) {
      before += u < lane ? group->values[u] : 0;
      sum += group->values[u];
    }
    Sync();
    *total = sum;
    return before;
  }
  void AtomicOr(uint32_t* p, uint32_t bits) const { std::atomic_ref<uint32_t>(*p).fetch_or(bits); }
  void AtomicAdd(uint32_t* p, uint32_t v) const { std::atomic_ref<uint32_t>(*p).fetch_add(v); }
};

// Runs fn(exec, t) for every tile, by `lanes` threads sharing each tile.
void RunTiles(uint32_t lanes, uint64_t num_tiles,
              const std::function<void(HostExec&, uint64_t)>& fn) {
  if (lanes <= 1) {
    HostExec one;
    for (uint64_t t = 0; t < num_tiles; ++t) fn(one, t);
    return;
  }
  LaneGroup group(lanes);
  std::vector<std::thread> threads;
  for (uint32_t lane = 0; lane < lanes; ++lane) {
    threads.emplace_back([&, lane] {
      HostExec ex{lane, lanes, &group};
      for (uint64_t t = 0; t < num_tiles; ++t) fn(ex, t);
    });
  }
  for (std::thread& th : threads) th.join();
}

HostTables MakeTables(const InterpParams& p, const uint8_t* fill, uint32_t lanes) {
  HostTables ht;
  absl::StatusOr<Geometry> g = MakeInterpGeometry(p, fill != nullptr, SIZE_MAX);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return ht;
  ht.g = *g;
  ht.g.tile_threads = lanes;
  ht.g.tiles_per_block = 1;
  ht.headers.resize(interp::kMaxKeys);
  uint64_t box_entries = 0;
  ht.entries.assign(interp::ComputeHeaders(ht.g, ht.headers.data(), &box_entries), 0xFFFFFFFFu);
  ht.boxes.assign(box_entries, 0);
  for (uint32_t key = 0; key < interp::kMaxKeys; ++key) {
    const KeyHeader& h = ht.headers[key];
    if (!h.exists) continue;
    // The box table against coordinates counted here in C order: element
    // and box offsets from the strides, own below the own extents, corners
    // where every coordinate is 0 or E.
    // The own-row table against the box table's own elements whose last
    // coordinate is 0, met in the same C order.
    for (uint32_t r = 0; r < h.own_rows; ++r) {
      ht.boxes.at(h.rows_begin + r) = interp::OwnRowEntry(ht.g, h, r);
    }
    uint32_t row = 0;
    uint32_t c[interp::kIDims] = {0, 0, 0, 0};
    for (uint32_t j = 0; j < h.box_count; ++j) {
      const uint64_t entry = interp::BoxEntry(ht.g, h, j);
      ht.boxes.at(h.boxes_begin + j) = entry;
      const interp::BoxSlot b = interp::ReadBoxEntry(entry);
      if (b.own && c[ht.g.k - 1] == 0 && row++ < h.own_rows) {
        const uint64_t r = ht.boxes.at(h.rows_begin + row - 1);
        EXPECT_EQ(static_cast<uint32_t>(r), b.element) << "key " << key << " row " << row - 1;
        EXPECT_EQ(r >> 32, b.offset) << "key " << key << " row " << row - 1;
      }
      uint64_t element = 0, offset = 0;
      bool own = true, corner = true;
      uint32_t mask = 0;
      for (uint32_t e = 0; e < ht.g.k; ++e) {
        element += c[e] * ht.g.stride[ht.g.idim[e]];
        offset += c[e] * ht.g.bstride[e];
        own = own && c[e] < h.own[e];
        corner = corner && (c[e] == 0 || c[e] == ht.g.E);
        mask |= (c[e] != 0 ? 1u : 0u) << e;
      }
      EXPECT_EQ(b.element, element) << "key " << key << " entry " << j;
      EXPECT_EQ(b.offset, offset) << "key " << key << " entry " << j;
      EXPECT_EQ(b.own, own) << "key " << key << " entry " << j;
      EXPECT_EQ(b.corner, corner) << "key " << key << " entry " << j;
      if (corner) {
        EXPECT_EQ(b.corner_mask, mask) << "key " << key << " entry " << j;
      }
      for (uint32_t e = ht.g.k; e-- > 0;) {  // the next coordinates, C order
        if (++c[e] < h.box[e]) break;
        c[e] = 0;
      }
    }
    EXPECT_EQ(row, h.own_rows) << "key " << key;
  }
  for (uint32_t key = 0; key < interp::kMaxKeys; ++key) {
    const KeyHeader& h = ht.headers[key];
    if (!h.exists) continue;
    for (uint32_t pass = 0; pass < ht.g.num_passes; ++pass) {
      const uint32_t count = h.pass_entry[pass + 1] - h.pass_entry[pass];
      for (uint32_t j = 0; j < count; ++j) {
        uint32_t slot, value;
        interp::TableEntry(ht.g, h, pass, j, &slot, &value);
        uint32_t& e = ht.entries.at(h.entries_begin + h.pass_entry[pass] + slot);
        EXPECT_EQ(e, 0xFFFFFFFFu) << "key " << key << " pass " << pass << " entry " << j
                                  << " lands on slot " << slot << ", taken";
        e = value;
      }
    }
  }
  // FarEntry of each far-face entry: the rank it gives must be where the
  // element sits among the own entries of the same pass of the neighbour
  // along w, searched here by box offset. That neighbour, not the last
  // along w, has this tile's key.
  ht.far.assign(ht.entries.size(), 0);
  for (uint32_t key = 0; key < interp::kMaxKeys; ++key) {
    const KeyHeader& h = ht.headers[key];
    if (!h.exists) continue;
    for (uint32_t pass = 0; pass < ht.g.num_passes; ++pass) {
      const uint32_t* list = &ht.entries[h.entries_begin + h.pass_entry[pass]];
      const uint32_t count = h.pass_entry[pass + 1] - h.pass_entry[pass];
      for (uint32_t j = h.pass_own[pass]; j < count; ++j) {
        const uint32_t f = interp::FarEntry(ht.g, h, pass, list[j] & 0xFFFFu);
        ht.far[h.entries_begin + h.pass_entry[pass] + j] = f;
        uint32_t c[interp::kIDims];
        interp::BoxCoords(ht.g, list[j] & 0xFFFFu, c);
        uint32_t w = 0;
        for (uint32_t e = 0; e < ht.g.k; ++e) {
          if (c[e] == ht.g.E) {
            w |= 1u << e;
            c[e] = 0;
          }
        }
        EXPECT_EQ(f & interp::kFarMask, w) << "key " << key << " pass " << pass << " entry " << j;
        EXPECT_EQ(key & w, 0u) << "a far face where the tile is the last";
        const uint32_t there = interp::BoxOffset(ht.g, c);
        const uint32_t rank = f >> interp::kFarRankShift;
        EXPECT_LT(rank, h.pass_own[pass]) << "key " << key << " pass " << pass << " entry " << j;
        if (rank >= h.pass_own[pass]) continue;
        EXPECT_EQ(list[rank] & 0xFFFFu, there)
            << "key " << key << " pass " << pass << " entry " << j << ": rank " << rank;
      }
    }
  }
  const uint64_t tiles = ht.g.num_tiles;
  ht.tile_start.resize(tiles + 1);
  if (fill == nullptr) {
    for (uint64_t t = 0; t <= tiles; ++t) {
      ht.tile_start[t] = static_cast<uint32_t>(interp::TileStartWithoutFill(ht.g, t));
    }
  } else {
    std::vector<uint32_t> counts(tiles + 1, 0);
    RunTiles(lanes, tiles, [&](HostExec& ex, uint64_t t) {
      interp::CountTile(ex, ht.g, ht.headers.data(), t, fill, counts.data());
    });
    uint32_t total = 0;
    for (uint64_t t = 0; t <= tiles; ++t) {
      ht.tile_start[t] = total;
      total += counts[t];
    }
  }
  return ht;
}

// Where symbol position `pos` is: its tile, rank, element and coordinates.
std::string DescribePosition(const Frame& f, uint64_t pos) {
  const HostTables ht = MakeTables(f.p, f.fill(), 1);
  const Geometry& g = ht.g;
  if (ht.tile_start.empty()) return "?";
  const uint64_t t =
      std::upper_bound(ht.tile_start.begin(), ht.tile_start.end(), pos) - ht.tile_start.begin() - 1;
  if (t >= g.num_tiles) return "beyond S = " + std::to_string(ht.tile_start.back());
  const interp::TileView v = interp::MakeTile(g, t);
  const KeyHeader& h = ht.headers[v.key];
  uint64_t at = ht.tile_start[t];
  std::ostringstream out;
  out << "tile " << t << " (key " << v.key << ", anchor " << v.anchor << " "
      << CoordsString(v.anchor, f.p.shape) << ")";
  if (at == pos) return out.str() + ", rank 0 (the anchor)";
  ++at;
  for (uint32_t p = 0; p < g.num_passes; ++p) {
    for (uint32_t j = 0; j < h.pass_own[p]; ++j) {
      const uint32_t o = ht.entries[h.entries_begin + h.pass_entry[p] + j] & 0xFFFFu;
      uint32_t c[interp::kIDims];
      interp::BoxCoords(g, o, c);
      const uint64_t i = interp::ElementOf(g, v, c);
      if (f.fill() != nullptr && f.fill()[i]) continue;
      if (at++ == pos) {
        const uint32_t level = p / g.k;
        out << ", rank " << h.pass_rank[p] + j << " (pass " << p << ": h " << (g.E >> (level + 1))
            << ", dimension " << g.idim[p % g.k] - (interp::kIDims - f.p.shape.size())
            << "), element " << i << " " << CoordsString(i, f.p.shape);
        return out.str();
      }
    }
  }
  return out.str() + ", position not found";
}

template <typename T>
std::string ElementValue(const Frame& f, uint64_t i) {
  T x;
  std::memcpy(&x, f.bytes.data() + i * sizeof(T), sizeof(T));
  return ValueString(x) + (f.fill() && f.fill()[i] ? " (fill)" : "");
}

std::string InputAt(const Frame& f, uint64_t i) {
  return f.p.dtype == DType::kFloat32 ? ElementValue<float>(f, i) : ElementValue<double>(f, i);
}

template <typename V>
std::string FirstDifference(const std::vector<V>& want, const std::vector<V>& got, uint64_t* at) {
  const size_t common = std::min(want.size(), got.size());
  size_t i = 0;
  while (i < common && want[i] == got[i]) ++i;
  *at = i;
  std::ostringstream out;
  if (i == common) {
    out << "sizes differ: CPU " << want.size() << ", got " << got.size();
  } else {
    out << "first difference at [" << i << "] of " << want.size() << ": CPU "
        << static_cast<int64_t>(want[i]) << ", got " << static_cast<int64_t>(got[i]);
  }
  return out.str();
}

bool ExpectSameEncoding(const Frame& f, const InterpEncoded& want, const Encoded& got,
                        const char* who) {
  SCOPED_TRACE(std::string(who) + ": " + f.label);
  uint64_t at;
  const bool same = got.symbols == want.symbols && got.verbatim_index == want.verbatim_index &&
                    got.outlier_index == want.outlier_index &&
                    got.outlier_residual == want.outlier_residual;
  if (got.symbols != want.symbols) {
    const std::string what = FirstDifference(want.symbols, got.symbols, &at);
    ADD_FAILURE() << "symbols: " << what << "; position " << at << " is "
                  << DescribePosition(f, at);
  }
  if (got.verbatim_index != want.verbatim_index) {
    const std::string what = FirstDifference(want.verbatim_index, got.verbatim_index, &at);
    std::ostringstream more;
    for (const auto* list : {&want.verbatim_index, &got.verbatim_index}) {
      if (at < list->size()) {
        const uint32_t i = (*list)[at];
        more << "; element " << i << " " << CoordsString(i, f.p.shape) << " = " << InputAt(f, i);
      }
    }
    ADD_FAILURE() << "verbatim elements: " << what << more.str();
  }
  if (got.outlier_index != want.outlier_index) {
    ADD_FAILURE() << "outlier indices: "
                  << FirstDifference(want.outlier_index, got.outlier_index, &at);
  }
  if (got.outlier_residual != want.outlier_residual) {
    const std::string what = FirstDifference(want.outlier_residual, got.outlier_residual, &at);
    ADD_FAILURE() << "outlier residuals: " << what << " (element "
                  << (at < want.outlier_index.size() ? want.outlier_index[at] : 0) << ")";
  }
  return same;
}

template <typename T>
bool ExpectSameValuesT(const Frame& f, const std::vector<uint8_t>& want,
                       const std::vector<uint8_t>& got, const char* who) {
  if (want.size() != got.size()) {
    ADD_FAILURE() << who << ": " << f.label << ": " << got.size() << " bytes of values, not "
                  << want.size();
    return false;
  }
  const uint64_t n = want.size() / sizeof(T);
  uint64_t bad = 0, first = n;
  for (uint64_t i = 0; i < n; ++i) {
    if (std::memcmp(want.data() + i * sizeof(T), got.data() + i * sizeof(T), sizeof(T)) != 0) {
      if (bad++ == 0) first = i;
    }
  }
  if (bad == 0) return true;
  T a, b;
  std::memcpy(&a, want.data() + first * sizeof(T), sizeof(T));
  std::memcpy(&b, got.data() + first * sizeof(T), sizeof(T));
  ADD_FAILURE() << who << ": " << f.label << ": " << bad << " of " << n
                << " working values differ; first at element " << first << " "
                << CoordsString(first, f.p.shape) << ": CPU " << ValueString(a) << ", got "
                << ValueString(b) << "; input there " << InputAt(f, first);
  return false;
}

bool ExpectSameValues(const Frame& f, const std::vector<uint8_t>& want,
                      const std::vector<uint8_t>& got, const char* who) {
  return f.p.dtype == DType::kFloat32 ? ExpectSameValuesT<float>(f, want, got, who)
                                      : ExpectSameValuesT<double>(f, want, got, who);
}

// ---------------------------------------------------------------------------
// The CPU module.

InterpEncoded CpuEncode(const Frame& f) {
  InterpEncoded e;
  const absl::Status s = InterpEncode(f.p, f.bytes.data(), f.fill(), &e);
  EXPECT_TRUE(s.ok()) << f.label << ": " << s;
  return e;
}

std::vector<uint8_t> CpuDecode(const Frame& f, const InterpEncoded& e) {
  std::vector<uint8_t> out(f.bytes.size());
  const absl::Status s =
      InterpDecode(f.p, e.symbols, e.outlier_index, e.outlier_residual, f.fill(), out.data());
  EXPECT_TRUE(s.ok()) << f.label << ": " << s;
  return out;
}

// ---------------------------------------------------------------------------
// The emulation: the launchers' steps, in their order, on the host.

template <typename T>
Encoded EmulateEncodeT(const Frame& f, uint32_t lanes) {
  const T* x = reinterpret_cast<const T*>(f.bytes.data());
  const uint8_t* fill = f.fill();
  const HostTables ht = MakeTables(f.p, fill, lanes);
  const Geometry& g = ht.g;
  const uint64_t tiles = g.num_tiles;
  if (ht.tile_start.empty()) return {};
  std::vector<uint32_t> mask((g.n + 31) / 32, 0);
  std::vector<int32_t> q(tiles), placeholder(g.num_anchor_blocks), residual(tiles);
  std::vector<uint8_t> quantized(tiles);
  std::vector<T> anchor_w(tiles);
  std::vector<uint16_t> anchor_sym(tiles);
  std::vector<uint32_t> flag(tiles + 1, 0), at(tiles + 1, 0);
  HostExec one;
  for (uint64_t t = 0; t < tiles; ++t) {
    interp::AnchorQuantize<T>(one, g, interp::BoundOf(g), t, x, fill, q.data(), quantized.data(),
                              mask.data());
  }
  for (uint64_t b = 0; b < g.num_anchor_blocks; ++b) {
    interp::AnchorPlaceholder(g, b, q.data(), quantized.data(), placeholder.data());
  }
  for (uint64_t t = 0; t < tiles; ++t) {
    interp::AnchorResidual<T>(g, interp::BoundOf(g), t, q.data(), quantized.data(),
                              placeholder.data(), anchor_w.data(),
                              anchor_sym.data(), flag.data(), residual.data());
  }
  for (uint64_t t = 0; t < tiles; ++t) at[t + 1] = at[t] + flag[t];
  Encoded out;
  out.outlier_index.resize(at[tiles]);
  out.outlier_residual.resize(at[tiles]);
  for (uint64_t t = 0; t < tiles; ++t) {
    interp::AnchorOutlier(g, t, flag.data(), at.data(), residual.data(), out.outlier_index.data(),
                          out.outlier_residual.data());
  }
  const uint64_t S = ht.tile_start[tiles];
  // Room for n; anything written beyond S is a layout bug, caught below.
  std::vector<uint16_t> symbols(std::max<uint64_t>(S, g.n) + 16, 0xABCD);
  const interp::EncodeTileArgs<T> args{interp::BoundOf(g),    x,
                                       fill,                  ht.tile_start.data(),
                                       anchor_w.data(),       anchor_sym.data(),
                                       symbols.data(),        mask.data()};
  std::vector<T> box(g.box_volume);
  std::vector<uint8_t> fbox(g.box_volume), keep(g.own_max);
  std::vector<uint16_t> srank(g.own_max);
  const interp::EncodeTileSmem<T> sm{box.data(), fbox.data(), srank.data(), keep.data()};
  RunTiles(lanes, tiles, [&](HostExec& ex, uint64_t t) {
    if (fill != nullptr) {
      interp::EncodeTile<T, true>(ex, g, ht.headers.data(), ht.entries.data(), ht.boxes.data(), t,
                                  args, sm);
    } else {
      interp::EncodeTile<T, false>(ex, g, ht.headers.data(), ht.entries.data(), ht.boxes.data(), t,
                                   args, sm);
    }
  });
  for (uint64_t i = S; i < symbols.size(); ++i) {
    if (symbols[i] != 0xABCD) {
      ADD_FAILURE() << f.label << ": a symbol written at position " << i << " beyond S = " << S;
      break;
    }
  }
  symbols.resize(S);
  out.symbols = std::move(symbols);
  out.verbatim_index = MaskToIndices(mask, g.n);
  return out;
}

Encoded EmulateEncode(const Frame& f, uint32_t lanes) {
  return f.p.dtype == DType::kFloat32 ? EmulateEncodeT<float>(f, lanes)
                                      : EmulateEncodeT<double>(f, lanes);
}

// The decoder without a fill mask: straight from symbol order, as the GPU
// decodes such frames.
// Runs fn(exec, t) for every tile of `span` (every tile when null).
void RunSpan(uint32_t lanes, const Geometry& g, const interp::TileSpan* span,
             const std::function<void(HostExec&, uint64_t)>& fn) {
  const interp::TileSpan s = span != nullptr ? *span : interp::AllTiles(g);
  RunTiles(lanes, s.total,
           [&](HostExec& ex, uint64_t i) { fn(ex, s.Tile(g, static_cast<uint32_t>(i))); });
}

// Working values before the tiles write theirs: all bits set (a NaN no tile
// writes), so that a test sees which elements a span of tiles left alone.
template <typename T>
std::vector<T> Unwritten(uint64_t n) {
  std::vector<T> w(n);
  std::memset(w.data(), 0xFF, n * sizeof(T));
  return w;
}

template <typename T>
Decoded EmulateDecodeDirectT(const HostTables& ht, const InterpEncoded& e, uint32_t lanes,
                             const interp::TileSpan* span) {
  const Geometry& g = ht.g;
  const uint64_t tiles = g.num_tiles;
  Decoded out;
  uint32_t error = 0, zeros = 0;
  const interp::DirectArgs args{e.symbols.data(), e.symbols.size(), ht.tile_start.data(), &error,
                                &zeros,          g.step};
  std::vector<int32_t> q(tiles);
  std::vector<T> anchor_w(tiles);
  HostExec one;
  for (uint64_t t = 0; t < tiles; ++t) interp::AnchorLoadDirect(one, g, t, args, q.data());
  for (uint64_t j = 0; j < e.outlier_index.size(); ++j) {
    interp::AnchorApplyOutlierDirect(one, g, j, e.outlier_index.data(),
                                     e.outlier_residual.data(), args, q.data());
  }
  if (ht.tile_start[tiles] != e.symbols.size()) error |= interp::kErrSymbolCount;
  if (zeros != e.outlier_index.size()) error |= interp::kErrOutlierCount;
  for (int d = interp::kIDims - 1; d >= 0; --d) {
    for (uint64_t t = 0; t < tiles; ++t) interp::AnchorPrefix(g, d, t, q.data());
  }
  for (uint64_t t = 0; t < tiles; ++t) interp::AnchorDequantize<T>(g.step, t, q.data(), anchor_w.data());
  std::vector<T> w = Unwritten<T>(g.n);
  std::vector<T> box(g.box_volume);
  interp::Neighbors nb;
  interp::PassTable passes;
  const interp::DirectSmem<T> sm{box.data(), &nb, &passes};
  RunSpan(lanes, g, span, [&](HostExec& ex, uint64_t t) {
    interp::DecodeTileDirect<T>(ex, g, ht.headers.data(), ht.entries.data(), ht.far.data(),
                                ht.boxes.data(), t,
                                args, anchor_w.data(), w.data(), sm);
  });
  out.bytes.resize(g.n * sizeof(T));
  std::memcpy(out.bytes.data(), w.data(), out.bytes.size());
  out.error = error;
  return out;
}

template <typename T>
Decoded EmulateDecodeT(const Frame& f, const InterpEncoded& e, uint32_t lanes,
                       const interp::TileSpan* span) {
  const uint8_t* fill = f.fill();
  const HostTables ht = MakeTables(f.p, fill, lanes);
  const Geometry& g = ht.g;
  const uint64_t tiles = g.num_tiles;
  Decoded out;
  if (ht.tile_start.empty()) return out;
  if (fill == nullptr) return EmulateDecodeDirectT<T>(ht, e, lanes, span);
  std::vector<uint16_t> sym_elem(g.n, 0);
  uint32_t error = 0, zeros = 0;
  const interp::ScatterArgs args{e.symbols.data(), e.symbols.size(), fill,  ht.tile_start.data(),
                                 sym_elem.data(),  &error,           &zeros};
  std::vector<uint16_t> sbox(g.box_volume);
  std::vector<uint8_t> fbox(g.box_volume);
  const interp::ScatterSmem ssm{sbox.data(), fbox.data()};
  RunTiles(lanes, tiles, [&](HostExec& ex, uint64_t t) {
    if (fill != nullptr) {
      interp::ScatterTile<true>(ex, g, ht.headers.data(), ht.entries.data(), t, args, ssm);
    } else {
      interp::ScatterTile<false>(ex, g, ht.headers.data(), ht.entries.data(), t, args, ssm);
    }
  });
  if (ht.tile_start[tiles] != e.symbols.size()) error |= interp::kErrSymbolCount;
  if (zeros != e.outlier_index.size()) error |= interp::kErrOutlierCount;
  std::vector<int32_t> q(tiles);
  std::vector<T> anchor_w(tiles);
  for (uint64_t t = 0; t < tiles; ++t) interp::AnchorLoad(g, t, sym_elem.data(), q.data());
  HostExec one;
  for (uint64_t j = 0; j < e.outlier_index.size(); ++j) {
    interp::AnchorApplyOutlier(one, g, j, e.outlier_index.data(), e.outlier_residual.data(),
                               sym_elem.data(), q.data(), &error);
  }
  for (int d = interp::kIDims - 1; d >= 0; --d) {
    for (uint64_t t = 0; t < tiles; ++t) interp::AnchorPrefix(g, d, t, q.data());
  }
  for (uint64_t t = 0; t < tiles; ++t) interp::AnchorDequantize<T>(g.step, t, q.data(), anchor_w.data());
  std::vector<T> w = Unwritten<T>(g.n);
  std::vector<T> box(g.box_volume);
  RunSpan(lanes, g, span, [&](HostExec& ex, uint64_t t) {
    interp::DecodeTile<T>(ex, g, ht.headers.data(), ht.entries.data(), ht.boxes.data(), t,
                          sym_elem.data(), anchor_w.data(), w.data(), box.data());
  });
  out.bytes.resize(g.n * sizeof(T));
  std::memcpy(out.bytes.data(), w.data(), out.bytes.size());
  out.error = error;
  return out;
}

// `span`: only its tiles decode (null: every tile).
Decoded EmulateDecode(const Frame& f, const InterpEncoded& e, uint32_t lanes,
                      const interp::TileSpan* span = nullptr) {
  return f.p.dtype == DType::kFloat32 ? EmulateDecodeT<float>(f, e, lanes, span)
                                      : EmulateDecodeT<double>(f, e, lanes, span);
}

// ---------------------------------------------------------------------------
// The device.

template <typename V>
class DeviceArray {
 public:
  explicit DeviceArray(uint64_t count) {
    if (cudaMalloc(&p_, std::max<uint64_t>(count, 1) * sizeof(V)) != cudaSuccess) p_ = nullptr;
  }
  ~DeviceArray() {
    if (p_ != nullptr) cudaFree(p_);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  bool ok() const { return p_ != nullptr; }
  V* get() const { return static_cast<V*>(p_); }
  void Upload(const V* host, uint64_t count) {
    EXPECT_EQ(cudaMemcpy(p_, host, count * sizeof(V), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<V> Download(uint64_t count) const {
    std::vector<V> out(count);
    EXPECT_EQ(cudaMemcpy(out.data(), p_, count * sizeof(V), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

 private:
  void* p_ = nullptr;
};

std::string CudaLastError() {
  const cudaError_t e = cudaDeviceSynchronize();
  const cudaError_t l = cudaGetLastError();
  if (e == cudaSuccess && l == cudaSuccess) return "";
  return std::string("CUDA: ") + cudaGetErrorString(e != cudaSuccess ? e : l);
}

// Runs the encoder on the device; the symbols beyond S must stay untouched.
Encoded GpuEncode(const Frame& f) {
  Encoded out;
  absl::StatusOr<InterpPlan> plan = PlanInterp(f.p, f.fill() != nullptr);
  EXPECT_TRUE(plan.ok()) << f.label << ": " << plan.status();
  if (!plan.ok()) return out;
  const uint64_t n = f.n();
  const uint64_t tiles = plan->geo.num_tiles;
  DeviceArray<uint8_t> input(f.bytes.size()), mask(n), scratch(plan->encode_scratch);
  DeviceArray<uint16_t> symbols(n + 64);
  DeviceArray<uint32_t> verbatim((n + 31) / 32), outlier_index(tiles), counts(2);
  DeviceArray<int32_t> outlier_residual(tiles);
  input.Upload(f.bytes.data(), f.bytes.size());
  if (f.fill() != nullptr) mask.Upload(f.fill(), n);
  EXPECT_EQ(cudaMemset(symbols.get(), 0xAB, (n + 64) * sizeof(uint16_t)), cudaSuccess);
  InterpEncodeOutputs o;
  o.symbols = symbols.get();
  o.verbatim_mask = verbatim.get();
  o.outlier_index = outlier_index.get();
  o.outlier_residual = outlier_residual.get();
  o.counts = counts.get();
  const absl::Status s = LaunchInterpEncode(
      *plan, input.get(), f.fill() != nullptr ? mask.get() : nullptr, scratch.get(), o, nullptr);
  EXPECT_TRUE(s.ok()) << f.label << ": " << s;
  const std::string cuda = CudaLastError();
  EXPECT_EQ(cuda, "") << f.label;
  if (!s.ok() || !cuda.empty()) return out;
  const std::vector<uint32_t> c = counts.Download(2);
  EXPECT_LE(c[0], n) << f.label << ": S beyond n";
  EXPECT_LE(c[1], tiles) << f.label << ": more outliers than anchors";
  std::vector<uint16_t> all = symbols.Download(n + 64);
  for (uint64_t i = std::min<uint64_t>(c[0], n); i < all.size(); ++i) {
    if (all[i] != 0xABAB) {
      ADD_FAILURE() << f.label << ": GPU wrote symbol position " << i << " beyond S = " << c[0];
      break;
    }
  }
  all.resize(std::min<uint64_t>(c[0], n));
  out.symbols = std::move(all);
  out.verbatim_index = MaskToIndices(verbatim.Download((n + 31) / 32), n);
  out.outlier_index = outlier_index.Download(std::min<uint64_t>(c[1], tiles));
  out.outlier_residual = outlier_residual.Download(std::min<uint64_t>(c[1], tiles));
  return out;
}

Decoded GpuDecode(const Frame& f, const InterpEncoded& e) {
  Decoded out;
  absl::StatusOr<InterpPlan> plan = PlanInterp(f.p, f.fill() != nullptr);
  EXPECT_TRUE(plan.ok()) << f.label << ": " << plan.status();
  if (!plan.ok()) return out;
  const uint64_t n = f.n();
  DeviceArray<uint8_t> mask(n), scratch(plan->decode_scratch), output(f.bytes.size());
  DeviceArray<uint16_t> symbols(e.symbols.size());
  DeviceArray<uint32_t> outlier_index(e.outlier_index.size()), error(1);
  DeviceArray<int32_t> outlier_residual(e.outlier_residual.size());
  symbols.Upload(e.symbols.data(), e.symbols.size());
  outlier_index.Upload(e.outlier_index.data(), e.outlier_index.size());
  outlier_residual.Upload(e.outlier_residual.data(), e.outlier_residual.size());
  if (f.fill() != nullptr) mask.Upload(f.fill(), n);
  InterpDecodeInputs in;
  in.symbols = symbols.get();
  in.num_symbols = e.symbols.size();
  in.outlier_index = outlier_index.get();
  in.outlier_residual = outlier_residual.get();
  in.num_outliers = e.outlier_index.size();
  in.fill_mask = f.fill() != nullptr ? mask.get() : nullptr;
  const absl::Status s =
      LaunchInterpDecode(*plan, in, output.get(), scratch.get(), error.get(), nullptr);
  EXPECT_TRUE(s.ok()) << f.label << ": " << s;
  const std::string cuda = CudaLastError();
  EXPECT_EQ(cuda, "") << f.label;
  if (!s.ok() || !cuda.empty()) return out;
  out.bytes = output.Download(f.bytes.size());
  out.error = error.Download(1)[0];
  return out;
}

// ---------------------------------------------------------------------------
// Emulation tests (no GPU needed).

TEST(InterpEmulation, FastDivIsExact) {
  for (uint32_t d = 1; d <= 65536; d = d < 300 ? d + 1 : d * 3 / 2 + 1) {
    interp::FastDiv f;
    f.Init(d);
    for (uint32_t x = 0; x < 65536; ++x) {
      if (f.Div(x) != x / d) {
        FAIL() << x << " / " << d << ": " << f.Div(x);
      }
    }
  }
  interp::FastDiv f;
  f.Init(65536);
  EXPECT_EQ(f.Div(65535), 0u);
}

TEST(InterpEmulation, TablesCoverEveryElementOnce) {
  // Every box element but the corner anchors appears in exactly one pass of
  // its key's table, own ranks are 1 .. own_volume - 1, and the closed-form
  // tile starts add up to n.
  for (const Case& c : Cases()) {
    SCOPED_TRACE(ShapeToString(c.shape));
    InterpParams p;
    p.shape = c.shape;
    for (size_t d = 0; d < c.tile.size(); ++d) p.tile[d] = c.tile[d];
    p.abs_bound = 1e-3;
    p.quant_step = 2e-3;
    const HostTables ht = MakeTables(p, nullptr, 1);
    const Geometry& g = ht.g;
    EXPECT_EQ(ht.tile_start.back(), g.n);
    for (uint32_t key = 0; key < interp::kMaxKeys; ++key) {
      const KeyHeader& h = ht.headers[key];
      if (!h.exists) continue;
      std::vector<int> seen(g.box_volume, 0);
      uint32_t corners = 1;
      for (uint32_t e = 0; e < g.k; ++e) corners *= h.box[e] > h.own[e] ? 2 : 1;
      for (uint32_t pass = 0; pass < g.num_passes; ++pass) {
        EXPECT_EQ(h.pass_rank[pass] + h.pass_own[pass],
                  pass + 1 < g.num_passes ? h.pass_rank[pass + 1] : h.own_volume);
        for (uint32_t j = h.pass_entry[pass]; j < h.pass_entry[pass + 1]; ++j) {
          const uint32_t o = ht.entries[h.entries_begin + j] & 0xFFFFu;
          ASSERT_LT(o, g.box_volume);
          ++seen[o];
        }
      }
      uint32_t covered = 0;
      for (int s : seen) {
        EXPECT_LE(s, 1);
        covered += s;
      }
      EXPECT_EQ(covered + corners, h.box_count) << "key " << key;
    }
  }
}

void ExpectEmulationMatchesCpu(uint32_t lanes) {
  ForEachFrame([&](const Frame& f) {
    const InterpEncoded want = CpuEncode(f);
    bool ok = ExpectSameEncoding(f, want, EmulateEncode(f, lanes), "emulated encoder");
    const std::vector<uint8_t> values = CpuDecode(f, want);
    const Decoded got = EmulateDecode(f, want, lanes);
    EXPECT_EQ(got.error, 0u) << f.label;
    ok = ExpectSameValues(f, values, got.bytes, "emulated decoder") && got.error == 0 && ok;
    return ok;
  });
}

TEST(InterpEmulation, OneThreadPerTileMatchesCpu) { ExpectEmulationMatchesCpu(1); }

// A region's tiles (TilesMeeting) give the full decode's values on every
// element of the region's box, and leave the elements of tiles beyond it
// alone.
TEST(InterpEmulation, TheTilesARegionMeetsGiveItsValues) {
  std::mt19937_64 rng(23);
  ForEachFrame([&](const Frame& f) {
    const InterpEncoded want = CpuEncode(f);
    const std::vector<uint8_t> values = CpuDecode(f, want);
    const HostTables ht = MakeTables(f.p, f.fill(), 1);
    const Geometry& g = ht.g;
    if (ht.tile_start.empty()) {
      ADD_FAILURE() << f.label << ": no tables";
      return false;
    }
    // A random box, right-aligned into the 4-D frame.
    const int pad = interp::kIDims - static_cast<int>(f.p.shape.size());
    uint64_t lo[interp::kIDims], hi[interp::kIDims];
    for (int d = 0; d < interp::kIDims; ++d) {
      const uint64_t extent = g.dims[d];
      lo[d] = d < pad ? 0 : rng() % extent;
      hi[d] = d < pad ? 1 : lo[d] + 1 + rng() % (extent - lo[d]);
    }
    const interp::TileSpan span = interp::TilesMeeting(g, lo, hi);
    const Decoded got = EmulateDecode(f, want, 1, &span);
    EXPECT_EQ(got.error, 0u) << f.label;
    const size_t elem = DTypeSize(f.p.dtype);
    // The box's elements from the span's decode, the rest from the CPU's.
    std::vector<uint8_t> merged = values;
    uint64_t in_box = 0, in_span = 0, left_alone = 0;
    for (uint64_t i = 0; i < g.n; ++i) {
      bool inside = true, spanned = true;
      for (int d = 0; d < interp::kIDims; ++d) {
        const uint64_t c = i / g.stride[d] % g.dims[d];
        inside &= c >= lo[d] && c < hi[d];
        bool interpolated = false;
        for (uint32_t e = 0; e < g.k; ++e) interpolated |= g.idim[e] == static_cast<uint32_t>(d);
        const uint64_t tile = interpolated ? c / g.E : c;
        spanned &= tile >= span.lo[d] && tile < span.lo[d] + span.count[d];
      }
      const uint8_t* at = got.bytes.data() + i * elem;
      if (inside) {
        std::memcpy(merged.data() + i * elem, at, elem);
        ++in_box;
      }
      in_span += spanned;
      left_alone += std::all_of(at, at + elem, [](uint8_t b) { return b == 0xFF; });
    }
    EXPECT_GT(in_box, 0u);
    // Exactly the span's tiles were written.
    EXPECT_EQ(left_alone, g.n - in_span) << f.label;
    return ExpectSameValues(f, values, merged, "region tiles") && got.error == 0;
  });
}

TEST(InterpEmulation, SeveralThreadsPerTileMatchCpu) { ExpectEmulationMatchesCpu(3); }

// Corrupt inputs and the error bits they raise (InterpDecode's DATA_LOSS).
struct Corruption {
  const char* what;
  std::function<void(InterpEncoded&, const Frame&)> apply;
  uint32_t expect;  // bits that must be set
};

std::vector<Corruption> Corruptions() {
  return {
      {"one symbol more",
       [](InterpEncoded& e, const Frame& f) {
         e.symbols.push_back(static_cast<uint16_t>(f.p.radius));
       },
       interp::kErrSymbolCount},
      {"one symbol less", [](InterpEncoded& e, const Frame&) { e.symbols.pop_back(); },
       interp::kErrSymbolCount},
      {"no symbols", [](InterpEncoded& e, const Frame&) { e.symbols.clear(); },
       interp::kErrSymbolCount},
      {"symbol beyond the alphabet",
       [](InterpEncoded& e, const Frame& f) {
         e.symbols[1] = static_cast<uint16_t>(2 * f.p.radius);
       },
       interp::kErrAlphabet},
      {"symbol 0 at a non-anchor", [](InterpEncoded& e, const Frame&) { e.symbols[1] = 0; },
       interp::kErrZeroAtNonAnchor},
      // The frame's last symbol is its last tile's, of the finest level,
      // so a decoder that read the finest level apart from the others (one
      // variant read it in its passes) is checked there too.
      {"last symbol beyond the alphabet",
       [](InterpEncoded& e, const Frame& f) {
         e.symbols.back() = static_cast<uint16_t>(2 * f.p.radius);
       },
       interp::kErrAlphabet},
      {"last symbol 0", [](InterpEncoded& e, const Frame&) { e.symbols.back() = 0; },
       interp::kErrZeroAtNonAnchor},
      {"outlier at a non-anchor",
       [](InterpEncoded& e, const Frame&) {
         e.symbols[0] = 0;
         e.outlier_index = {1};
         e.outlier_residual = {5};
       },
       interp::kErrOutlier},
      {"outlier beyond the frame",
       [](InterpEncoded& e, const Frame& f) {
         e.symbols[0] = 0;
         e.outlier_index = {static_cast<uint32_t>(f.n() + 7)};
         e.outlier_residual = {5};
       },
       interp::kErrOutlier},
      {"outlier at an anchor whose symbol is not 0",
       [](InterpEncoded& e, const Frame&) {
         e.outlier_index = {0};
         e.outlier_residual = {5};
       },
       interp::kErrOutlier | interp::kErrOutlierCount},
      {"symbol 0 at an anchor without an outlier",
       [](InterpEncoded& e, const Frame&) { e.symbols[0] = 0; }, interp::kErrOutlierCount},
  };
}

Frame CorruptionFrame(bool with_fill) {
  Frame f =
      MakeFrame(DType::kFloat32, {{37, 45}, {16, 16}}, InterpOrder::kCubic, Variant::kNoisy, 77);
  f.p.radius = 1000;  // so that 2 radius, beyond the alphabet, is a u16
  if (with_fill) {
    f.mask.assign(f.n(), 0);
    for (uint64_t i = 3; i < f.n(); i += 5) f.mask[i] = i % 16 != 0;
  }
  return f;
}

TEST(InterpEmulation, CorruptInputsRaiseTheirErrors) {
  for (bool with_fill : {false, true}) {
    const Frame f = CorruptionFrame(with_fill);
    const InterpEncoded clean = CpuEncode(f);
    ASSERT_TRUE(clean.outlier_index.empty());
    EXPECT_EQ(EmulateDecode(f, clean, 1).error, 0u);
    for (const Corruption& c : Corruptions()) {
      InterpEncoded e = clean;
      c.apply(e, f);
      std::vector<uint8_t> out(f.bytes.size());
      EXPECT_EQ(
          InterpDecode(f.p, e.symbols, e.outlier_index, e.outlier_residual, f.fill(), out.data())
              .code(),
          absl::StatusCode::kDataLoss)
          << c.what;
      const uint32_t error = EmulateDecode(f, e, 1).error;
      EXPECT_EQ(error & c.expect, c.expect)
          << c.what << (with_fill ? " (fill)" : "") << ": error bits " << error;
    }
  }
}

// ---------------------------------------------------------------------------
// GPU tests.

TEST(InterpKernels, EncodeAndDecodeMatchCpu) {
  SKIP_WITHOUT_GPU();
  ForEachFrame([&](const Frame& f) {
    const InterpEncoded want = CpuEncode(f);
    const Encoded got = GpuEncode(f);
    bool ok = ExpectSameEncoding(f, want, got, "GPU encoder");
    // The GPU decoder on the CPU's symbols.
    const std::vector<uint8_t> values = CpuDecode(f, want);
    const Decoded dec = GpuDecode(f, want);
    EXPECT_EQ(dec.error, 0u) << f.label << ": decoder error bits";
    ok = ExpectSameValues(f, values, dec.bytes, "GPU decoder") && dec.error == 0 && ok;
    return ok;
  });
}

TEST(InterpKernels, CorruptInputsRaiseTheirErrors) {
  SKIP_WITHOUT_GPU();
  for (bool with_fill : {false, true}) {
    const Frame f = CorruptionFrame(with_fill);
    const InterpEncoded clean = CpuEncode(f);
    EXPECT_EQ(GpuDecode(f, clean).error, 0u);
    for (const Corruption& c : Corruptions()) {
      InterpEncoded e = clean;
      c.apply(e, f);
      const uint32_t error = GpuDecode(f, e).error;
      EXPECT_EQ(error & c.expect, c.expect)
          << c.what << (with_fill ? " (fill)" : "") << ": error bits " << error;
    }
  }
}

// PlanInterp keeps its plans by parameters but the bound: a second call
// with another bound gets that bound and the same plan otherwise, and its
// parameters are still checked.
TEST(InterpKernels, KeptPlansTakeTheBoundOfTheCall) {
  SKIP_WITHOUT_GPU();
  InterpParams p;
  p.shape = {100, 300};
  p.tile = {32, 32, 0, 0};
  p.abs_bound = 0.5;
  p.quant_step = 1.0;
  auto first = PlanInterp(p, false);
  ASSERT_TRUE(first.ok()) << first.status();
  p.abs_bound = 0.25;
  p.quant_step = 0.5;
  auto second = PlanInterp(p, false);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->geo.abs_bound, 0.25);
  EXPECT_EQ(second->geo.step, 0.5);
  EXPECT_EQ(first->geo.abs_bound, 0.5);
  EXPECT_EQ(second->geo.num_tiles, first->geo.num_tiles);
  EXPECT_EQ(second->encode_scratch, first->encode_scratch);
  EXPECT_EQ(second->decode_scratch, first->decode_scratch);
  // A fill mask plans differently (its tile starts are counted): not the kept plan.
  auto filled = PlanInterp(p, true);
  ASSERT_TRUE(filled.ok());
  EXPECT_TRUE(filled->has_fill);
  EXPECT_FALSE(second->has_fill);
  EXPECT_NE(filled->encode_scratch, second->encode_scratch);
  // Another shape, another plan.
  p.shape = {100, 301};
  auto wider = PlanInterp(p, false);
  ASSERT_TRUE(wider.ok());
  EXPECT_NE(wider->geo.n, second->geo.n);
  // A kept plan does not skip the checks of the parameters.
  p.shape = {100, 300};
  p.quant_step = 0;
  EXPECT_EQ(PlanInterp(p, false).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(InterpGeometry, BoxesThatDoNotFitAreUnimplemented) {
  // 2-D E = 256: a 257 x 257 box exceeds 65536 elements (no device needed).
  InterpParams p;
  p.shape = {1000, 1000};
  p.tile = {256, 256, 0, 0};
  p.abs_bound = 1e-3;
  p.quant_step = 2e-3;
  EXPECT_EQ(MakeInterpGeometry(p, false, 232448).status().code(), absl::StatusCode::kUnimplemented);
  // 1-D E = 32768: a box of 32769 float32 fits an H100's 227 KiB but not
  // 48 KiB; in float64 it fits neither.
  p.shape = {100000};
  p.tile = {32768, 0, 0, 0};
  EXPECT_EQ(MakeInterpGeometry(p, false, 48 * 1024).status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(MakeInterpGeometry(p, false, 232448).ok());
  p.dtype = DType::kFloat64;
  EXPECT_EQ(MakeInterpGeometry(p, false, 232448).status().code(), absl::StatusCode::kUnimplemented);
  // The default tiles fit an H100 in both dtypes, with a fill mask.
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    p.dtype = dtype;
    for (const Case& c : std::vector<Case>{{{4096}, {256}},
                                           {{512, 512}, {32, 32}},
                                           {{512, 512}, {64, 64}},
                                           {{64, 64, 64}, {16, 16, 16}},
                                           {{8, 64, 64, 64}, {1, 16, 16, 16}},
                                           {{8, 8, 256, 256}, {1, 1, 64, 64}}}) {
      p.shape = c.shape;
      p.tile = {};
      for (size_t d = 0; d < c.tile.size(); ++d) p.tile[d] = c.tile[d];
      EXPECT_TRUE(MakeInterpGeometry(p, true, 232448).ok()) << ShapeToString(c.shape);
    }
  }
}

// Each tile kernel's launch policy (the decoders' and the encoder's, chosen
// apart) fits the shared memory it was planned for, and the encoder's gives
// a thread at least as many elements: a kernel launched past its block's
// shared memory fails on the device, where these tests run without one.
TEST(InterpGeometry, EachLaunchPolicyFitsItsSharedMemory) {
  InterpParams p;
  p.abs_bound = 1e-3;
  p.quant_step = 2e-3;
  int encode_halved = 0;
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    p.dtype = dtype;
    const int elem = static_cast<int>(DTypeSize(dtype));
    for (const Case& c : std::vector<Case>{{{4096}, {256}},
                                           {{512, 512}, {32, 32}},
                                           {{512, 512}, {64, 64}},
                                           {{64, 64, 64}, {16, 16, 16}},
                                           {{8, 64, 64, 64}, {1, 16, 16, 16}}}) {
      p.shape = c.shape;
      p.tile = {};
      for (size_t d = 0; d < c.tile.size(); ++d) p.tile[d] = c.tile[d];
      for (bool fill : {false, true}) {
        auto full = MakeInterpGeometry(p, fill, 232448);
        ASSERT_TRUE(full.ok()) << ShapeToString(c.shape);
        // One encoding tile's bytes: a limit that holds one but not two
        // must halve the encoder's tiles a block and nothing else.
        const InterpSharedBytes b = InterpShared(*full, elem, fill);
        const size_t one_encode = b.encode / full->encode_tiles_per_block;
        const size_t others = std::max({b.decode, b.scatter, b.count});
        for (size_t limit : {size_t{232448}, size_t{100} * 1024, size_t{48} * 1024,
                             std::max(one_encode, others)}) {
          auto g = MakeInterpGeometry(p, fill, limit);
          if (!g.ok()) {
            EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
            continue;
          }
          const std::string what = ShapeToString(c.shape) + (fill ? " fill" : "") +
                                   " limit " + std::to_string(limit);
          const InterpSharedBytes s = InterpShared(*g, elem, fill);
          EXPECT_LE(std::max({s.encode, s.decode, s.scatter, s.count}), limit) << what;
          EXPECT_LE(g->tile_threads * g->tiles_per_block, kInterpBlockThreads) << what;
          EXPECT_LE(g->encode_tile_threads * g->encode_tiles_per_block, kInterpBlockThreads)
              << what;
          EXPECT_GE(g->encode_tile_threads, 32u) << what;
          EXPECT_LE(g->encode_tile_threads, g->tile_threads) << what;
          if (limit == std::max(one_encode, others) && full->encode_tiles_per_block > 1 &&
              2 * one_encode > limit) {
            EXPECT_LT(g->encode_tiles_per_block, full->encode_tiles_per_block) << what;
            EXPECT_EQ(g->tiles_per_block, full->tiles_per_block) << what;
            ++encode_halved;
          }
        }
      }
    }
  }
  EXPECT_GT(encode_halved, 0);  // the halving above was exercised
}

// ---------------------------------------------------------------------------
// Timing (printed, not asserted): a large smooth float32 field, 2-D and 3-D,
// device-resident, default tiles, cubic.

struct Timing {
  double encode_ms = 0, decode_ms = 0;
};

void TimeField(const std::vector<uint64_t>& shape, const std::vector<uint16_t>& tile) {
  const uint64_t n = Product(shape);
  InterpParams p;
  p.dtype = DType::kFloat32;
  p.shape = shape;
  for (size_t d = 0; d < tile.size(); ++d) p.tile[d] = tile[d];
  p.order = InterpOrder::kCubic;
  p.abs_bound = 1e-4;
  p.quant_step = 2e-4;
  // A separable smooth field: cheap to make at 2^28 elements.
  std::vector<std::vector<float>> wave(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    for (uint64_t c = 0; c < shape[d]; ++c) {
      wave[d].push_back(
          static_cast<float>(std::sin(0.003 * static_cast<double>(c) * static_cast<double>(d + 1)) +
                             0.3 * std::cos(0.011 * static_cast<double>(c))));
    }
  }
  std::vector<float> x(n);
  {
    const uint64_t row = shape.back();
    const uint64_t rows = n / row;
    for (uint64_t r = 0; r < rows; ++r) {
      uint64_t rest = r;
      float base = 0;
      for (size_t d = shape.size() - 1; d-- > 0;) {
        base += wave[d][rest % shape[d]];
        rest /= shape[d];
      }
      const std::vector<float>& last = wave.back();
      float* out = x.data() + r * row;
      for (uint64_t c = 0; c < row; ++c) out[c] = base + last[c];
    }
  }
  absl::StatusOr<InterpPlan> plan = PlanInterp(p, false);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const uint64_t tiles = plan->geo.num_tiles;
  DeviceArray<float> input(n), output(n);
  DeviceArray<uint8_t> escratch(plan->encode_scratch), dscratch(plan->decode_scratch);
  DeviceArray<uint16_t> symbols(n);
  DeviceArray<uint32_t> verbatim((n + 31) / 32), outlier_index(tiles), counts(2), error(1);
  DeviceArray<int32_t> outlier_residual(tiles);
  for (bool ok : {input.ok(), output.ok(), escratch.ok(), dscratch.ok(), symbols.ok(),
                  verbatim.ok(), outlier_index.ok(), outlier_residual.ok()}) {
    ASSERT_TRUE(ok) << "device memory";
  }
  input.Upload(x.data(), n);
  InterpEncodeOutputs o;
  o.symbols = symbols.get();
  o.verbatim_mask = verbatim.get();
  o.outlier_index = outlier_index.get();
  o.outlier_residual = outlier_residual.get();
  o.counts = counts.get();
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  constexpr int kRuns = 5;
  ASSERT_TRUE(LaunchInterpEncode(*plan, input.get(), nullptr, escratch.get(), o, nullptr).ok());
  ASSERT_EQ(CudaLastError(), "");
  cudaEventRecord(start);
  for (int r = 0; r < kRuns; ++r) {
    ASSERT_TRUE(LaunchInterpEncode(*plan, input.get(), nullptr, escratch.get(), o, nullptr).ok());
  }
  cudaEventRecord(stop);
  ASSERT_EQ(CudaLastError(), "");
  float encode_ms = 0;
  cudaEventElapsedTime(&encode_ms, start, stop);
  encode_ms /= kRuns;
  const std::vector<uint32_t> c = counts.Download(2);
  EXPECT_EQ(c[0], n);

  InterpDecodeInputs in;
  in.symbols = symbols.get();
  in.num_symbols = c[0];
  in.outlier_index = outlier_index.get();
  in.outlier_residual = outlier_residual.get();
  in.num_outliers = c[1];
  ASSERT_TRUE(
      LaunchInterpDecode(*plan, in, output.get(), dscratch.get(), error.get(), nullptr).ok());
  ASSERT_EQ(CudaLastError(), "");
  cudaEventRecord(start);
  for (int r = 0; r < kRuns; ++r) {
    ASSERT_TRUE(
        LaunchInterpDecode(*plan, in, output.get(), dscratch.get(), error.get(), nullptr).ok());
  }
  cudaEventRecord(stop);
  ASSERT_EQ(CudaLastError(), "");
  float decode_ms = 0;
  cudaEventElapsedTime(&decode_ms, start, stop);
  decode_ms /= kRuns;
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  EXPECT_EQ(error.Download(1)[0], 0u);

  // The round trip keeps the bound wherever the element is not verbatim.
  const std::vector<float> y = output.Download(n);
  const std::vector<uint32_t> vmask = verbatim.Download((n + 31) / 32);
  uint64_t verbatim_count = 0, violations = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if ((vmask[i / 32] >> (i % 32)) & 1) {
      ++verbatim_count;
      continue;
    }
    violations +=
        !(std::fabs(static_cast<double>(y[i]) - static_cast<double>(x[i])) <= p.abs_bound);
  }
  EXPECT_EQ(violations, 0u);
  const double gb = static_cast<double>(n) * sizeof(float) / 1e9;
  std::string tile_text;
  for (size_t d = 0; d < tile.size(); ++d) tile_text += (d ? "x" : "") + std::to_string(tile[d]);
  absl::StatusOr<std::string> device = DeviceDescription(0);
  std::printf(
      "[interp timing] %s f32 (%.2f GB) tile %s cubic on %s: encode %.3f ms = %.1f GB/s, "
      "decode %.3f ms = %.1f GB/s; %u outliers, %" PRIu64
      " verbatim; %u tile threads x %u "
      "tiles per block (encoder %u x %u)\n",
      ShapeToString(shape).c_str(), gb, tile_text.c_str(), device.ok() ? device->c_str() : "?",
      encode_ms, gb / (encode_ms / 1e3), decode_ms, gb / (decode_ms / 1e3), c[1], verbatim_count,
      plan->geo.tile_threads, plan->geo.tiles_per_block, plan->geo.encode_tile_threads,
      plan->geo.encode_tiles_per_block);
}

TEST(InterpKernels, TimingLargeSmoothFloat32Fields) {
  SKIP_WITHOUT_GPU();
  size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  // About 3.2 x the field: input, output, symbols twice (in symbol and in
  // element order), masks. 1 GiB of float32 where that fits.
  uint64_t n = uint64_t{1} << 28;
  while (n > (uint64_t{1} << 20) && 3.5 * static_cast<double>(n) * 4 > free_bytes) n /= 4;
  const uint64_t side2 = static_cast<uint64_t>(std::llround(std::sqrt(static_cast<double>(n))));
  TimeField({side2, side2}, {32, 32});
  TimeField({side2, side2}, {64, 64});
  const uint64_t side3 = static_cast<uint64_t>(std::llround(std::cbrt(static_cast<double>(n))));
  TimeField({side3, side3, n / (side3 * side3)}, {16, 16, 16});
  TimeField({n >> 16, 256, 256}, {1, 64, 64});
}

}  // namespace
}  // namespace ebzip::gpu
