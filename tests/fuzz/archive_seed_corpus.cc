// Writes a handful of small, valid archives into a directory: the seed corpus
// of archive_reader_fuzzer. Between them they cover every rank, both dtypes,
// both bound modes, several frames, gap arrays on and off, and non-empty
// outlier, verbatim and fill-run sections, so that mutations start from
// inputs that already reach the frame decoders; and both format versions:
// version 1 (Lorenzo, plain Huffman) and each kind of version 2 (FORMAT.md
// §15): interpolation with a fill mask and without a fill value, linear and
// cubic, zero-run tokens and run-value tokens (lossless 2) with either
// predictor, and metadata blocks.
// Usage: archive_seed_corpus DIR
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "codec/archive.h"
#include "codec/byte_io.h"
#include "codec/format.h"
#include "codec/huffman_code.h"
#include "tests/fuzz/archive_checksums.h"

namespace {

using ebzip::BoundMode;
using ebzip::CompressOptions;
using ebzip::DType;

// Smooth values with a spike, NaN, Inf, a subnormal and fill values mixed in
// when the array is large enough to hold them.
std::vector<double> Field(uint64_t n) {
  std::vector<double> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = 10 * std::sin(0.05 * i) + 3 * std::cos(0.11 * i);
  if (n >= 64) {
    v[n / 5] = 500;
    v[n / 3] = NAN;
    v[n / 2] = INFINITY;
    v[7] = 1e-40;
    for (uint64_t k = 0; k < 4; ++k) v[n / 4 + k] = -9999;
  }
  return v;
}

template <typename T>
std::vector<uint8_t> AsBytes(const std::vector<double>& values) {
  std::vector<T> typed(values.begin(), values.end());
  const auto* p = reinterpret_cast<const uint8_t*>(typed.data());
  return std::vector<uint8_t>(p, p + typed.size() * sizeof(T));
}

// Parameters small enough that a few hundred elements still make several
// chunks, groups and subsequences.
CompressOptions Small(BoundMode mode, double bound) {
  CompressOptions o;
  // Version 1 unless a seed asks for more.
  o.predictor = ebzip::Predictor::kLorenzo;
  o.lossless = ebzip::Lossless::kHuffman;
  o.mode = mode;
  o.bound = bound;
  o.radius = 16;
  o.chunk_symbols = 64;
  o.subsequence_bits = 32;
  o.chunk_group = 2;
  return o;
}

// What is wrong with `archive` for a seed called `name` ("v2", "interp",
// "mask", "nofill", "runs", "runvalues", "meta", "lorenzo", "gap", "nogap" in
// the name promise version 2, an interpolation frame, a fill mask, no fill
// value, zero-run tokens, run-value tokens in use (a lossless-2 frame with a
// codeword for one), a metadata block, only Lorenzo frames, gap arrays or
// none); empty when nothing is.
std::string Mismatch(const std::string& name, const std::vector<uint8_t>& archive) {
  auto info = ebzip::ReadArchiveInfo(archive);
  if (!info.ok()) return "not readable: " + info.status().ToString();
  if (auto out = ebzip::Decompress(archive); !out.ok()) {
    return "does not decode: " + out.status().ToString();
  }
  auto has = [&](const char* word) { return name.find(word) != std::string::npos; };
  bool interp = false, mask = false, runs = false, values = false, gap = false, nogap = false;
  for (size_t f = 0; f < info->frame_headers.size(); ++f) {
    const ebzip::format::FrameHeader& h = info->frame_headers[f];
    interp |= h.predictor == ebzip::format::kPredictorInterp;
    mask |= h.fill_coding == ebzip::format::kFillCodingMask;
    runs |= h.lossless == ebzip::format::kLosslessZeroRuns;
    gap |= h.has_gap_array;
    nogap |= !h.has_gap_array;
    if (h.lossless == ebzip::format::kLosslessRunValues) {
      auto lengths =
          ebzip::ParseCodeLengths(absl::MakeConstSpan(archive).subspan(
                                      info->frames[f].offset + ebzip::format::kFrameHeaderSize,
                                      h.sections[ebzip::format::kCodeLengths].length),
                                  h.alphabet(), h.max_code_length);
      if (!lengths.ok()) return "code lengths: " + lengths.status().ToString();
      // Run-value tokens are the symbols from 2·radius + 12 on.
      for (uint32_t s = 2 * h.radius + ebzip::format::kRunClasses; s < h.alphabet(); ++s) {
        values |= (*lengths)[s] != 0;
      }
    }
  }
  if ((info->header.version == 2) != has("v2")) return "wrong version";
  if (has("interp") && !interp) return "no interpolation frame";
  if (has("lorenzo") && interp) return "an interpolation frame";
  if (has("mask") && !mask) return "no fill mask";
  if (has("nofill") && info->header.fill_value) return "a fill value";
  if (has("runs") && !runs) return "no zero-run tokens";
  if (has("runvalues") && !values) return "no run-value tokens";
  if (has("meta") == info->metadata.empty()) return "metadata block wrong";
  if (has("nogap") ? gap : has("gap") && nogap) return "gap arrays wrong";
  if (archive.size() > 16384) return "larger than fuzz.sh's -max_len";
  // The fuzzer's mutator recomputes every checksum (archive_checksums.h):
  // from zeros, it must give back the archive.
  std::vector<uint8_t> zeroed = archive;
  auto zero = [&](uint64_t at) { ebzip::StoreLE<uint32_t>(zeroed.data() + at, 0); };
  zero(ebzip::format::kFileHeaderSize - 4);
  if (info->header.metadata_bytes != 0) zero(ebzip::format::kFileHeaderSize + 8);
  for (const ebzip::format::FrameIndexEntry& e : info->frames) {
    zero(e.offset + ebzip::format::kFrameHeaderSize - 4);
    for (int k = 0; k < ebzip::format::kSectionCount; ++k) {
      zero(e.offset + ebzip::format::kFrameHeaderSectionsAt + 16 * k + 8);
    }
  }
  const uint64_t index = archive.size() - ebzip::format::FrameIndexSize(info->frames.size()) -
                         ebzip::format::kTrailerSize;
  zero(index + 4);
  zero(archive.size() - 4);
  ebzip::fuzz::FixChecksums(zeroed.data(), zeroed.size());
  if (zeroed != archive) return "FixChecksums does not restore its checksums";
  return "";
}

struct Seed {
  const char* name;
  DType dtype;
  std::vector<uint64_t> shape;
  CompressOptions options;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::vector<Seed> seeds;
  {
    CompressOptions o = Small(BoundMode::kAbs, 0.01);
    o.fill_value = -9999;
    o.frame_elements = 256;
    seeds.push_back({"f32-1d-frames-gap", DType::kFloat32, {600}, o});
    o.gap_array = false;
    seeds.push_back({"f32-1d-frames-nogap", DType::kFloat32, {600}, o});
  }
  {
    CompressOptions o = Small(BoundMode::kRel, 1e-3);
    o.fill_value = -9999;
    o.frame_elements = 16 * 20;
    seeds.push_back({"f64-2d-rel-fill", DType::kFloat64, {32, 20}, o});
  }
  seeds.push_back({"f32-3d", DType::kFloat32, {8, 8, 8}, Small(BoundMode::kAbs, 0.05)});
  {
    CompressOptions o = Small(BoundMode::kAbs, 0.01);
    o.gap_array = false;
    o.radius = 4;  // most residuals become outliers
    seeds.push_back({"f64-4d-outliers-nogap", DType::kFloat64, {2, 2, 6, 6}, o});
  }
  // Version 2. Interpolation needs a larger radius than Lorenzo's seeds:
  // its coarse levels' residuals are large, and beyond the radius every
  // element would be verbatim.
  {
    CompressOptions o = Small(BoundMode::kAbs, 0.01);
    o.predictor = ebzip::Predictor::kInterp;
    o.lossless = ebzip::Lossless::kZeroRuns;
    o.interp_order = 3;
    o.radius = 1024;
    o.fill_value = -9999;
    o.frame_elements = 16 * 20;
    seeds.push_back({"v2-f32-2d-interp-cubic-mask-runs-gap", DType::kFloat32, {40, 20}, o});
    o.gap_array = false;
    o.interp_order = 1;
    o.metadata = R"({"variable": "t", "units": "K"})";
    seeds.push_back({"v2-f32-2d-interp-linear-mask-runs-nogap-meta", DType::kFloat32, {40, 20}, o});
  }
  {
    CompressOptions o = Small(BoundMode::kRel, 1e-3);
    o.predictor = ebzip::Predictor::kInterp;
    o.lossless = ebzip::Lossless::kHuffman;
    o.radius = 1024;
    o.fill_value = -9999;
    o.frame_elements = 300;
    seeds.push_back({"v2-f64-1d-interp-mask-huffman", DType::kFloat64, {700}, o});
  }
  {
    CompressOptions o = Small(BoundMode::kAbs, 0.05);
    o.predictor = ebzip::Predictor::kInterp;
    o.lossless = ebzip::Lossless::kZeroRuns;
    o.radius = 1024;
    o.metadata = "{}";
    seeds.push_back({"v2-f32-3d-interp-nofill-runs-meta", DType::kFloat32, {8, 8, 8}, o});
    o.metadata.clear();
    o.gap_array = false;
    seeds.push_back({"v2-f64-4d-interp-nofill-runs-nogap", DType::kFloat64, {2, 3, 8, 8}, o});
  }
  {
    CompressOptions o = Small(BoundMode::kAbs, 0.01);
    o.lossless = ebzip::Lossless::kZeroRuns;  // Lorenzo with run tokens
    o.fill_value = -9999;
    o.frame_elements = 256;
    seeds.push_back({"v2-f32-1d-lorenzo-runs-fill", DType::kFloat32, {600}, o});
    o.lossless = ebzip::Lossless::kHuffman;
    o.metadata = R"({"a": [1, 2]})";  // Lorenzo and Huffman, version 2 by the metadata
    seeds.push_back({"v2-f32-1d-lorenzo-meta", DType::kFloat32, {600}, o});
  }
  // Run-value tokens (lossless 2, §15.4.1), with either predictor.
  {
    CompressOptions o = Small(BoundMode::kAbs, 0.01);
    o.predictor = ebzip::Predictor::kInterp;
    o.lossless = ebzip::Lossless::kRunValues;
    o.interp_order = 3;
    o.radius = 1024;
    o.fill_value = -9999;
    o.frame_elements = 16 * 20;
    seeds.push_back({"v2-f32-2d-interp-cubic-mask-runvalues-gap", DType::kFloat32, {40, 20}, o});
    o.fill_value.reset();
    o.gap_array = false;
    o.interp_order = 1;
    o.metadata = R"({"variable": "u"})";
    seeds.push_back(
        {"v2-f64-3d-interp-linear-nofill-runvalues-nogap-meta", DType::kFloat64, {8, 8, 8}, o});
  }
  {
    CompressOptions o = Small(BoundMode::kAbs, 0.01);
    o.lossless = ebzip::Lossless::kRunValues;  // Lorenzo with run-value tokens
    o.fill_value = -9999;
    o.frame_elements = 256;
    seeds.push_back({"v2-f32-1d-lorenzo-runvalues-fill-gap", DType::kFloat32, {600}, o});
    o.gap_array = false;
    seeds.push_back({"v2-f64-2d-lorenzo-runvalues-fill-nogap", DType::kFloat64, {32, 20}, o});
  }
  {
    CompressOptions o;  // the defaults, as the CLI writes them: version 2, chosen per frame
    o.bound = 0.1;
    o.fill_value = -9999;
    seeds.push_back({"v2-f32-defaults-auto", DType::kFloat32, {30, 40}, o});
  }
  {
    CompressOptions o;  // the defaults with version 1's predictor and coding
    o.predictor = ebzip::Predictor::kLorenzo;
    o.lossless = ebzip::Lossless::kHuffman;
    o.bound = 0.1;
    seeds.push_back({"f32-one-element", DType::kFloat32, {1}, o});
    o.mode = BoundMode::kRel;
    o.bound = 1e-3;
    seeds.push_back({"f32-constant", DType::kFloat32, {50}, o});
  }

