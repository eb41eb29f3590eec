// --archive_root: archives a Decompress names by a path under one directory
// instead of uploading them (the shared file system of an HPC site, a volume
// mounted into a pod). The path is the client's, so it is resolved as
// untrusted input: nothing it names may lie outside the root.
//
// The rules (docs/operations.md, "Archives on the server"): a relative path
// of '/'-separated components, none empty, "." or "..", without NUL, at most
// PATH_MAX bytes; no symbolic link anywhere on the way (not even one that
// stays inside the root); the file a regular file. Resolution starts from
// the root's descriptor, opened once at start: with openat2 and
// RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS where the
// kernel has it (Linux 5.6), else component by component with
// openat(O_NOFOLLOW | O_DIRECTORY). Either way the kernel, not a string
// check, keeps the walk below the root, and a rename racing the walk cannot
// lead it out. The final open is non-blocking (a FIFO does not hang it) and
// the file must then be S_ISREG.
//
// What it cannot see: a hard link or a bind mount inside the root that
// leads to another file is the doing of whoever may write the root.
#ifndef EBZIP_SERVER_ARCHIVE_ROOT_H_
#define EBZIP_SERVER_ARCHIVE_ROOT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace ebzip::server {

// An open file descriptor, closed with its owner.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();

  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// A regular file opened under the root.
struct RootedFile {
  UniqueFd fd;
  uint64_t size = 0;
};

class ArchiveRoot {
 public:
  // How paths are resolved: openat2 when the kernel has it (kAuto), or the
  // component walk always (kWalk; tests run both).
  enum class Resolver { kAuto, kWalk };

  // Opens `dir` (an absolute or relative directory; symbolic links in it are
  // the operator's and are followed). INVALID_ARGUMENT when it is not a
  // directory that can be opened.
  static absl::StatusOr<std::unique_ptr<ArchiveRoot>> Open(const std::string& dir,
                                                           Resolver resolver = Resolver::kAuto);
  ~ArchiveRoot();

  // INVALID_ARGUMENT unless `path` follows the rules above as text.
  static absl::Status CheckPath(absl::string_view path);

  // Opens `path` below the root for reading: INVALID_ARGUMENT for a
  // malformed path, NOT_FOUND when a component is missing (or is no
  // directory where one is needed), PERMISSION_DENIED for a symbolic link
  // on the way, a file that is not regular, or one the server may not read.
  absl::StatusOr<RootedFile> OpenFile(absl::string_view path) const;

  const std::string& dir() const { return dir_; }
  // Whether openat2 resolves paths (false: the component walk).
  bool uses_openat2() const { return openat2_; }

 private:
  ArchiveRoot(std::string dir, UniqueFd fd, bool openat2)
      : dir_(std::move(dir)), fd_(std::move(fd)), openat2_(openat2) {}
  absl::StatusOr<UniqueFd> OpenWithOpenat2(const std::string& path) const;
  absl::StatusOr<UniqueFd> OpenByWalk(const std::string& path) const;

  std::string dir_;
  UniqueFd fd_;
  bool openat2_;
};

// Reads bytes [offset, offset + out.size()) of `fd` (pread, EINTR retried).
// DATA_LOSS when the file ends first (it shrank since it was measured).
absl::Status ReadAt(int fd, uint64_t offset, absl::Span<uint8_t> out);

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_ARCHIVE_ROOT_H_
