#include "client/io/netcdf_handle.h"

#include <netcdf.h>

#include <cerrno>
#include <utility>

#include "absl/base/const_init.h"
#include "absl/strings/str_cat.h"

namespace ebzip {

absl::Mutex& NetcdfMutex() {
  ABSL_CONST_INIT static absl::Mutex mutex(absl::kConstInit);
  return mutex;
}

absl::Status NetcdfError(int code, absl::StatusCode fallback, const std::string& context) {
  absl::StatusCode status_code = fallback;
  switch (code) {
    case ENOENT:
    case NC_ENOTVAR:
    case NC_ENOGRP:
      status_code = absl::StatusCode::kNotFound;
      break;
    case EACCES:
    case EPERM:
      status_code = absl::StatusCode::kPermissionDenied;
      break;
    case NC_ENOMEM:
      status_code = absl::StatusCode::kResourceExhausted;
      break;
    default:
      break;
  }
  return absl::Status(status_code, absl::StrCat(context, ": ", nc_strerror(code)));
}

std::pair<std::string, std::string> SplitGroupPath(std::string_view variable) {
  const size_t slash = variable.rfind('/');
  if (slash == std::string_view::npos) return {"/", std::string(variable)};
  std::string group(variable.substr(0, slash));
  if (group.empty() || group[0] != '/') group.insert(group.begin(), '/');
  return {group, std::string(variable.substr(slash + 1))};
}

absl::StatusOr<NetcdfFile> NetcdfFile::Open(const std::string& path) {
  int ncid = -1;
  if (int rc = nc_open(path.c_str(), NC_NOWRITE, &ncid); rc != NC_NOERR) {
    return NetcdfError(rc, absl::StatusCode::kInvalidArgument,
                       absl::StrCat("cannot open ", path, " as netCDF"));
  }
  return NetcdfFile(ncid, path);
}

absl::StatusOr<NetcdfFile> NetcdfFile::Create(const std::string& path, int cmode) {
  int ncid = -1;
  if (int rc = nc_create(path.c_str(), cmode, &ncid); rc != NC_NOERR) {
    return NetcdfError(rc, absl::StatusCode::kInvalidArgument,
                       absl::StrCat("cannot create ", path));
  }
  return NetcdfFile(ncid, path);
}

NetcdfFile::NetcdfFile(NetcdfFile&& other) noexcept
    : ncid_(std::exchange(other.ncid_, -1)), path_(std::move(other.path_)) {}

NetcdfFile::~NetcdfFile() {
  if (ncid_ >= 0) nc_close(ncid_);
}

absl::Status NetcdfFile::Close() {
  const int rc = nc_close(std::exchange(ncid_, -1));
  if (rc != NC_NOERR) {
    return NetcdfError(rc, absl::StatusCode::kDataLoss, absl::StrCat("closing ", path_));
  }
  return absl::OkStatus();
}

}  // namespace ebzip
