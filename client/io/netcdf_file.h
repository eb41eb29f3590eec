// netCDF (classic, 64-bit offset, CDF-5 and netCDF-4) variables in and out.
// Loading goes through the rules of cf_variable.h; writing is for tests.
#ifndef EBZIP_CLIENT_IO_NETCDF_FILE_H_
#define EBZIP_CLIENT_IO_NETCDF_FILE_H_

#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/io/loaded_array.h"
#include "client/io/variable_metadata.h"
#include "client/io/variable_to_write.h"

namespace ebzip {

// `variable` is "VAR", or "grp/sub/VAR" (leading '/' optional) inside
// netCDF-4 groups. NotFound for a missing file, group or variable (the
// message lists the variables there are).
absl::StatusOr<LoadedArray> LoadNetcdfVariable(std::string_view path, std::string_view variable);

// Every variable of the file, in every group ("grp/VAR"), loadable or not.
absl::StatusOr<std::vector<VariableSummary>> ListNetcdfVariables(std::string_view path);

enum class NetcdfFormat { kClassic, k64BitOffset, kNetcdf4 };

struct NetcdfWriteOptions {
  NetcdfFormat format = NetcdfFormat::kClassic;
  bool unlimited_first_dim = false;  // the slowest dimension becomes the record dimension
};

// Creates (or replaces) `path` holding one variable on dimensions named
// dim0, dim1, ...; "grp/VAR" creates the groups, netCDF-4 only.
absl::Status SaveNetcdfVariable(std::string_view path, std::string_view variable,
                                const VariableToWrite& var, const NetcdfWriteOptions& options = {});

}  // namespace ebzip

#endif  // EBZIP_CLIENT_IO_NETCDF_FILE_H_
