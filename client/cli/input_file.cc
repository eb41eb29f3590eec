#include "client/cli/input_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"

namespace ebzip::cli {
namespace {
constexpr uint64_t kReadBytes = uint64_t{1} << 20;
}  // namespace

absl::StatusOr<bool> StandardInput::ReadMore(uint64_t n) {
  if (ended_) return false;
  const size_t old_size = data_.size();
  try {
    // The vector grows by doubling as a pipe delivers, so memory follows
    // what arrives rather than what a flag says to expect.
    data_.resize(old_size + n);
  } catch (const std::bad_alloc&) {
    data_.resize(old_size);
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory reading standard input after ", old_size, " bytes"));
  }
  ssize_t got;
  do {
    got = ::read(STDIN_FILENO, data_.data() + old_size, n);
  } while (got < 0 && errno == EINTR);
  if (got < 0) {
    const int err = errno;
    data_.resize(old_size);
    return absl::UnavailableError(absl::StrCat("cannot read standard input: ", std::strerror(err)));
  }
  data_.resize(old_size + static_cast<size_t>(got));
  if (got == 0) ended_ = true;
  return got > 0;
}

absl::Status StandardInput::ReadAtLeast(uint64_t n) {
  while (data_.size() < n) {
    auto more = ReadMore(n - data_.size());
    if (!more.ok()) return more.status();
    if (!*more) break;
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> StandardInput::ReadToEnd(uint64_t limit) {
  // One byte past the limit tells "exactly the limit" from "more".
  const uint64_t stop = limit == UINT64_MAX ? limit : limit + 1;
  while (data_.size() < stop) {
    auto more = ReadMore(std::min<uint64_t>(kReadBytes, stop - data_.size()));
    if (!more.ok()) return more.status();
    if (!*more) return true;
  }
  return data_.size() <= limit;
}

InputFile::InputFile(std::string name, std::variant<MappedFile, std::vector<uint8_t>> storage)
    : name_(std::move(name)), storage_(std::move(storage)) {
  if (const auto* file = std::get_if<MappedFile>(&storage_)) {
    bytes_ = file->bytes();
  } else {
    const auto& data = std::get<std::vector<uint8_t>>(storage_);
    bytes_ = {data.data(), data.size()};
  }
}

absl::StatusOr<InputFile> InputFile::Open(const std::string& path) {
  auto file = MappedFile::Open(path);
  if (!file.ok()) return file.status();
  return InputFile(path, *std::move(file));
}

InputFile InputFile::FromStandardInput(StandardInput in) {
  return InputFile(kStandardInputName, std::move(in).Release());
}

absl::StatusOr<InputFile> InputFile::OpenOrRead(const std::string& path, uint64_t stdin_limit,
                                                const std::string& limit_name) {
  if (path != "-") return Open(path);
  StandardInput in;
  auto ended = in.ReadToEnd(stdin_limit);
  if (!ended.ok()) return ended.status();
  if (!*ended) {
    return absl::ResourceExhaustedError(
        absl::StrCat("standard input holds more than ", stdin_limit, " bytes (", limit_name, ")"));
  }
  return FromStandardInput(std::move(in));
}

}  // namespace ebzip::cli
