// The memory bounds of codec/memory_bounds.h against what the codec really
// allocates. This binary replaces the global operator new and delete (every
// form: plain, array, nothrow, sized, aligned) to count the bytes live on
// the heap and their peak; each test runs a codec call, takes the peak less
// what was live before, and checks it is within the bound, for adversarial
// and ordinary arrays, both dtypes, ranks 1 to 4, one and several frames,
// every decoder, on the pool's real thread count. Actual frame and archive
// sizes are checked against MaxFrameBytes and MaxArchiveBytes, and the
// bounds against overflow and against being too loose to admit an ordinary
// request.
#include "codec/memory_bounds.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codec/archive.h"
#include "codec/format.h"
#include "codec/frame_codec.h"
#include "codec/parallel.h"
#include "gtest/gtest.h"

namespace {

// Live bytes as requested from operator new (not what malloc rounds them
// up to), and the most live at once since the last reset.
std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};

void Count(int64_t delta) {
  const int64_t now = g_live.fetch_add(delta, std::memory_order_relaxed) + delta;
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

// Each block carries its requested size just before the pointer returned:
// 16 bytes ahead keeps malloc's alignment for plain new; aligned new puts
// a whole alignment ahead.
constexpr size_t kHeader = 16;

void* Allocate(size_t size) {
  void* p = std::malloc(size + kHeader);
  if (p == nullptr) throw std::bad_alloc();
  *static_cast<size_t*>(p) = size;
  Count(static_cast<int64_t>(size));
  return static_cast<char*>(p) + kHeader;
}

void Deallocate(void* ptr) {
  if (ptr == nullptr) return;
  char* base = static_cast<char*>(ptr) - kHeader;
  Count(-static_cast<int64_t>(*reinterpret_cast<size_t*>(base)));
  std::free(base);
}

size_t HeaderFor(std::align_val_t alignment) {
  return std::max(static_cast<size_t>(alignment), kHeader);
}

void* AllocateAligned(size_t size, std::align_val_t alignment) {
  const size_t a = HeaderFor(alignment);
  void* p = std::aligned_alloc(a, (size + a + a - 1) / a * a);
  if (p == nullptr) throw std::bad_alloc();
  char* user = static_cast<char*>(p) + a;
  *reinterpret_cast<size_t*>(user - sizeof(size_t)) = size;
  Count(static_cast<int64_t>(size));
  return user;
}

void DeallocateAligned(void* ptr, std::align_val_t alignment) {
  if (ptr == nullptr) return;
  char* user = static_cast<char*>(ptr);
  Count(-static_cast<int64_t>(*reinterpret_cast<size_t*>(user - sizeof(size_t))));
  std::free(user - HeaderFor(alignment));
}

}  // namespace