  int failures = 0;
  for (const Seed& seed : seeds) {
    const ebzip::ArraySpec spec{seed.dtype, seed.shape};
    std::vector<double> values = Field(spec.num_elements());
    if (std::string(seed.name).find("constant") != std::string::npos) {
      values.assign(values.size(), 3.25);
    }
    const std::vector<uint8_t> data =
        seed.dtype == DType::kFloat32 ? AsBytes<float>(values) : AsBytes<double>(values);
    auto archive = ebzip::Compress(spec, data, seed.options);
    if (!archive.ok()) {
      std::fprintf(stderr, "%s: %s\n", seed.name, archive.status().ToString().c_str());
      ++failures;
      continue;
    }
    // A seed is what its name says, so that the corpus keeps covering each
    // kind of frame should the writer's choices change.
    if (const std::string problem = Mismatch(seed.name, *archive); !problem.empty()) {
      std::fprintf(stderr, "%s: %s\n", seed.name, problem.c_str());
      ++failures;
      continue;
    }
    const std::string path = std::string(argv[1]) + "/seed-" + seed.name;
    std::FILE* f = std::fopen(path.c_str(), "wb");
    bool written = f != nullptr;
    if (f != nullptr) {
      written = std::fwrite(archive->data(), 1, archive->size(), f) == archive->size();
      written = std::fclose(f) == 0 && written;
    }
    if (!written) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}
