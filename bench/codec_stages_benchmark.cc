// Per-stage CPU throughput of the codec (docs/design.md §5), on etopo5's ROSE
// (2161x4320 f32, loaded through ebzip_io) and a generated smooth 256^3 f32
// field, at a relative bound of 1e-4:
//
//   Compress, Decompress/{chunk,gap,selfsync}   whole archive, in memory
//   Quantize        dual quantization (the loop EncodeFrame runs, replicated)
//   LorenzoForward, LorenzoInverse               on int32 values
//   Histogram, BuildCodeLengths (+ CanonicalCodes), HuffmanTable
//   HuffmanEncode/{gaps,nogaps}, HuffmanDecode/{chunk,gap,selfsync}
//   Memcpy          the field's bytes, once: the memory-bandwidth reference
//
// bytes_per_second counts each stage's natural input: float bytes for
// whole-codec runs, Quantize and Memcpy; int32 bytes for Lorenzo; 16-bit
// symbol bytes for the Huffman stages (so 2 bytes per element). items_per_second
// is elements in every case, the figure to compare stages by. Stages that are
// once per frame (BuildCodeLengths, HuffmanTable) are reported per element of
// the frame too, to show what they cost amortised. All timings are wall
// clock (UseRealTime): the codec runs on every hardware thread.
//
// EBZIP_ETOPO5=path.cdf:VAR overrides the etopo5 source; if it cannot be
// loaded its benchmarks are left out.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "client/io/array_file.h"
#include "codec/archive.h"
#include "codec/huffman_code.h"
#include "codec/huffman_decoder.h"
#include "codec/huffman_encoder.h"
#include "codec/lorenzo.h"
#include "codec/parallel.h"
#include "codec/quantize_point.h"
#include "codec/types.h"

namespace ebzip {
namespace {

constexpr double kRelBound = 1e-4;
constexpr uint32_t kRadius = 32768;
constexpr uint32_t kAlphabet = 2 * kRadius;
constexpr int kMaxCodeLength = 20;
constexpr uint64_t kRange = 1 << 16;  // EncodeFrame's elements per task

// A field and every intermediate of its pipeline, computed once.
struct Field {
  std::string name;
  ArraySpec spec;
  std::vector<uint8_t> data;
  std::optional<double> fill;

  uint64_t n = 0;
  CompressOptions options;
  ResolvedBound bound;
  QuantRule rule{};
  BlockGrid grid;
  std::vector<int32_t> q;          // quantized values
  std::vector<int32_t> residuals;  // Lorenzo residuals
  std::vector<uint16_t> symbols;
  std::vector<uint32_t> histogram;
  std::vector<uint8_t> lengths;
  std::vector<uint32_t> codes;
  EncodedSymbols encoded;  // with gaps
  std::vector<uint8_t> archive;

