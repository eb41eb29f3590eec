// The real fields the test suite compresses, all from Debian's
// ferret-datasets package, and the way a test loads one.
#ifndef EBZIP_TESTS_REAL_FIELDS_H_
#define EBZIP_TESTS_REAL_FIELDS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "client/io/loaded_array.h"

namespace ebzip {

struct RealField {
  std::string name;      // registry key: "etopo5", "temp", ...
  std::string path;      // file name relative to FerretDataDir(); see RealFieldPath
  std::string variable;  // netCDF variable name
};

// etopo5, temp, uwnd, salt and etopo20 (small, for quick tests).
const std::vector<RealField>& RealFields();

// $EBZIP_FERRET_DATA if set, else /usr/share/ferret-vis/data. Read on every
// call, so a test can point it elsewhere.
std::string FerretDataDir();

// The file's full path under today's FerretDataDir().
std::string RealFieldPath(const RealField& field);

// NotFound for an unknown name, and for a missing file with a message that
// says how to install the package.
absl::StatusOr<LoadedArray> LoadRealField(std::string_view name);

// Loads `name` into *out, or fails the current test (fails, not skips: CI
// installs the package, so a missing file is a broken setup). Wrap it in
// ASSERT_NO_FATAL_FAILURE, or use ASSERT_LOAD_REAL_FIELD.
void LoadRealFieldOrFail(std::string_view name, LoadedArray* out);

}  // namespace ebzip

// Declares `LoadedArray var` holding the real field `name`, returning from
// the test on failure:  ASSERT_LOAD_REAL_FIELD(field, "etopo20");
#define ASSERT_LOAD_REAL_FIELD(var, name) \
  ::ebzip::LoadedArray var;               \
  ASSERT_NO_FATAL_FAILURE(::ebzip::LoadRealFieldOrFail((name), &var))

#endif  // EBZIP_TESTS_REAL_FIELDS_H_
