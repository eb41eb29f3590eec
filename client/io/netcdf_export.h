// A decompressed array written as a netCDF-4 file that holds it as a
// variable with its name, dimensions and attributes (variable_metadata.h):
// what `ebzip decompress -o OUT.nc` and `-o OUT.h5` write. NetCDF-4 is
// HDF5, so the same file serves HDF5 readers: the variable is a dataset at
// the root, its attributes are HDF5 attributes and its dimensions HDF5
// dimension scales.
#ifndef EBZIP_CLIENT_IO_NETCDF_EXPORT_H_
#define EBZIP_CLIENT_IO_NETCDF_EXPORT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "client/io/variable_metadata.h"
#include "codec/region.h"
#include "codec/types.h"

namespace ebzip {

class NetcdfArrayWriter {
 public:
  // Creates `path` (replacing a file there) holding `region` of an array of
  // `dtype` (WholeArray(shape) for all of it): the variable is named
  // metadata.name ("data" when empty), its dimensions metadata.dimensions
  // (dim0, dim1, ... when they do not match the rank), with the metadata's
  // attributes, global attributes and coordinate variables (sliced like the
  // region). `fill_value`, the archive's, becomes _FillValue when the
  // metadata declares neither _FillValue nor missing_value. INVALID_ARGUMENT
  // for names or attributes netCDF refuses.
  static absl::StatusOr<std::unique_ptr<NetcdfArrayWriter>> Create(
      const std::string& path, DType dtype, const Hyperslab& region,
      std::optional<double> fill_value, const VariableMetadata& metadata);

  ~NetcdfArrayWriter();
  NetcdfArrayWriter(const NetcdfArrayWriter&) = delete;
  NetcdfArrayWriter& operator=(const NetcdfArrayWriter&) = delete;

  // The next bytes of the region's values in C order, little-endian; any
  // split (rows are written as they complete).
  absl::Status Write(absl::Span<const uint8_t> bytes);

  // Closes the file; FAILED_PRECONDITION unless every value was written.
  absl::Status Finish();

 private:
  NetcdfArrayWriter(int ncid, int varid, std::string path, DType dtype,
                    std::vector<uint64_t> shape);
  absl::Status WriteRows(const uint8_t* data, uint64_t rows);

  int ncid_;
  int varid_;
  std::string path_;
  DType dtype_;
  std::vector<uint64_t> shape_;
  uint64_t row_bytes_;
  uint64_t rows_written_ = 0;
  std::vector<uint8_t> partial_;  // bytes of a row not yet complete
};

}  // namespace ebzip

#endif  // EBZIP_CLIENT_IO_NETCDF_EXPORT_H_
