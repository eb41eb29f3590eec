// Loading one array from a scientific data file named on a command line as
// "PATH:VARIABLE", whatever the container format.
#ifndef EBZIP_CLIENT_IO_ARRAY_FILE_H_
#define EBZIP_CLIENT_IO_ARRAY_FILE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "client/io/array_source.h"
#include "client/io/loaded_array.h"
#include "client/io/variable_metadata.h"

namespace ebzip {

// "path.nc:VAR" or "path.cdf:VAR" load a netCDF variable ("path.nc:grp/VAR"
// in a netCDF-4 group); "path.h5:/group/dset" or "path.hdf5:dset" load an
// HDF5 dataset. The format comes from the file's magic bytes; the extension
// only decides between netCDF-4 and plain HDF5, which share a magic.
// Errors: NotFound (no file, no variable), InvalidArgument (malformed source,
// unknown format, unsupported type or rank), DataLoss (unreadable data).
absl::StatusOr<LoadedArray> LoadArraySource(std::string_view source);

// The variables (datasets) of a netCDF or HDF5 file, loadable or not.
absl::StatusOr<std::vector<VariableSummary>> ListArrayFile(const std::string& path);

}  // namespace ebzip

#endif  // EBZIP_CLIENT_IO_ARRAY_FILE_H_
