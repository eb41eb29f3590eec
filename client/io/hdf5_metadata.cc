#include "client/io/hdf5_metadata.h"

#include <H5DSpublic.h>

#include <cstddef>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/io/hdf5_handle.h"
#include "client/io/netcdf_metadata.h"

namespace ebzip {
namespace {

bool IsBookkeeping(const std::string& name) {
  static const auto* names = new std::set<std::string>{
      "DIMENSION_LIST", "REFERENCE_LIST",      "CLASS",       "NAME",
      "_Netcdf4Dimid",  "_Netcdf4Coordinates", "_nc3_strict", "_NCProperties"};
  return names->count(name) != 0;
}

// The netCDF name of an HDF5 integer or float type, or "".
std::string NumericTypeName(hid_t type) {
  const size_t size = H5Tget_size(type);
  if (H5Tget_class(type) == H5T_FLOAT) return size == 4 ? "float" : size == 8 ? "double" : "";
  if (H5Tget_class(type) != H5T_INTEGER) return "";
  const bool is_unsigned = H5Tget_sign(type) == H5T_SGN_NONE;
  switch (size) {
    case 1:
      return is_unsigned ? "ubyte" : "byte";
    case 2:
      return is_unsigned ? "ushort" : "short";
    case 4:
      return is_unsigned ? "uint" : "int";
    case 8:
      return is_unsigned ? "uint64" : "int64";
    default:
      return "";
  }
}

// The strings of a string attribute (fixed or variable length).
bool ReadStrings(hid_t attribute, hid_t type, size_t count, std::vector<std::string>& out) {
  if (H5Tis_variable_str(type) > 0) {
    std::vector<char*> strings(count, nullptr);
    Hdf5Id memory(H5Tcopy(type), H5Tclose);
    if (!memory.valid() || H5Aread(attribute, memory.get(), strings.data()) < 0) return false;
    for (char* s : strings) {
      out.emplace_back(s != nullptr ? s : "");
      H5free_memory(s);
    }
    return true;
  }
  const size_t size = H5Tget_size(type);
  std::string text(size * count, '\0');
  if (H5Aread(attribute, type, text.data()) < 0) return false;
  for (size_t i = 0; i < count; ++i) {
    std::string s = text.substr(i * size, size);
    out.push_back(s.substr(0, s.find('\0')));
  }
  return true;
}

herr_t CollectAttribute(hid_t object, const char* name, const H5A_info_t*, void* data) {
  auto& out = *static_cast<std::vector<Attribute>*>(data);
  if (IsBookkeeping(name)) return 0;
  Hdf5Id attribute(H5Aopen(object, name, H5P_DEFAULT), H5Aclose);
  Hdf5Id type(attribute.valid() ? H5Aget_type(attribute.get()) : -1, H5Tclose);
  Hdf5Id space(attribute.valid() ? H5Aget_space(attribute.get()) : -1, H5Sclose);
  if (!type.valid() || !space.valid()) return 0;
  const hssize_t points = H5Sget_simple_extent_npoints(space.get());
  if (points < 0) return 0;
  const size_t count = static_cast<size_t>(points);
  Attribute a;
  a.name = name;
  if (H5Tget_class(type.get()) == H5T_STRING) {
    std::vector<std::string> strings;
    if (!ReadStrings(attribute.get(), type.get(), count, strings)) return 0;
    // One string is netCDF's text attribute, as netCDF-4 itself maps them.
    if (strings.size() == 1) {
      a.type = "char";
      a.text = strings[0];
    } else {
      a.type = "string";
      a.strings = std::move(strings);
    }
  } else {
    a.type = NumericTypeName(type.get());
    if (a.type.empty()) return 0;
    a.numbers.resize(count);
    if (count > 0 && H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, a.numbers.data()) < 0) return 0;
  }
  out.push_back(std::move(a));
  return 0;
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string ObjectName(hid_t object) {
  const ssize_t size = H5Iget_name(object, nullptr, 0);
  if (size <= 0) return "";
  std::string name(static_cast<size_t>(size) + 1, '\0');
  H5Iget_name(object, name.data(), name.size());
  name.resize(static_cast<size_t>(size));
  return name;
}

herr_t ScaleName(hid_t, unsigned, hid_t scale, void* data) {
  *static_cast<std::string*>(data) = ObjectName(scale);
  return 1;  // the first scale names the dimension
}

// The absolute path of the first scale attached to dimension `d`, or "".
std::string ScalePath(hid_t dataset, unsigned d) {
  std::string path;
  if (H5DSget_num_scales(dataset, d) > 0) {
    int index = 0;
    H5DSiterate_scales(dataset, d, &index, ScaleName, &path);
  }
  return path;
}

// A scale netCDF-4 made for a dimension without a variable: its NAME says so
// and its values are only fill.
bool IsBareDimension(hid_t scale) {
  if (H5Aexists(scale, "NAME") <= 0) return false;
  Hdf5Id attribute(H5Aopen(scale, "NAME", H5P_DEFAULT), H5Aclose);
  Hdf5Id type(attribute.valid() ? H5Aget_type(attribute.get()) : -1, H5Tclose);
  std::vector<std::string> strings;
  return type.valid() && H5Tget_class(type.get()) == H5T_STRING &&
         ReadStrings(attribute.get(), type.get(), 1, strings) &&
         strings[0].rfind("This is a netCDF dimension but not a netCDF variable", 0) == 0;
}

}  // namespace

std::vector<Attribute> ReadHdf5Attributes(hid_t object) {
  std::vector<Attribute> out;
  hsize_t index = 0;
  H5Aiterate2(object, H5_INDEX_CRT_ORDER, H5_ITER_INC, &index, CollectAttribute, &out);
  if (out.empty()) {
    // Without creation order tracked, the name index is the only one.
    index = 0;
    H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_INC, &index, CollectAttribute, &out);
  }
  return out;
}

