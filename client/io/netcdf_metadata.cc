#include "client/io/netcdf_metadata.h"

#include <netcdf.h>

#include <cstddef>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/io/netcdf_handle.h"

namespace ebzip {
namespace {

absl::Status Failed(int rc, const std::string& context) {
  return NetcdfError(rc, absl::StatusCode::kInvalidArgument, context);
}

bool IsNumericType(nc_type type) {
  return type != NC_CHAR && type != NC_STRING && type >= NC_BYTE && type <= NC_MAX_ATOMIC_TYPE;
}

std::string AtomicTypeName(int grpid, nc_type type) {
  char name[NC_MAX_NAME + 1] = {};
  if (nc_inq_type(grpid, type, name, nullptr) != NC_NOERR) return "";
  return name;
}

std::string Name(int grpid, int varid) {
  char name[NC_MAX_NAME + 1] = {};
  nc_inq_varname(grpid, varid, name);
  return name;
}

// A coordinate variable of dimension `dimid`: one named like it, in `grpid`,
// 1-D on that very dimension and numeric; -1 when there is none.
int CoordinateVariableOf(int grpid, int dimid, const std::string& dim_name) {
  int varid = -1;
  if (nc_inq_varid(grpid, dim_name.c_str(), &varid) != NC_NOERR) return -1;
  nc_type type = NC_NAT;
  int ndims = 0;
  int dims[NC_MAX_VAR_DIMS];
  if (nc_inq_var(grpid, varid, nullptr, &type, &ndims, dims, nullptr) != NC_NOERR) return -1;
  return ndims == 1 && dims[0] == dimid && IsNumericType(type) ? varid : -1;
}

}  // namespace

absl::StatusOr<std::vector<Attribute>> ReadNetcdfAttributes(int grpid, int varid) {
  int natts = 0;
  if (int rc = nc_inq_varnatts(grpid, varid, &natts); rc != NC_NOERR) {
    return Failed(rc, "counting attributes");
  }
  std::vector<Attribute> out;
  for (int i = 0; i < natts; ++i) {
    char name[NC_MAX_NAME + 1] = {};
    nc_type type = NC_NAT;
    size_t len = 0;
    if (int rc = nc_inq_attname(grpid, varid, i, name); rc != NC_NOERR) {
      return Failed(rc, "reading attribute names");
    }
    if (int rc = nc_inq_att(grpid, varid, name, &type, &len); rc != NC_NOERR) {
      return Failed(rc, absl::StrCat("attribute ", name));
    }
    Attribute a;
    a.name = name;
    a.type = AtomicTypeName(grpid, type);
    if (type == NC_CHAR) {
      a.text.assign(len, '\0');
      if (int rc = nc_get_att_text(grpid, varid, name, a.text.data()); rc != NC_NOERR) {
        return Failed(rc, absl::StrCat("attribute ", name));
      }
      // Fortran-era writers often store the terminating NUL too.
      a.text = a.text.substr(0, a.text.find('\0'));
    } else if (type == NC_STRING) {
      std::vector<char*> strings(len, nullptr);
      if (int rc = nc_get_att_string(grpid, varid, name, strings.data()); rc != NC_NOERR) {
        return Failed(rc, absl::StrCat("attribute ", name));
      }
      for (char* s : strings) a.strings.emplace_back(s != nullptr ? s : "");
      nc_free_string(len, strings.data());
    } else if (IsNumericType(type)) {
      a.numbers.resize(len);
      if (int rc = nc_get_att_double(grpid, varid, name, a.numbers.data()); rc != NC_NOERR) {
        return Failed(rc, absl::StrCat("attribute ", name));
      }
    } else {
      continue;  // user-defined types: nothing the document can hold
    }
    out.push_back(std::move(a));
  }
  return out;
}

absl::StatusOr<VariableMetadata> ReadNetcdfMetadata(int ncid, int grpid, int varid,
                                                    const std::string& group) {
  VariableMetadata m;
  m.name = Name(grpid, varid);
  m.group = group;
  nc_type type = NC_NAT;
  int ndims = 0;
  if (int rc = nc_inq_var(grpid, varid, nullptr, &type, &ndims, nullptr, nullptr); rc != NC_NOERR) {
    return Failed(rc, m.name);
  }
  m.type = AtomicTypeName(grpid, type);
  std::vector<int> dimids(static_cast<size_t>(ndims));
  if (int rc = nc_inq_vardimid(grpid, varid, dimids.data()); rc != NC_NOERR) {
    return Failed(rc, m.name);
  }
  size_t coordinate_values = 0;
  for (int dimid : dimids) {
    char name[NC_MAX_NAME + 1] = {};
    size_t len = 0;
    if (int rc = nc_inq_dim(grpid, dimid, name, &len); rc != NC_NOERR) return Failed(rc, m.name);
    m.dimensions.emplace_back(name);
    const int coordinate = CoordinateVariableOf(grpid, dimid, name);
    // The variable itself when it is a coordinate variable: stored once.
    if (coordinate < 0 || coordinate == varid) continue;
    coordinate_values += len;
    if (coordinate_values > kMaxCoordinateValues) continue;
    CoordinateVariable c;
    c.name = name;
    nc_type coordinate_type = NC_NAT;
    nc_inq_vartype(grpid, coordinate, &coordinate_type);
    c.type = AtomicTypeName(grpid, coordinate_type);
    c.values.resize(len);
    if (int rc = nc_get_var_double(grpid, coordinate, c.values.data()); rc != NC_NOERR) {
      return Failed(rc, absl::StrCat("reading coordinate variable ", name));
    }
    absl::StatusOr<std::vector<Attribute>> attributes = ReadNetcdfAttributes(grpid, coordinate);
    if (!attributes.ok()) return attributes.status();
    c.attributes = *std::move(attributes);
    m.coordinates.push_back(std::move(c));
  }
  absl::StatusOr<std::vector<Attribute>> attributes = ReadNetcdfAttributes(grpid, varid);
  if (!attributes.ok()) return attributes.status();
  m.attributes = *std::move(attributes);
  absl::StatusOr<std::vector<Attribute>> global = ReadNetcdfAttributes(ncid, NC_GLOBAL);
  if (!global.ok()) return global.status();
  m.global_attributes = *std::move(global);
  return m;
}

}  // namespace ebzip
