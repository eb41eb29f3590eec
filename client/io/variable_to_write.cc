#include "client/io/variable_to_write.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "codec/types.h"

namespace ebzip {

absl::Status CheckVariableToWrite(const VariableToWrite& var) {
  uint64_t expected = 1;
  for (uint64_t d : var.shape) expected *= d;
  if (var.values.size() != expected) {
    const std::string shape = var.shape.empty() ? "a scalar" : ShapeToString(var.shape);
    return absl::InvalidArgumentError(
        absl::StrCat(shape, " needs ", expected, " values, got ", var.values.size()));
  }
  return absl::OkStatus();
}

}  // namespace ebzip
