// Inputs the command line reads whole: a regular file is mapped
// (mapped_file.h); standard input ("-") is read into memory, up to a limit
// the command sets, since a pipe says nothing of its size and can be read
// only once.
#ifndef EBZIP_CLIENT_CLI_INPUT_FILE_H_
#define EBZIP_CLIENT_CLI_INPUT_FILE_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "client/cli/mapped_file.h"

namespace ebzip::cli {

// Standard input, read in steps, so that a command can look at the start
// (an archive's header) before deciding how much more it will take.
class StandardInput {
 public:
  // Reads until at least `n` bytes are held or the input ends.
  absl::Status ReadAtLeast(uint64_t n);
  // Reads to the end of the input, holding at most `limit` bytes: false
  // when there was more (then `limit` + 1 bytes are held and the rest is
  // left unread). RESOURCE_EXHAUSTED when memory runs out first.
  absl::StatusOr<bool> ReadToEnd(uint64_t limit);

  absl::Span<const uint8_t> bytes() const { return data_; }
  std::vector<uint8_t> Release() && { return std::move(data_); }

 private:
  // Reads up to `n` more bytes; false at the end of the input.
  absl::StatusOr<bool> ReadMore(uint64_t n);

  std::vector<uint8_t> data_;
  bool ended_ = false;
};

class InputFile {
 public:
  // A regular file, mapped; "-" is not one (see FromStandardInput).
  static absl::StatusOr<InputFile> Open(const std::string& path);
  // What `in` holds, under the name "standard input".
  static InputFile FromStandardInput(StandardInput in);
  // "-": standard input to its end, refusing more than `stdin_limit` bytes
  // with RESOURCE_EXHAUSTED (the message names `limit_name`, the flag or
  // fact the limit comes from); anything else: Open.
  static absl::StatusOr<InputFile> OpenOrRead(const std::string& path, uint64_t stdin_limit,
                                              const std::string& limit_name);

  absl::Span<const uint8_t> bytes() const { return bytes_; }
  // The file's name, or "standard input".
  const std::string& name() const { return name_; }

 private:
  InputFile(std::string name, std::variant<MappedFile, std::vector<uint8_t>> storage);

  std::string name_;
  std::variant<MappedFile, std::vector<uint8_t>> storage_;
  absl::Span<const uint8_t> bytes_;
};

// The name commands use for "-" in messages.
inline constexpr char kStandardInputName[] = "standard input";

}  // namespace ebzip::cli

#endif  // EBZIP_CLIENT_CLI_INPUT_FILE_H_
