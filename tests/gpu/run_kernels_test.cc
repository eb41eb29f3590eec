// Version 2's entropy pieces on the GPU (gpu/run_kernels.h) against the CPU
// codec, byte for byte: both token stages' (zero-run tokens, run-value
// tokens) histograms, chunk bits, bitstream, gap array and chunk index
// (codec/run_tokens.h, huffman_encoder.cc); the three decoders with tokens
// (huffman_decoder.cc), corrupt streams included; the fill mask both ways
// (fill_mask.cc). Every test skips where no
// CUDA device is visible; the throughput test prints, never asserts.
// The per-thread steps these kernels share are also simulated on the CPU,
// with no GPU at all: tests/codec/run_steps_test.cc.
#include "gpu/run_kernels.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codec/byte_io.h"
#include "codec/chunk_layout.h"
#include "codec/fill_mask.h"
#include "codec/format.h"
#include "codec/huffman_code.h"
#include "codec/huffman_decoder.h"
#include "codec/huffman_encoder.h"
#include "codec/run_tokens.h"
#include "gpu/gpu_codec.h"
#include "gpu/kernels.h"
#include "gpu/segment_plan.h"
#include "gtest/gtest.h"
#include "tests/run_streams.h"

namespace ebzip::gpu {
namespace {

using testing::MaskCase;
using testing::MaskCases;
using testing::SymbolStream;
using testing::SymbolStreams;

#define SKIP_WITHOUT_GPU()                                                        \
  do {                                                                            \
    if (absl::Status s = DeviceAvailable(); !s.ok()) GTEST_SKIP() << s.message(); \
  } while (0)

#define CUDA_ASSERT(expr)                                                                    \
  do {                                                                                       \
    const cudaError_t cuda_error_ = (expr);                                                  \
    ASSERT_EQ(cuda_error_, cudaSuccess) << #expr << ": " << cudaGetErrorString(cuda_error_); \
  } while (0)

// A device array, freed with its owner.
template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(size_t n) { Resize(n); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { cudaFree(p_); }
  cudaError_t Resize(size_t n) {
    cudaFree(p_);
    p_ = nullptr;
    n_ = n;
    return cudaMalloc(reinterpret_cast<void**>(&p_), std::max<size_t>(n, 1) * sizeof(T));
  }
  cudaError_t Upload(const std::vector<T>& v) {
    if (v.size() != n_) {
      if (cudaError_t e = Resize(v.size()); e != cudaSuccess) return e;
    }
    return cudaMemcpy(p_, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
  std::vector<T> Download(size_t count = ~size_t{0}) const {
    std::vector<T> v(std::min(count, n_));
    if (cudaMemcpy(v.data(), p_, v.size() * sizeof(T), cudaMemcpyDeviceToHost) != cudaSuccess) {
      v.clear();
    }
    return v;
  }
  cudaError_t Fill(uint8_t byte) { return cudaMemset(p_, byte, n_ * sizeof(T)); }
  T* get() const { return p_; }
  size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

// "" when equal, else the first differing index and both values.
template <typename T>
std::string FirstDifference(const T* got, const T* want, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!(got[i] == want[i])) {
      return "first difference at index " + std::to_string(i) + " of " + std::to_string(n) +
             ": GPU " + std::to_string(+got[i]) + ", CPU " + std::to_string(+want[i]);
    }
  }
  return "";
}
template <typename T>
std::string FirstDifference(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size()) {
    return "sizes differ: GPU " + std::to_string(got.size()) + ", CPU " +
           std::to_string(want.size());
  }
  return FirstDifference(got.data(), want.data(), got.size());
}

std::vector<uint64_t> ExclusiveScan(const std::vector<uint64_t>& v) {
  std::vector<uint64_t> out(v.size());
  uint64_t sum = 0;
  for (size_t i = 0; i < v.size(); ++i) out[i] = sum, sum += v[i];
  return out;
}

constexpr uint32_t kChunkGroup = 16;
constexpr uint64_t kBins = kHistogramBins;

// One frame of a batch: a stream, coded with its lossless stage (FORMAT.md
// §15.2: 0 plain, 1 zero-run tokens, 2 run-value tokens too).
struct FrameSpec {
  const SymbolStream* stream;
  uint8_t stage;
  uint32_t sub;
  bool gaps;

