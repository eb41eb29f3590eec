// Internal to client/io: what the netCDF reader and writer share: an owned
// netCDF id, netCDF error codes as absl::Status, the lock every netCDF call
// takes, and the group syntax of variable names.
#ifndef EBZIP_CLIENT_IO_NETCDF_HANDLE_H_
#define EBZIP_CLIENT_IO_NETCDF_HANDLE_H_

#include <string>
#include <string_view>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace ebzip {

// netCDF-C keeps unsynchronised global state (its table of open files), so
// callers hold this around every use of the library.
absl::Mutex& NetcdfMutex();

// Maps a netCDF or errno code to a Status saying "context: reason". Codes
// with an obvious meaning (no such file, variable or group, permission,
// memory) get their own status code; the rest get `fallback`.
absl::Status NetcdfError(int code, absl::StatusCode fallback, const std::string& context);

// Splits "a/b/VAR" (leading '/' optional) into the group path "/a/b" and
// "VAR"; a plain "VAR" lives in the root group "/".
std::pair<std::string, std::string> SplitGroupPath(std::string_view variable);

// Owns an open file so that every return path closes it.
class NetcdfFile {
 public:
  static absl::StatusOr<NetcdfFile> Open(const std::string& path);
  static absl::StatusOr<NetcdfFile> Create(const std::string& path, int cmode);

  NetcdfFile(NetcdfFile&& other) noexcept;
  NetcdfFile& operator=(NetcdfFile&&) = delete;
  NetcdfFile(const NetcdfFile&) = delete;
  NetcdfFile& operator=(const NetcdfFile&) = delete;
  ~NetcdfFile();

  int id() const { return ncid_; }

  // Writers close explicitly: closing flushes, and its failure matters.
  absl::Status Close();

  // Gives up ownership: the caller closes the id.
  int Release() { return std::exchange(ncid_, -1); }

 private:
  NetcdfFile(int ncid, std::string path) : ncid_(ncid), path_(std::move(path)) {}

  int ncid_;
  std::string path_;
};

}  // namespace ebzip

#endif  // EBZIP_CLIENT_IO_NETCDF_HANDLE_H_
