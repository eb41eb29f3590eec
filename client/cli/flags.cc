#include "client/cli/flags.h"

#include <cmath>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/remote/remote_client.h"

ABSL_FLAG(std::string, type, "", "element type of a raw input: f32 or f64");
ABSL_FLAG(std::string, shape, "",
          "shape of a raw input, C order, slowest dimension first: e.g. 2161,4320");
ABSL_FLAG(std::optional<std::string>, abs, std::nullopt, "absolute error bound");
ABSL_FLAG(std::optional<std::string>, rel, std::nullopt,
          "error bound relative to the range of the finite values");
ABSL_FLAG(std::string, fill, "auto",
          "fill value restored exactly and left out of --rel's range: a number, 'none', or "
          "'auto' (the variable's _FillValue/missing_value for NetCDF/HDF5 inputs)");
ABSL_FLAG(std::string, o, "", "output file ('-' for standard output)");
ABSL_FLAG(bool, gap_array, true, "write a gap array for parallel Huffman decoding");
ABSL_FLAG(uint64_t, frame_elements, uint64_t{1} << 24, "target elements per frame");
ABSL_FLAG(uint32_t, radius, 32768, "quantization radius (symbols per sign)");
ABSL_FLAG(uint32_t, chunk_symbols, 16384, "symbols per Huffman chunk");
ABSL_FLAG(uint32_t, subsequence_bits, 1024, "bits per gap-array subsequence");
ABSL_FLAG(std::string, predictor, "auto",
          "compress: auto (each frame picks the smaller), lorenzo or interp (FORMAT.md §15.9)");
ABSL_FLAG(std::string, lossless, "auto",
          "compress: auto, huffman or runs (Huffman with zero-run tokens); --predictor lorenzo "
          "--lossless huffman writes format version 1");
ABSL_FLAG(int, interp_order, 0, "compress: interpolation order, 1 (linear) or 3 (cubic); 0 chooses");
ABSL_FLAG(std::string, decoder, "auto", "Huffman decoder: auto, chunk, gap or selfsync");
ABSL_FLAG(bool, quiet, false, "print nothing on success");
ABSL_FLAG(std::string, max_output_bytes, "",
          "decompress: refuse an array of more bytes than this, before any output is written "
          "(default: the machine's physical memory)");