  RunTokens tokens() const { return RunTokens::ForStage(stage, stream->radius); }
};

// A batch laid out as the GPU codec lays it out, with the CPU's encoding of
// each frame (sections placed in one archive buffer, 8-byte aligned):
// code lengths, chunk index, gap array, bitstream.
struct Batch {
  std::vector<FrameSpec> frames;
  std::vector<Segment> segments;
  std::vector<FrameLayout> layouts;
  BatchTotals totals;
  std::vector<uint16_t> symbols;
  std::vector<uint8_t> lengths;  // kBins per segment
  std::vector<uint32_t> codes;
  std::vector<EncodedSymbols> cpu;
  std::vector<std::vector<uint8_t>> length_sections;
  std::vector<uint8_t> archive;  // the CPU's sections in place
  std::vector<uint32_t> chunk_bits;
  std::vector<uint64_t> word_prefix, gap_prefix;
};

std::string Name(const FrameSpec& f) {
  static constexpr const char* kStages[] = {" (plain", " (run tokens", " (run-value tokens"};
  return f.stream->name + kStages[f.stage] + ", sub " + std::to_string(f.sub) +
         (f.gaps ? ", gaps)" : ")");
}

Batch MakeBatch(const std::vector<FrameSpec>& frames) {
  Batch b;
  b.frames = frames;
  uint64_t at = 0;
  auto place = [&](uint64_t bytes) {
    const uint64_t here = at;
    at = Align8(at + bytes);
    return here;
  };
  for (size_t f = 0; f < frames.size(); ++f) {
    const FrameSpec& spec = frames[f];
    const SymbolStream& st = *spec.stream;
    const RunTokens runs = spec.tokens();
    const TokenStats stats = TokenHistogram(st.symbols, st.chunk_symbols, runs);
    const int max_length = runs.enabled ? format::kMaxCodeLengthWithRuns : 20;
    const std::vector<uint8_t> lengths = BuildCodeLengths(stats.histogram, max_length);
    const std::vector<uint32_t> codes = CanonicalCodes(lengths);
    b.cpu.push_back(HuffmanEncode(st.symbols, lengths, codes, st.chunk_symbols, spec.sub, spec.gaps,
                                  nullptr, runs));
    std::vector<uint8_t> section;
    AppendCodeLengths(lengths, &section);
    b.length_sections.push_back(section);

    Segment seg{};
    const uint64_t shape[1] = {st.symbols.size()};
    const uint16_t block[1] = {256};
    seg.geo = MakeGeometry(shape, block);
    seg.item = 0;
    seg.radius = st.radius;
    seg.chunk_symbols = st.chunk_symbols;
    seg.subsequence_bits = spec.sub;
    seg.chunk_group = kChunkGroup;
    seg.gap_array = spec.gaps;
    seg.max_code_length = static_cast<uint32_t>(max_length);
    seg.frame_index = static_cast<uint32_t>(f);
    seg.lossless = spec.stage;
    seg.highest_lossless = spec.stage;  // what the counters count, as compression sets it
    PlaceSegment(&seg, &b.totals);
    const EncodedSymbols& e = b.cpu.back();
    FrameLayout layout{};
    layout.section_offset[format::kCodeLengths] = place(section.size());
    layout.section_length[format::kCodeLengths] = section.size();
    const uint64_t index_bytes = ChunkIndexBytes(seg.num_chunks, kChunkGroup);
    layout.section_offset[format::kChunkIndex] = place(index_bytes);
    layout.section_length[format::kChunkIndex] = index_bytes;
    layout.section_offset[format::kGapArray] = place(e.gaps.size());
    layout.section_length[format::kGapArray] = e.gaps.size();
    layout.section_offset[format::kBitstream] = place(4 * e.words.size());
    layout.section_length[format::kBitstream] = 4 * e.words.size();
    for (int k = 0; k < kSections; ++k) {
      seg.section_offset[k] = layout.section_offset[k];
      seg.section_length[k] = layout.section_length[k];
    }
    b.segments.push_back(seg);
    b.layouts.push_back(layout);
    b.symbols.insert(b.symbols.end(), st.symbols.begin(), st.symbols.end());
    b.lengths.resize((f + 1) * kBins, 0);
    b.codes.resize((f + 1) * kBins, 0);
    std::copy(lengths.begin(), lengths.end(), b.lengths.begin() + f * kBins);
    std::copy(codes.begin(), codes.end(), b.codes.begin() + f * kBins);
    for (uint32_t bits : e.layout.bits) {
      b.chunk_bits.push_back(bits);
      b.word_prefix.push_back((bits + 31) / 32);
      b.gap_prefix.push_back(spec.gaps ? (bits + spec.sub - 1) / spec.sub : 0);
    }
  }
  b.word_prefix = ExclusiveScan(b.word_prefix);
  b.gap_prefix = ExclusiveScan(b.gap_prefix);
  // The slice states in the reverse order of the chunks, as compression may
  // have them once S is known (gpu/run_kernels.h): the kernels must find
  // them by slice_chunk_base, not chunk_base.
  for (Segment& seg : b.segments) {
    seg.slice_chunk_base = b.totals.chunks - seg.chunk_base - seg.num_chunks;
  }
  b.archive.assign(at, 0xAB);
  for (size_t f = 0; f < frames.size(); ++f) {
    const FrameLayout& l = b.layouts[f];
    const EncodedSymbols& e = b.cpu[f];
    std::copy(b.length_sections[f].begin(), b.length_sections[f].end(),
              b.archive.begin() + l.section_offset[format::kCodeLengths]);
    WriteChunkIndex(e.layout, kChunkGroup,
                    b.archive.data() + l.section_offset[format::kChunkIndex]);
    std::copy(e.gaps.begin(), e.gaps.end(),
              b.archive.begin() + l.section_offset[format::kGapArray]);
    for (size_t w = 0; w < e.words.size(); ++w) {
      StoreLE<uint32_t>(b.archive.data() + l.section_offset[format::kBitstream] + 4 * w,
                        e.words[w]);
    }
  }
  return b;
}

// The batch's tables on the device.
struct DeviceBatch {
  DeviceArray<Segment> segments;
  DeviceArray<Item> items;
  DeviceArray<FrameLayout> layouts;
  DeviceArray<uint16_t> symbols;
  DeviceArray<uint8_t> lengths;
  DeviceArray<uint32_t> codes;
  DeviceArray<uint8_t> archive;
  DeviceArray<uint32_t> chunk_bits;
  DeviceArray<uint64_t> word_prefix, gap_prefix;

