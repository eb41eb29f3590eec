// Internal to client/io: a netCDF variable's description (variable_metadata.h)
// as the file gives it. Callers hold NetcdfMutex().
#ifndef EBZIP_CLIENT_IO_NETCDF_METADATA_H_
#define EBZIP_CLIENT_IO_NETCDF_METADATA_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/io/variable_metadata.h"

namespace ebzip {

// Every attribute of variable `varid` (NC_GLOBAL: the group's own) whose type
// the document can hold; others (user-defined types) are left out.
absl::StatusOr<std::vector<Attribute>> ReadNetcdfAttributes(int grpid, int varid);

// Name, type, dimension names and attributes of `varid` in `grpid`, the root
// group's global attributes, and the 1-D numeric coordinate variables of its
// dimensions while they hold at most kMaxCoordinateValues values together.
inline constexpr size_t kMaxCoordinateValues = size_t{1} << 16;
absl::StatusOr<VariableMetadata> ReadNetcdfMetadata(int ncid, int grpid, int varid,
                                                    const std::string& group);

}  // namespace ebzip

#endif  // EBZIP_CLIENT_IO_NETCDF_METADATA_H_
