// Shared by the client/io tests: a scratch directory per test, a status
// check that names what it expected, and an open-descriptor count for
// checking that failed loads leave no file open.
#ifndef EBZIP_TESTS_IO_IO_TEST_UTIL_H_
#define EBZIP_TESTS_IO_IO_TEST_UTIL_H_

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace ebzip {

class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = ::testing::TempDir() + "ebzip_io_XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code error;
    if (!path_.empty()) std::filesystem::remove_all(path_, error);
  }

  // An empty string when mkdtemp failed, which makes every later open fail
  // loudly rather than writing somewhere unexpected.
  std::string File(std::string_view name) const {
    return path_.empty() ? std::string() : path_ + "/" + std::string(name);
  }

 private:
  std::string path_;
};

inline void WriteBytes(const std::string& path, std::string_view bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

inline ::testing::AssertionResult HasStatus(const absl::Status& status, absl::StatusCode code,
                                            std::initializer_list<std::string_view> parts) {
  if (status.code() != code) {
    return ::testing::AssertionFailure()
           << "expected code " << absl::StatusCodeToString(code) << ", got " << status;
  }
  for (std::string_view part : parts) {
    if (status.message().find(absl::string_view(part.data(), part.size())) ==
        std::string_view::npos) {
      return ::testing::AssertionFailure() << "message lacks \"" << part << "\": " << status;
    }
  }
  return ::testing::AssertionSuccess();
}

inline int OpenDescriptorCount() {
  std::error_code error;
  int count = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    ++count;
  }
  return count;
}

// The loaded bytes as float or double values, for exact comparisons.
template <typename T>
std::vector<T> ValuesOf(const std::vector<uint8_t>& data) {
  std::vector<T> values(data.size() / sizeof(T));
  std::memcpy(values.data(), data.data(), values.size() * sizeof(T));
  return values;
}

}  // namespace ebzip

#endif  // EBZIP_TESTS_IO_IO_TEST_UTIL_H_
