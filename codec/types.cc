#include "codec/types.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ebzip {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 4;
    case DType::kFloat64:
      return 8;
  }
  return 0;
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "f32";
    case DType::kFloat64:
      return "f64";
  }
  return "unknown";
}

const char* BoundModeName(BoundMode mode) {
  switch (mode) {
    case BoundMode::kAbs:
      return "ABS";
    case BoundMode::kRel:
      return "REL";
  }
  return "unknown";
}

uint64_t ArraySpec::num_elements() const {
  if (shape.empty()) return 0;
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

absl::Status ValidateArraySpec(const ArraySpec& spec) {
  if (DTypeSize(spec.dtype) == 0) {
    return absl::InvalidArgumentError(absl::StrCat("unknown dtype ", static_cast<int>(spec.dtype)));
  }
  if (spec.shape.empty() || spec.shape.size() > static_cast<size_t>(kMaxDims)) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape must have 1 to ", kMaxDims, " dimensions, got ", spec.shape.size()));
  }
  uint64_t limit = std::numeric_limits<uint64_t>::max() / DTypeSize(spec.dtype);
  uint64_t n = 1;
  for (uint64_t d : spec.shape) {
    if (d == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", ShapeToString(spec.shape), " has a zero dimension"));
    }
    if (n > limit / d) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", ShapeToString(spec.shape), " is too large"));
    }
    n *= d;
  }
  return absl::OkStatus();
}

std::string ShapeToString(absl::Span<const uint64_t> shape) { return absl::StrJoin(shape, "x"); }

}  // namespace ebzip
