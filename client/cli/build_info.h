// What `ebzip --version` reports about the build. The version is CMake's
// project(VERSION); the commit is read from git at build time (not
// configure time, so that it follows new commits), "unknown" outside a git
// checkout (a source tarball, a container build without .git).
#ifndef EBZIP_CLIENT_CLI_BUILD_INFO_H_
#define EBZIP_CLIENT_CLI_BUILD_INFO_H_

namespace ebzip::cli {

struct BuildInfo {
  const char* version;     // "0.1.0"
  const char* commit;      // abbreviated hash, "-dirty" with uncommitted changes; or "unknown"
  bool cuda;               // whether the tree was built with the CUDA codec
  const char* build_type;  // CMAKE_BUILD_TYPE
};

const BuildInfo& GetBuildInfo();

}  // namespace ebzip::cli

#endif  // EBZIP_CLIENT_CLI_BUILD_INFO_H_
