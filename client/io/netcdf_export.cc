#include "client/io/netcdf_export.h"

#include <netcdf.h>

#include <cstring>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/io/netcdf_handle.h"

namespace ebzip {
namespace {

// Attributes netCDF-4 keeps for itself: read back as virtual attributes by
// some versions, refused when written.
bool IsReservedAttribute(const std::string& name) {
  return name == "_NCProperties" || name == "_IsNetcdf4" || name == "_SuperblockVersion" ||
         name == "_Format";
}

// The netCDF type named as variable_metadata.h names them, or NC_NAT.
nc_type TypeNamed(const std::string& name) {
  static const auto* types = new std::map<std::string, nc_type>{
      {"byte", NC_BYTE},     {"ubyte", NC_UBYTE}, {"char", NC_CHAR},     {"short", NC_SHORT},
      {"ushort", NC_USHORT}, {"int", NC_INT},     {"uint", NC_UINT},     {"int64", NC_INT64},
      {"uint64", NC_UINT64}, {"float", NC_FLOAT}, {"double", NC_DOUBLE}, {"string", NC_STRING}};
  auto it = types->find(name);
  return it == types->end() ? NC_NAT : it->second;
}

absl::Status Failed(int rc, const std::string& context) {
  return NetcdfError(rc, absl::StatusCode::kInvalidArgument, context);
}

// `_FillValue` must have its variable's type; everything else keeps its own.
absl::Status PutAttributes(int ncid, int varid, nc_type var_type,
                           const std::vector<Attribute>& attributes, const std::string& owner) {
  for (const Attribute& a : attributes) {
    if (IsReservedAttribute(a.name)) continue;
    const std::string context = absl::StrCat("attribute ", owner, a.name);
    nc_type type = TypeNamed(a.type);
    if (a.name == "_FillValue" && var_type != NC_NAT) type = var_type;
    int rc = NC_NOERR;
    if (type == NC_CHAR) {
      rc = nc_put_att_text(ncid, varid, a.name.c_str(), a.text.size(), a.text.data());
    } else if (type == NC_STRING) {
      std::vector<const char*> strings;
      for (const std::string& s : a.strings) strings.push_back(s.c_str());
      rc = nc_put_att_string(ncid, varid, a.name.c_str(), strings.size(), strings.data());
    } else if (type != NC_NAT) {
      rc = nc_put_att_double(ncid, varid, a.name.c_str(), type, a.numbers.size(), a.numbers.data());
    } else {
      return absl::InvalidArgumentError(absl::StrCat(context, " has unknown type ", a.type));
    }
    if (rc != NC_NOERR) return Failed(rc, context);
  }
  return absl::OkStatus();
}

struct Definition {
  int varid = -1;
  std::vector<uint64_t> shape;
  // Coordinate variables to fill once out of define mode.
  std::vector<std::pair<int, std::vector<double>>> coordinates;
};

// Dimension names: the metadata's when there is one per dimension. A name
// used twice (var(x, x)) is one dimension in netCDF, so only while the
// lengths agree; else the later one is renamed.
std::vector<std::string> DimensionNames(const VariableMetadata& m, size_t rank) {
  std::vector<std::string> names;
  for (size_t d = 0; d < rank; ++d) {
    names.push_back(m.dimensions.size() == rank && !m.dimensions[d].empty()
                        ? m.dimensions[d]
                        : absl::StrCat("dim", d));
  }
  return names;
}

absl::StatusOr<Definition> Define(int ncid, DType dtype, const Hyperslab& region,
                                  std::optional<double> fill_value, const VariableMetadata& m) {
  Definition def;
  def.shape = region.count;
  const size_t rank = def.shape.size();
  const std::vector<std::string> wanted = DimensionNames(m, rank);
  std::map<std::string, std::pair<int, uint64_t>> defined;  // name -> (dimid, length)
  std::vector<int> dimids;
  std::vector<std::string> names;
  for (size_t d = 0; d < rank; ++d) {
    std::string name = wanted[d];
    auto it = defined.find(name);
    if (it != defined.end() && it->second.second == def.shape[d]) {
      dimids.push_back(it->second.first);
      names.push_back(name);
      continue;
    }
    if (it != defined.end()) name = absl::StrCat(name, "_", d);
    int dimid = -1;
    if (int rc = nc_def_dim(ncid, name.c_str(), def.shape[d], &dimid); rc != NC_NOERR) {
      return Failed(rc, absl::StrCat("dimension ", name));
    }
    defined[name] = {dimid, def.shape[d]};
    dimids.push_back(dimid);
    names.push_back(name);
  }

  const std::string var_name = m.name.empty() ? "data" : m.name;
  const nc_type var_type = dtype == DType::kFloat32 ? NC_FLOAT : NC_DOUBLE;
  if (int rc = nc_def_var(ncid, var_name.c_str(), var_type, static_cast<int>(rank), dimids.data(),
                          &def.varid);
      rc != NC_NOERR) {
    return Failed(rc, absl::StrCat("variable ", var_name));
  }
  // Every value is written: filling the dataset first would write it twice.
  // Set before the attributes: netCDF drops a _FillValue put before it.
  if (int rc = nc_def_var_fill(ncid, def.varid, NC_NOFILL, nullptr); rc != NC_NOERR) {
    return Failed(rc, absl::StrCat("variable ", var_name));
  }
  std::vector<Attribute> attributes = m.attributes;
  if (fill_value.has_value() && FindAttribute(attributes, "_FillValue") == nullptr &&
      FindAttribute(attributes, "missing_value") == nullptr) {
    attributes.push_back({"_FillValue", "", "", {}, {*fill_value}});
  }
  if (absl::Status s = PutAttributes(ncid, def.varid, var_type, attributes, var_name + ":");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = PutAttributes(ncid, NC_GLOBAL, NC_NAT, m.global_attributes, ":"); !s.ok()) {
    return s;
  }

  for (const CoordinateVariable& c : m.coordinates) {
    if (c.name == var_name) continue;
    size_t d = 0;
    while (d < rank && names[d] != c.name) ++d;
    const nc_type type = TypeNamed(c.type);
    if (d == rank || type == NC_NAT || type == NC_CHAR || type == NC_STRING) continue;
    // The region's indices along the dimension: the coordinate must have them.
    std::vector<double> values;
    const uint64_t count = region.count[d];
    if (count > 0 && region.start[d] + (count - 1) * region.step[d] >= c.values.size()) continue;
    for (uint64_t i = 0; i < count; ++i)
      values.push_back(c.values[region.start[d] + i * region.step[d]]);
    int varid = -1;
    if (int rc = nc_def_var(ncid, c.name.c_str(), type, 1, &dimids[d], &varid); rc != NC_NOERR) {
      return Failed(rc, absl::StrCat("coordinate variable ", c.name));
    }
    if (absl::Status s = PutAttributes(ncid, varid, type, c.attributes, c.name + ":"); !s.ok()) {
      return s;
    }
    def.coordinates.emplace_back(varid, std::move(values));
  }
  return def;
}

}  // namespace

absl::StatusOr<std::unique_ptr<NetcdfArrayWriter>> NetcdfArrayWriter::Create(
    const std::string& path, DType dtype, const Hyperslab& region, std::optional<double> fill_value,
    const VariableMetadata& metadata) {
  absl::MutexLock lock(&NetcdfMutex());
  absl::StatusOr<NetcdfFile> file = NetcdfFile::Create(path, NC_CLOBBER | NC_NETCDF4);
  if (!file.ok()) return file.status();
  absl::StatusOr<Definition> def = Define(file->id(), dtype, region, fill_value, metadata);
  if (!def.ok()) {
    return absl::Status(def.status().code(), absl::StrCat(path, ": ", def.status().message()));
  }
  if (int rc = nc_enddef(file->id()); rc != NC_NOERR) {
    return NetcdfError(rc, absl::StatusCode::kInvalidArgument, absl::StrCat(path, ": defining"));
  }
  for (const auto& [varid, values] : def->coordinates) {
    if (int rc = nc_put_var_double(file->id(), varid, values.data()); rc != NC_NOERR) {
      return NetcdfError(rc, absl::StatusCode::kInvalidArgument,
                         absl::StrCat(path, ": writing a coordinate variable"));
    }
  }
  // The writer owns the id from here: released from the guard, not closed.
  const int ncid = file->id();
  std::unique_ptr<NetcdfArrayWriter> writer(
      new NetcdfArrayWriter(ncid, def->varid, path, dtype, std::move(def->shape)));
  file->Release();
  return writer;
}

NetcdfArrayWriter::NetcdfArrayWriter(int ncid, int varid, std::string path, DType dtype,
                                     std::vector<uint64_t> shape)
    : ncid_(ncid), varid_(varid), path_(std::move(path)), dtype_(dtype), shape_(std::move(shape)) {
  row_bytes_ = DTypeSize(dtype_);
  for (size_t d = 1; d < shape_.size(); ++d) row_bytes_ *= shape_[d];
}

NetcdfArrayWriter::~NetcdfArrayWriter() {
  if (ncid_ < 0) return;
  absl::MutexLock lock(&NetcdfMutex());
  nc_close(ncid_);
}

absl::Status NetcdfArrayWriter::WriteRows(const uint8_t* data, uint64_t rows) {
  if (rows_written_ + rows > shape_[0]) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": more values than the array's ", ShapeToString(shape_)));
  }
  // The library reads the values as floats or doubles: they must be aligned.
  std::vector<uint8_t> aligned;
  if (reinterpret_cast<uintptr_t>(data) % DTypeSize(dtype_) != 0) {
    aligned.assign(data, data + rows * row_bytes_);
    data = aligned.data();
  }
  std::vector<size_t> start(shape_.size(), 0);
  std::vector<size_t> count(shape_.begin(), shape_.end());
  start[0] = rows_written_;
  count[0] = rows;
  absl::MutexLock lock(&NetcdfMutex());
  const int rc = dtype_ == DType::kFloat32
                     ? nc_put_vara_float(ncid_, varid_, start.data(), count.data(),
                                         reinterpret_cast<const float*>(data))
                     : nc_put_vara_double(ncid_, varid_, start.data(), count.data(),
                                          reinterpret_cast<const double*>(data));
  if (rc != NC_NOERR) {
    return NetcdfError(rc, absl::StatusCode::kDataLoss, absl::StrCat("writing ", path_));
  }
  rows_written_ += rows;
  return absl::OkStatus();
}