  const float* floats() const { return reinterpret_cast<const float*>(data.data()); }
};

void Die(const std::string& what) {
  std::fprintf(stderr, "codec_stages_benchmark: %s\n", what.c_str());
  std::exit(1);
}

// Prepares every intermediate and checks the archive honours its bound.
void Prepare(Field& f) {
  if (f.spec.dtype != DType::kFloat32) Die(f.name + ": only f32 fields are benchmarked");
  f.n = f.spec.num_elements();
  f.options.mode = BoundMode::kRel;
  f.options.bound = kRelBound;
  f.options.fill_value = f.fill;
  f.options.radius = kRadius;
  f.bound = ResolveBound(f.options, f.spec.dtype, FiniteRange(f.spec, f.data, f.fill));
  f.rule = QuantRule{f.bound.abs_bound, f.bound.quant_step, f.fill.has_value(), 0};
  if (f.fill) f.rule.fill_bits = ToBits(static_cast<float>(*f.fill));

  const std::array<uint16_t, kMaxDims> block = DefaultBlock(static_cast<int>(f.spec.shape.size()));
  f.grid = BlockGrid::Make(f.spec.shape, {block.data(), f.spec.shape.size()});

  f.q.resize(f.n);
  for (uint64_t i = 0; i < f.n; ++i) QuantizePoint(f.floats()[i], f.rule, &f.q[i]);
  f.residuals = f.q;
  LorenzoForward(f.grid, f.residuals.data());
  f.symbols.resize(f.n);
  for (uint64_t i = 0; i < f.n; ++i) {
    const int64_t d = f.residuals[i];
    f.symbols[i] = d > -int64_t{kRadius} && d < int64_t{kRadius} ? static_cast<uint16_t>(d + kRadius)
                                                                  : 0;
  }
  f.histogram = Histogram(f.symbols, kAlphabet);
  f.lengths = BuildCodeLengths(f.histogram, kMaxCodeLength);
  f.codes = CanonicalCodes(f.lengths);
  f.encoded = HuffmanEncode(f.symbols, f.lengths, f.codes, f.options.chunk_symbols,
                            f.options.subsequence_bits, /*with_gaps=*/true);

  auto archive = Compress(f.spec, f.data, f.options);
  if (!archive.ok()) Die(f.name + ": " + std::string(archive.status().message()));
  f.archive = *std::move(archive);

  // Sanity: the archive decodes within its bound (fill values bit-exact).
  auto out = Decompress(f.archive, DecoderKind::kAuto);
  if (!out.ok()) Die(f.name + ": " + std::string(out.status().message()));
  const float* back = reinterpret_cast<const float*>(out->data.data());
  uint64_t violations = 0;
  for (uint64_t i = 0; i < f.n; ++i) {
    const float x = f.floats()[i];
    if (!std::isfinite(x) || (f.fill && x == static_cast<float>(*f.fill))) {
      violations += std::memcmp(&x, &back[i], sizeof(float)) != 0;
    } else if (!(std::fabs(static_cast<double>(x) - back[i]) <= out->abs_bound)) {
      ++violations;
    }
  }
  if (violations != 0) {
    Die(f.name + ": " + std::to_string(violations) + " values violate the bound");
  }
  std::fprintf(stderr, "%s: %s, abs bound %.6g, ratio %.2f, bitstream %.3f bits/value\n",
               f.name.c_str(), ShapeToString(f.spec.shape).c_str(), f.bound.abs_bound,
               static_cast<double>(f.data.size()) / static_cast<double>(f.archive.size()),
               32.0 * static_cast<double>(f.encoded.words.size()) / static_cast<double>(f.n));
}

std::unique_ptr<Field> LoadEtopo5() {
  const char* env = std::getenv("EBZIP_ETOPO5");
  const std::string source = env ? env : "/usr/share/ferret-vis/data/etopo5.cdf:ROSE";
  auto loaded = LoadArraySource(source);
  if (!loaded.ok()) {
    std::fprintf(stderr, "skipping etopo5 (%s): %s\n", source.c_str(),
                 std::string(loaded.status().message()).c_str());
    return nullptr;
  }
  auto f = std::make_unique<Field>();
  f->name = "etopo5";
  f->spec = loaded->spec;
  f->data = std::move(loaded->data);
  f->fill = loaded->fill_value;
  return f;
}

// A smooth 3-D field: a few low-frequency waves plus a gentle trend.
std::unique_ptr<Field> MakeSmooth3d(uint64_t side) {
  auto f = std::make_unique<Field>();
  f->name = "smooth" + std::to_string(side) + "^3";
  f->spec = {DType::kFloat32, {side, side, side}};
  f->data.resize(f->spec.num_bytes());
  float* v = reinterpret_cast<float*>(f->data.data());
  const double k = 2 * std::numbers::pi / static_cast<double>(side);
  for (uint64_t z = 0; z < side; ++z) {
    for (uint64_t y = 0; y < side; ++y) {
      for (uint64_t x = 0; x < side; ++x) {
        const double a = static_cast<double>(x) * k, b = static_cast<double>(y) * k,
                     c = static_cast<double>(z) * k;
        v[(z * side + y) * side + x] = static_cast<float>(
            std::sin(2 * a) * std::cos(3 * b) + 0.5 * std::sin(a + 2 * c) +
            0.25 * std::cos(5 * b - c) + 0.1 * (a + b + c));
      }
    }
  }
  return f;
}

void SetThroughput(benchmark::State& state, uint64_t elements, uint64_t bytes_per_element) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * elements));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * elements * bytes_per_element));
}

