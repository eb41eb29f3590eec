// ebzip: the command line. `ebzip help` lists the commands.
#include <cstdio>
#include <map>
#include <string>

#ifdef __GLIBC__  // defined by the headers above
#include <malloc.h>
#endif

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/synchronization/mutex.h"
#include "client/cli/commands.h"

namespace {

constexpr char kUsage[] = R"(ebzip: error-bounded compression of float arrays

  ebzip compress   --type f32 --shape 2161,4320 (--abs E | --rel E) IN.raw -o OUT.ebz
  ebzip compress   (--abs E | --rel E) file.nc:VARIABLE -o OUT.ebz   (HDF5: file.h5:/path)
  ebzip decompress IN.ebz -o OUT.raw [--max_output_bytes N]
  ebzip info       IN.ebz
  ebzip compare    --type f32 A.raw B.raw [--abs E]
  ebzip health     --server HOST:PORT

compress and decompress take --server HOST:PORT [--tls CA.pem] [--token T] to run on
an ebzipd server instead; the files are the same.

Shapes are C order, slowest dimension first. Run with --helpfull for every flag.
Exit codes: 0 success, 1 failure (corrupt archive, I/O error, bound violated), 2 bad usage.)";

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

}  // namespace

int main(int argc, char** argv) {
#ifdef __GLIBC__
  // The codec allocates and frees buffers of the same few sizes over and
  // over (a frame's symbols for each predictor it tries, then the frame's
  // own): glibc's defaults hand them back to the kernel each time, and the
  // next allocation pays a page fault for every 4 KiB again (a tenth of
  // compressing a small field). A short-lived command keeps its heap
  // instead; arrays above the threshold are still mapped on their own.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
  absl::SetProgramUsageMessage(kUsage);
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  // As ebzipd does (server/main.cc): the deadlock detector Debian's Abseil
  // leaves on makes each of gRPC's locks (--server) cost ~16x.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (positional.size() < 2 || std::string(positional[1]) == "help") {
    std::fprintf(positional.size() < 2 ? stderr : stdout, "%s\n", kUsage);
    return positional.size() < 2 ? kExitUsage : 0;
  }
  const std::map<std::string, absl::Status (*)(const ebzip::cli::Args&)> commands = {
      {"compress", ebzip::cli::CompressCommand},
      {"decompress", ebzip::cli::DecompressCommand},
      {"info", ebzip::cli::InfoCommand},
      {"compare", ebzip::cli::CompareCommand},
      {"health", ebzip::cli::HealthCommand},
  };
  const std::string name = positional[1];
  auto it = commands.find(name);
  if (it == commands.end()) {
    std::fprintf(stderr, "ebzip: unknown command '%s'\n\n%s\n", name.c_str(), kUsage);
    return kExitUsage;
  }
  const absl::Status status = it->second({positional.begin() + 2, positional.end()});
  if (status.ok()) return 0;
  std::fprintf(stderr, "ebzip %s: %s\n", name.c_str(), std::string(status.message()).c_str());
  return status.code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
}
