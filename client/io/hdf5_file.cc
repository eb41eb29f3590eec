#include "client/io/hdf5_file.h"

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/io/cf_variable.h"
#include "client/io/hdf5_handle.h"
#include "client/io/hdf5_metadata.h"

namespace ebzip {
namespace {

// H5Lexists fails, rather than answering no, when an intermediate group is
// missing, so each prefix of the path is checked in turn.
bool LinkExists(hid_t file, const std::string& name) {
  for (size_t slash = name.find('/', 1);; slash = name.find('/', slash + 1)) {
    const std::string prefix = name.substr(0, slash);
    if (prefix.size() > 1 && H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (slash == std::string::npos) return true;
  }
}

herr_t CollectDataset(hid_t /*object*/, const char* name, const H5O_info_t* info, void* data) {
  if (info->type == H5O_TYPE_DATASET) {
    static_cast<std::vector<std::string>*>(data)->push_back(absl::StrCat("/", name));
  }
  return 0;
}

std::string DatasetNames(hid_t file) {
  std::vector<std::string> names;
  if (H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_INC, CollectDataset, &names, H5O_INFO_BASIC) < 0) {
    return "(unknown)";
  }
  return names.empty() ? "(none)" : absl::StrJoin(names, ", ");
}

void Classify(hid_t type, CfVariable& var) {
  const size_t bits = H5Tget_size(type) * 8;
  switch (H5Tget_class(type)) {
    case H5T_FLOAT:
      var.type_name = bits == 32 ? "float" : bits == 64 ? "double" : absl::StrCat("float", bits);
      var.kind = bits == 32   ? StoredKind::kFloat32
                 : bits == 64 ? StoredKind::kFloat64
                              : StoredKind::kUnsupported;
      return;
    case H5T_INTEGER:
      var.type_name = absl::StrCat(H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int", bits);
      var.kind = bits <= 32 ? StoredKind::kInteger : StoredKind::kUnsupported;
      return;
    case H5T_STRING:
      var.type_name = "string";
      break;
    case H5T_COMPOUND:
      var.type_name = "compound";
      break;
    case H5T_ENUM:
      var.type_name = "enum";
      break;
    case H5T_ARRAY:
      var.type_name = "array";
      break;
    case H5T_VLEN:
      var.type_name = "variable-length";
      break;
    default:
      var.type_name = "non-numeric";
      break;
  }
  var.kind = StoredKind::kUnsupported;
}

// Absent is fine; present but not a number is an error, because ignoring a
// packing or fill attribute would silently load the wrong values.
absl::StatusOr<std::optional<double>> NumericAttribute(hid_t object, const char* name,
                                                       const std::string& label) {
  const htri_t exists = H5Aexists(object, name);
  if (exists == 0) return std::nullopt;
  const std::string context = absl::StrCat(label, " attribute ", name);
  Hdf5Id attribute(exists > 0 ? H5Aopen(object, name, H5P_DEFAULT) : -1, H5Aclose);
  if (!attribute.valid()) return absl::InvalidArgumentError(absl::StrCat(context, " unreadable"));
  Hdf5Id type(H5Aget_type(attribute.get()), H5Tclose);
  Hdf5Id space(H5Aget_space(attribute.get()), H5Sclose);
  const H5T_class_t type_class = type.valid() ? H5Tget_class(type.get()) : H5T_NO_CLASS;
  const hssize_t count = space.valid() ? H5Sget_simple_extent_npoints(space.get()) : 0;
  if ((type_class != H5T_INTEGER && type_class != H5T_FLOAT) || count < 1) {
    return absl::InvalidArgumentError(absl::StrCat(context, " is not a number"));
  }
  std::vector<double> values(static_cast<size_t>(count));
  if (H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, values.data()) < 0) {
    return absl::InvalidArgumentError(absl::StrCat(context, " unreadable"));
  }
  return values[0];
}

// Units only label the description, so anything unreadable just goes blank.
std::string StringAttribute(hid_t object, const char* name) {
  if (H5Aexists(object, name) <= 0) return "";
  Hdf5Id attribute(H5Aopen(object, name, H5P_DEFAULT), H5Aclose);
  Hdf5Id type(attribute.valid() ? H5Aget_type(attribute.get()) : -1, H5Tclose);
  Hdf5Id space(attribute.valid() ? H5Aget_space(attribute.get()) : -1, H5Sclose);
  if (!type.valid() || !space.valid() || H5Tget_class(type.get()) != H5T_STRING) return "";
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (count < 1) return "";
  if (H5Tis_variable_str(type.get()) > 0) {
    std::vector<char*> strings(static_cast<size_t>(count), nullptr);
    if (H5Aread(attribute.get(), type.get(), strings.data()) < 0) return "";
    std::string text = strings[0] != nullptr ? strings[0] : "";
    for (char* s : strings) H5free_memory(s);
    return text;
  }
  const size_t size = H5Tget_size(type.get());
  std::string text(size * static_cast<size_t>(count), '\0');
  if (H5Aread(attribute.get(), type.get(), text.data()) < 0) return "";
  text.resize(size);
  return text.substr(0, text.find('\0'));
}

absl::StatusOr<CfVariable> Inspect(hid_t dataset, const std::string& label) {
  CfVariable var;
  var.label = label;
  Hdf5Id type(H5Dget_type(dataset), H5Tclose);
  Hdf5Id space(H5Dget_space(dataset), H5Sclose);
  if (!type.valid() || !space.valid()) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": cannot read type and shape"));
  }
  Classify(type.get(), var);
  if (H5Sget_simple_extent_type(space.get()) == H5S_NULL) {
    return absl::InvalidArgumentError(absl::StrCat(label, " holds no data (null dataspace)"));
  }
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(static_cast<size_t>(rank < 0 ? 0 : rank));
  if (rank < 0 || H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": cannot read shape"));
  }
  var.shape.assign(dims.begin(), dims.end());
  if (var.kind == StoredKind::kUnsupported) return var;

  for (const NumericAttributeSlot& attribute : NumericAttributeSlots(var)) {
    absl::StatusOr<std::optional<double>> value = NumericAttribute(dataset, attribute.name, label);
    if (!value.ok()) return value.status();
    *attribute.value = *value;
  }
  var.units = StringAttribute(dataset, "units");
  return var;
}

}  // namespace