absl::Status NetcdfArrayWriter::Write(absl::Span<const uint8_t> bytes) {
  if (bytes.empty()) return absl::OkStatus();
  if (row_bytes_ == 0) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": values for an empty array"));
  }
  if (!partial_.empty()) {
    const size_t take = std::min<size_t>(bytes.size(), row_bytes_ - partial_.size());
    partial_.insert(partial_.end(), bytes.begin(), bytes.begin() + take);
    bytes.remove_prefix(take);
    if (partial_.size() < row_bytes_) return absl::OkStatus();
    if (absl::Status s = WriteRows(partial_.data(), 1); !s.ok()) return s;
    partial_.clear();
  }
  const uint64_t rows = bytes.size() / row_bytes_;
  if (rows > 0) {
    if (absl::Status s = WriteRows(bytes.data(), rows); !s.ok()) return s;
  }
  partial_.assign(bytes.begin() + rows * row_bytes_, bytes.end());
  return absl::OkStatus();
}

absl::Status NetcdfArrayWriter::Finish() {
  uint64_t elements = 1;
  for (uint64_t d : shape_) elements *= d;
  if (elements > 0 && (rows_written_ != shape_[0] || !partial_.empty())) {
    return absl::FailedPreconditionError(absl::StrCat(path_, ": ", rows_written_, " of ", shape_[0],
                                                      " rows written when the file was closed"));
  }
  absl::MutexLock lock(&NetcdfMutex());
  const int rc = nc_close(std::exchange(ncid_, -1));
  if (rc != NC_NOERR) {
    return NetcdfError(rc, absl::StatusCode::kDataLoss, absl::StrCat("closing ", path_));
  }
  return absl::OkStatus();
}

}  // namespace ebzip
