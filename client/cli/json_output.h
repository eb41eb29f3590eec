// --json: a command's result as one JSON object on one line, values typed
// (numbers as numbers, absent values as null), through nlohmann-json.
#ifndef EBZIP_CLIENT_CLI_JSON_OUTPUT_H_
#define EBZIP_CLIENT_CLI_JSON_OUTPUT_H_

#include <cstdio>

#include "nlohmann/json.hpp"

namespace ebzip::cli {

// Objects keep the order their members were given in (ordered_json): the
// output reads like the text it stands for.
using Json = nlohmann::ordered_json;

// Writes `value` and a newline to `out`. Non-finite numbers come out as
// null (JSON has no Inf or NaN) and invalid UTF-8 in strings (file names)
// as U+FFFD, so that printing never fails.
void PrintJson(const Json& value, std::FILE* out = stdout);

}  // namespace ebzip::cli

#endif  // EBZIP_CLIENT_CLI_JSON_OUTPUT_H_
