#include "client/io/netcdf_file.h"

#include <netcdf.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/io/cf_variable.h"
#include "client/io/netcdf_handle.h"
#include "client/io/netcdf_metadata.h"

namespace ebzip {
namespace {

absl::StatusOr<int> FindGroup(int ncid, const std::string& group, const std::string& path) {
  if (group == "/") return ncid;
  int grpid = -1;
  if (nc_inq_grp_full_ncid(ncid, group.c_str(), &grpid) != NC_NOERR) {
    return absl::NotFoundError(absl::StrCat(path, " has no group ", group));
  }
  return grpid;
}

std::string VariableNames(int grpid) {
  int nvars = 0;
  if (nc_inq_varids(grpid, &nvars, nullptr) != NC_NOERR) return "(unknown)";
  std::vector<int> ids(static_cast<size_t>(nvars));
  if (nvars == 0 || nc_inq_varids(grpid, &nvars, ids.data()) != NC_NOERR) return "(none)";
  std::vector<std::string> names;
  for (int id : ids) {
    char name[NC_MAX_NAME + 1] = {};
    if (nc_inq_varname(grpid, id, name) == NC_NOERR) names.emplace_back(name);
  }
  return absl::StrJoin(names, ", ");
}

StoredKind KindOf(nc_type type) {
  switch (type) {
    case NC_FLOAT:
      return StoredKind::kFloat32;
    case NC_DOUBLE:
      return StoredKind::kFloat64;
    case NC_BYTE:
    case NC_UBYTE:
    case NC_SHORT:
    case NC_USHORT:
    case NC_INT:
    case NC_UINT:
      return StoredKind::kInteger;
    default:
      return StoredKind::kUnsupported;
  }
}

bool IsNumeric(nc_type type) {
  return type != NC_CHAR && type != NC_STRING && type >= NC_BYTE && type <= NC_MAX_ATOMIC_TYPE;
}

std::string TypeName(int grpid, nc_type type) {
  char name[NC_MAX_NAME + 1] = {};
  if (nc_inq_type(grpid, type, name, nullptr) != NC_NOERR) return absl::StrCat("type ", type);
  if (type > NC_MAX_ATOMIC_TYPE) return absl::StrCat("user-defined type ", name);
  return name;
}

// Absent is fine; present but not a number is an error, because ignoring a
// packing or fill attribute would silently load the wrong values.
absl::StatusOr<std::optional<double>> NumericAttribute(int grpid, int varid, const char* name,
                                                       const std::string& label) {
  nc_type type = NC_NAT;
  size_t len = 0;
  const int rc = nc_inq_att(grpid, varid, name, &type, &len);
  if (rc == NC_ENOTATT) return std::nullopt;
  if (rc != NC_NOERR) {
    return NetcdfError(rc, absl::StatusCode::kInvalidArgument,
                       absl::StrCat(label, " attribute ", name));
  }
  if (!IsNumeric(type) || len == 0) {
    return absl::InvalidArgumentError(absl::StrCat(label, " attribute ", name, " is not a number"));
  }
  std::vector<double> values(len);
  if (int get = nc_get_att_double(grpid, varid, name, values.data()); get != NC_NOERR) {
    return NetcdfError(get, absl::StatusCode::kInvalidArgument,
                       absl::StrCat(label, " attribute ", name));
  }
  return values[0];
}

// Units only label the description, so anything unreadable just goes blank.
std::string TextAttribute(int grpid, int varid, const char* name) {
  nc_type type = NC_NAT;
  size_t len = 0;
  if (nc_inq_att(grpid, varid, name, &type, &len) != NC_NOERR || len == 0) return "";
  if (type == NC_CHAR) {
    std::string text(len, '\0');
    if (nc_get_att_text(grpid, varid, name, text.data()) != NC_NOERR) return "";
    return text.substr(0, text.find('\0'));
  }
  if (type == NC_STRING) {
    std::vector<char*> strings(len, nullptr);
    if (nc_get_att_string(grpid, varid, name, strings.data()) != NC_NOERR) return "";
    std::string text = strings[0] != nullptr ? strings[0] : "";
    nc_free_string(len, strings.data());
    return text;
  }
  return "";
}

absl::StatusOr<CfVariable> Inspect(int grpid, int varid, const std::string& label) {
  CfVariable var;
  var.label = label;
  nc_type type = NC_NAT;
  int ndims = 0;
  if (int rc = nc_inq_var(grpid, varid, nullptr, &type, &ndims, nullptr, nullptr); rc != NC_NOERR) {
    return NetcdfError(rc, absl::StatusCode::kInvalidArgument, label);
  }
  var.kind = KindOf(type);
  var.type_name = TypeName(grpid, type);
  std::vector<int> dimids(static_cast<size_t>(ndims));
  if (int rc = nc_inq_vardimid(grpid, varid, dimids.data()); rc != NC_NOERR) {
    return NetcdfError(rc, absl::StatusCode::kInvalidArgument, label);
  }
  for (int dimid : dimids) {
    size_t len = 0;
    if (int rc = nc_inq_dimlen(grpid, dimid, &len); rc != NC_NOERR) {
      return NetcdfError(rc, absl::StatusCode::kInvalidArgument, label);
    }
    var.shape.push_back(len);
  }
  if (var.kind == StoredKind::kUnsupported) return var;

  for (const NumericAttributeSlot& attribute : NumericAttributeSlots(var)) {
    absl::StatusOr<std::optional<double>> value =
        NumericAttribute(grpid, varid, attribute.name, label);
    if (!value.ok()) return value.status();
    *attribute.value = *value;
  }
  var.units = TextAttribute(grpid, varid, "units");
  return var;
}

absl::Status ReadValues(int grpid, int varid, DType type, const std::string& label,
                        std::vector<uint8_t>& values) {
  const int rc = type == DType::kFloat32
                     ? nc_get_var_float(grpid, varid, reinterpret_cast<float*>(values.data()))
                     : nc_get_var_double(grpid, varid, reinterpret_cast<double*>(values.data()));
  if (rc != NC_NOERR) {
    return NetcdfError(rc, absl::StatusCode::kDataLoss, absl::StrCat("reading ", label));
  }
  return absl::OkStatus();
}

// Appends the variables of `grpid` and of its subgroups, depth first, named
// with the group path `prefix` ("" or "a/b/").
absl::Status ListGroup(int grpid, const std::string& prefix, const std::string& path,
                       std::vector<VariableSummary>& out) {
  int nvars = 0;
  if (int rc = nc_inq_varids(grpid, &nvars, nullptr); rc != NC_NOERR) {
    return NetcdfError(rc, absl::StatusCode::kInvalidArgument, path);
  }
  std::vector<int> ids(static_cast<size_t>(nvars));
  if (nvars > 0) nc_inq_varids(grpid, &nvars, ids.data());
  for (int varid : ids) {
    char name[NC_MAX_NAME + 1] = {};
    nc_inq_varname(grpid, varid, name);
    const std::string full = absl::StrCat(prefix, name);
    VariableSummary summary;
    summary.name = full;
    // A variable that would not load (a malformed attribute) is listed as such.
    absl::StatusOr<CfVariable> var = Inspect(grpid, varid, SourceLabel(path, full));
    if (var.ok()) {
      summary.type = var->type_name;
      summary.shape = var->shape;
      summary.loadable = LoadedSpec(*var).ok();
    } else {
      nc_type type = NC_NAT;
      nc_inq_vartype(grpid, varid, &type);
      summary.type = TypeName(grpid, type);
    }
    int ndims = 0;
    nc_inq_varndims(grpid, varid, &ndims);
    std::vector<int> dimids(static_cast<size_t>(ndims));
    nc_inq_vardimid(grpid, varid, dimids.data());
    for (int dimid : dimids) {
      char dim[NC_MAX_NAME + 1] = {};
      nc_inq_dimname(grpid, dimid, dim);
      summary.dimensions.emplace_back(dim);
    }
    out.push_back(std::move(summary));
  }
  int ngroups = 0;
  if (nc_inq_grps(grpid, &ngroups, nullptr) != NC_NOERR || ngroups == 0) return absl::OkStatus();
  std::vector<int> groups(static_cast<size_t>(ngroups));
  nc_inq_grps(grpid, &ngroups, groups.data());
  for (int child : groups) {
    char name[NC_MAX_NAME + 1] = {};
    nc_inq_grpname(child, name);
    if (absl::Status s = ListGroup(child, absl::StrCat(prefix, name, "/"), path, out); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LoadedArray> LoadNetcdfVariable(std::string_view path_view,
                                               std::string_view variable) {
  const std::string path(path_view);
  const std::string label = SourceLabel(path, variable);
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    return absl::NotFoundError(absl::StrCat("no such file: ", path));
  }

  absl::MutexLock lock(&NetcdfMutex());
  absl::StatusOr<NetcdfFile> file = NetcdfFile::Open(path);
  if (!file.ok()) return file.status();
  auto [group, name] = SplitGroupPath(variable);
  absl::StatusOr<int> grpid = FindGroup(file->id(), group, path);
  if (!grpid.ok()) return grpid.status();
  int varid = -1;
  if (int rc = nc_inq_varid(*grpid, name.c_str(), &varid); rc != NC_NOERR) {
    if (rc != NC_ENOTVAR) return NetcdfError(rc, absl::StatusCode::kInvalidArgument, label);
    return absl::NotFoundError(
        absl::StrCat(path, " has no variable ", name, "; variables: ", VariableNames(*grpid)));
  }

  absl::StatusOr<CfVariable> var = Inspect(*grpid, varid, label);
  if (!var.ok()) return var.status();
  absl::StatusOr<ArraySpec> spec = LoadedSpec(*var);
  if (!spec.ok()) return spec.status();
  const DType read_type = ReadType(*var);
  std::vector<uint8_t> values(spec->num_elements() * DTypeSize(read_type));
  if (absl::Status s = ReadValues(*grpid, varid, read_type, label, values); !s.ok()) return s;
  LoadedArray loaded = FinishLoad(*var, *std::move(spec), std::move(values));
  absl::StatusOr<VariableMetadata> metadata = ReadNetcdfMetadata(file->id(), *grpid, varid, group);
  if (!metadata.ok()) {
    return absl::Status(metadata.status().code(),
                        absl::StrCat(label, ": ", metadata.status().message()));
  }
  DescribeLoaded(*var, loaded.spec.dtype, *metadata);
  loaded.metadata = FittingMetadataDocument(*std::move(metadata));
  return loaded;
}

absl::StatusOr<std::vector<VariableSummary>> ListNetcdfVariables(std::string_view path_view) {
  const std::string path(path_view);
  absl::MutexLock lock(&NetcdfMutex());
  absl::StatusOr<NetcdfFile> file = NetcdfFile::Open(path);
  if (!file.ok()) return file.status();
  std::vector<VariableSummary> out;
  if (absl::Status s = ListGroup(file->id(), "", path, out); !s.ok()) return s;
  return out;
}

}  // namespace ebzip
