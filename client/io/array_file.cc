#include "client/io/array_file.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "client/io/hdf5_file.h"
#include "client/io/netcdf_file.h"

namespace ebzip {
namespace {

enum class Container { kUnknown, kNetcdf, kHdf5 };

// netCDF-4 files are HDF5 files, so the magic alone cannot tell them apart;
// a netCDF extension then picks the netCDF library, which understands
// netCDF-4 groups and dimensions.
Container DetectContainer(const std::string& path) {
  std::array<char, 8> magic = {};
  std::ifstream in(path, std::ios::binary);
  in.read(magic.data(), magic.size());
  if (in.gcount() < 4) return Container::kUnknown;
  if (std::memcmp(magic.data(), "CDF", 3) == 0 &&
      (magic[3] == '\x01' || magic[3] == '\x02' || magic[3] == '\x05')) {
    return Container::kNetcdf;
  }
  if (in.gcount() == 8 && std::memcmp(magic.data(), "\x89HDF\r\n\x1a\n", 8) == 0) {
    const std::string ext = absl::AsciiStrToLower(std::filesystem::path(path).extension().string());
    const bool netcdf_name = ext == ".nc" || ext == ".nc4" || ext == ".cdf" || ext == ".netcdf";
    return netcdf_name ? Container::kNetcdf : Container::kHdf5;
  }
  return Container::kUnknown;
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
  switch (DetectContainer(path)) {
    case Container::kNetcdf:
      return LoadNetcdfVariable(path, variable);
    case Container::kHdf5:
      return LoadHdf5Dataset(path, variable);
    case Container::kUnknown:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, " is neither netCDF (magic CDF\\x01, CDF\\x02, CDF\\x05) nor HDF5 ",
                   "(magic \\x89HDF)"));
}

}  // namespace ebzip
