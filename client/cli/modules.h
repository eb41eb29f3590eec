// The command line's optional parts, in shared modules loaded on first use:
// the ebzipd client (--server; gRPC, Protobuf, OpenSSL) and the NetCDF and
// HDF5 readers (file.nc:VARIABLE inputs; libnetcdf with HDF5, curl and
// GnuTLS behind it). Linked into the command, those libraries (about a
// hundred) made every run, even `ebzip info` on a small archive, spend
// 12-15 ms in the dynamic loader and their static constructors: more than
// compressing a field of a million values takes. A local raw compress or
// decompress now loads none of them.
//
// A module is a shared object beside the `ebzip` binary, or in ../lib/ebzip/
// relative to it (an installation's layout), exporting one C function that
// returns its interface below. Modules and command are built together from
// one tree (CMake), so the interfaces need no versioning; the ABI they share
// is the C++ standard library's and Abseil's, both shared libraries.
#ifndef EBZIP_CLIENT_CLI_MODULES_H_
#define EBZIP_CLIENT_CLI_MODULES_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "client/io/loaded_array.h"
#include "client/io/variable_metadata.h"
#include "client/remote/remote_client.h"
#include "codec/archive.h"
#include "codec/region.h"
#include "codec/types.h"

namespace ebzip::cli {

// client::RemoteOptions' fields that the command line sets.
struct RemoteConnection {
  std::string server;
  std::string tls_ca_file;
  std::string tls_server_name;
  std::string token;
  std::optional<double> timeout_seconds;
  uint64_t max_output_bytes = 0;
  int streams = 0;  // RemoteOptions::streams
};

// client::RemoteClient's calls, with Info's reply as plain fields.
class RemoteSession {
 public:
  struct ServerDescription {
    std::string version;
    std::string backend;
    uint32_t format_version = 0;
    std::vector<std::string> devices;
  };

  virtual ~RemoteSession() = default;
  virtual absl::StatusOr<client::RemoteSummary> Compress(const ArraySpec& spec,
                                                         absl::Span<const uint8_t> data,
                                                         const CompressOptions& options,
                                                         const client::ByteSink& sink) = 0;
  virtual absl::StatusOr<client::RemoteArrayHeader> Decompress(
      absl::Span<const uint8_t> archive, const client::DecompressRequestOptions& request,
      const std::function<absl::Status(const client::RemoteArrayHeader&)>& on_header,
      const client::ByteSink& sink) = 0;
  virtual absl::Status Health() = 0;
  virtual absl::StatusOr<ServerDescription> Info() = 0;
};

// What the remote module exports.
class RemoteModule {
 public:
  virtual absl::StatusOr<std::unique_ptr<RemoteSession>> Connect(const RemoteConnection& c) = 0;

 protected:
  ~RemoteModule() = default;
};

// An array being written as a NetCDF-4 file (client/io/netcdf_export.h).
class ArrayFileWriter {
 public:
  virtual ~ArrayFileWriter() = default;
  // The next bytes of the array in C order, any split.
  virtual absl::Status Write(absl::Span<const uint8_t> bytes) = 0;
  virtual absl::Status Finish() = 0;
};

// What the array-file module exports: client/io/array_file.h's loader and
// lister, and the NetCDF-4 writer.
class ArrayFileModule {
 public:
  virtual absl::StatusOr<LoadedArray> Load(std::string_view source) = 0;
  virtual absl::StatusOr<std::vector<VariableSummary>> List(const std::string& path) = 0;
  // `metadata` is the archive's metadata document ("" for none). One that
  // does not describe a variable (written by another program) is not
  // fatal: the array is written as "data" on dim0, dim1, ... and *note says
  // why; otherwise *note is left empty.
  virtual absl::StatusOr<std::unique_ptr<ArrayFileWriter>> CreateWriter(
      const std::string& path, DType dtype, const Hyperslab& region,
      std::optional<double> fill_value, std::string_view metadata, std::string* note) = 0;

 protected:
  ~ArrayFileModule() = default;
};

// The modules, loaded once (and never unloaded). FAILED_PRECONDITION, with
// the places looked in and the loader's message, when one cannot be loaded.
absl::StatusOr<RemoteModule*> LoadRemoteModule();
absl::StatusOr<ArrayFileModule*> LoadArrayFileModule();

}  // namespace ebzip::cli

// The functions each module exports (extern "C": found by name).
#define EBZIP_REMOTE_MODULE_ENTRY "EbzipRemoteModule"
#define EBZIP_ARRAY_FILE_MODULE_ENTRY "EbzipArrayFileModule"

#endif  // EBZIP_CLIENT_CLI_MODULES_H_