void* operator new(size_t size) { return Allocate(size); }
void* operator new[](size_t size) { return Allocate(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  try {
    return Allocate(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void* operator new(size_t size, std::align_val_t a) { return AllocateAligned(size, a); }
void* operator new[](size_t size, std::align_val_t a) { return AllocateAligned(size, a); }
void* operator new(size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return AllocateAligned(size, a);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t size, std::align_val_t a, const std::nothrow_t& tag) noexcept {
  return operator new(size, a, tag);
}
void operator delete(void* p) noexcept { Deallocate(p); }
void operator delete[](void* p) noexcept { Deallocate(p); }
void operator delete(void* p, size_t) noexcept { Deallocate(p); }
void operator delete[](void* p, size_t) noexcept { Deallocate(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { Deallocate(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { Deallocate(p); }
void operator delete(void* p, std::align_val_t a) noexcept { DeallocateAligned(p, a); }
void operator delete[](void* p, std::align_val_t a) noexcept { DeallocateAligned(p, a); }
void operator delete(void* p, size_t, std::align_val_t a) noexcept { DeallocateAligned(p, a); }
void operator delete[](void* p, size_t, std::align_val_t a) noexcept { DeallocateAligned(p, a); }
void operator delete(void* p, std::align_val_t a, const std::nothrow_t&) noexcept {
  DeallocateAligned(p, a);
}
void operator delete[](void* p, std::align_val_t a, const std::nothrow_t&) noexcept {
  DeallocateAligned(p, a);
}

namespace ebzip {
namespace {

// The most bytes live at once while fn runs, less those live before it
// (whatever fn returns and keeps is part of it).
template <typename Fn>
uint64_t PeakDuring(Fn&& fn) {
  const int64_t before = g_live.load();
  g_peak.store(before);
  fn();
  return static_cast<uint64_t>(g_peak.load() - before);
}

// Where test allocations escape to, so the compiler cannot elide them.
void* volatile g_sink = nullptr;

TEST(HeapCounter, SeesEveryFormOfNew) {
  const int64_t before = g_live.load();
  EXPECT_EQ(PeakDuring([] {
              char* p = new char[1000];
              g_sink = p;
              delete[] p;
            }),
            1000u);
  struct alignas(64) Wide {
    char bytes[256];
  };
  EXPECT_EQ(PeakDuring([] {
              Wide* p = new Wide;
              g_sink = p;
              delete p;
            }),
            sizeof(Wide));
  EXPECT_EQ(PeakDuring([] {
              std::vector<double> v(1 << 20);
              g_sink = v.data();
            }),
            8u << 20);
  EXPECT_EQ(g_live.load(), before);
}

constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();

enum class Data {
  kSmooth,          // a sum of waves: what fields look like
  kNoise,           // uniform noise far wider than the radius: mostly outliers
  kCodedNoise,      // uniform noise within the radius: long codes, a long bitstream
  kSpecial,         // NaN, infinities, -0.0 and subnormals: all verbatim
  kAllFill,         // every element the fill value
  kFillCheckers,    // fill and data alternating: a fill run per two elements
  kFillAndSpecial,  // fill and verbatim alternating: both lists at their longest
  kConstant,
};

const char* DataName(Data d) {
  switch (d) {
    case Data::kSmooth:
      return "smooth";
    case Data::kNoise:
      return "noise";
    case Data::kCodedNoise:
      return "coded_noise";
    case Data::kSpecial:
      return "special";
    case Data::kAllFill:
      return "all_fill";
    case Data::kFillCheckers:
      return "fill_checkers";
    case Data::kFillAndSpecial:
      return "fill_and_special";
    case Data::kConstant:
      return "constant";
  }
  return "?";
}

constexpr double kFill = -9999.0;

template <typename T>
std::vector<uint8_t> Make(Data kind, uint64_t n, uint32_t seed) {
  std::vector<T> v(n);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(-1e6, 1e6);
  // At the tests' bound (step 0.02) and default radius, residuals of this
  // noise mostly fit: codes of about 15 bits.
  std::uniform_real_distribution<double> coded(-100, 100);
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(), static_cast<T>(-0.0),
                        std::numeric_limits<T>::denorm_min()};
  for (uint64_t i = 0; i < n; ++i) {
    const double smooth = 50 * std::sin(i * 0.0013) + 7 * std::cos(i * 0.031) + 0.01 * (i % 17);
    switch (kind) {
      case Data::kSmooth:
        v[i] = static_cast<T>(smooth);
        break;
      case Data::kNoise:
        v[i] = static_cast<T>(uniform(rng));
        break;
      case Data::kCodedNoise:
        v[i] = static_cast<T>(coded(rng));
        break;
      case Data::kSpecial:
        v[i] = specials[i % 5];
        break;
      case Data::kAllFill:
        v[i] = static_cast<T>(kFill);
        break;
      case Data::kFillCheckers:
        v[i] = i % 2 ? static_cast<T>(kFill) : static_cast<T>(smooth);
        break;
      case Data::kFillAndSpecial:
        v[i] = i % 2 ? static_cast<T>(kFill) : specials[i / 2 % 5];
        break;
      case Data::kConstant:
        v[i] = static_cast<T>(3.25);
        break;
    }
  }
  std::vector<uint8_t> bytes(n * sizeof(T));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

std::vector<uint8_t> MakeData(DType dtype, Data kind, uint64_t n, uint32_t seed) {
  return dtype == DType::kFloat32 ? Make<float>(kind, n, seed) : Make<double>(kind, n, seed);
}

uint64_t Product(const std::vector<uint64_t>& v) {
  uint64_t n = 1;
  for (uint64_t x : v) n *= x;
  return n;
}

struct Variant {
  std::string name;
  CompressOptions options;
};

// Option sets that push different sections to their worst: the defaults,
// radius 1 (every residual but 0 an outlier), the smallest chunks,
// subsequences and groups (chunk index and gap array at their largest),
// the longest chunks cut into the smallest subsequences (the decoders'
// scratch per chunk at its largest), blocks of one element (the placeholder
// pass's per-block arrays at their largest), no gap array with a relative
// bound, and many frames.
std::vector<Variant> Variants(const std::vector<uint64_t>& shape) {
  const uint64_t n = Product(shape);
  std::vector<Variant> v;
  CompressOptions o;
  o.bound = 1e-2;
  o.fill_value = kFill;
  v.push_back({"defaults", o});
  CompressOptions r1 = o;
  r1.radius = 1;
  v.push_back({"radius1", r1});
  CompressOptions tiny = o;
  tiny.chunk_symbols = 3;
  tiny.subsequence_bits = 32;
  tiny.chunk_group = 1;
  tiny.radius = 4;
  v.push_back({"tiny_chunks", tiny});
  CompressOptions long_chunks = o;
  long_chunks.chunk_symbols = format::kMaxChunkSymbols;
  long_chunks.subsequence_bits = 32;
  v.push_back({"long_chunks", long_chunks});
  CompressOptions unit_blocks = o;
  unit_blocks.block.assign(shape.size(), 1);
  v.push_back({"unit_blocks", unit_blocks});
  CompressOptions rel = o;
  rel.mode = BoundMode::kRel;
  rel.bound = 1e-5;
  rel.gap_array = false;
  rel.chunk_symbols = 1000;
  v.push_back({"rel_no_gaps", rel});
  CompressOptions frames = o;
  frames.frame_elements = n / 5 + 1;
  frames.chunk_symbols = 777;
  frames.subsequence_bits = 64;
  v.push_back({"frames", frames});
  return v;
}

using Param = std::tuple<Data, std::vector<uint64_t>, DType>;

class BoundsHold : public ::testing::TestWithParam<Param> {
 protected:
  static void SetUpTestSuite() {
    // The pool and other lazily built statics exist before anything is
    // measured, as they do in a server that has run a request.
    std::vector<uint8_t> data = MakeData(DType::kFloat32, Data::kSmooth, 1 << 18, 1);
    CompressOptions o;
    o.bound = 1e-3;
    auto archive = Compress({DType::kFloat32, {1 << 18}}, data, o);
    ASSERT_TRUE(archive.ok());
    ASSERT_TRUE(Decompress(*archive).ok());
  }
};

TEST_P(BoundsHold, ForEveryCallAndDecoder) {
  const auto& [kind, shape, dtype] = GetParam();
  const ArraySpec spec{dtype, shape};
  const uint64_t n = Product(shape);
  const std::vector<uint8_t> data = MakeData(dtype, kind, n, 7);
  const uint64_t threads = static_cast<uint64_t>(DefaultThreadCount());
  RecordProperty("threads", static_cast<int>(threads));

  for (const Variant& variant : Variants(shape)) {
    SCOPED_TRACE(variant.name);
    const CompressOptions& options = variant.options;
    ValueRange range;
    if (options.mode == BoundMode::kRel) range = FiniteRange(spec, data, options.fill_value);
    auto plan = PlanArchive(spec, options, ResolveBound(options, spec.dtype, range));
    ASSERT_TRUE(plan.ok()) << plan.status();

    absl::StatusOr<std::vector<uint8_t>> archive;
    const uint64_t compress_peak = PeakDuring([&] { archive = Compress(spec, data, options); });
    ASSERT_TRUE(archive.ok()) << archive.status();
    EXPECT_LE(compress_peak, CompressHeapBytes(*plan, threads));
    EXPECT_LE(archive->size(), MaxArchiveBytes(*plan));

    auto info = ReadArchiveInfo(*archive);
    ASSERT_TRUE(info.ok()) << info.status();
    ASSERT_EQ(info->frames.size(), plan->frame_count());
    uint64_t largest_frame = 0;
    for (uint64_t i = 0; i < info->frames.size(); ++i) {
      EXPECT_LE(info->frames[i].size, MaxFrameBytes(plan->ParamsForFrame(i))) << "frame " << i;
      largest_frame = std::max(largest_frame, info->frames[i].size);
    }

    // Frames one at a time: the first, and the last (which may be short).
    for (uint64_t i : {uint64_t{0}, plan->frame_count() - 1}) {
      SCOPED_TRACE(absl::StrCat("frame ", i));
      const FrameParams params = plan->ParamsForFrame(i);
      std::vector<uint8_t> frame;
      const uint64_t encode_peak =
          PeakDuring([&] { EncodeFrame(params, data.data() + plan->FrameDataOffset(i), &frame); });
      EXPECT_EQ(frame.size(), info->frames[i].size);
      EXPECT_LE(frame.size(), MaxFrameBytes(params));
      // The frame's own vector is the caller's: at most its capacity more.
      EXPECT_LE(encode_peak, EncodeFrameWorkingBytes(params) + frame.capacity());

      const format::FrameHeader& header = info->frame_headers[i];
      std::vector<uint8_t> rows(plan->FrameDataBytes(i));
      for (DecoderKind decoder :
           {DecoderKind::kChunkParallel, DecoderKind::kGapArray, DecoderKind::kSelfSync}) {
        if (decoder == DecoderKind::kGapArray && !options.gap_array) continue;
        absl::Status status;
        const uint64_t decode_peak =
            PeakDuring([&] { status = DecodeFrame(frame, header, decoder, rows.data()); });
        ASSERT_TRUE(status.ok()) << status;
        EXPECT_LE(decode_peak, DecodeFrameWorkingBytes(header)) << DecoderKindName(decoder);
      }
    }

    // The whole archive, bounded from its 96-byte file header alone.
    auto file_header =
        format::ParseFileHeader(absl::MakeConstSpan(*archive).subspan(0, format::kFileHeaderSize));
    ASSERT_TRUE(file_header.ok()) << file_header.status();
    for (DecoderKind decoder :
         {DecoderKind::kChunkParallel, DecoderKind::kGapArray, DecoderKind::kSelfSync}) {
      if (decoder == DecoderKind::kGapArray && !options.gap_array) continue;
      absl::StatusOr<DecompressedArray> out;
      const uint64_t peak = PeakDuring([&] { out = Decompress(*archive, decoder); });
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_LE(peak, DecompressHeapBytes(*file_header, archive->size(), threads))
          << DecoderKindName(decoder);
      EXPECT_LE(peak, DecompressHeapBytes(*file_header, largest_frame, threads))
          << DecoderKindName(decoder);
    }
  }
}

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  const auto& [kind, shape, dtype] = info.param;
  return absl::StrCat(DataName(kind), "_", absl::StrJoin(shape, "x"), "_",
                      dtype == DType::kFloat32 ? "f32" : "f64");
}

INSTANTIATE_TEST_SUITE_P(
    Arrays, BoundsHold,
    ::testing::Combine(::testing::Values(Data::kSmooth, Data::kNoise, Data::kCodedNoise,
                                         Data::kSpecial, Data::kAllFill, Data::kFillCheckers,
                                         Data::kFillAndSpecial, Data::kConstant),
                       ::testing::Values(std::vector<uint64_t>{100003},
                                         std::vector<uint64_t>{301, 257},
                                         std::vector<uint64_t>{37, 41, 43},
                                         std::vector<uint64_t>{5, 17, 19, 23},
                                         std::vector<uint64_t>{1}),
                       ::testing::Values(DType::kFloat32, DType::kFloat64)),
    ParamName);

// 16M float32 elements in one frame: what a decompression request of 64 MiB
// costs, as bounded from the file header with the archive's size as the
// frame size. The bound must hold and stay within a small multiple of the
// output, or the service would refuse ordinary requests.
TEST(BoundsAreUseful, SixteenMegaElementsDecompressWithinFourTimesTheOutput) {
  const ArraySpec spec{DType::kFloat32, {4096, 4096}};
  const std::vector<uint8_t> data = MakeData(DType::kFloat32, Data::kSmooth, 4096 * 4096, 3);
  CompressOptions options;
  options.bound = 1e-3;
  auto plan = PlanArchive(spec, options, ResolveBound(options, spec.dtype, {}));
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->frame_count(), 1u);
  auto archive = Compress(spec, data, options);
  ASSERT_TRUE(archive.ok()) << archive.status();

  const uint64_t threads = static_cast<uint64_t>(DefaultThreadCount());
  const uint64_t bound = DecompressHeapBytes(plan->header, archive->size(), threads);
  const uint64_t output = data.size();
  RecordProperty("archive_bytes", std::to_string(archive->size()));
  RecordProperty("decompress_bound_per_output_byte",
                 std::to_string(static_cast<double>(bound) / output));
  EXPECT_LT(bound, 4 * output);

  absl::StatusOr<DecompressedArray> out;
  const uint64_t peak = PeakDuring([&] { out = Decompress(*archive); });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_LE(peak, bound);
  RecordProperty("decompress_peak_per_output_byte",
                 std::to_string(static_cast<double>(peak) / output));

  // Compression is bounded before the data is seen, so at its worst
  // (every element an outlier and verbatim): still within a fixed multiple.
  const uint64_t compress_bound = CompressHeapBytes(*plan, threads);
  RecordProperty("compress_bound_per_input_byte",
                 std::to_string(static_cast<double>(compress_bound) / data.size()));
  // Version 2 (FORMAT.md §15) adds a fill-mask token per element at worst to
  // the frames and the archive, and interpolation's working set.
  EXPECT_LT(compress_bound, 20 * data.size());
  const uint64_t compress_peak = PeakDuring([&] { archive = Compress(spec, data, options); });
  ASSERT_TRUE(archive.ok()) << archive.status();
  EXPECT_LE(compress_peak, compress_bound);
  RecordProperty("compress_peak_per_input_byte",
                 std::to_string(static_cast<double>(compress_peak) / data.size()));
}

FrameParams Params(std::vector<uint64_t> shape) {
  FrameParams p;
  p.shape = std::move(shape);
  p.block = {256, 0, 0, 0};
  if (p.shape.size() > 1) p.block = {16, 16, 0, 0};
  return p;
}

format::FileHeader Header(std::vector<uint64_t> shape, uint64_t frame_rows) {
  format::FileHeader h;
  h.dtype = DType::kFloat64;
  h.shape = std::move(shape);
  h.frame_rows = frame_rows;
  h.frame_count = frame_rows == 0 ? 0 : (h.shape[0] + frame_rows - 1) / frame_rows;
  return h;
}

// Headers may lie: sizes past 2^64 give UINT64_MAX, never a wrapped value.
TEST(BoundsSaturate, AtTheTopInsteadOfWrapping) {
  const uint64_t big = uint64_t{1} << 62;
  EXPECT_EQ(MaxFrameBytes(Params({big})), kUnbounded);
  EXPECT_EQ(EncodeFrameWorkingBytes(Params({big})), kUnbounded);
  EXPECT_EQ(MaxFrameBytes(Params({uint64_t{1} << 32, uint64_t{1} << 32})), kUnbounded);
  EXPECT_EQ(DecompressHeapBytes(Header({uint64_t{1} << 40, uint64_t{1} << 40}, 1), 1 << 20, 2),
            kUnbounded);
  EXPECT_EQ(DecompressHeapBytes(Header({2, 3}, 1), kUnbounded, 2), kUnbounded);

  format::FrameHeader h;
  h.ndim = 2;
  h.shape = {uint64_t{1} << 40, uint64_t{1} << 40, 0, 0};
  h.chunk_symbols = 1;
  h.subsequence_bits = 32;
  h.radius = 32768;
  h.max_code_length = 24;
  EXPECT_EQ(DecodeFrameWorkingBytes(h), kUnbounded);

  ArchivePlan plan;
  plan.frame = Params({big});
  plan.header = Header({big}, big / 2);
  EXPECT_EQ(MaxArchiveBytes(plan), kUnbounded);
  EXPECT_EQ(CompressHeapBytes(plan, 64), kUnbounded);
}

// A wrap anywhere shows up as a bound that shrinks when the array grows.
TEST(BoundsSaturate, NeverShrinkAsTheArrayGrows) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    const int ndim = 1 + static_cast<int>(rng() % 4);
    std::vector<uint64_t> shape(ndim);
    for (uint64_t& d : shape) d = 1 + (rng() >> (rng() % 64));
    std::vector<uint64_t> larger = shape;
    larger[rng() % ndim] *= 2;  // may wrap to a smaller value; skip those
    bool grew = true;
    for (int d = 0; d < ndim; ++d) grew &= larger[d] >= shape[d];
    if (!grew) continue;
    SCOPED_TRACE(absl::StrJoin(shape, "x"));
    FrameParams p = Params(shape);
    p.block = {1, 1, 1, 1};
    FrameParams q = p;
    q.shape = larger;
    EXPECT_LE(MaxFrameBytes(p), MaxFrameBytes(q));
    EXPECT_LE(EncodeFrameWorkingBytes(p), EncodeFrameWorkingBytes(q));
    const uint64_t frame_rows = 1 + rng() % shape[0];
    EXPECT_LE(DecompressHeapBytes(Header(shape, shape[0]), 1 << 30, 4),
              DecompressHeapBytes(Header(larger, larger[0]), 1 << 30, 4));
    EXPECT_GT(DecompressHeapBytes(Header(shape, frame_rows), 1 << 30, 4), 0u);
  }
}

// Parameters no reader accepts (zero chunk, subsequence or group) still
// give a bound, not a division by zero.
TEST(BoundsSaturate, ZeroParametersGiveABound) {
  FrameParams p = Params({1000});
  p.chunk_symbols = 0;
  p.subsequence_bits = 0;
  p.chunk_group = 0;
  p.max_code_length = 0;
  EXPECT_GT(MaxFrameBytes(p), 1000u);
  EXPECT_GT(EncodeFrameWorkingBytes(p), 1000u);
  format::FrameHeader h;
  h.ndim = 1;
  h.shape = {1000, 0, 0, 0};
  EXPECT_GT(DecodeFrameWorkingBytes(h), 1000u);
  EXPECT_GT(DecompressHeapBytes(Header({1000}, 0), 1 << 20, 0), 1000u);
}

}  // namespace
}  // namespace ebzip