  cudaError_t Upload(const Batch& b, bool archive_from_cpu) {
    cudaError_t e;
    if ((e = segments.Upload(b.segments)) != cudaSuccess) return e;
    if ((e = layouts.Upload(b.layouts)) != cudaSuccess) return e;
    if ((e = symbols.Upload(b.symbols)) != cudaSuccess) return e;
    if ((e = lengths.Upload(b.lengths)) != cudaSuccess) return e;
    if ((e = codes.Upload(b.codes)) != cudaSuccess) return e;
    if ((e = chunk_bits.Upload(b.chunk_bits)) != cudaSuccess) return e;
    if ((e = word_prefix.Upload(b.word_prefix)) != cudaSuccess) return e;
    if ((e = gap_prefix.Upload(b.gap_prefix)) != cudaSuccess) return e;
    if (archive_from_cpu) {
      if ((e = archive.Upload(b.archive)) != cudaSuccess) return e;
    } else {
      if ((e = archive.Resize(b.archive.size())) != cudaSuccess) return e;
      if ((e = archive.Fill(0xAB)) != cudaSuccess) return e;
    }
    Item item{};
    item.archive = archive.get();
    return items.Upload(std::vector<Item>{item});
  }
};

std::vector<FrameSpec> AllFrames(const std::vector<SymbolStream>& streams) {
  std::vector<FrameSpec> v;
  for (const SymbolStream& st : streams) {
    v.push_back({&st, 1, 1024, true});
    v.push_back({&st, 1, 32, true});
    v.push_back({&st, 1, 128, false});
    v.push_back({&st, 0, 256, true});
    // Run-value tokens where the radius allows them (FORMAT.md §15.2).
    if (st.radius <= format::kMaxRadiusWithRunValues) {
      v.push_back({&st, 2, 1024, true});
      v.push_back({&st, 2, 32, true});
      v.push_back({&st, 2, 128, false});
    }
  }
  return v;
}

// ---------------------------------------------------------------------------
// Encoding.

void CheckEncode(const std::vector<FrameSpec>& frames) {
  const Batch b = MakeBatch(frames);
  DeviceBatch d;
  CUDA_ASSERT(d.Upload(b, false));
  const uint32_t S = static_cast<uint32_t>(b.segments.size());
  const uint64_t chunks = b.totals.chunks;

  // Token histograms: copies of the symbol histograms, patched, lossless
  // 1's where a segment's stage is 1 or 2 and lossless 2's where it is 2.
  std::vector<uint32_t> histograms(S * kBins, 0);
  for (uint32_t s = 0; s < S; ++s) {
    for (uint16_t v : frames[s].stream->symbols) ++histograms[s * kBins + v];
  }
  DeviceArray<uint32_t> zero_runs, run_values, counters(S * kRunCountersPerSegment);
  DeviceArray<uint32_t> slice_states(chunks * kSliceStatesPerChunk);
  DeviceArray<uint64_t> extra_bits(S);
  CUDA_ASSERT(zero_runs.Upload(histograms));
  CUDA_ASSERT(run_values.Upload(histograms));
  CUDA_ASSERT(LaunchRunCounters(d.segments.get(), S, chunks, d.symbols.get(), counters.get(),
                                slice_states.get(), nullptr));
  CUDA_ASSERT(LaunchTokenHistogram(d.segments.get(), S, counters.get(), zero_runs.get(),
                                   run_values.get(), extra_bits.get(), nullptr));
  CUDA_ASSERT(cudaDeviceSynchronize());
  const std::vector<uint32_t> got_runs = zero_runs.Download();
  const std::vector<uint32_t> got_values = run_values.Download();
  const std::vector<uint64_t> got_extra = extra_bits.Download();
  for (uint32_t s = 0; s < S; ++s) {
    const SymbolStream& st = *frames[s].stream;
    const uint8_t stage = frames[s].stage;
    // (Stage 0's "tokens" are the symbols: a histogram left as it was.)
    const TokenStats runs = TokenHistogram(
        st.symbols, st.chunk_symbols,
        RunTokens::ForStage(stage >= format::kLosslessZeroRuns ? format::kLosslessZeroRuns : 0,
                            st.radius));
    const TokenStats values = TokenHistogram(
        st.symbols, st.chunk_symbols,
        RunTokens::ForStage(stage == format::kLosslessRunValues ? stage : 0, st.radius));
    EXPECT_EQ(
        FirstDifference(got_runs.data() + s * kBins, runs.histogram.data(), runs.histogram.size()),
        "")
        << Name(frames[s]) << ": lossless 1's token histogram";
    EXPECT_EQ(FirstDifference(got_values.data() + s * kBins, values.histogram.data(),
                              values.histogram.size()),
              "")
        << Name(frames[s]) << ": lossless 2's token histogram";
    EXPECT_EQ(got_extra[s], (stage == format::kLosslessRunValues ? values : runs).extra_bits)
        << Name(frames[s]) << ": extra bits";
  }

  // Chunk bits, then the bitstream, gap array and chunk index in place.
  DeviceArray<uint32_t> chunk_bits(chunks);
  DeviceArray<uint64_t> chunk_words(chunks), chunk_gaps(chunks);
  CUDA_ASSERT(LaunchRunChunkBits(d.segments.get(), S, chunks, d.symbols.get(), d.lengths.get(),
                                 slice_states.get(), chunk_bits.get(), chunk_words.get(),
                                 chunk_gaps.get(), nullptr));
  CUDA_ASSERT(cudaDeviceSynchronize());
  const std::vector<uint32_t> got_bits = chunk_bits.Download();
  for (uint32_t s = 0; s < S; ++s) {
    const Segment& seg = b.segments[s];
    ASSERT_EQ(FirstDifference(got_bits.data() + seg.chunk_base, b.cpu[s].layout.bits.data(),
                              seg.num_chunks),
              "")
        << Name(frames[s]) << ": chunk bits (index = chunk of the frame)";
  }
  std::vector<uint64_t> words = chunk_words.Download(), gaps = chunk_gaps.Download();
  for (uint64_t c = 0; c < chunks; ++c) {
    EXPECT_EQ(words[c], (got_bits[c] + 31) / 32) << "chunk " << c;
  }
  CUDA_ASSERT(d.word_prefix.Upload(ExclusiveScan(words)));
  CUDA_ASSERT(d.gap_prefix.Upload(ExclusiveScan(gaps)));
  CUDA_ASSERT(LaunchRunEncode(d.segments.get(), S, chunks, b.totals.max_chunk_symbols,
                              b.totals.max_code_length, d.items.get(), d.layouts.get(),
                              d.symbols.get(), d.lengths.get(), d.codes.get(), slice_states.get(),
                              chunk_bits.get(), d.word_prefix.get(), d.gap_prefix.get(), nullptr));
  CUDA_ASSERT(cudaDeviceSynchronize());
  const std::vector<uint8_t> got = d.archive.Download();
  std::vector<bool> written(got.size(), false);
  for (uint32_t s = 0; s < S; ++s) {
    for (int k : {format::kChunkIndex, format::kGapArray, format::kBitstream}) {
      const uint64_t o = b.layouts[s].section_offset[k];
      const uint64_t len = b.layouts[s].section_length[k];
      std::fill(written.begin() + o, written.begin() + o + len, true);
      EXPECT_EQ(FirstDifference(got.data() + o, b.archive.data() + o, len), "")
          << Name(frames[s]) << ": "
          << (k == format::kChunkIndex ? "chunk index"
              : k == format::kGapArray ? "gap array"
                                       : "bitstream")
          << " (byte index within the section)";
    }
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (!written[i]) {
      ASSERT_EQ(got[i], 0xAB) << "byte " << i << " of the archive written outside its sections";
    }
  }
}

TEST(RunKernels, EncodeEachStreamAsTheCpuDoes) {
  SKIP_WITHOUT_GPU();
  const std::vector<SymbolStream> streams = SymbolStreams(4);
  for (const FrameSpec& f : AllFrames(streams)) {
    SCOPED_TRACE(Name(f));
    CheckEncode({f});
  }
}

TEST(RunKernels, EncodeOneBatchOfMixedFrames) {
  SKIP_WITHOUT_GPU();
  const std::vector<SymbolStream> streams = SymbolStreams(1);
  CheckEncode(AllFrames(streams));
}

// ---------------------------------------------------------------------------
// Decoding.

const char* DecoderName(GpuDecoder d) {
  switch (d) {
    case GpuDecoder::kChunkParallel:
      return "chunk-parallel";
    case GpuDecoder::kGapArray:
      return "gap-array";
    case GpuDecoder::kSelfSync:
      return "self-sync";
  }
  return "?";
}
DecoderKind CpuKind(GpuDecoder d) {
  switch (d) {
    case GpuDecoder::kChunkParallel:
      return DecoderKind::kChunkParallel;
    case GpuDecoder::kGapArray:
      return DecoderKind::kGapArray;
    case GpuDecoder::kSelfSync:
      return DecoderKind::kSelfSync;
  }
  return DecoderKind::kAuto;
}

struct DeviceTables {
  DeviceArray<uint32_t> lookup, first_code, count, offset, spans;
  DeviceArray<uint64_t> multi;
  DeviceArray<uint16_t> sorted;
  explicit DeviceTables(uint32_t S)
      : lookup(S * 4096),
        first_code(S * 32),
        count(S * 32),
        offset(S * 32),
        spans(S * 2048),
        multi(S * 2048),
        sorted(S * 65536) {}
  DecodeTables Get() const {
    return {lookup.get(), multi.get(),       spans.get(), sorted.get(),
            first_code.get(), count.get(), offset.get()};
  }
};

// Decodes the batch's archive (as on the device) with `decoder`: the
// symbols, each frame's count of symbol 0 and the device status. With
// `per_frame`, one launch per frame's chunks, last frame first (as the
// decompressor launches interpolation frames), else one for all.
struct Decoded {
  std::vector<uint16_t> symbols;
  std::vector<uint64_t> zeros;
  DeviceStatus status;
};
Decoded DecodeOnDevice(const Batch& b, DeviceBatch& d, GpuDecoder decoder, bool version1_launch,
                       bool per_frame = false) {
  Decoded out{};
  const uint32_t S = static_cast<uint32_t>(b.segments.size());
  DeviceTables tables(S);
  DeviceArray<uint16_t> symbols(b.totals.symbols);
  DeviceArray<uint64_t> zeros(S);
  DeviceArray<DeviceStatus> status(1);
  if (symbols.Fill(0xEE) != cudaSuccess || zeros.Fill(0) != cudaSuccess ||
      status.Fill(0) != cudaSuccess) {
    out.status.error = 1000;
    return out;
  }
  cudaError_t e = LaunchBuildDecodeTables(d.segments.get(), S, d.items.get(), tables.Get(),
                                          status.get(), nullptr);
  std::vector<ChunkRange> launches = {ChunkRange::All(b.totals.chunks)};
  if (per_frame) {
    launches.clear();
    for (uint32_t s = S; s-- > 0;) {
      const Segment& seg = b.segments[s];
      launches.push_back({seg.chunk_base, seg.chunk_base + seg.num_chunks, b.totals.chunks});
    }
  }
  for (const ChunkRange& chunks : launches) {
    if (e != cudaSuccess) break;
    e = (version1_launch ? LaunchDecode : LaunchDecodeRuns)(
        decoder, d.segments.get(), S, chunks, b.totals.max_chunk_symbols, d.items.get(),
        tables.Get(), d.chunk_bits.get(), d.word_prefix.get(), d.gap_prefix.get(), symbols.get(),
        zeros.get(), status.get(), nullptr);
  }
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    ADD_FAILURE() << "CUDA: " << cudaGetErrorString(e);
    out.status.error = 1000;
    return out;
  }
  out.symbols = symbols.Download();
  out.zeros = zeros.Download();
  out.status = status.Download()[0];
  return out;
}

std::vector<GpuDecoder> DecodersFor(const std::vector<FrameSpec>& frames) {
  bool all_gaps = true;
  for (const FrameSpec& f : frames) all_gaps &= f.gaps;
  std::vector<GpuDecoder> v = {GpuDecoder::kChunkParallel, GpuDecoder::kSelfSync};
  if (all_gaps) v.push_back(GpuDecoder::kGapArray);
  return v;
}

void CheckDecode(const std::vector<FrameSpec>& frames) {
  const Batch b = MakeBatch(frames);
  DeviceBatch d;
  CUDA_ASSERT(d.Upload(b, true));
  bool all_plain = true;
  for (const FrameSpec& f : frames) all_plain &= f.stage == format::kLosslessHuffman;
  for (GpuDecoder decoder : DecodersFor(frames)) {
    for (int launch = 0; launch < 3; ++launch) {
      const bool v1 = launch == 1, per_frame = launch == 2;
      if (v1 && !all_plain) continue;  // LaunchDecode: version 1 only
      const std::string how = std::string(DecoderName(decoder)) +
                              (v1 ? " (LaunchDecode)" : " (LaunchDecodeRuns)") +
                              (per_frame ? ", a launch per frame" : "") +
                              (DecodesByWarps(decoder, b.totals.chunks) ? ", warp per chunk" : "");
      const Decoded got = DecodeOnDevice(b, d, decoder, v1, per_frame);
      ASSERT_EQ(got.status.error, 0u) << how << ": device error " << got.status.error
                                      << " in frame " << Name(frames[got.status.segment]);
      for (size_t s = 0; s < frames.size(); ++s) {
        const std::vector<uint16_t>& want = frames[s].stream->symbols;
        const Segment& seg = b.segments[s];
        EXPECT_EQ(FirstDifference(got.symbols.data() + seg.symbol_base, want.data(), want.size()),
                  "")
            << how << ", " << Name(frames[s]) << ": symbols";
        EXPECT_EQ(got.zeros[s],
                  static_cast<uint64_t>(std::count(want.begin(), want.end(), uint16_t{0})))
            << how << ", " << Name(frames[s]) << ": symbol-0 count";
      }
    }
  }
}

TEST(RunKernels, DecodeEachStreamAsTheCpuDoes) {
  SKIP_WITHOUT_GPU();
  const std::vector<SymbolStream> streams = SymbolStreams(4);
  for (const FrameSpec& f : AllFrames(streams)) {
    SCOPED_TRACE(Name(f));
    CheckDecode({f});
  }
}

// Over 512 chunks: the gap-array decoder runs a warp per chunk.
TEST(RunKernels, DecodeOneBatchOfMixedFrames) {
  SKIP_WITHOUT_GPU();
  const std::vector<SymbolStream> streams = SymbolStreams(1);
  std::vector<FrameSpec> with_gaps;
  for (const FrameSpec& f : AllFrames(streams)) {
    if (f.gaps) with_gaps.push_back(f);
  }
  CheckDecode(with_gaps);
  CheckDecode(AllFrames(streams));
}

// Streams of radius 1 and 2, where the residuals -1 and -2 are symbol 0
// (an outlier) and some run-value tokens name no symbol.
std::vector<SymbolStream> SmallRadiusStreams() {
  std::vector<SymbolStream> streams;
  for (uint32_t radius : {1u, 2u}) {
    std::mt19937 rng(radius);
    std::geometric_distribution<uint32_t> run(0.1);
    std::vector<uint16_t> sym;
    while (sym.size() < 300000) {
      sym.insert(sym.end(), rng() % 8 == 0 ? 8000 + rng() % 400 : run(rng),
                 static_cast<uint16_t>(radius));
      const uint32_t other = rng() % (2 * radius - 1);  // every symbol but the zero
      sym.push_back(static_cast<uint16_t>(other < radius ? other : other + 1));
    }
    for (uint32_t chunk : {4096u, 65536u}) {
      streams.push_back({"radius_" + std::to_string(radius) + "_chunks_" + std::to_string(chunk),
                         sym, radius, chunk});
    }
  }
  return streams;
}

// A run-value token takes an outlier after its run (FORMAT.md §15.4.1), and
// the decoders must still count it.
TEST(RunKernels, RunValueTokensTakeOutliersAtSmallRadii) {
  SKIP_WITHOUT_GPU();
  const std::vector<SymbolStream> streams = SmallRadiusStreams();  // the frames point into it
  for (const FrameSpec& f : AllFrames(streams)) {
    SCOPED_TRACE(Name(f));
    CheckEncode({f});
    CheckDecode({f});
  }
}

// Flipped bits and changed gap entries: the device reports an error exactly
// where the CPU's decoder of the same kind fails (at radius 1 and 2 also
// where a flip makes a run-value token that names no symbol).
TEST(RunKernels, CorruptStreamsAreRejectedAsOnTheCpu) {
  SKIP_WITHOUT_GPU();
  std::vector<SymbolStream> streams = SymbolStreams(1);
  for (SymbolStream& s : SmallRadiusStreams()) streams.push_back(std::move(s));
  std::mt19937 rng(5);
  int rejected = 0, trials = 0;
  for (const SymbolStream& st : streams) {
    if (st.symbols.size() < 100) continue;
    for (uint8_t stage : {format::kLosslessZeroRuns, format::kLosslessRunValues}) {
      if (stage == format::kLosslessRunValues && st.radius > format::kMaxRadiusWithRunValues) {
        continue;
      }
      for (uint32_t sub : {32u, 512u}) {
        const FrameSpec f{&st, stage, sub, true};
        Batch b = MakeBatch({f});
        const FrameLayout& l = b.layouts[0];
        const std::vector<uint8_t> intact = b.archive;
        for (int trial = 0; trial < 24; ++trial) {
          b.archive = intact;
          EncodedSymbols x = b.cpu[0];
          std::string what;
          if (trial % 4 == 3 && !x.gaps.empty()) {
            const uint64_t g = rng() % x.gaps.size();
            x.gaps[g] ^= 1 + trial % 7;
            b.archive[l.section_offset[format::kGapArray] + g] = x.gaps[g];
            what = "gap entry " + std::to_string(g);
          } else {
            for (int k = 0; k < 1 + trial % 3; ++k) {
              const uint64_t w = rng() % x.words.size();
              x.words[w] ^= 1u << (rng() % 32);
              StoreLE<uint32_t>(b.archive.data() + l.section_offset[format::kBitstream] + 4 * w,
                                x.words[w]);
              what += "word " + std::to_string(w) + " ";
            }
          }
          DeviceBatch d;
          CUDA_ASSERT(d.Upload(b, true));
          const HuffmanTable table(
              std::vector<uint8_t>(b.lengths.begin(), b.lengths.begin() + f.tokens().alphabet()));
          for (GpuDecoder decoder : DecodersFor({f})) {
            std::vector<uint16_t> cpu(st.symbols.size());
            const BitstreamView view{x.words, &x.layout, x.gaps, st.chunk_symbols, sub, f.tokens()};
            const absl::Status want =
                HuffmanDecode(CpuKind(decoder), table, view, absl::MakeSpan(cpu));
            const Decoded got = DecodeOnDevice(b, d, decoder, false);
            ++trials;
            rejected += !want.ok();
            EXPECT_EQ(got.status.error != 0, !want.ok())
                << Name(f) << ", " << DecoderName(decoder) << ", " << what << ": CPU says '" << want
                << "', device error " << got.status.error;
            if (want.ok() && got.status.error == 0) {
              EXPECT_EQ(FirstDifference(got.symbols, cpu), "")
                  << Name(f) << ", " << DecoderName(decoder) << ", " << what;
            }
          }
        }
      }
    }
  }
  std::printf("corrupt streams: %d of %d decodes rejected by the CPU (and the device)\n", rejected,
              trials);
}

// ---------------------------------------------------------------------------
// Fill mask.

struct MaskResult {
  std::vector<uint8_t> section;
  uint64_t tokens = 0;
};

void EncodeMaskOnDevice(const MaskCase& mc, MaskResult* out, double* ms = nullptr) {
  const uint64_t n = mc.mask.size();
  DeviceArray<uint8_t> mask, section(MaxFillMaskSectionBytes(n)), workspace;
  DeviceArray<uint64_t> sizes(2);
  CUDA_ASSERT(mask.Upload(mc.mask));
  size_t bytes = 0;
  CUDA_ASSERT(FillMaskEncodeWorkspace(n, &bytes));
  CUDA_ASSERT(workspace.Resize(bytes));
  CUDA_ASSERT(cudaDeviceSynchronize());
  const auto start = std::chrono::steady_clock::now();
  CUDA_ASSERT(LaunchEncodeFillMask(mask.get(), n, mc.row, workspace.get(), bytes, section.get(),
                                   sizes.get(), sizes.get() + 1, nullptr));
  CUDA_ASSERT(cudaDeviceSynchronize());
  if (ms) {
    *ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  const std::vector<uint64_t> s = sizes.Download();
  ASSERT_LE(s[0], section.size()) << mc.name << ": section longer than its room";
  out->section = section.Download(s[0]);
  out->tokens = s[1];
}

struct MaskDecoded {
  std::vector<uint8_t> mask;
  uint64_t fill = 0;
  DeviceStatus status{};
};
void DecodeMaskOnDevice(const std::vector<uint8_t>& section, uint64_t tokens, uint64_t n,
                        uint64_t row, MaskDecoded* out, double* ms = nullptr) {
  DeviceArray<uint8_t> d_section, mask(n), workspace;
  DeviceArray<uint64_t> fill(1);
  DeviceArray<DeviceStatus> status(1);
  CUDA_ASSERT(d_section.Upload(section));
  CUDA_ASSERT(status.Fill(0));
  CUDA_ASSERT(mask.Fill(0xEE));
  size_t bytes = 0;
  CUDA_ASSERT(FillMaskDecodeWorkspace(n, row, tokens, &bytes));
  CUDA_ASSERT(workspace.Resize(bytes));
  CUDA_ASSERT(cudaDeviceSynchronize());
  const auto start = std::chrono::steady_clock::now();
  CUDA_ASSERT(LaunchDecodeFillMask(d_section.get(), section.size(), tokens, n, row, workspace.get(),
                                   bytes, mask.get(), fill.get(), status.get(), 7, nullptr));
  CUDA_ASSERT(cudaDeviceSynchronize());
  if (ms) {
    *ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  out->mask = mask.Download();
  out->fill = fill.Download()[0];
  out->status = status.Download()[0];
}

TEST(RunKernels, FillMaskEncodesAsTheCpuDoes) {
  SKIP_WITHOUT_GPU();
  for (uint64_t scale : {1u, 8u}) {
    for (const MaskCase& mc : MaskCases(scale)) {
      const EncodedFillMask want = EncodeFillMask(mc.mask, mc.row);
      MaskResult got;
      ASSERT_NO_FATAL_FAILURE(EncodeMaskOnDevice(mc, &got));
      EXPECT_EQ(got.tokens, want.tokens) << mc.name << " x" << scale << ": tokens";
      EXPECT_EQ(FirstDifference(got.section, want.section), "")
          << mc.name << " x" << scale << ": section bytes (16 of header, then "
          << 4 * format::MaskChunks(want.tokens) << " of chunk lengths, then words)";
    }
  }
}

// The two steps, the section placed at an offset only the device knows (as
// a compressor's layout kernel would place it): nothing outside it written.
TEST(RunKernels, FillMaskEncodesInTwoStepsAtAPlaceSetOnTheDevice) {
  SKIP_WITHOUT_GPU();
  for (const MaskCase& mc : MaskCases(2)) {
    const EncodedFillMask want = EncodeFillMask(mc.mask, mc.row);
    const uint64_t n = mc.mask.size(), room = MaxFillMaskSectionBytes(n), at = 64;
    DeviceArray<uint8_t> mask, buffer(room + 2 * at), workspace;
    DeviceArray<uint64_t> sizes(2);
    DeviceArray<uint8_t*> destination(1);
    CUDA_ASSERT(mask.Upload(mc.mask));
    CUDA_ASSERT(buffer.Fill(0xAB));
    size_t bytes = 0;
    CUDA_ASSERT(FillMaskEncodeWorkspace(n, &bytes));
    CUDA_ASSERT(workspace.Resize(bytes));
    CUDA_ASSERT(LaunchFillMaskEncodeSizes(mask.get(), n, mc.row, workspace.get(), bytes,
                                          sizes.get(), sizes.get() + 1, nullptr));
    CUDA_ASSERT(destination.Upload(std::vector<uint8_t*>{buffer.get() + at}));
    CUDA_ASSERT(LaunchFillMaskEncodeWrite(n, workspace.get(), bytes, destination.get(), nullptr));
    CUDA_ASSERT(cudaDeviceSynchronize());
    const std::vector<uint64_t> s = sizes.Download();
    ASSERT_EQ(s[0], want.section.size()) << mc.name << ": section bytes";
    EXPECT_EQ(s[1], want.tokens) << mc.name << ": tokens";
    const std::vector<uint8_t> got = buffer.Download();
    EXPECT_EQ(FirstDifference(got.data() + at, want.section.data(), want.section.size()), "")
        << mc.name;
    for (size_t i = 0; i < got.size(); ++i) {
      if (i < at || i >= at + want.section.size()) {
        ASSERT_EQ(got[i], 0xAB) << mc.name << ": byte " << i << " of the buffer written, "
                                << "outside the section at [" << at << ", "
                                << at + want.section.size() << ")";
      }
    }
  }
}

TEST(RunKernels, FillMaskDecodesAsTheCpuDoes) {
  SKIP_WITHOUT_GPU();
  for (uint64_t scale : {1u, 8u}) {
    for (const MaskCase& mc : MaskCases(scale)) {
      const EncodedFillMask e = EncodeFillMask(mc.mask, mc.row);
      MaskDecoded got;
      ASSERT_NO_FATAL_FAILURE(
          DecodeMaskOnDevice(e.section, e.tokens, mc.mask.size(), mc.row, &got));
      ASSERT_EQ(got.status.error, 0u) << mc.name << " x" << scale << ": device error "
                                      << got.status.error << ", check " << got.status.section;
      EXPECT_EQ(FirstDifference(got.mask, mc.mask), "") << mc.name << " x" << scale << ": mask";
      EXPECT_EQ(got.fill, static_cast<uint64_t>(std::count(mc.mask.begin(), mc.mask.end(), 1)))
          << mc.name << " x" << scale << ": fill count";
    }
  }
}

TEST(RunKernels, CorruptFillMasksAreRejectedAsOnTheCpu) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(13);
  int rejected = 0, trials = 0;
  for (const MaskCase& mc : MaskCases(1)) {
    const EncodedFillMask e = EncodeFillMask(mc.mask, mc.row);
    const uint64_t n = mc.mask.size();
    for (int trial = 1; trial < 30; ++trial) {
      std::vector<uint8_t> section = e.section;
      uint64_t tokens = e.tokens;
      std::string what;
      switch (trial % 6) {
        case 0:
          tokens = trial % 4 ? tokens + 1 : tokens - 1;
          what = "token count " + std::to_string(tokens);
          break;
        case 1:
          if (section.size() > 20) {
            const uint64_t at = 16 + rng() % (section.size() - 16);
            section[at] ^= 1 << (rng() % 8);
            what = "bit of byte " + std::to_string(at);
          }
          break;
        case 2: {
          const uint64_t at = rng() % 16;
          section[at] ^= 1 + rng() % 3;
          what = "header byte " + std::to_string(at);
          break;
        }
        case 3:
          section.resize(section.size() - 4);
          what = "a word short";
          break;
        case 4:
          section.insert(section.end(), 4, 0);
          what = "a word long";
          break;
        default: {
          const uint64_t c = rng() % format::MaskChunks(tokens);
          uint32_t bits = LoadLE<uint32_t>(section.data() + 16 + 4 * c);
          bits = trial % 2 ? bits + 1 : bits - 1;
          StoreLE<uint32_t>(section.data() + 16 + 4 * c, bits);
          what = "chunk " + std::to_string(c) + "'s bits";
        }
      }
      std::vector<uint8_t> cpu(n);
      const auto want = DecodeFillMask(section, tokens, mc.row, absl::MakeSpan(cpu));
      MaskDecoded got;
      ASSERT_NO_FATAL_FAILURE(DecodeMaskOnDevice(section, tokens, n, mc.row, &got));
      ++trials;
      rejected += !want.ok();
      EXPECT_EQ(got.status.error != 0, !want.ok())
          << mc.name << ", " << what << ": CPU says '" << want.status() << "', device error "
          << got.status.error << " check " << got.status.section;
      if (!want.ok() && got.status.error != 0) {
        EXPECT_EQ(got.status.error, kErrFillMask) << mc.name << ", " << what;
        EXPECT_EQ(got.status.segment, 7u) << mc.name << ", " << what;
      }
      if (want.ok() && got.status.error == 0) {
        EXPECT_EQ(got.fill, *want) << mc.name << ", " << what;
        EXPECT_EQ(FirstDifference(got.mask, cpu), "") << mc.name << ", " << what;
      }
    }
  }
  std::printf("corrupt masks: %d of %d rejected by the CPU (and the device)\n", rejected, trials);
}

// ---------------------------------------------------------------------------
// Throughput on a 1 GiB-equivalent frame set: 2^28 float32 elements (one
// symbol each) cut into frames of 2^24, chunks of 65536. Printed, not
// asserted; the bytes are still checked.

double Elapsed(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  return ms;
}

constexpr uint64_t kElements = uint64_t{1} << 28;

// The token kernels of one stage over the frames.
void TokenThroughput(const std::vector<SymbolStream>& streams, uint8_t stage) {
  const double gib = kElements * 4.0 / (1 << 30);
  std::vector<FrameSpec> frames;
  for (const SymbolStream& st : streams) frames.push_back({&st, stage, 1024, true});
  const Batch b = MakeBatch(frames);
  DeviceBatch d;
  CUDA_ASSERT(d.Upload(b, true));
  const uint32_t S = static_cast<uint32_t>(b.segments.size());
  const uint64_t chunks = b.totals.chunks;
  uint64_t cpu_bytes = 0;
  for (const EncodedSymbols& e : b.cpu) cpu_bytes += 4 * e.words.size();
  cudaEvent_t ev[8];
  for (auto& e : ev) CUDA_ASSERT(cudaEventCreate(&e));

  DeviceArray<uint32_t> counters(S * kRunCountersPerSegment), chunk_bits(chunks);
  DeviceArray<uint32_t> slice_states(chunks * kSliceStatesPerChunk);
  DeviceArray<uint64_t> chunk_words(chunks), chunk_gaps(chunks);
  CUDA_ASSERT(cudaEventRecord(ev[0]));
  CUDA_ASSERT(LaunchRunCounters(d.segments.get(), S, chunks, d.symbols.get(), counters.get(),
                                slice_states.get(), nullptr));
  CUDA_ASSERT(cudaEventRecord(ev[1]));
  CUDA_ASSERT(LaunchRunChunkBits(d.segments.get(), S, chunks, d.symbols.get(), d.lengths.get(),
                                 slice_states.get(), chunk_bits.get(), chunk_words.get(),
                                 chunk_gaps.get(), nullptr));
  CUDA_ASSERT(cudaEventRecord(ev[2]));
  CUDA_ASSERT(d.archive.Fill(0));
  CUDA_ASSERT(cudaEventRecord(ev[3]));
  CUDA_ASSERT(LaunchRunEncode(d.segments.get(), S, chunks, b.totals.max_chunk_symbols,
                              b.totals.max_code_length, d.items.get(), d.layouts.get(),
                              d.symbols.get(), d.lengths.get(), d.codes.get(), slice_states.get(),
                              chunk_bits.get(), d.word_prefix.get(), d.gap_prefix.get(), nullptr));
  CUDA_ASSERT(cudaEventRecord(ev[4]));
  CUDA_ASSERT(cudaDeviceSynchronize());
  const std::vector<uint8_t> encoded = d.archive.Download();
  for (uint32_t s = 0; s < S; ++s) {
    for (int k : {format::kChunkIndex, format::kGapArray, format::kBitstream}) {
      const uint64_t o = b.layouts[s].section_offset[k];
      ASSERT_EQ(
          FirstDifference(encoded.data() + o, b.archive.data() + o, b.layouts[s].section_length[k]),
          "")
          << "frame " << s << " section " << k;
    }
  }
  std::printf("%s, %.2f GiB of float32 as %u frames (%.1f%% of the input after coding):\n",
              stage == format::kLosslessRunValues ? "run-value tokens" : "run tokens", gib, S,
              100.0 * cpu_bytes / (kElements * 4.0));
  std::printf("  counters %.3f ms, chunk bits %.3f ms, encode %.3f ms: %.1f GB/s overall\n",
              Elapsed(ev[0], ev[1]), Elapsed(ev[1], ev[2]), Elapsed(ev[3], ev[4]),
              kElements * 4.0 / 1e6 /
                  (Elapsed(ev[0], ev[1]) + Elapsed(ev[1], ev[2]) + Elapsed(ev[3], ev[4])));

  CUDA_ASSERT(d.archive.Upload(b.archive));
  for (GpuDecoder decoder :
       {GpuDecoder::kGapArray, GpuDecoder::kSelfSync, GpuDecoder::kChunkParallel}) {
    DeviceTables tables(S);
    DeviceArray<uint16_t> symbols(b.totals.symbols);
    DeviceArray<uint64_t> zeros(S);
    DeviceArray<DeviceStatus> status(1);
    CUDA_ASSERT(status.Fill(0));
    CUDA_ASSERT(zeros.Fill(0));
    CUDA_ASSERT(LaunchBuildDecodeTables(d.segments.get(), S, d.items.get(), tables.Get(),
                                        status.get(), nullptr));
    CUDA_ASSERT(cudaEventRecord(ev[5]));
    CUDA_ASSERT(LaunchDecodeRuns(decoder, d.segments.get(), S, ChunkRange::All(chunks),
                                 b.totals.max_chunk_symbols, d.items.get(), tables.Get(),
                                 d.chunk_bits.get(), d.word_prefix.get(), d.gap_prefix.get(),
                                 symbols.get(), zeros.get(), status.get(), nullptr));
    CUDA_ASSERT(cudaEventRecord(ev[6]));
    CUDA_ASSERT(cudaDeviceSynchronize());
    ASSERT_EQ(status.Download()[0].error, 0u) << DecoderName(decoder);
    const std::vector<uint16_t> got = symbols.Download();
    ASSERT_EQ(FirstDifference(got, b.symbols), "") << DecoderName(decoder);
    std::printf("  decode (%s%s): %.3f ms, %.1f GB/s\n", DecoderName(decoder),
                DecodesByWarps(decoder, chunks) ? ", warp per chunk" : "", Elapsed(ev[5], ev[6]),
                kElements * 4.0 / 1e6 / Elapsed(ev[5], ev[6]));
  }
  for (auto& e : ev) cudaEventDestroy(e);
}

TEST(RunKernels, ThroughputOnAGibibyteEquivalent) {
  SKIP_WITHOUT_GPU();
  constexpr uint64_t kFrame = uint64_t{1} << 24;
  const double gib = kElements * 4.0 / (1 << 30);
  std::vector<SymbolStream> streams;
  for (uint64_t f = 0; f < kElements / kFrame; ++f) {
    // A smooth field at a loose bound: 70 % zeros in runs of ~40.
    streams.push_back({"frame " + std::to_string(f),
                       testing::RandomStream(kFrame, 512, 0.7, 40, static_cast<uint32_t>(f)), 512,
                       65536});
  }
  for (uint8_t stage : {format::kLosslessZeroRuns, format::kLosslessRunValues}) {
    ASSERT_NO_FATAL_FAILURE(TokenThroughput(streams, stage));
  }

  // The fill mask of the same size: 2-D blobs, rows of 4096.
  MaskCase mc{"1 GiB mask", testing::BlobMask(kElements / 4096 / 16, 4096, 16, 40, 0, 9), 4096};
  MaskResult encoded_mask;
  double encode_ms = 0, decode_ms = 0;
  ASSERT_NO_FATAL_FAILURE(EncodeMaskOnDevice(mc, &encoded_mask, &encode_ms));
  const EncodedFillMask want = EncodeFillMask(mc.mask, mc.row);
  ASSERT_EQ(FirstDifference(encoded_mask.section, want.section), "") << mc.name;
  MaskDecoded decoded;
  ASSERT_NO_FATAL_FAILURE(
      DecodeMaskOnDevice(want.section, want.tokens, mc.mask.size(), mc.row, &decoded, &decode_ms));
  ASSERT_EQ(decoded.status.error, 0u);
  ASSERT_EQ(FirstDifference(decoded.mask, mc.mask), "") << mc.name;
  std::printf(
      "fill mask, %.2f GiB-equivalent (%llu elements, %llu tokens): encode %.3f ms "
      "(%.1f GB/s), decode %.3f ms (%.1f GB/s), host-timed with launches\n",
      gib, static_cast<unsigned long long>(mc.mask.size()),
      static_cast<unsigned long long>(want.tokens), encode_ms, kElements * 4.0 / 1e6 / encode_ms,
      decode_ms, kElements * 4.0 / 1e6 / decode_ms);
}

}  // namespace
}  // namespace ebzip::gpu
