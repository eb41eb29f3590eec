#include "client/cli/json_output.h"

#include <string>

namespace ebzip::cli {

void PrintJson(const Json& value, std::FILE* out) {
  const std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::fprintf(out, "%s\n", text.c_str());
  std::fflush(out);
}

}  // namespace ebzip::cli