void BM_Memcpy(benchmark::State& state, const Field* f) {
  std::vector<uint8_t> dst(f->data.size());
  for (auto _ : state) {
    std::memcpy(dst.data(), f->data.data(), f->data.size());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  SetThroughput(state, f->n, 4);
}

void BM_Compress(benchmark::State& state, const Field* f, bool gap_array) {
  CompressOptions options = f->options;
  options.gap_array = gap_array;
  uint64_t size = 0;
  for (auto _ : state) {
    auto archive = Compress(f->spec, f->data, options);
    if (!archive.ok()) {
      state.SkipWithError(std::string(archive.status().message()).c_str());
      return;
    }
    size = archive->size();
    benchmark::DoNotOptimize(archive->data());
  }
  SetThroughput(state, f->n, 4);
  state.counters["ratio"] = static_cast<double>(f->data.size()) / static_cast<double>(size);
}

void BM_Decompress(benchmark::State& state, const Field* f, DecoderKind kind) {
  for (auto _ : state) {
    auto out = Decompress(f->archive, kind);
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(out->data.data());
  }
  SetThroughput(state, f->n, 4);
}

// EncodeFrame's quantization loop (it is not a function of its own there),
// keeping only counts of the non-quantized kinds.
void BM_Quantize(benchmark::State& state, const Field* f) {
  std::vector<int32_t> q(f->n);
  const uint64_t ranges = (f->n + kRange - 1) / kRange;
  for (auto _ : state) {
    std::vector<uint64_t> special(ranges, 0);
    ParallelFor(ranges, [&](uint64_t r) {
      const uint64_t end = std::min(f->n, (r + 1) * kRange);
      uint64_t count = 0;
      for (uint64_t i = r * kRange; i < end; ++i) {
        count += QuantizePoint(f->floats()[i], f->rule, &q[i]) != PointKind::kQuantized;
      }
      special[r] = count;
    });
    benchmark::DoNotOptimize(q.data());
    benchmark::DoNotOptimize(special.data());
  }
  SetThroughput(state, f->n, 4);
}

void BM_Lorenzo(benchmark::State& state, const Field* f, bool forward) {
  const std::vector<int32_t>& input = forward ? f->q : f->residuals;
  std::vector<int32_t> work(f->n);
  for (auto _ : state) {
    state.PauseTiming();
    std::memcpy(work.data(), input.data(), f->n * sizeof(int32_t));
    state.ResumeTiming();
    if (forward) {
      LorenzoForward(f->grid, work.data());
    } else {
      LorenzoInverse(f->grid, work.data());
    }
    benchmark::DoNotOptimize(work.data());
  }
  if (work != (forward ? f->residuals : f->q)) state.SkipWithError("Lorenzo result differs");
  SetThroughput(state, f->n, 4);
}

void BM_Histogram(benchmark::State& state, const Field* f) {
  for (auto _ : state) {
    std::vector<uint32_t> h = Histogram(f->symbols, kAlphabet);
    benchmark::DoNotOptimize(h.data());
  }
  SetThroughput(state, f->n, 2);
}

void BM_BuildCodeLengths(benchmark::State& state, const Field* f) {
  for (auto _ : state) {
    std::vector<uint8_t> lengths = BuildCodeLengths(f->histogram, kMaxCodeLength);
    std::vector<uint32_t> codes = CanonicalCodes(lengths);
    benchmark::DoNotOptimize(codes.data());
  }
  SetThroughput(state, f->n, 2);
}

void BM_HuffmanTable(benchmark::State& state, const Field* f) {
  for (auto _ : state) {
    HuffmanTable table(f->lengths);
    benchmark::DoNotOptimize(&table);
  }
  SetThroughput(state, f->n, 2);
}

void BM_HuffmanEncode(benchmark::State& state, const Field* f, bool with_gaps) {
  uint64_t words = 0;
  for (auto _ : state) {
    EncodedSymbols e = HuffmanEncode(f->symbols, f->lengths, f->codes, f->options.chunk_symbols,
                                     f->options.subsequence_bits, with_gaps);
    words = e.words.size();
    benchmark::DoNotOptimize(e.words.data());
  }
  SetThroughput(state, f->n, 2);
  state.counters["bits/value"] = 32.0 * static_cast<double>(words) / static_cast<double>(f->n);
}

void BM_HuffmanDecode(benchmark::State& state, const Field* f, DecoderKind kind) {
  const HuffmanTable table(f->lengths);
  const BitstreamView view{f->encoded.words, &f->encoded.layout, f->encoded.gaps,
                           f->options.chunk_symbols, f->options.subsequence_bits, {}};
  std::vector<uint16_t> out(f->n);
  for (auto _ : state) {
    if (absl::Status s = HuffmanDecode(kind, table, view, absl::MakeSpan(out)); !s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(out.data());
  }
  if (out != f->symbols) state.SkipWithError("decoded symbols differ");
  SetThroughput(state, f->n, 2);
}

void Register(const Field* f) {
  const std::string p = f->name + "/";
  auto reg = [](const std::string& name, auto fn, auto... args) {
    benchmark::RegisterBenchmark(name.c_str(), fn, args...)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  };
  reg(p + "Memcpy", BM_Memcpy, f);
  reg(p + "Compress", BM_Compress, f, true);
  reg(p + "Compress/nogaps", BM_Compress, f, false);
  reg(p + "Decompress/chunk", BM_Decompress, f, DecoderKind::kChunkParallel);
  reg(p + "Decompress/gap", BM_Decompress, f, DecoderKind::kGapArray);
  reg(p + "Decompress/selfsync", BM_Decompress, f, DecoderKind::kSelfSync);
  reg(p + "Quantize", BM_Quantize, f);
  reg(p + "LorenzoForward", BM_Lorenzo, f, true);
  reg(p + "LorenzoInverse", BM_Lorenzo, f, false);
  reg(p + "Histogram", BM_Histogram, f);
  reg(p + "BuildCodeLengths", BM_BuildCodeLengths, f);
  reg(p + "HuffmanTable", BM_HuffmanTable, f);
  reg(p + "HuffmanEncode/gaps", BM_HuffmanEncode, f, true);
  reg(p + "HuffmanEncode/nogaps", BM_HuffmanEncode, f, false);
  reg(p + "HuffmanDecode/chunk", BM_HuffmanDecode, f, DecoderKind::kChunkParallel);
  reg(p + "HuffmanDecode/gap", BM_HuffmanDecode, f, DecoderKind::kGapArray);
  reg(p + "HuffmanDecode/selfsync", BM_HuffmanDecode, f, DecoderKind::kSelfSync);
}

}  // namespace
}  // namespace ebzip

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  std::vector<std::unique_ptr<ebzip::Field>> fields;
  if (auto etopo5 = ebzip::LoadEtopo5()) fields.push_back(std::move(etopo5));
  fields.push_back(ebzip::MakeSmooth3d(256));
  for (auto& f : fields) {
    ebzip::Prepare(*f);
    ebzip::Register(f.get());
  }
  benchmark::AddCustomContext("ebzip_threads", std::to_string(ebzip::DefaultThreadCount()));
  benchmark::AddCustomContext("rel_bound", "1e-4");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
