#include "client/cli/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace ebzip::cli {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  const int err = errno;
  std::string message = absl::StrCat(what, " ", path, ": ", std::strerror(err));
  return err == ENOENT ? absl::NotFoundError(message) : absl::UnavailableError(message);
}

}  // namespace

absl::StatusOr<MappedFile> MappedFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open", path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    absl::Status s = ErrnoError("cannot stat", path);
    ::close(fd);
    return s;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, " is not a regular file"));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  const uint8_t* data = nullptr;
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      absl::Status s = ErrnoError("cannot map", path);
      ::close(fd);
      return s;
    }
    ::madvise(p, size, MADV_SEQUENTIAL);
    data = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // the mapping keeps the file alive
  return MappedFile(data, size);
}

MappedFile::MappedFile(MappedFile&& other) noexcept : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

namespace {

// A temporary file beside `target` (an absolute path without links), to be
// renamed over it; `existing` is the file it replaces, if any.
absl::StatusOr<std::pair<int, std::string>> CreateTemporary(const std::string& target,
                                                            const struct stat* existing) {
  std::string temp = absl::StrCat(target, ".partial-", ::getpid());
  // O_EXCL: never write through whatever else may already have this name.
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create", temp);
  if (existing != nullptr) {
    // Owner first: chown may clear the set-id bits chmod then sets. Only
    // root may give a file away (EPERM otherwise): then it is ours.
    const bool owner_kept = (existing->st_uid == ::geteuid() && existing->st_gid == ::getegid()) ||
                            ::fchown(fd, existing->st_uid, existing->st_gid) == 0 || errno == EPERM;
    if (!owner_kept || ::fchmod(fd, existing->st_mode & 07777) != 0) {
      absl::Status s = ErrnoError("cannot set the owner or permissions of", temp);
      ::close(fd);
      ::unlink(temp.c_str());
      return s;
    }
  }
  return std::make_pair(fd, std::move(temp));
}

absl::Status Exists(const std::string& path) {
  return absl::AlreadyExistsError(absl::StrCat(path, " exists; pass -f (--force) to replace it"));
}

}  // namespace

absl::Status CheckOutputMayBeWritten(const std::string& path, bool replace) {
  struct stat st;
  if (replace || path == "-" || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::OkStatus();  // what Create does then reports any other problem
  }
  return Exists(path);
}

absl::StatusOr<OutputFile> OutputFile::Create(const std::string& path, bool replace) {
  if (path == "-") {
    OutputFile out(STDOUT_FILENO, path, "");
    out.standard_output_ = out.same_as_stdout_ = true;
    return out;
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return ErrnoError("cannot stat", path);
    struct stat link;
    if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("not writing through ", path, ", a symbolic link to nothing"));
    }
    // A new file (or a missing directory, which creating the temporary
    // file reports).
    auto temp = CreateTemporary(path, nullptr);
    if (!temp.ok()) return temp.status();
    OutputFile out(temp->first, path, std::move(temp->second));
    out.no_replace_ = !replace;
    return out;
  }
  if (S_ISREG(st.st_mode)) {
    if (!replace) return Exists(path);
    // Replace the file itself, wherever links lead: beside it and over it.
    char* resolved = ::realpath(path.c_str(), nullptr);
    if (resolved == nullptr) return ErrnoError("cannot resolve", path);
    const std::string target = resolved;
    std::free(resolved);
    auto temp = CreateTemporary(target, &st);
    if (!temp.ok()) return temp.status();
    return OutputFile(temp->first, target, std::move(temp->second));
  }
  if (S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("cannot write to ", path, ": a directory"));
  }
  // A device, FIFO or socket: written where it is. No O_TRUNC (a device has
  // nothing to truncate, and it must not be replaced), no O_CREAT (it
  // exists); O_NOCTTY so a terminal does not become ours.
  const int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open", path);
  // Between stat and open the name may have come to mean a regular file or
  // a directory; writing in place would then overwrite without truncating.
  if (::fstat(fd, &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
    ::close(fd);
    return absl::AbortedError(absl::StrCat(path, " changed while it was being opened"));
  }
  OutputFile out(fd, path, "");
  struct stat stdout_st;
  out.same_as_stdout_ = ::fstat(STDOUT_FILENO, &stdout_st) == 0 && stdout_st.st_dev == st.st_dev &&
                        stdout_st.st_ino == st.st_ino;
  return out;
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : fd_(other.fd_),
      path_(std::move(other.path_)),
      temp_(std::move(other.temp_)),
      written_(other.written_),
      committed_(other.committed_),
      standard_output_(other.standard_output_),
      same_as_stdout_(other.same_as_stdout_),
      no_replace_(other.no_replace_) {
  other.fd_ = -1;
}

OutputFile::~OutputFile() {
  if (fd_ < 0 || standard_output_) return;
  ::close(fd_);
  if (!temp_.empty() && !committed_) ::unlink(temp_.c_str());
}

absl::Status OutputFile::Write(absl::Span<const uint8_t> bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot write", temp_.empty() ? path_ : temp_);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
    written_ += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

absl::Status OutputFile::Commit() {
  if (standard_output_ || fd_ < 0) return absl::OkStatus();
  // Some file systems (NFS) report a failed write only at close.
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    absl::Status s = ErrnoError("cannot write", temp_.empty() ? path_ : temp_);
    if (!temp_.empty()) ::unlink(temp_.c_str());
    return s;
  }
  if (temp_.empty()) return absl::OkStatus();
  // Without -f a file that appeared since Create must survive: rename only
  // if the name is still free. File systems without RENAME_NOREPLACE
  // (EINVAL) get a plain rename, the check in Create having been made.
  int renamed = -1;
  if (no_replace_) {
    renamed = ::renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, path_.c_str(), RENAME_NOREPLACE);
    if (renamed != 0 && errno == EEXIST) {
      ::unlink(temp_.c_str());
      return Exists(path_);
    }
  }
  if (renamed != 0 && (!no_replace_ || errno == EINVAL) &&
      ::rename(temp_.c_str(), path_.c_str()) == 0) {
    renamed = 0;
  }
  if (renamed != 0) {
    absl::Status s = ErrnoError("cannot rename to", path_);
    ::unlink(temp_.c_str());
    return s;
  }
  committed_ = true;
  return absl::OkStatus();
}

}  // namespace ebzip::cli
