#include "client/cli/modules.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ebzip::cli {
namespace {

// The directory of the running executable, or "" when unknown.
std::string ExecutableDirectory() {
  char path[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return "";
  const std::string exe(path, static_cast<size_t>(n));
  const size_t slash = exe.rfind('/');
  return slash == std::string::npos ? "" : exe.substr(0, slash);
}

// Loads module `file` and returns its entry point's result.
absl::StatusOr<void*> Load(const std::string& file, const char* entry) {
  const std::string dir = ExecutableDirectory();
  std::vector<std::string> tried;
  std::vector<std::string> errors;
  for (const std::string& candidate :
       {absl::StrCat(dir, "/", file), absl::StrCat(dir, "/../lib/ebzip/", file)}) {
    tried.push_back(candidate);
    // RTLD_LOCAL: a module's libraries stay its own.
    void* handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* error = ::dlerror();
      if (::access(candidate.c_str(), F_OK) == 0 && error != nullptr) errors.push_back(error);
      continue;
    }
    auto* fn = reinterpret_cast<void* (*)()>(::dlsym(handle, entry));
    if (fn == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(candidate, " has no ", entry));
    }
    return fn();
  }
  return absl::FailedPreconditionError(
      absl::StrCat("cannot load the ebzip module ", file, " (looked for ",
                   absl::StrJoin(tried, " and "), ")",
                   errors.empty() ? "" : absl::StrCat(": ", absl::StrJoin(errors, "; "))));
}

template <typename Module>
absl::StatusOr<Module*> LoadOnce(const std::string& file, const char* entry) {
  static std::once_flag once;
  static absl::StatusOr<Module*>* loaded = nullptr;
  std::call_once(once, [&] {
    auto module = Load(file, entry);
    loaded = module.ok() ? new absl::StatusOr<Module*>(static_cast<Module*>(*module))
                         : new absl::StatusOr<Module*>(module.status());
  });
  return *loaded;
}

}  // namespace

absl::StatusOr<RemoteModule*> LoadRemoteModule() {
  return LoadOnce<RemoteModule>("ebzip-remote.so", EBZIP_REMOTE_MODULE_ENTRY);
}

absl::StatusOr<ArrayFileModule*> LoadArrayFileModule() {
  return LoadOnce<ArrayFileModule>("ebzip-array-file.so", EBZIP_ARRAY_FILE_MODULE_ENTRY);
}

}  // namespace ebzip::cli
