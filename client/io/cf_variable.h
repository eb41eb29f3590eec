// The format-neutral middle of loading: what a reader learns about a variable
// before reading its values, and the CF conventions (packing, fill) that turn
// those values into a LoadedArray. Both readers go through it so that a
// variable loads the same from netCDF as from HDF5.
#ifndef EBZIP_CLIENT_IO_CF_VARIABLE_H_
#define EBZIP_CLIENT_IO_CF_VARIABLE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "client/io/loaded_array.h"
#include "client/io/variable_metadata.h"
#include "codec/types.h"

namespace ebzip {

enum class StoredKind { kUnsupported, kFloat32, kFloat64, kInteger };

struct CfVariable {
  std::string label;      // "file.nc:VAR": every message names it
  std::string type_name;  // as the format calls it: "float", "short", "compound"
  StoredKind kind = StoredKind::kUnsupported;
  std::vector<uint64_t> shape;  // C order; empty for a scalar
  // Attributes, in stored (packed) units.
  std::optional<double> fill_value;     // _FillValue
  std::optional<double> missing_value;  // first element of missing_value
  std::optional<double> scale_factor;
  std::optional<double> add_offset;
  std::string units;
};

// "file.nc:VAR" from a path and the variable as the user named it.
// The numeric CF attributes both readers look up, and where each one goes.
struct NumericAttributeSlot {
  const char* name;
  std::optional<double>* value;
};
std::array<NumericAttributeSlot, 4> NumericAttributeSlots(CfVariable& var);

// The file's description of the variable made true of the loaded values:
// for packed or integer variables (loaded unpacked, as float) the packing
// attributes go, and the fill and valid-range ones are unpacked into the
// element type, as a writer of those values would store them.
void DescribeLoaded(const CfVariable& var, DType dtype, VariableMetadata& metadata);

std::string SourceLabel(std::string_view path, std::string_view variable);

// Rejects unsupported types (InvalidArgument) and ranks outside 1..kMaxDims
// or empty dimensions (InvalidArgument); otherwise the spec it loads as.
absl::StatusOr<ArraySpec> LoadedSpec(const CfVariable& var);

// The element type to ask the file library for. Integers are read as double:
// exact for every integer type accepted, and the library does the widening.
DType ReadType(const CfVariable& var);

// `values` holds spec.num_elements() values of ReadType(var), native order.
// Applies scale_factor/add_offset to data and fill alike (the map is affine,
// so fill points stay distinguishable without special-casing them).
LoadedArray FinishLoad(const CfVariable& var, ArraySpec spec, std::vector<uint8_t> values);

}  // namespace ebzip

#endif  // EBZIP_CLIENT_IO_CF_VARIABLE_H_
