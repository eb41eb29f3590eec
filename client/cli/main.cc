// ebzip: the command line. `ebzip --help` lists the commands,
// `ebzip COMMAND --help` a command's flags.
#include <cstdio>
#include <string>
#include <vector>

#ifdef __GLIBC__  // defined by the headers above
#include <malloc.h>
#endif

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/cli/build_info.h"
#include "client/cli/commands.h"

namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

std::string Usage() {
  std::string commands;
  for (const ebzip::cli::Command& c : ebzip::cli::Commands()) {
    absl::StrAppend(&commands, "  ", c.name, std::string(12 - c.name.size(), ' '), c.summary, "\n");
  }
  return absl::StrCat(
      "usage: ebzip COMMAND [flags] ARGUMENTS\n\n"
      "Error-bounded compression of float arrays.\n\ncommands:\n",
      commands,
      "\n"
      "ebzip COMMAND --help lists a command's flags; ebzip --version describes the build.\n"
      "'-' is standard input or output. Sizes take K, M, G or T (powers of 1024).\n"
      "Exit codes: 0 success; 1 failure (corrupt archive, I/O error, existing output\n"
      "without -f, bound exceeded in compare, server error); 2 bad usage.\n");
}

void PrintVersion() {
  const ebzip::cli::BuildInfo& b = ebzip::cli::GetBuildInfo();
  std::printf("ebzip %s\ncommit %s\nCUDA %s\nbuild type %s\n", b.version, b.commit,
              b.cuda ? "on" : "off", b.build_type);
}

int UsageError(const std::string& message) {
  std::fprintf(stderr, "ebzip: %s\n\n%s", message.c_str(), Usage().c_str());
  return kExitUsage;
}

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
  // As ebzipd does (server/main.cc): the deadlock detector Debian's Abseil
  // leaves on makes each of gRPC's locks (--server) cost ~16x.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return UsageError("no command given");
  const std::string& first = args[0];
  if (first == "-h" || first == "--help" || first == "help") {
    if (args.size() > 1) {
      const ebzip::cli::Command* command = ebzip::cli::FindCommand(args[1]);
      if (command == nullptr) return UsageError(absl::StrCat("unknown command '", args[1], "'"));
      std::printf("%s", ebzip::cli::CommandHelp(*command).c_str());
    } else {
      std::printf("%s", Usage().c_str());
    }
    return 0;
  }
  if (first == "--version") {
    if (args.size() > 1) return UsageError("--version takes no arguments");
    PrintVersion();
    return 0;
  }
  if (!first.empty() && first[0] == '-') {
    return UsageError(absl::StrCat("'", first, "' before the command: flags follow it (ebzip ",
                                   "COMMAND [flags])"));
  }
  const ebzip::cli::Command* command = ebzip::cli::FindCommand(first);
  if (command == nullptr) return UsageError(absl::StrCat("unknown command '", first, "'"));

  auto parsed =
      ebzip::cli::ParseArgs(command->name, command->flags, {args.data() + 1, args.size() - 1});
  if (!parsed.ok()) {
    std::fprintf(stderr, "ebzip %s: %s\n", first.c_str(),
                 std::string(parsed.status().message()).c_str());
    return kExitUsage;
  }
  if (parsed->help()) {
    std::printf("%s", ebzip::cli::CommandHelp(*command).c_str());
    return 0;
  }
  const absl::Status status = command->run(*parsed);
  if (status.ok()) return 0;
  std::fprintf(stderr, "ebzip %s: %s\n", first.c_str(), std::string(status.message()).c_str());
  return status.code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
}
