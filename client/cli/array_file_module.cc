// The array-file module (modules.h): NetCDF and HDF5 inputs, NetCDF-4 outputs.
#include "absl/strings/str_cat.h"
#include "client/cli/modules.h"
#include "client/io/array_file.h"
#include "client/io/netcdf_export.h"

namespace ebzip::cli {
namespace {

class Writer final : public ArrayFileWriter {
 public:
  explicit Writer(std::unique_ptr<NetcdfArrayWriter> writer) : writer_(std::move(writer)) {}
  absl::Status Write(absl::Span<const uint8_t> bytes) override { return writer_->Write(bytes); }
  absl::Status Finish() override { return writer_->Finish(); }

 private:
  std::unique_ptr<NetcdfArrayWriter> writer_;
};

class Module final : public ArrayFileModule {
 public:
  absl::StatusOr<LoadedArray> Load(std::string_view source) override {
    return LoadArraySource(source);
  }

  absl::StatusOr<std::vector<VariableSummary>> List(const std::string& path) override {
    return ListArrayFile(path);
  }

  absl::StatusOr<std::unique_ptr<ArrayFileWriter>> CreateWriter(
      const std::string& path, DType dtype, const Hyperslab& region,
      std::optional<double> fill_value, std::string_view metadata, std::string* note) override {
    VariableMetadata description;
    if (!metadata.empty()) {
      absl::StatusOr<VariableMetadata> parsed = ParseVariableMetadata(metadata);
      if (parsed.ok()) {
        description = *std::move(parsed);
      } else {
        *note = absl::StrCat("the archive's metadata does not describe a variable (",
                             parsed.status().message(), "): writing \"data\" on dim0, dim1, ...");
      }
    }
    auto writer = NetcdfArrayWriter::Create(path, dtype, region, fill_value, description);
    if (!writer.ok()) return writer.status();
    return std::make_unique<Writer>(*std::move(writer));
  }
};

}  // namespace
}  // namespace ebzip::cli

extern "C" __attribute__((visibility("default"))) void* EbzipArrayFileModule() {
  static ebzip::cli::Module module;
  return static_cast<ebzip::cli::ArrayFileModule*>(&module);
}
