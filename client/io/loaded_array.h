// The in-memory form of one variable read from a netCDF or HDF5 file: what
// the codec compresses, plus what a user needs to recognise it.
#ifndef EBZIP_CLIENT_IO_LOADED_ARRAY_H_
#define EBZIP_CLIENT_IO_LOADED_ARRAY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codec/types.h"

namespace ebzip {

struct LoadedArray {
  ArraySpec spec;             // dtype and C-order shape, slowest first
  std::vector<uint8_t> data;  // little-endian raw values, spec.num_bytes() long
  // From _FillValue, else missing_value, unpacked like the data. It is the
  // value exactly as stored in `data`, widened to double, so comparing a
  // loaded float32 element with static_cast<float>(*fill_value) is exact.
  std::optional<double> fill_value;
  std::string description;  // e.g. "etopo5.cdf:ROSE (float, 2161x4320, units=meters)"
  // The variable's name, dimensions and attributes as the archive's metadata
  // document (variable_metadata.h); "" when the file's are too large to keep.
  std::string metadata;
};

}  // namespace ebzip

#endif  // EBZIP_CLIENT_IO_LOADED_ARRAY_H_