absl::StatusOr<LoadedArray> LoadHdf5Dataset(std::string_view path_view,
                                            std::string_view dataset_name) {
  const std::string path(path_view);
  const std::string label = SourceLabel(path, dataset_name);
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    return absl::NotFoundError(absl::StrCat("no such file: ", path));
  }

  ScopedHdf5Quiet quiet;
  Hdf5Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot open ", path, " as HDF5"));
  }
  const std::string name = AbsoluteName(dataset_name);
  if (!LinkExists(file.get(), name)) {
    return absl::NotFoundError(
        absl::StrCat(path, " has no dataset ", name, "; datasets: ", DatasetNames(file.get())));
  }
  Hdf5Id object(H5Oopen(file.get(), name.c_str(), H5P_DEFAULT), H5Oclose);
  if (!object.valid() || H5Iget_type(object.get()) != H5I_DATASET) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, " is not a dataset; datasets: ", DatasetNames(file.get())));
  }

  absl::StatusOr<CfVariable> var = Inspect(object.get(), label);
  if (!var.ok()) return var.status();
  absl::StatusOr<ArraySpec> spec = LoadedSpec(*var);
  if (!spec.ok()) return spec.status();
  const DType read_type = ReadType(*var);
  std::vector<uint8_t> values(spec->num_elements() * DTypeSize(read_type));
  const hid_t memory_type = read_type == DType::kFloat32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
  if (H5Dread(object.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0) {
    return absl::DataLossError(absl::StrCat("reading ", label, " failed"));
  }
  LoadedArray loaded = FinishLoad(*var, *std::move(spec), std::move(values));
  VariableMetadata metadata = ReadHdf5Metadata(file.get(), object.get(), name, var->type_name);
  DescribeLoaded(*var, loaded.spec.dtype, metadata);
  loaded.metadata = FittingMetadataDocument(std::move(metadata));
  return loaded;
}

absl::StatusOr<std::vector<VariableSummary>> ListHdf5Datasets(std::string_view path_view) {
  const std::string path(path_view);
  ScopedHdf5Quiet quiet;
  Hdf5Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot open ", path, " as HDF5"));
  }
  std::vector<std::string> names;
  if (H5Ovisit2(file.get(), H5_INDEX_NAME, H5_ITER_INC, CollectDataset, &names, H5O_INFO_BASIC) <
      0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot list the datasets of ", path));
  }
  std::vector<VariableSummary> out;
  for (const std::string& name : names) {
    VariableSummary summary;
    summary.name = name;
    Hdf5Id dataset(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
    if (dataset.valid()) {
      absl::StatusOr<CfVariable> var = Inspect(dataset.get(), SourceLabel(path, name));
      if (var.ok()) {
        summary.type = var->type_name;
        summary.shape = var->shape;
        summary.loadable = LoadedSpec(*var).ok();
      }
      summary.dimensions = Hdf5DimensionNames(dataset.get());
    }
    out.push_back(std::move(summary));
  }
  return out;
}

}  // namespace ebzip
