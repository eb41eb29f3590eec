// Telling a "PATH:VARIABLE" array source from a raw file's name on a command
// line. Apart from array_file.h so that the command line can ask without
// linking the NetCDF and HDF5 readers (client/cli/modules.h).
#ifndef EBZIP_CLIENT_IO_ARRAY_SOURCE_H_
#define EBZIP_CLIENT_IO_ARRAY_SOURCE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ebzip {

// True when `arg` is "PATH:SOMETHING" and PATH is an existing regular file,
// so that a command line can tell sources from raw-file arguments.
bool LooksLikeArraySource(std::string_view arg);

// The first ':' that follows the name of an existing regular file: file
// names may themselves contain ':', variable names rarely start right after
// one.
std::optional<size_t> ArraySourceColon(std::string_view source);

// What a file's magic bytes say it is. netCDF-4 files are HDF5 files, so
// the magic alone cannot tell them apart: a netCDF extension (.nc, .nc4,
// .cdf, .netcdf) then says netCDF, whose library understands netCDF-4 groups
// and dimensions.
enum class ArrayContainer { kNone, kNetcdf, kHdf5 };
ArrayContainer DetectArrayContainer(const std::string& path);

}  // namespace ebzip

#endif  // EBZIP_CLIENT_IO_ARRAY_SOURCE_H_
