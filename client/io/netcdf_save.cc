// SaveNetcdfVariable (netcdf_file.h): a writer for tests, kept apart from
// the loader that production code uses.

#include <netcdf.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/io/netcdf_file.h"
#include "client/io/netcdf_handle.h"

namespace ebzip {
namespace {

nc_type NetcdfType(StoredType type) {
  switch (type) {
    case StoredType::kInt8:
      return NC_BYTE;
    case StoredType::kInt16:
      return NC_SHORT;
    case StoredType::kInt32:
      return NC_INT;
    case StoredType::kFloat32:
      return NC_FLOAT;
    case StoredType::kFloat64:
      return NC_DOUBLE;
  }
  return NC_NAT;
}

int CreateMode(NetcdfFormat format) {
  switch (format) {
    case NetcdfFormat::kClassic:
      return NC_CLOBBER;
    case NetcdfFormat::k64BitOffset:
      return NC_CLOBBER | NC_64BIT_OFFSET;
    case NetcdfFormat::kNetcdf4:
      return NC_CLOBBER | NC_NETCDF4;
  }
  return NC_CLOBBER;
}

absl::StatusOr<int> DefineGroups(int ncid, const std::string& group) {
  int grpid = ncid;
  for (absl::string_view name : absl::StrSplit(group, '/', absl::SkipEmpty())) {
    int child = -1;
    if (int rc = nc_def_grp(grpid, std::string(name).c_str(), &child); rc != NC_NOERR) {
      return NetcdfError(rc, absl::StatusCode::kInvalidArgument,
                         absl::StrCat("creating group ", name));
    }
    grpid = child;
  }
  return grpid;
}

// The body of SaveNetcdfVariable once the file is open; any failure is
// reported with the file name by the caller.
absl::Status DefineAndWrite(int ncid, std::string_view variable, const VariableToWrite& var,
                            const NetcdfWriteOptions& options) {
  auto [group, name] = SplitGroupPath(variable);
  absl::StatusOr<int> grpid = DefineGroups(ncid, group);
  if (!grpid.ok()) return grpid.status();

  std::vector<int> dimids;
  for (size_t i = 0; i < var.shape.size(); ++i) {
    const size_t len = i == 0 && options.unlimited_first_dim ? NC_UNLIMITED : var.shape[i];
    int dimid = -1;
    if (int rc = nc_def_dim(*grpid, absl::StrCat("dim", i).c_str(), len, &dimid); rc != NC_NOERR) {
      return NetcdfError(rc, absl::StatusCode::kInvalidArgument, "defining dimensions");
    }
    dimids.push_back(dimid);
  }
  const nc_type type = NetcdfType(var.type);
  int varid = -1;
  if (int rc = nc_def_var(*grpid, name.c_str(), type, static_cast<int>(dimids.size()),
                          dimids.data(), &varid);
      rc != NC_NOERR) {
    return NetcdfError(rc, absl::StatusCode::kInvalidArgument, absl::StrCat("defining ", name));
  }

  struct {
    const char* name;
    const std::optional<double>& value;
    nc_type type;
  } numeric[] = {{"_FillValue", var.fill_value, type},
                 {"missing_value", var.missing_value, type},
                 {"scale_factor", var.scale_factor, NC_DOUBLE},
                 {"add_offset", var.add_offset, NC_DOUBLE}};
  for (const auto& attribute : numeric) {
    if (!attribute.value.has_value()) continue;
    if (int rc =
            nc_put_att_double(*grpid, varid, attribute.name, attribute.type, 1, &*attribute.value);
        rc != NC_NOERR) {
      return NetcdfError(rc, absl::StatusCode::kInvalidArgument,
                         absl::StrCat("writing attribute ", attribute.name));
    }
  }
  if (!var.units.empty()) {
    if (int rc = nc_put_att_text(*grpid, varid, "units", var.units.size(), var.units.data());
        rc != NC_NOERR) {
      return NetcdfError(rc, absl::StatusCode::kInvalidArgument, "writing attribute units");
    }
  }
  if (int rc = nc_enddef(ncid); rc != NC_NOERR) {
    return NetcdfError(rc, absl::StatusCode::kInvalidArgument, "ending define mode");
  }

  // put_vara with explicit counts, because put_var writes only the records a
  // record variable already has, which for a new file is none. The spare
  // trailing element keeps the arrays non-null for a scalar.
  std::vector<size_t> start(var.shape.size() + 1, 0);
  std::vector<size_t> count(var.shape.begin(), var.shape.end());
  count.push_back(1);
  if (int rc = nc_put_vara_double(*grpid, varid, start.data(), count.data(), var.values.data());
      rc != NC_NOERR) {
    return NetcdfError(rc, absl::StatusCode::kInvalidArgument, absl::StrCat("writing ", name));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SaveNetcdfVariable(std::string_view path_view, std::string_view variable,
                                const VariableToWrite& var, const NetcdfWriteOptions& options) {
  if (absl::Status s = CheckVariableToWrite(var); !s.ok()) return s;
  if (variable.find('/') != std::string_view::npos && options.format != NetcdfFormat::kNetcdf4) {
    return absl::InvalidArgumentError(
        absl::StrCat("groups (", std::string(variable), ") need the netCDF-4 format"));
  }
  const std::string path(path_view);
  absl::MutexLock lock(&NetcdfMutex());
  absl::StatusOr<NetcdfFile> file = NetcdfFile::Create(path, CreateMode(options.format));
  if (!file.ok()) return file.status();
  if (absl::Status s = DefineAndWrite(file->id(), variable, var, options); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
  }
  return file->Close();
}

}  // namespace ebzip
