#include "client/io/array_source.h"

#include <filesystem>
#include <system_error>

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

}  // namespace ebzip
