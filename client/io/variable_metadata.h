// What an archive keeps of the NetCDF or HDF5 variable it was made from, so
// that `ebzip decompress -o OUT.nc` can write the variable back: its name,
// dimension names, attributes, the file's global attributes and small 1-D
// coordinate variables. Stored as the JSON document of the archive's
// metadata block (FORMAT.md §15.1); docs/cli.md gives the document's keys.
#ifndef EBZIP_CLIENT_IO_VARIABLE_METADATA_H_
#define EBZIP_CLIENT_IO_VARIABLE_METADATA_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace ebzip {

// One attribute. `type` is the netCDF name of its type ("char", "string",
// "byte", "ubyte", "short", "ushort", "int", "uint", "int64", "uint64",
// "float", "double"); "char" keeps `text`, "string" keeps `strings`, the
// rest keep `numbers` (64-bit integers beyond 2^53 lose precision).
struct Attribute {
  std::string name;
  std::string type;
  std::string text;
  std::vector<std::string> strings;
  std::vector<double> numbers;
};

// A 1-D numeric variable named like the dimension it lies on.
struct CoordinateVariable {
  std::string name;
  std::string type;  // as Attribute::type, numeric
  std::vector<double> values;
  std::vector<Attribute> attributes;
};

struct VariableMetadata {
  std::string name;                     // the variable's own name, without its group
  std::string group;                    // "/" or "/a/b": where it was; informative only
  std::string type;                     // its type in the file ("short" for packed data)
  std::vector<std::string> dimensions;  // one per array dimension, or none
  std::vector<Attribute> attributes;
  std::vector<Attribute> global_attributes;
  std::vector<CoordinateVariable> coordinates;
};

// A variable as a file lists it (`ebzip compress FILE` without ":VARIABLE").
struct VariableSummary {
  std::string name;  // "VAR", "grp/VAR" or an HDF5 path "/grp/dset"
  std::string type;
  std::vector<uint64_t> shape;
  std::vector<std::string> dimensions;  // empty when the file names none
  bool loadable = false;                // ebzip can compress it
};

// The JSON document (an object; non-finite numbers as "NaN", "Infinity",
// "-Infinity", which JSON lacks; a coordinate whose values are start + i *
// step exactly as start, step and count, docs/cli.md).
std::string VariableMetadataToJson(const VariableMetadata& metadata);

// VariableMetadataToJson's document if it fits the archive's metadata block
// (format::kMaxMetadataDocument); else without the coordinate variables, then
// without the global attributes too; "" when even that is too large.
std::string FittingMetadataDocument(VariableMetadata metadata);

// Reads what VariableMetadataToJson wrote. Unknown keys are ignored (a later
// ebzip may add some); INVALID_ARGUMENT for a document that is not JSON or
// whose known keys have the wrong form.
absl::StatusOr<VariableMetadata> ParseVariableMetadata(std::string_view json);

// The attribute called `name`, or nullptr.
const Attribute* FindAttribute(const std::vector<Attribute>& attributes, std::string_view name);

}  // namespace ebzip

#endif  // EBZIP_CLIENT_IO_VARIABLE_METADATA_H_
