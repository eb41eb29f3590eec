// Internal to client/io: an HDF5 dataset's description (variable_metadata.h):
// its attributes, the root group's, and its dimensions as HDF5 dimension
// scales name them (what netCDF-4 and h5py's dims write), with the scales'
// values as coordinate variables.
#ifndef EBZIP_CLIENT_IO_HDF5_METADATA_H_
#define EBZIP_CLIENT_IO_HDF5_METADATA_H_

#include <hdf5.h>

#include <string>
#include <vector>

#include "client/io/variable_metadata.h"

namespace ebzip {

// The attributes of `object` with integer, float or string types, less those
// HDF5 and netCDF-4 keep for themselves (dimension-scale bookkeeping).
std::vector<Attribute> ReadHdf5Attributes(hid_t object);

// `name` is the dataset's absolute path; `type` its type as the loader named
// it. Unreadable parts are left out rather than failing the load.
VariableMetadata ReadHdf5Metadata(hid_t file, hid_t dataset, const std::string& name,
                                  const std::string& type);

// The dimension names dimension scales give `dataset`, "" where none is
// attached; empty when no dimension has one.
std::vector<std::string> Hdf5DimensionNames(hid_t dataset);

}  // namespace ebzip

#endif  // EBZIP_CLIENT_IO_HDF5_METADATA_H_