std::vector<std::string> Hdf5DimensionNames(hid_t dataset) {
  Hdf5Id space(H5Dget_space(dataset), H5Sclose);
  const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : 0;
  std::vector<std::string> names;
  bool any = false;
  for (int d = 0; d < rank; ++d) {
    names.push_back(BaseName(ScalePath(dataset, static_cast<unsigned>(d))));
    any = any || !names.back().empty();
  }
  if (!any) names.clear();
  return names;
}

VariableMetadata ReadHdf5Metadata(hid_t file, hid_t dataset, const std::string& name,
                                  const std::string& type) {
  VariableMetadata m;
  m.name = BaseName(name);
  const size_t slash = name.rfind('/');
  m.group = slash == 0 || slash == std::string::npos ? "/" : name.substr(0, slash);
  m.type = type;
  m.attributes = ReadHdf5Attributes(dataset);
  m.global_attributes = ReadHdf5Attributes(file);
  m.dimensions = Hdf5DimensionNames(dataset);
  size_t coordinate_values = 0;
  for (size_t d = 0; d < m.dimensions.size(); ++d) {
    const std::string path = ScalePath(dataset, static_cast<unsigned>(d));
    if (path.empty() || path == name) continue;
    Hdf5Id scale(H5Dopen2(file, path.c_str(), H5P_DEFAULT), H5Dclose);
    if (!scale.valid() || IsBareDimension(scale.get())) continue;
    Hdf5Id scale_type(H5Dget_type(scale.get()), H5Tclose);
    Hdf5Id space(H5Dget_space(scale.get()), H5Sclose);
    if (!scale_type.valid() || !space.valid() || H5Sget_simple_extent_ndims(space.get()) != 1) {
      continue;
    }
    CoordinateVariable c;
    c.name = m.dimensions[d];
    c.type = NumericTypeName(scale_type.get());
    const hssize_t points = H5Sget_simple_extent_npoints(space.get());
    if (c.type.empty() || points < 0) continue;
    coordinate_values += static_cast<size_t>(points);
    if (coordinate_values > kMaxCoordinateValues) continue;
    c.values.resize(static_cast<size_t>(points));
    if (H5Dread(scale.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, c.values.data()) <
        0) {
      continue;
    }
    c.attributes = ReadHdf5Attributes(scale.get());
    m.coordinates.push_back(std::move(c));
  }
  return m;
}

}  // namespace ebzip
