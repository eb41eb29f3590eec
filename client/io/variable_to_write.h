// What the writers in netcdf_file.h and hdf5_file.h take. They exist so that
// tests can build files with known contents; the values are given as stored
// (already packed), so a test controls exactly what lands in the file.
#ifndef EBZIP_CLIENT_IO_VARIABLE_TO_WRITE_H_
#define EBZIP_CLIENT_IO_VARIABLE_TO_WRITE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace ebzip {

enum class StoredType { kInt8, kInt16, kInt32, kFloat32, kFloat64 };

struct VariableToWrite {
  StoredType type = StoredType::kFloat32;
  // Any rank, a scalar when empty: tests also need files the loader rejects.
  std::vector<uint64_t> shape;
  std::vector<double> values;           // C order; the library converts them to `type`
  std::optional<double> fill_value;     // _FillValue, in `type`
  std::optional<double> missing_value;  // missing_value, in `type`
  std::optional<double> scale_factor;   // written as double
  std::optional<double> add_offset;     // written as double
  std::string units;                    // omitted when empty
};

// InvalidArgument unless values.size() matches the shape (1 for a scalar).
absl::Status CheckVariableToWrite(const VariableToWrite& var);

}  // namespace ebzip

#endif  // EBZIP_CLIENT_IO_VARIABLE_TO_WRITE_H_
