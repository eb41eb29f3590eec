#include "client/cli/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

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

absl::StatusOr<OutputFile> OutputFile::Create(const std::string& path) {
  if (path == "-") return OutputFile(STDOUT_FILENO, path, "");
  std::string temp = absl::StrCat(path, ".partial-", ::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create", temp);
  return OutputFile(fd, path, std::move(temp));
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : fd_(other.fd_),
      path_(std::move(other.path_)),
      temp_(std::move(other.temp_)),
      written_(other.written_),
      committed_(other.committed_) {
  other.fd_ = -1;
}

OutputFile::~OutputFile() {
  if (fd_ < 0 || temp_.empty()) return;
  ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
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
  if (temp_.empty()) return absl::OkStatus();
  if (::rename(temp_.c_str(), path_.c_str()) != 0) return ErrnoError("cannot rename to", path_);
  committed_ = true;
  return absl::OkStatus();
}

}  // namespace ebzip::cli
