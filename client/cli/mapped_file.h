// Files the command line reads whole (mapped, so a 10 GB input costs no
// copy) and writes atomically (to a temporary name renamed on Commit, so a
// failed run never leaves a truncated output behind; like gzip, no fsync:
// durability is the caller's choice).
#ifndef EBZIP_CLIENT_CLI_MAPPED_FILE_H_
#define EBZIP_CLIENT_CLI_MAPPED_FILE_H_

#include <cstdint>
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

class OutputFile {
 public:
  // "-" writes to standard output (not atomically).
  static absl::StatusOr<OutputFile> Create(const std::string& path);
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  ~OutputFile();  // removes the temporary file unless committed

  absl::Status Write(absl::Span<const uint8_t> bytes);
  absl::Status Commit();
  uint64_t bytes_written() const { return written_; }

 private:
  OutputFile(int fd, std::string path, std::string temp)
      : fd_(fd), path_(std::move(path)), temp_(std::move(temp)) {}
  int fd_;
  std::string path_;
  std::string temp_;  // empty for standard output
  uint64_t written_ = 0;
  bool committed_ = false;
};

}  // namespace ebzip::cli

#endif  // EBZIP_CLIENT_CLI_MAPPED_FILE_H_
