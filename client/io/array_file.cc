#include "client/io/array_file.h"

#include <filesystem>
#include <optional>
#include <string>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/io/hdf5_file.h"
#include "client/io/netcdf_file.h"

namespace ebzip {

namespace {

absl::Status NotAnArrayFile(const std::string& path) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, " is neither netCDF (magic CDF\\x01, CDF\\x02, CDF\\x05) nor HDF5 ",
                   "(magic \\x89HDF)"));
}

}  // namespace

absl::StatusOr<LoadedArray> LoadArraySource(std::string_view source) {
  const size_t first_colon = source.find(':');
  if (first_colon == std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected PATH:VARIABLE (e.g. data.nc:TEMP), got \"", std::string(source), "\""));
  }
  std::optional<size_t> colon = ArraySourceColon(source);
  if (!colon.has_value()) {
    const std::string path(source.substr(0, first_colon));
    std::error_code error;
    if (std::filesystem::exists(path, error)) {
      return absl::InvalidArgumentError(absl::StrCat(path, " is not a regular file"));
    }
    return absl::NotFoundError(absl::StrCat("no such file: ", path));
  }
  const std::string path(source.substr(0, *colon));
  const std::string_view variable = source.substr(*colon + 1);
  if (variable.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no variable named after the ':' in \"", std::string(source), "\""));
  }
  switch (DetectArrayContainer(path)) {
    case ArrayContainer::kNetcdf:
      return LoadNetcdfVariable(path, variable);
    case ArrayContainer::kHdf5:
      return LoadHdf5Dataset(path, variable);
    case ArrayContainer::kNone:
      break;
  }
  return NotAnArrayFile(path);
}

absl::StatusOr<std::vector<VariableSummary>> ListArrayFile(const std::string& path) {
  switch (DetectArrayContainer(path)) {
    case ArrayContainer::kNetcdf:
      return ListNetcdfVariables(path);
    case ArrayContainer::kHdf5:
      return ListHdf5Datasets(path);
    case ArrayContainer::kNone:
      break;
  }
  return NotAnArrayFile(path);
}

}  // namespace ebzip
