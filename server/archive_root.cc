#include "server/archive_root.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace ebzip::server {
namespace {

// The flags of the final open: read only, never blocking on a FIFO or a
// device, never becoming a controlling terminal, never following a link.
constexpr int kFileFlags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC;

absl::Status Invalid(absl::string_view path, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("archive_path \"", absl::CHexEscape(path), "\": ", why));
}

// A failed open of `path` (or of its component `at`) as a status.
absl::Status OpenError(int err, absl::string_view path, absl::string_view at) {
  const std::string where =
      at == path ? absl::StrCat("\"", path, "\"") : absl::StrCat("\"", at, "\" of \"", path, "\"");
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(absl::StrCat("archive_path ", where, ": no such file"));
    case ELOOP:
      return absl::PermissionDeniedError(
          absl::StrCat("archive_path ", where, ": a symbolic link (not followed under the root)"));
    case EXDEV:
      return absl::PermissionDeniedError(
          absl::StrCat("archive_path ", where, ": leads outside the archive root"));
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(
          absl::StrCat("archive_path ", where, ": the server may not read it"));
    case ENAMETOOLONG:
      return absl::InvalidArgumentError(absl::StrCat("archive_path ", where, ": name too long"));
    default:
      return absl::UnavailableError(
          absl::StrCat("archive_path ", where, ": cannot open: ", std::strerror(err)));
  }
}

int Openat2(int dirfd, const char* path, uint64_t flags, uint64_t resolve) {
  struct open_how how;
  std::memset(&how, 0, sizeof(how));
  how.flags = flags;
  how.resolve = resolve;
  return static_cast<int>(syscall(SYS_openat2, dirfd, path, &how, sizeof(how)));
}

constexpr uint64_t kResolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

// Whether openat2 works here: a kernel before 5.6 says ENOSYS, and a
// container's seccomp filter may say ENOSYS or EPERM for a call it does not
// know.
bool HaveOpenat2(int root) {
  const int fd = Openat2(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, kResolve);
  if (fd >= 0) {
    close(fd);
    return true;
  }
  return false;
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) close(fd_);
    fd_ = o.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) close(fd_);
}

ArchiveRoot::~ArchiveRoot() = default;

absl::StatusOr<std::unique_ptr<ArchiveRoot>> ArchiveRoot::Open(const std::string& dir,
                                                               Resolver resolver) {
  if (dir.empty()) return absl::InvalidArgumentError("--archive_root: empty directory");
  UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--archive_root ", dir, ": cannot open the directory: ", std::strerror(errno)));
  }
  const bool openat2 = resolver == Resolver::kAuto && HaveOpenat2(fd.get());
  return std::unique_ptr<ArchiveRoot>(new ArchiveRoot(dir, std::move(fd), openat2));
}

absl::Status ArchiveRoot::CheckPath(absl::string_view path) {
  if (path.empty()) return Invalid(path, "empty");
  if (path.find('\0') != absl::string_view::npos) return Invalid(path, "holds a NUL byte");
  if (path.size() >= PATH_MAX) return Invalid(path, "too long");
  if (path.front() == '/') return Invalid(path, "absolute; name it relative to the archive root");
  for (absl::string_view c : absl::StrSplit(path, '/')) {
    if (c.empty()) return Invalid(path, "an empty component (\"//\" or a trailing \"/\")");
    if (c == ".") return Invalid(path, "a \".\" component");
    if (c == "..") return Invalid(path, "a \"..\" component");
    if (c.size() > NAME_MAX) return Invalid(path, "a component too long");
  }
  return absl::OkStatus();
}

absl::StatusOr<UniqueFd> ArchiveRoot::OpenWithOpenat2(const std::string& path) const {
  UniqueFd fd(Openat2(fd_.get(), path.c_str(), kFileFlags, kResolve));
  if (fd.get() < 0) return OpenError(errno, path, path);
  return fd;
}

absl::StatusOr<UniqueFd> ArchiveRoot::OpenByWalk(const std::string& path) const {
  const std::vector<std::string> parts = absl::StrSplit(path, '/');
  UniqueFd dir;  // -1: the root itself
  std::string at;
  for (size_t i = 0; i < parts.size(); ++i) {
    at = at.empty() ? parts[i] : absl::StrCat(at, "/", parts[i]);
    const int from = dir.get() >= 0 ? dir.get() : fd_.get();
    const bool last = i + 1 == parts.size();
    const int flags = last ? kFileFlags : O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    UniqueFd next(openat(from, parts[i].c_str(), flags));
    if (next.get() < 0) {
      int err = errno;
      // O_NOFOLLOW | O_DIRECTORY on a link says ENOTDIR on some kernels:
      // ask what the component is.
      struct stat st;
      if (err == ENOTDIR && fstatat(from, parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(st.st_mode)) {
        err = ELOOP;
      }
      return OpenError(err, path, at);
    }
    dir = std::move(next);
  }
  return dir;
}

absl::StatusOr<RootedFile> ArchiveRoot::OpenFile(absl::string_view path) const {
  if (absl::Status s = CheckPath(path); !s.ok()) return s;
  const std::string p(path);
  auto fd = openat2_ ? OpenWithOpenat2(p) : OpenByWalk(p);
  if (!fd.ok()) return fd.status();
  struct stat st;
  if (fstat(fd->get(), &st) != 0) {
    return absl::UnavailableError(
        absl::StrCat("archive_path \"", p, "\": cannot stat: ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::PermissionDeniedError(
        absl::StrCat("archive_path \"", p, "\": not a regular file"));
  }
  // Reads from here on may block as reads of a regular file do.
  const int flags = fcntl(fd->get(), F_GETFL);
  if (flags >= 0) fcntl(fd->get(), F_SETFL, flags & ~O_NONBLOCK);
  RootedFile file;
  file.fd = *std::move(fd);
  file.size = static_cast<uint64_t>(st.st_size);
  return file;
}

absl::Status ReadAt(int fd, uint64_t offset, absl::Span<uint8_t> out) {
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n =
        pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(
          absl::StrCat("cannot read the archive: ", std::strerror(errno)));
    }
    if (n == 0) {
      return absl::DataLossError(absl::StrCat("the archive file ended at ", offset + done,
                                              " bytes, before its measured size"));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace ebzip::server
