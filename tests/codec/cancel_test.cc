// Cancellation of the CPU codec (codec/cancel.h): a flag set before a call
// stops it before it decodes or encodes anything, a flag set from another
// thread stops a large call midway with CANCELLED, and a flag never set
// changes no byte.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "codec/archive.h"
#include "codec/frame_codec.h"
#include "codec/huffman_code.h"
#include "codec/huffman_decoder.h"
#include "codec/huffman_encoder.h"
#include "codec/lorenzo.h"
#include "gtest/gtest.h"

namespace ebzip {
namespace {

// A smooth field with noise: enough distinct symbols and outliers that
// every stage has work to do.
std::vector<float> Field(uint64_t n) {
  std::vector<float> v(n);
  uint32_t state = 12345;
  for (uint64_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    const float noise = static_cast<float>(state >> 8) / 16777216.0f - 0.5f;
    v[i] = static_cast<float>(i % 4096) * 0.01f + noise * 0.3f;
    if (i % 1009 == 0) v[i] = NAN;
  }
  return v;
}

absl::Span<const uint8_t> Bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

CompressOptions Options(uint64_t frame_elements) {
  CompressOptions o;
  o.bound = 1e-3;
  o.frame_elements = frame_elements;
  return o;
}

constexpr DecoderKind kDecoders[] = {DecoderKind::kChunkParallel, DecoderKind::kGapArray,
                                     DecoderKind::kSelfSync};

TEST(Cancel, FlagSetBeforehandStopsEveryEntryPointBeforeItWrites) {
  const std::vector<float> data = Field(300000);
  const ArraySpec spec{DType::kFloat32, {300, 1000}};
  const CompressOptions options = Options(100000);
  auto archive = Compress(spec, Bytes(data), options);
  ASSERT_TRUE(archive.ok()) << archive.status();
  auto info = ReadArchiveInfo(*archive);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_GT(info->frames.size(), 1u);

  const std::atomic<bool> cancel{true};
  EXPECT_EQ(Compress(spec, Bytes(data), options, &cancel).status().code(),
            absl::StatusCode::kCancelled);
  CompressOptions rel = options;
  rel.mode = BoundMode::kRel;
  EXPECT_EQ(Compress(spec, Bytes(data), rel, &cancel).status().code(),
            absl::StatusCode::kCancelled);

  for (DecoderKind kind : kDecoders) {
    SCOPED_TRACE(DecoderKindName(kind));
    EXPECT_EQ(Decompress(*archive, kind, &cancel).status().code(), absl::StatusCode::kCancelled);
    // Nothing of the frame reaches the output.
    const uint64_t frame_bytes = info->FrameRows(0) * 1000 * sizeof(float);
    std::vector<uint8_t> out(frame_bytes, 0xAB);
    EXPECT_EQ(DecompressFrame(*info, *archive, 0, kind, out.data(), &cancel).code(),
              absl::StatusCode::kCancelled);
    EXPECT_EQ(out, std::vector<uint8_t>(frame_bytes, 0xAB));
    const format::FrameIndexEntry& e = info->frames[0];
    EXPECT_EQ(DecodeFrame(absl::MakeConstSpan(*archive).subspan(e.offset, e.size),
                          info->frame_headers[0], kind, out.data(), &cancel)
                  .code(),
              absl::StatusCode::kCancelled);
    EXPECT_EQ(out, std::vector<uint8_t>(frame_bytes, 0xAB));
  }

  auto plan = PlanArchive(spec, options, ResolveBound(options, spec.dtype, {}));
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<uint8_t> before = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<uint8_t> frame = before;
  EXPECT_EQ(EncodeFrame(plan->ParamsForFrame(0), Bytes(data).data(), &frame, &cancel).code(),
            absl::StatusCode::kCancelled);
  EXPECT_EQ(frame, before);
}

// Each parallel stage checks the flag per range: with it set, the stages
// leave their output as they found it.
TEST(Cancel, StagesSkipTheirRangesOnceCancelled) {
  const std::atomic<bool> cancel{true};
  const BlockGrid grid =
      BlockGrid::Make(std::vector<uint64_t>{64, 64}, std::vector<uint16_t>{16, 16});
  std::vector<int32_t> values(64 * 64);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int32_t>(i * 7 % 101);
  std::vector<int32_t> copy = values;
  LorenzoForward(grid, copy.data(), &cancel);
  EXPECT_EQ(copy, values);
  LorenzoInverse(grid, copy.data(), &cancel);
  EXPECT_EQ(copy, values);

  std::vector<uint16_t> symbols(100000);
  for (size_t i = 0; i < symbols.size(); ++i) symbols[i] = static_cast<uint16_t>(i % 13);
  const std::vector<uint8_t> lengths = BuildCodeLengths(Histogram(symbols, 16), 20);
  const std::vector<uint32_t> codes = CanonicalCodes(lengths);
  const EncodedSymbols stopped = HuffmanEncode(symbols, lengths, codes, 1000, 64, true, &cancel);
  for (uint32_t word : stopped.words) ASSERT_EQ(word, 0u);

  const EncodedSymbols encoded = HuffmanEncode(symbols, lengths, codes, 1000, 64, true);
  ASSERT_FALSE(encoded.words.empty());
  const HuffmanTable table(lengths);
  const BitstreamView view{encoded.words, &encoded.layout, encoded.gaps, 1000, 64, {}};
  for (DecoderKind kind : kDecoders) {
    std::vector<uint16_t> out(symbols.size(), 0xFFFF);
    EXPECT_EQ(HuffmanDecode(kind, table, view, absl::MakeSpan(out), &cancel).code(),
              absl::StatusCode::kCancelled)
        << DecoderKindName(kind);
    EXPECT_EQ(out, std::vector<uint16_t>(symbols.size(), 0xFFFF)) << DecoderKindName(kind);
  }
}

TEST(Cancel, FlagNeverSetChangesNoByte) {
  const std::vector<float> data = Field(300000);
  const ArraySpec spec{DType::kFloat32, {300, 1000}};
  const std::atomic<bool> cancel{false};
  CompressOptions rel = Options(100000);
  rel.mode = BoundMode::kRel;
  rel.fill_value = 0.0;
  for (const CompressOptions& options : {Options(100000), Options(uint64_t{1} << 24), rel}) {
    auto plain = Compress(spec, Bytes(data), options);
    auto flagged = Compress(spec, Bytes(data), options, &cancel);
    ASSERT_TRUE(plain.ok()) << plain.status();
    ASSERT_TRUE(flagged.ok()) << flagged.status();
    EXPECT_EQ(*plain, *flagged);
    for (DecoderKind kind : kDecoders) {
      auto a = Decompress(*plain, kind);
      auto b = Decompress(*plain, kind, &cancel);
      ASSERT_TRUE(a.ok()) << a.status();
      ASSERT_TRUE(b.ok()) << b.status();
      EXPECT_EQ(a->data, b->data) << DecoderKindName(kind);
    }
  }

  auto plan = PlanArchive(spec, Options(100000), ResolveBound(Options(100000), spec.dtype, {}));
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<uint8_t> plain, flagged;
  EncodeFrame(plan->ParamsForFrame(1), Bytes(data).data() + plan->FrameDataOffset(1), &plain);
  ASSERT_TRUE(EncodeFrame(plan->ParamsForFrame(1), Bytes(data).data() + plan->FrameDataOffset(1),
                          &flagged, &cancel)
                  .ok());
  EXPECT_EQ(plain, flagged);
}

// 64M float32 elements (256 MiB) in four frames: long enough, even on a fast
// machine, that a flag set 50 ms in lands while the call still runs.
class CancelLargeArray : public ::testing::Test {
 protected:
  static constexpr uint64_t kRows = 4096;
  static constexpr uint64_t kCols = 16384;

