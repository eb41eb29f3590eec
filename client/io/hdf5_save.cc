// SaveHdf5Dataset (hdf5_file.h): a writer for tests, kept apart from the
// loader that production code uses.

#include <hdf5.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/io/hdf5_file.h"
#include "client/io/hdf5_handle.h"

namespace ebzip {
namespace {

hid_t FileType(StoredType type, bool big_endian) {
  switch (type) {
    case StoredType::kInt8:
      return big_endian ? H5T_STD_I8BE : H5T_STD_I8LE;
    case StoredType::kInt16:
      return big_endian ? H5T_STD_I16BE : H5T_STD_I16LE;
    case StoredType::kInt32:
      return big_endian ? H5T_STD_I32BE : H5T_STD_I32LE;
    case StoredType::kFloat32:
      return big_endian ? H5T_IEEE_F32BE : H5T_IEEE_F32LE;
    case StoredType::kFloat64:
      return big_endian ? H5T_IEEE_F64BE : H5T_IEEE_F64LE;
  }
  return H5T_IEEE_F64LE;
}

absl::Status WriteNumericAttribute(hid_t dataset, const char* name, hid_t type, double value) {
  Hdf5Id space(H5Screate(H5S_SCALAR), H5Sclose);
  Hdf5Id attribute(H5Acreate2(dataset, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                   H5Aclose);
  if (!attribute.valid() || H5Awrite(attribute.get(), H5T_NATIVE_DOUBLE, &value) < 0) {
    return absl::InternalError(absl::StrCat("writing attribute ", name));
  }
  return absl::OkStatus();
}

absl::Status WriteStringAttribute(hid_t dataset, const char* name, const std::string& value) {
  Hdf5Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  Hdf5Id space(H5Screate(H5S_SCALAR), H5Sclose);
  if (!type.valid() || H5Tset_size(type.get(), value.size()) < 0) {
    return absl::InternalError(absl::StrCat("writing attribute ", name));
  }
  Hdf5Id attribute(H5Acreate2(dataset, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                   H5Aclose);
  if (!attribute.valid() || H5Awrite(attribute.get(), type.get(), value.data()) < 0) {
    return absl::InternalError(absl::StrCat("writing attribute ", name));
  }
  return absl::OkStatus();
}

// The body of SaveHdf5Dataset once the file exists. Everything it opens is
// closed when it returns, before the caller closes (and so flushes) the file.
absl::Status CreateAndWrite(hid_t file, std::string_view name, const VariableToWrite& var,
                            const Hdf5WriteOptions& options) {
  Hdf5Id link_options(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(link_options.get(), 1);
  const std::vector<hsize_t> dims(var.shape.begin(), var.shape.end());
  Hdf5Id space(dims.empty() ? H5Screate(H5S_SCALAR)
                            : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
               H5Sclose);
  const hid_t type = FileType(var.type, options.big_endian);
  Hdf5Id dataset(H5Dcreate2(file, AbsoluteName(name).c_str(), type, space.get(), link_options.get(),
                            H5P_DEFAULT, H5P_DEFAULT),
                 H5Dclose);
  if (!dataset.valid())
    return absl::InvalidArgumentError(absl::StrCat("cannot create ", std::string(name)));
  if (H5Dwrite(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, var.values.data()) <
      0) {
    return absl::InternalError(absl::StrCat("writing ", std::string(name)));
  }
  struct {
    const char* name;
    const std::optional<double>& value;
    hid_t type;
  } numeric[] = {{"_FillValue", var.fill_value, type},
                 {"missing_value", var.missing_value, type},
                 {"scale_factor", var.scale_factor, H5T_IEEE_F64LE},
                 {"add_offset", var.add_offset, H5T_IEEE_F64LE}};
  for (const auto& attribute : numeric) {
    if (!attribute.value.has_value()) continue;
    absl::Status s =
        WriteNumericAttribute(dataset.get(), attribute.name, attribute.type, *attribute.value);
    if (!s.ok()) return s;
  }
  if (!var.units.empty()) return WriteStringAttribute(dataset.get(), "units", var.units);
  return absl::OkStatus();
}

}  // namespace

absl::Status SaveHdf5Dataset(std::string_view path_view, std::string_view dataset,
                             const VariableToWrite& var, const Hdf5WriteOptions& options) {
  if (absl::Status s = CheckVariableToWrite(var); !s.ok()) return s;
  const std::string path(path_view);
  ScopedHdf5Quiet quiet;
  Hdf5Id file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) return absl::InvalidArgumentError(absl::StrCat("cannot create ", path));
  if (absl::Status s = CreateAndWrite(file.get(), dataset, var, options); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
  }
  if (file.Close() < 0) return absl::DataLossError(absl::StrCat("closing ", path, " failed"));
  return absl::OkStatus();
}

}  // namespace ebzip
