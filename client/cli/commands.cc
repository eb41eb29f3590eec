#include "client/cli/commands.h"

#include "absl/strings/str_cat.h"

namespace ebzip::cli {
namespace {

std::vector<absl::string_view> Join(std::initializer_list<std::vector<absl::string_view>> lists) {
  std::vector<absl::string_view> all;
  for (const auto& l : lists) all.insert(all.end(), l.begin(), l.end());
  return all;
}

const std::vector<absl::string_view> kRemoteFlags = {"server", "tls",      "tls_server_name",
                                                     "token",  "deadline", "timeout"};

}  // namespace

const std::vector<Command>& Commands() {
  static const auto* commands = new std::vector<Command>{
      {"compress",
       "compress --type f32|f64 --shape N,N,... (--abs E | --rel E) IN.raw -o OUT.ebz\n"
       "       ebzip compress (--abs E | --rel E) FILE.nc:VARIABLE -o OUT.ebz   (HDF5: "
       "FILE.h5:/path)\n"
       "       ebzip compress FILE.nc   (lists the variables; exit 2: none chosen)",
       "compress a raw, NetCDF or HDF5 array ('-': raw from standard input)",
       Join({{"output", "force", "quiet", "json", "type", "shape", "abs", "rel", "fill",
              "predictor", "lossless", "interp_order", "frame_elements", "radius", "chunk_symbols",
              "subsequence_bits", "gap_array", "metadata", "streams"},
             kRemoteFlags}),
       CompressCommand},
      {"decompress",
       "decompress IN.ebz [--region 10:20,:,100:260] -o OUT.raw|OUT.nc|OUT.h5\n"
       "       ebzip decompress --server HOST:PORT --remote_path DIR/NAME.ebz [--region R] -o OUT",
       "decompress an archive, or a region of it, into a raw little-endian array, or a "
       "NetCDF-4 file (which is HDF5) for -o *.nc or *.h5 ('-': standard input)",
       Join({{"output", "force", "quiet", "json", "decoder", "max_output_bytes", "region",
              "streams", "remote_path"},
             kRemoteFlags}),
       DecompressCommand},
      {"info",
       "info IN.ebz",
       "what an archive holds and where its bytes go",
       {"json"},
       InfoCommand},
      {"compare",
       "compare --type f32|f64 A.raw B.raw [--abs E]",
       "errors between two raw arrays; exit 1 if --abs E is exceeded",
       {"json", "type", "abs", "fill"},
       CompareCommand},
      {"health", "health --server HOST:PORT", "check an ebzipd server (exit 0 when SERVING)",
       Join({{"quiet", "json"}, kRemoteFlags}), HealthCommand},
  };
  return *commands;
}

const Command* FindCommand(absl::string_view name) {
  for (const Command& c : Commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string CommandHelp(const Command& command) {
  std::vector<absl::string_view> flags = {"help"};
  flags.insert(flags.end(), command.flags.begin(), command.flags.end());
  return absl::StrCat("usage: ebzip ", command.usage, "\n\n", command.summary, ".\n\nflags:\n",
                      FlagHelp(flags));
}

}  // namespace ebzip::cli
