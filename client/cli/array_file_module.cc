// The array-file module (modules.h): NetCDF and HDF5 inputs.
#include "client/cli/modules.h"
#include "client/io/array_file.h"

namespace ebzip::cli {
namespace {

class Module final : public ArrayFileModule {
 public:
  absl::StatusOr<LoadedArray> Load(std::string_view source) override {
    return LoadArraySource(source);
  }
};

}  // namespace
}  // namespace ebzip::cli

extern "C" __attribute__((visibility("default"))) void* EbzipArrayFileModule() {
  static ebzip::cli::Module module;
  return static_cast<ebzip::cli::ArrayFileModule*>(&module);
}
