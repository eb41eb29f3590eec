// Modes chosen by name on ebzipd's command line (--backend, --gpu_wait,
// --gpu_failure_policy): each enum's names in one table, the default first,
// parsed once with an error that names the flag and what it takes. NameOf
// also names other enums for logs (a call's states, call_state.cc).
#ifndef EBZIP_SERVER_ENUM_NAMES_H_
#define EBZIP_SERVER_ENUM_NAMES_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace ebzip::server {

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

// The value named `text` in `names`; INVALID_ARGUMENT otherwise:
// "--gpu_wait must be yield, block or spin, not \"sometimes\"".
template <typename E, size_t N>
absl::StatusOr<E> ParseEnumName(absl::string_view flag, const EnumName<E> (&names)[N],
                                absl::string_view text) {
  std::string all;
  for (size_t i = 0; i < N; ++i) {
    if (text == names[i].name) return names[i].value;
    absl::StrAppend(&all, i == 0 ? "" : i + 1 == N ? " or " : ", ", names[i].name);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, " must be ", all, ", not \"", text, "\""));
}

// The name of `value`; "?" for a value not in the table.
template <typename E, size_t N>
const char* NameOf(const EnumName<E> (&names)[N], E value) {
  for (const EnumName<E>& n : names) {
    if (n.value == value) return n.name;
  }
  return "?";
}

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_ENUM_NAMES_H_