  static void SetUpTestSuite() {
    data_ = new std::vector<float>(Field(kRows * kCols));
    auto archive = Compress(Spec(), Bytes(*data_), Options(uint64_t{1} << 24));
    ASSERT_TRUE(archive.ok()) << archive.status();
    archive_ = new std::vector<uint8_t>(*std::move(archive));
  }
  static void TearDownTestSuite() {
    delete data_;
    delete archive_;
    data_ = nullptr;
    archive_ = nullptr;
  }
  static ArraySpec Spec() { return {DType::kFloat32, {kRows, kCols}}; }

  // Runs `call` with a flag that another thread sets 50 ms in; returns its
  // status. How long the call ran after the flag was set is recorded (not
  // asserted: timing depends on the machine).
  template <typename Call>
  absl::Status RunCancelledMidway(const std::string& label, Call call) {
    std::atomic<bool> cancel{false};
    std::chrono::steady_clock::time_point set_at;
    std::thread setter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      set_at = std::chrono::steady_clock::now();
      cancel.store(true);
    });
    absl::Status status = call(&cancel);
    const auto returned_at = std::chrono::steady_clock::now();
    setter.join();
    RecordProperty(
        label + "_ms_after_cancel",
        static_cast<int>(
            std::chrono::duration_cast<std::chrono::milliseconds>(returned_at - set_at).count()));
    return status;
  }

