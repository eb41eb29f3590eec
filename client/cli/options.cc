#include "client/cli/options.h"

#include <cmath>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/remote/remote_client.h"

namespace ebzip::cli {
namespace {

absl::StatusOr<std::optional<double>> NumberFlag(const ParsedArgs& args, absl::string_view name) {
  const std::optional<std::string> value = args.OptionalValue(name);
  if (!value) return std::optional<double>();
  double v;
  if (!absl::SimpleAtod(*value, &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad --", name, " '", *value, "': expected a number"));
  }
  return std::optional<double>(v);
}

// A size flag (ParseSize) that must fit `T`, or `fallback` when not given.
template <typename T>
absl::StatusOr<T> SizeFlag(const ParsedArgs& args, absl::string_view name, T fallback) {
  const std::optional<std::string> value = args.OptionalValue(name);
  if (!value) return fallback;
  auto v = ParseSize(*value, name);
  if (!v.ok()) return v.status();
  if (*v > std::numeric_limits<T>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad --", name, " '", *value, "': at most ", std::numeric_limits<T>::max()));
  }
  return static_cast<T>(*v);
}

}  // namespace

absl::StatusOr<DType> DTypeFromFlags(const ParsedArgs& args) {
  const std::string t = args.Value("type");
  if (t == "f32" || t == "float32" || t == "float") return DType::kFloat32;
  if (t == "f64" || t == "float64" || t == "double") return DType::kFloat64;
  if (t.empty()) return absl::InvalidArgumentError("--type is required for raw input (f32 or f64)");
  return absl::InvalidArgumentError(absl::StrCat("unknown --type '", t, "': use f32 or f64"));
}

absl::StatusOr<std::vector<uint64_t>> ShapeFromFlags(const ParsedArgs& args) {
  const std::string s = args.Value("shape");
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

absl::StatusOr<DecoderKind> DecoderFromFlags(const ParsedArgs& args) {
  const std::string d = args.Value("decoder", "auto");
  if (d == "auto") return DecoderKind::kAuto;
  if (d == "chunk") return DecoderKind::kChunkParallel;
  if (d == "gap") return DecoderKind::kGapArray;
  if (d == "selfsync") return DecoderKind::kSelfSync;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown --decoder '", d, "': use auto, chunk, gap or selfsync"));
}

absl::StatusOr<std::optional<double>> AbsBoundFromFlags(const ParsedArgs& args) {
  return NumberFlag(args, "abs");
}

absl::StatusOr<std::optional<double>> ExplicitFillFromFlags(const ParsedArgs& args) {
  const std::string f = args.Value("fill", "auto");
  if (f == "auto" || f == "none") return std::optional<double>();
  double v;
  if (!absl::SimpleAtod(f, &v) || !std::isfinite(v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad --fill '", f, "': use a finite number, 'none' or 'auto'"));
  }
  return std::optional<double>(v);
}

absl::StatusOr<uint64_t> MaxOutputBytesFromFlags(const ParsedArgs& args) {
  const std::optional<std::string> s = args.OptionalValue("max_output_bytes");
  if (!s) return client::PhysicalMemoryBytes();
  auto v = ParseSize(*s, "max_output_bytes");
  if (!v.ok()) return v.status();
  if (*v == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad --max_output_bytes '", *s, "': expected a positive size"));
  }
  return *v;
}

absl::Status CheckOutputSize(const std::string& source, const ArraySpec& spec, uint64_t limit) {
  if (spec.num_bytes() <= limit) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat(source, " holds a ", DTypeName(spec.dtype), " ", ShapeToString(spec.shape),
                   " array of ", spec.num_bytes(), " bytes, more than --max_output_bytes=", limit,
                   "; raise --max_output_bytes to decompress it"));
}

absl::StatusOr<CompressOptions> CompressOptionsFromFlags(const ParsedArgs& args,
                                                         std::optional<double> file_fill) {
  auto abs_or = AbsBoundFromFlags(args);
  if (!abs_or.ok()) return abs_or.status();
  auto rel_or = NumberFlag(args, "rel");
  if (!rel_or.ok()) return rel_or.status();
  const std::optional<double> abs = *abs_or, rel = *rel_or;
  if (abs.has_value() == rel.has_value()) {
    return absl::InvalidArgumentError("give exactly one of --abs E or --rel E");
  }
  CompressOptions o;
  o.mode = abs ? BoundMode::kAbs : BoundMode::kRel;
  o.bound = abs ? *abs : *rel;
  auto fill = ExplicitFillFromFlags(args);
  if (!fill.ok()) return fill.status();
  o.fill_value = args.Value("fill", "auto") == "auto" ? file_fill : *fill;
  o.gap_array = args.Switch("gap_array", o.gap_array);
  auto frame_elements = SizeFlag<uint64_t>(args, "frame_elements", o.frame_elements);
  if (!frame_elements.ok()) return frame_elements.status();
  o.frame_elements = *frame_elements;
  auto radius = SizeFlag<uint32_t>(args, "radius", o.radius);
  if (!radius.ok()) return radius.status();
  o.radius = *radius;
  auto chunk_symbols = SizeFlag<uint32_t>(args, "chunk_symbols", o.chunk_symbols);
  if (!chunk_symbols.ok()) return chunk_symbols.status();
  o.chunk_symbols = *chunk_symbols;
  auto subsequence_bits = SizeFlag<uint32_t>(args, "subsequence_bits", o.subsequence_bits);
  if (!subsequence_bits.ok()) return subsequence_bits.status();
  o.subsequence_bits = *subsequence_bits;
  const std::string predictor = args.Value("predictor", "auto");
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
  const std::string lossless = args.Value("lossless", "auto");
  if (lossless == "auto") {
    o.lossless = Lossless::kAuto;
  } else if (lossless == "huffman") {
    o.lossless = Lossless::kHuffman;
  } else if (lossless == "runs") {
    o.lossless = Lossless::kZeroRuns;
  } else if (lossless == "run-values") {
    o.lossless = Lossless::kRunValues;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown --lossless '", lossless, "': use auto, huffman, runs or run-values"));
  }
  const std::string order = args.Value("interp_order", "0");
  if (!absl::SimpleAtoi(order, &o.interp_order)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad --interp_order '", order, "': use 1 (linear), 3 (cubic) or 0"));
  }
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