namespace ebzip::cli {

absl::StatusOr<DType> DTypeFromFlag() {
  const std::string t = absl::GetFlag(FLAGS_type);
  if (t == "f32" || t == "float32" || t == "float") return DType::kFloat32;
  if (t == "f64" || t == "float64" || t == "double") return DType::kFloat64;
  if (t.empty()) return absl::InvalidArgumentError("--type is required for raw input (f32 or f64)");
  return absl::InvalidArgumentError(absl::StrCat("unknown --type '", t, "': use f32 or f64"));
}

absl::StatusOr<std::vector<uint64_t>> ShapeFromFlag() {
  const std::string s = absl::GetFlag(FLAGS_shape);
  if (s.empty()) return absl::InvalidArgumentError("--shape is required for raw input");
  std::vector<uint64_t> shape;
  for (absl::string_view part : absl::StrSplit(s, absl::ByAnyChar(",x"))) {
    uint64_t d;
    if (!absl::SimpleAtoi(part, &d) || d == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad --shape '", s, "': use positive integers, e.g. 2161,4320"));
    }
    shape.push_back(d);
  }
  return shape;
}

absl::StatusOr<DecoderKind> DecoderFromFlag() {
  const std::string d = absl::GetFlag(FLAGS_decoder);
  if (d == "auto") return DecoderKind::kAuto;
  if (d == "chunk") return DecoderKind::kChunkParallel;
  if (d == "gap") return DecoderKind::kGapArray;
  if (d == "selfsync") return DecoderKind::kSelfSync;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown --decoder '", d, "': use auto, chunk, gap or selfsync"));
}

namespace {

absl::StatusOr<std::optional<double>> NumberFlag(const std::optional<std::string>& value,
                                                 absl::string_view name) {
  if (!value) return std::optional<double>();
  double v;
  if (!absl::SimpleAtod(*value, &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad --", name, " '", *value, "': expected a number"));
  }
  return std::optional<double>(v);
}

}  // namespace

absl::StatusOr<std::optional<double>> AbsBoundFromFlag() {
  return NumberFlag(absl::GetFlag(FLAGS_abs), "abs");
}

absl::StatusOr<std::optional<double>> ExplicitFillFromFlag() {
  const std::string f = absl::GetFlag(FLAGS_fill);
  if (f == "auto" || f == "none") return std::optional<double>();
  double v;
  if (!absl::SimpleAtod(f, &v) || !std::isfinite(v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad --fill '", f, "': use a finite number, 'none' or 'auto'"));
  }
  return std::optional<double>(v);
}

absl::StatusOr<uint64_t> MaxOutputBytesFromFlag() {
  const std::string s = absl::GetFlag(FLAGS_max_output_bytes);
  if (s.empty()) return client::PhysicalMemoryBytes();
  uint64_t v;
  if (!absl::SimpleAtoi(s, &v) || v == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad --max_output_bytes '", s, "': expected a positive number of bytes"));
  }
  return v;
}

absl::Status CheckOutputSize(const std::string& source, const ArraySpec& spec, uint64_t limit) {
  if (spec.num_bytes() <= limit) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat(source, " holds a ", DTypeName(spec.dtype), " ", ShapeToString(spec.shape),
                   " array of ", spec.num_bytes(), " bytes, more than --max_output_bytes=", limit,
                   "; raise --max_output_bytes to decompress it"));
}

absl::StatusOr<CompressOptions> CompressOptionsFromFlags(std::optional<double> file_fill) {
  auto abs_or = AbsBoundFromFlag();
  if (!abs_or.ok()) return abs_or.status();
  auto rel_or = NumberFlag(absl::GetFlag(FLAGS_rel), "rel");
  if (!rel_or.ok()) return rel_or.status();
  const std::optional<double> abs = *abs_or, rel = *rel_or;
  if (abs.has_value() == rel.has_value()) {
    return absl::InvalidArgumentError("give exactly one of --abs E or --rel E");
  }
  CompressOptions o;
  o.mode = abs ? BoundMode::kAbs : BoundMode::kRel;
  o.bound = abs ? *abs : *rel;
  auto fill = ExplicitFillFromFlag();
  if (!fill.ok()) return fill.status();
  const std::string f = absl::GetFlag(FLAGS_fill);
  o.fill_value = f == "auto" ? file_fill : *fill;
  o.gap_array = absl::GetFlag(FLAGS_gap_array);
  o.frame_elements = absl::GetFlag(FLAGS_frame_elements);
  o.radius = absl::GetFlag(FLAGS_radius);
  o.chunk_symbols = absl::GetFlag(FLAGS_chunk_symbols);
  o.subsequence_bits = absl::GetFlag(FLAGS_subsequence_bits);
  const std::string predictor = absl::GetFlag(FLAGS_predictor);
  if (predictor == "auto") {
    o.predictor = Predictor::kAuto;
  } else if (predictor == "lorenzo") {
    o.predictor = Predictor::kLorenzo;
  } else if (predictor == "interp") {
    o.predictor = Predictor::kInterp;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown --predictor '", predictor, "': use auto, lorenzo or interp"));
  }
  const std::string lossless = absl::GetFlag(FLAGS_lossless);
  if (lossless == "auto") {
    o.lossless = Lossless::kAuto;
  } else if (lossless == "huffman") {
    o.lossless = Lossless::kHuffman;
  } else if (lossless == "runs") {
    o.lossless = Lossless::kZeroRuns;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown --lossless '", lossless, "': use auto, huffman or runs"));
  }
  o.interp_order = absl::GetFlag(FLAGS_interp_order);
  return o;
}

std::string HumanBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  return u == 0 ? absl::StrCat(bytes, " B") : absl::StrFormat("%.2f %s", v, units[u]);
}

}  // namespace ebzip::cli