  static std::vector<float>* data_;
  static std::vector<uint8_t>* archive_;
};
std::vector<float>* CancelLargeArray::data_ = nullptr;
std::vector<uint8_t>* CancelLargeArray::archive_ = nullptr;

TEST_F(CancelLargeArray, CompressionStopsWithCancelled) {
  ASSERT_NE(data_, nullptr);
  for (BoundMode mode : {BoundMode::kAbs, BoundMode::kRel}) {
    CompressOptions options = Options(uint64_t{1} << 24);
    options.mode = mode;
    const std::string label = mode == BoundMode::kAbs ? "abs" : "rel";
    absl::Status status = RunCancelledMidway(label, [&](const std::atomic<bool>* cancel) {
      return Compress(Spec(), Bytes(*data_), options, cancel).status();
    });
    EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  }
}

TEST_F(CancelLargeArray, DecompressionStopsWithCancelled) {
  ASSERT_NE(archive_, nullptr);
  auto info = ReadArchiveInfo(*archive_);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_GT(info->frames.size(), 1u);
  for (DecoderKind kind : kDecoders) {
    absl::Status status =
        RunCancelledMidway(DecoderKindName(kind), [&](const std::atomic<bool>* cancel) {
          return Decompress(*archive_, kind, cancel).status();
        });
    EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << DecoderKindName(kind) << status;
  }
}

// Inside one frame: the flag is seen between stages and ranges, not only
// between frames.
TEST_F(CancelLargeArray, OneFrameStopsWithCancelled) {
  ASSERT_NE(data_, nullptr);
  const CompressOptions options = Options(format::kMaxFrameElements);
  auto plan = PlanArchive(Spec(), options, ResolveBound(options, Spec().dtype, {}));
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->frame_count(), 1u);
  std::vector<uint8_t> frame;
  absl::Status status = RunCancelledMidway("encode", [&](const std::atomic<bool>* cancel) {
    return EncodeFrame(plan->ParamsForFrame(0), Bytes(*data_).data(), &frame, cancel);
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_TRUE(frame.empty());

  ASSERT_TRUE(EncodeFrame(plan->ParamsForFrame(0), Bytes(*data_).data(), &frame, nullptr).ok());
  auto header = format::ParseFrameHeader(frame);
  ASSERT_TRUE(header.ok()) << header.status();
  std::vector<uint8_t> out(kRows * kCols * sizeof(float));
  status = RunCancelledMidway("decode", [&](const std::atomic<bool>* cancel) {
    return DecodeFrame(frame, *header, DecoderKind::kAuto, out.data(), cancel);
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
}

}  // namespace
}  // namespace ebzip
