#include "client/io/array_source.h"

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/strings/ascii.h"

namespace ebzip {
namespace {

bool IsRegularFile(std::string_view path) {
  std::error_code error;
  return std::filesystem::is_regular_file(std::filesystem::path(path), error);
}

}  // namespace

std::optional<size_t> ArraySourceColon(std::string_view source) {
  for (size_t colon = source.find(':'); colon != std::string_view::npos;
       colon = source.find(':', colon + 1)) {
    if (colon > 0 && IsRegularFile(source.substr(0, colon))) return colon;
  }
  return std::nullopt;
}

bool LooksLikeArraySource(std::string_view arg) {
  std::optional<size_t> colon = ArraySourceColon(arg);
  return colon.has_value() && *colon + 1 < arg.size();
}

ArrayContainer DetectArrayContainer(const std::string& path) {
  std::array<char, 8> magic = {};
  std::ifstream in(path, std::ios::binary);
  in.read(magic.data(), magic.size());
  if (in.gcount() < 4) return ArrayContainer::kNone;
  if (std::memcmp(magic.data(), "CDF", 3) == 0 &&
      (magic[3] == '\x01' || magic[3] == '\x02' || magic[3] == '\x05')) {
    return ArrayContainer::kNetcdf;
  }
  if (in.gcount() == 8 && std::memcmp(magic.data(), "\x89HDF\r\n\x1a\n", 8) == 0) {
    const std::string ext = absl::AsciiStrToLower(std::filesystem::path(path).extension().string());
    const bool netcdf_name = ext == ".nc" || ext == ".nc4" || ext == ".cdf" || ext == ".netcdf";
    return netcdf_name ? ArrayContainer::kNetcdf : ArrayContainer::kHdf5;
  }
  return ArrayContainer::kNone;
}

}  // namespace ebzip
