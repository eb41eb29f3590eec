// HDF5 datasets in and out. Loading goes through the rules of cf_variable.h,
// reading the same attribute names (_FillValue, missing_value, scale_factor,
// add_offset, units) that netCDF-4 and most HDF5 writers use; writing is for
// tests.
#ifndef EBZIP_CLIENT_IO_HDF5_FILE_H_
#define EBZIP_CLIENT_IO_HDF5_FILE_H_

#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/io/loaded_array.h"
#include "client/io/variable_metadata.h"
#include "client/io/variable_to_write.h"

namespace ebzip {

// `dataset` is "/group/dset"; the leading '/' is optional. NotFound for a
// missing file or dataset (the message lists the datasets there are).
absl::StatusOr<LoadedArray> LoadHdf5Dataset(std::string_view path, std::string_view dataset);

// Every dataset of the file, loadable or not, by absolute path.
absl::StatusOr<std::vector<VariableSummary>> ListHdf5Datasets(std::string_view path);

struct Hdf5WriteOptions {
  bool big_endian = false;  // store values big-endian, to test conversion on load
};

// Creates (or replaces) `path` holding one dataset, with any intermediate
// groups; attributes go on the dataset.
absl::Status SaveHdf5Dataset(std::string_view path, std::string_view dataset,
                             const VariableToWrite& var, const Hdf5WriteOptions& options = {});

}  // namespace ebzip

#endif  // EBZIP_CLIENT_IO_HDF5_FILE_H_
