#include "server/request_parsing.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "server/limits.h"

namespace ebzip::server {

absl::StatusOr<CompressRequestSpec> ParseCompressHeader(const v1::CompressHeader& header) {
  CompressRequestSpec out;
  const auto& array = header.array();
  switch (array.dtype()) {
    case v1::FLOAT32:
      out.spec.dtype = DType::kFloat32;
      break;
    case v1::FLOAT64:
      out.spec.dtype = DType::kFloat64;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "header.array.dtype must be FLOAT32 or FLOAT64, got ", static_cast<int>(array.dtype())));
  }
  if (array.shape_size() == 0) {
    return absl::InvalidArgumentError("header.array.shape is empty; give 1 to 4 dimensions");
  }
  out.spec.shape.assign(array.shape().begin(), array.shape().end());
  if (auto s = ValidateArraySpec(out.spec); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("header.array: ", s.message()));
  }

  const auto& bound = header.error_bound();
  switch (bound.mode()) {
    case v1::ABS:
      out.options.mode = BoundMode::kAbs;
      break;
    case v1::REL:
      out.options.mode = BoundMode::kRel;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "header.error_bound.mode must be ABS or REL, got ", static_cast<int>(bound.mode())));
  }
  if (!(std::isfinite(bound.value()) && bound.value() > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "header.error_bound.value must be a positive finite number, got ", bound.value()));
  }
  out.options.bound = bound.value();

  const auto& o = header.options();
  if (o.frame_elements() != 0) out.options.frame_elements = o.frame_elements();
  if (o.has_gap_array()) out.options.gap_array = o.gap_array();
  if (o.has_fill_value()) out.options.fill_value = o.fill_value();
  if (o.radius() != 0) out.options.radius = o.radius();
  if (o.chunk_symbols() != 0) out.options.chunk_symbols = o.chunk_symbols();
  if (o.subsequence_bits() != 0) out.options.subsequence_bits = o.subsequence_bits();
  if (o.chunk_group() != 0) out.options.chunk_group = o.chunk_group();
  for (uint32_t b : o.block()) {
    if (b > 0xffff) {
      return absl::InvalidArgumentError(absl::StrCat("header.options.block: ", b, " is too large"));
    }
    out.options.block.push_back(static_cast<uint16_t>(b));
  }
  switch (o.predictor()) {
    case v1::PREDICTOR_AUTO:
      out.options.predictor = Predictor::kAuto;
      break;
    case v1::LORENZO:
      out.options.predictor = Predictor::kLorenzo;
      break;
    case v1::INTERPOLATION:
      out.options.predictor = Predictor::kInterp;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("header.options.predictor: unknown value ",
                                                     static_cast<int>(o.predictor())));
  }
  switch (o.lossless()) {
    case v1::LOSSLESS_AUTO:
      out.options.lossless = Lossless::kAuto;
      break;
    case v1::HUFFMAN:
      out.options.lossless = Lossless::kHuffman;
      break;
    case v1::ZERO_RUNS:
      out.options.lossless = Lossless::kZeroRuns;
      break;
    case v1::RUN_VALUES:
      out.options.lossless = Lossless::kRunValues;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("header.options.lossless: unknown value ",
                                                     static_cast<int>(o.lossless())));
  }
  if (o.interp_order() > 3) {
    return absl::InvalidArgumentError("header.options.interp_order must be 0, 1 or 3");
  }
  out.options.interp_order = static_cast<int>(o.interp_order());
  if (o.has_value_range()) {
    out.options.range = ValueRange{o.value_range().any(), o.value_range().min(),
                                   o.value_range().max()};
  }
  out.options.metadata = header.metadata();
  if (auto s = ValidateCompressOptions(out.spec, out.options); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("header: ", s.message()));
  }
  return out;
}

absl::Status CheckOptionLimits(const CompressRequestSpec& request, const ArchivePlan& plan,
                               uint64_t min_frame_elements) {
  const CompressOptions& o = request.options;
  if (o.frame_elements < min_frame_elements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "header.options.frame_elements: ", o.frame_elements, " is below this server's minimum of ",
        min_frame_elements, " (--min_frame_elements)"));
  }
  if (o.chunk_symbols < kMinChunkSymbols) {
    return absl::InvalidArgumentError(
        absl::StrCat("header.options.chunk_symbols: ", o.chunk_symbols,
                     " is below this server's minimum of ", kMinChunkSymbols));
  }
  if (o.subsequence_bits < kMinSubsequenceBits) {
    return absl::InvalidArgumentError(
        absl::StrCat("header.options.subsequence_bits: ", o.subsequence_bits,
                     " is below this server's minimum of ", kMinSubsequenceBits));
  }
  if (plan.frame_count() > kMaxFrames) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the array would take ", plan.frame_count(), " frames, more than this server's ",
        kMaxFrames, "; use larger frames (header.options.frame_elements)"));
  }
  return absl::OkStatus();
}

v1::ArraySpec ToProto(const ArraySpec& spec) {
  v1::ArraySpec p;
  p.set_dtype(spec.dtype == DType::kFloat32 ? v1::FLOAT32 : v1::FLOAT64);
  for (uint64_t d : spec.shape) p.add_shape(d);
  return p;
}

}  // namespace ebzip::server
