#include "client/io/cf_variable.h"

#include <bit>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ebzip {
namespace {

// LoadedArray promises little-endian bytes, and the readers fill buffers in
// native order; on a big-endian host they would need a swap here.
static_assert(std::endian::native == std::endian::little, "client/io assumes a little-endian host");

bool IsPacked(const CfVariable& var) {
  return var.scale_factor.has_value() || var.add_offset.has_value();
}

double Unpack(const CfVariable& var, double stored) {
  return stored * var.scale_factor.value_or(1.0) + var.add_offset.value_or(0.0);
}

template <typename T>
void UnpackInPlace(const CfVariable& var, std::vector<uint8_t>& bytes) {
  for (size_t i = 0; i + sizeof(T) <= bytes.size(); i += sizeof(T)) {
    T v;
    std::memcpy(&v, bytes.data() + i, sizeof(T));
    v = static_cast<T>(Unpack(var, static_cast<double>(v)));
    std::memcpy(bytes.data() + i, &v, sizeof(T));
  }
}

std::vector<uint8_t> UnpackToFloat32(const CfVariable& var, const std::vector<uint8_t>& doubles) {
  std::vector<uint8_t> out(doubles.size() / sizeof(double) * sizeof(float));
  for (size_t i = 0, o = 0; o < out.size(); i += sizeof(double), o += sizeof(float)) {
    double v;
    std::memcpy(&v, doubles.data() + i, sizeof(double));
    const float f = static_cast<float>(Unpack(var, v));
    std::memcpy(out.data() + o, &f, sizeof(float));
  }
  return out;
}

std::string Describe(const CfVariable& var, const ArraySpec& spec) {
  std::string type = var.type_name;
  if (var.kind == StoredKind::kInteger) absl::StrAppend(&type, " unpacked to float");
  if (IsPacked(var)) {
    if (var.kind != StoredKind::kInteger) absl::StrAppend(&type, " unpacked");
    absl::StrAppend(&type, " with scale_factor=", var.scale_factor.value_or(1.0),
                    " add_offset=", var.add_offset.value_or(0.0));
  }
  std::string text = absl::StrCat(var.label, " (", type, ", ", ShapeToString(spec.shape));
  if (!var.units.empty()) absl::StrAppend(&text, ", units=", var.units);
  return absl::StrCat(text, ")");
}

}  // namespace

std::string SourceLabel(std::string_view path, std::string_view variable) {
  return absl::StrCat(std::filesystem::path(path).filename().string(), ":", std::string(variable));
}

absl::StatusOr<ArraySpec> LoadedSpec(const CfVariable& var) {
  if (var.kind == StoredKind::kUnsupported) {
    return absl::InvalidArgumentError(
        absl::StrCat(var.label, " has type ", var.type_name,
                     "; only float, double and 8- to 32-bit integer variables can be loaded"));
  }
  if (var.shape.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        var.label, " is a scalar; ebzip compresses arrays of 1 to ", kMaxDims, " dimensions"));
  }
  if (var.shape.size() > static_cast<size_t>(kMaxDims)) {
    return absl::InvalidArgumentError(
        absl::StrCat(var.label, " has rank ", var.shape.size(), " (", ShapeToString(var.shape),
                     "); ebzip compresses 1 to ", kMaxDims, " dimensions"));
  }
  ArraySpec spec;
  spec.dtype = var.kind == StoredKind::kFloat64 ? DType::kFloat64 : DType::kFloat32;
  spec.shape = var.shape;
  if (absl::Status s = ValidateArraySpec(spec); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(var.label, ": ", s.message()));
  }
  return spec;
}

DType ReadType(const CfVariable& var) {
  return var.kind == StoredKind::kFloat32 ? DType::kFloat32 : DType::kFloat64;
}

LoadedArray FinishLoad(const CfVariable& var, ArraySpec spec, std::vector<uint8_t> values) {
  LoadedArray out;
  std::optional<double> fill = var.fill_value ? var.fill_value : var.missing_value;
  if (var.kind == StoredKind::kInteger) {
    out.data = UnpackToFloat32(var, values);
  } else {
    if (IsPacked(var)) {
      if (spec.dtype == DType::kFloat32) {
        UnpackInPlace<float>(var, values);
      } else {
        UnpackInPlace<double>(var, values);
      }
    }
    out.data = std::move(values);
  }
  if (fill.has_value()) {
    // Round through the stored type and then the element type, exactly as
    // the data went, so the fill equals the bytes of filled points even when
    // the attribute was written wider than the variable.
    double stored = *fill;
    if (var.kind == StoredKind::kFloat32) stored = static_cast<float>(stored);
    const double unpacked = IsPacked(var) ? Unpack(var, stored) : stored;
    out.fill_value = spec.dtype == DType::kFloat32
                         ? static_cast<double>(static_cast<float>(unpacked))
                         : unpacked;
  }
  out.description = Describe(var, spec);
  out.spec = std::move(spec);
  return out;
}

void DescribeLoaded(const CfVariable& var, DType dtype, VariableMetadata& metadata) {
  if (!IsPacked(var) && var.kind != StoredKind::kInteger) return;
  std::vector<Attribute> kept;
  for (Attribute& a : metadata.attributes) {
    if (a.name == "scale_factor" || a.name == "add_offset") continue;
    const bool in_stored_units = a.name == "_FillValue" || a.name == "missing_value" ||
                                 a.name == "valid_min" || a.name == "valid_max" ||
                                 a.name == "valid_range";
    if (in_stored_units && !a.numbers.empty()) {
      for (double& v : a.numbers) {
        v = Unpack(var, v);
        if (dtype == DType::kFloat32) v = static_cast<float>(v);
      }
      a.type = dtype == DType::kFloat32 ? "float" : "double";
    }
    kept.push_back(std::move(a));
  }
  metadata.attributes = std::move(kept);
}

std::array<NumericAttributeSlot, 4> NumericAttributeSlots(CfVariable& var) {
  return {{{"_FillValue", &var.fill_value},
           {"missing_value", &var.missing_value},
           {"scale_factor", &var.scale_factor},
           {"add_offset", &var.add_offset}}};
}

}  // namespace ebzip
