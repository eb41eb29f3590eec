// Files the command line reads whole (mapped, so a 10 GB input costs no
// copy) and writes: regular files atomically (to a temporary name renamed on
// Commit, so a failed run never leaves a truncated output behind; like gzip,
// no fsync: durability is the caller's choice), anything else in place. An
// existing regular file is replaced only when the caller says so (-f).
#ifndef EBZIP_CLIENT_CLI_MAPPED_FILE_H_
#define EBZIP_CLIENT_CLI_MAPPED_FILE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace ebzip::cli {

class MappedFile {
 public:
  static absl::StatusOr<MappedFile> Open(const std::string& path);
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&&) = delete;
  ~MappedFile();

  absl::Span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  MappedFile(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  const uint8_t* data_;
  uint64_t size_;
};

// ALREADY_EXISTS when `path` names an existing regular file (directly or
// through a symbolic link) and `replace` is false: for a command to ask
// before it does any work. OutputFile::Create checks again.
absl::Status CheckOutputMayBeWritten(const std::string& path, bool replace);

class OutputFile {
 public:
  // Opens `path` for writing:
  // - "-": standard output.
  // - a path that does not exist: a temporary file beside it, renamed to
  //   it on Commit, unless a file has taken the name meanwhile and
  //   `replace` is false.
  // - a regular file: ALREADY_EXISTS unless `replace`; then as above,
  //   renamed over it. Through a symbolic link, the
  //   link's target is replaced (beside the target), not the link; a file
  //   replaced keeps its permission bits (and owner, where we may set it).
  // - anything else that exists (a character or block device such as
  //   /dev/null, a FIFO, /dev/stdout as a pipe or terminal): opened and
  //   written in place, without truncating, never renamed over or removed;
  //   a FIFO's open waits for its reader. A failed run cannot take back
  //   what it wrote there.
  // A directory, or a symbolic link to nothing, is refused (as cp does).
  static absl::StatusOr<OutputFile> Create(const std::string& path, bool replace);
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  ~OutputFile();  // removes the temporary file unless committed

  absl::Status Write(absl::Span<const uint8_t> bytes);
  // Renames the temporary file into place, or closes the file written in
  // place, reporting what close reports.
  absl::Status Commit();
  uint64_t bytes_written() const { return written_; }
  // The temporary file renamed into place on Commit, for a library that
  // writes by name (NetCDF) instead of through Write; nothing when the
  // output is written in place.
  std::optional<std::string> temporary_path() const {
    if (temp_.empty()) return std::nullopt;
    return temp_;
  }
  // Whether the bytes go where standard output goes ("-", /dev/stdout, the
  // terminal standard output is): then nothing else may be printed there.
  bool SameAsStandardOutput() const { return same_as_stdout_; }

 private:
  OutputFile(int fd, std::string path, std::string temp)
      : fd_(fd), path_(std::move(path)), temp_(std::move(temp)) {}
  int fd_;            // -1 once closed
  std::string path_;  // the file written or replaced (a link's target)
  std::string temp_;  // empty when written in place
  uint64_t written_ = 0;
  bool committed_ = false;
  bool standard_output_ = false;  // "-": fd_ is ours to write, not to close
  bool same_as_stdout_ = false;
  bool no_replace_ = false;  // Commit must not rename over a file
};

}  // namespace ebzip::cli

#endif  // EBZIP_CLIENT_CLI_MAPPED_FILE_H_
