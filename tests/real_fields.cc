#include "tests/real_fields.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/io/netcdf_file.h"
#include "gtest/gtest.h"

namespace ebzip {

const std::vector<RealField>& RealFields() {
  // Shapes and fills as the files say (ncdump -h), slowest dimension first.
  static const std::vector<RealField>* const fields = new std::vector<RealField>{
      {"etopo5", "etopo5.cdf", "ROSE"},             // relief, 2161x4320, fill -1e34
      {"temp", "ocean_atlas_subset.nc", "TEMP"},    // 12x19x90x180, fill -1e34
      {"uwnd", "monthly_navy_winds.cdf", "UWND"},   // 132x73x144, fill -99.9
      {"salt", "levitus_climatology.cdf", "SALT"},  // 20x180x360, fill -1e10
      {"etopo20", "etopo20.cdf", "ROSE"},           // relief, 540x1081, fill -1e34
  };
  return *fields;
}

std::string FerretDataDir() {
  const char* dir = std::getenv("EBZIP_FERRET_DATA");
  return dir != nullptr && *dir != '\0' ? dir : "/usr/share/ferret-vis/data";
}

std::string RealFieldPath(const RealField& field) {
  return absl::StrCat(FerretDataDir(), "/", field.path);
}

absl::StatusOr<LoadedArray> LoadRealField(std::string_view name) {
  std::string known;
  for (const RealField& field : RealFields()) {
    absl::StrAppend(&known, " ", field.name);
    if (field.name != name) continue;
    const std::string path = RealFieldPath(field);
    std::error_code error;
    if (!std::filesystem::exists(path, error)) {
      return absl::NotFoundError(
          absl::StrCat("ferret-datasets not installed: run scripts/install_deps.sh (missing ", path,
                       "; EBZIP_FERRET_DATA overrides the directory)"));
    }
    return LoadNetcdfVariable(path, field.variable);
  }
  return absl::NotFoundError(
      absl::StrCat("no real field named ", std::string(name), "; known:", known));
}

void LoadRealFieldOrFail(std::string_view name, LoadedArray* out) {
  absl::StatusOr<LoadedArray> loaded = LoadRealField(name);
  ASSERT_TRUE(loaded.ok()) << "loading real field " << name << ": " << loaded.status();
  *out = *std::move(loaded);
}

}  // namespace ebzip
