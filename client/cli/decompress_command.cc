// ebzip decompress: archive -> raw little-endian array, frame by frame.
//
// --max_output_bytes is checked against the array the archive describes
// before any output is created or written. Its default is the machine's
// physical memory although the array streams to the output a frame at a
// time: a frame is held whole in memory (a one-frame archive's frame is the
// whole array), and an archive needs only about a bit per element, so a
// small archive from an untrusted source can describe 32 or 64 times its
// size in memory and on disk. Arrays larger than memory are legitimate
// (compress maps its input) but rare enough to ask for the flag.
//
// An archive on standard input ("-") is read into memory (the frame index
// is at its end): its header first, whose array is checked against
// --max_output_bytes at once, then the rest, at most --max_output_bytes
// bytes as well.
//
// --region decodes only the frames that hold the region's rows
// (codec/region.h) and writes the region alone, in its own C order; the
// limit applies to the region.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "client/cli/commands.h"
#include "client/cli/input_file.h"
#include "client/cli/json_output.h"
#include "client/cli/mapped_file.h"
#include "client/cli/options.h"
#include "client/cli/progress.h"
#include "client/cli/remote.h"
#include "codec/archive.h"
#include "codec/region.h"

namespace ebzip::cli {
namespace {

// What a decompress wrote, for the summary line or --json.
struct Summary {
  ArraySpec spec;  // what was written: the region's shape with --region
  double abs_bound = 0;
  std::string backend;  // remote only
  std::string region;   // --region, normalized; empty without
};

absl::StatusOr<InputFile> ReadArchive(const std::string& path, uint64_t max_output_bytes) {
  if (path != "-") return InputFile::Open(path);
  StandardInput in;
  if (auto s = in.ReadAtLeast(format::kFileHeaderSize); !s.ok()) return s;
  auto header = format::ParseFileHeader(in.bytes());
  if (!header.ok()) return header.status();
  if (auto s =
          CheckOutputSize(kStandardInputName, {header->dtype, header->shape}, max_output_bytes);
      !s.ok()) {
    return s;
  }
  auto ended = in.ReadToEnd(max_output_bytes);
  if (!ended.ok()) return ended.status();
  if (!*ended) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the archive on standard input is longer than --max_output_bytes=", max_output_bytes,
        " bytes; raise --max_output_bytes to read it"));
  }
  return InputFile::FromStandardInput(std::move(in));
}

// Decompressed by ebzipd; the array streams into the output as it arrives.
// The output is created only once the reply's header has passed the
// client's checks (max_output_bytes among them).
absl::StatusOr<Summary> RunRemote(const ParsedArgs& args, const InputFile& archive,
                                  const std::string& output, uint64_t max_output_bytes,
                                  std::optional<OutputFile>& out) {
  // The archive's own header, when it parses, says at once whether the
  // array is too large, without a call; the server's reply is checked
  // against the same limit (ConnectFromFlags) in case it says otherwise.
  if (auto file_header = format::ParseFileHeader(archive.bytes()); file_header.ok()) {
    if (auto s = CheckOutputSize(archive.name(), {file_header->dtype, file_header->shape},
                                 max_output_bytes);
        !s.ok()) {
      return s;
    }
  }
  auto client = ConnectFromFlags(args, max_output_bytes);
  if (!client.ok()) return client.status();
  auto header = (*client)->Decompress(
      archive.bytes(),
      [&](const client::RemoteArrayHeader&) -> absl::Status {
        auto created = OutputFile::Create(output, args.Switch("force"));
        if (!created.ok()) return created.status();
        out.emplace(*std::move(created));
        return absl::OkStatus();
      },
      [&](absl::Span<const uint8_t> b) { return out->Write(b); });
  if (!header.ok()) return header.status();
  return Summary{header->spec, header->abs_bound, header->backend, ""};
}

absl::StatusOr<Summary> RunRegion(const ParsedArgs& args, const InputFile& archive,
                                  const ArchiveInfo& info, const std::string& output,
                                  uint64_t max_output_bytes, std::optional<OutputFile>& out) {
  auto decoder = DecoderFromFlags(args);
  if (!decoder.ok()) return decoder.status();
  auto region = ParseHyperslab(args.Value("region"), info.header.shape);
  if (!region.ok()) return region.status();
  const ArraySpec spec{info.header.dtype, region->Shape()};
  if (auto s = CheckOutputSize(archive.name(), spec, max_output_bytes); !s.ok()) return s;
  std::vector<uint8_t> values(spec.num_bytes());
  if (auto s = DecompressRegion(info, archive.bytes(), *region, *decoder, absl::MakeSpan(values));
      !s.ok()) {
    return s;
  }
  auto created = OutputFile::Create(output, args.Switch("force"));
  if (!created.ok()) return created.status();
  out.emplace(*std::move(created));
  if (auto s = out->Write(values); !s.ok()) return s;
  return Summary{spec, info.header.abs_bound, "", region->ToString()};
}

absl::StatusOr<Summary> RunLocal(const ParsedArgs& args, const InputFile& archive,
                                 const std::string& output, uint64_t max_output_bytes,
                                 std::optional<OutputFile>& out) {
  auto decoder = DecoderFromFlags(args);
  if (!decoder.ok()) return decoder.status();
  auto info = ReadArchiveInfo(archive.bytes());
  if (!info.ok()) return info.status();
  if (args.Has("region")) return RunRegion(args, archive, *info, output, max_output_bytes, out);
  const ArraySpec spec = info->spec();
  if (auto s = CheckOutputSize(archive.name(), spec, max_output_bytes); !s.ok()) return s;

  auto created = OutputFile::Create(output, args.Switch("force"));
  if (!created.ok()) return created.status();
  out.emplace(*std::move(created));
  const uint64_t row_bytes = spec.num_bytes() / spec.shape[0];
  Progress progress("decompressing", spec.num_bytes());
  // Uninitialized: the decoder writes every byte of a frame, and zeroing
  // a frame-sized buffer first costs a pass over it.
  uint64_t largest = 0;
  for (uint64_t i = 0; i < info->frames.size(); ++i) {
    largest = std::max(largest, info->FrameRows(i) * row_bytes);
  }
  std::unique_ptr<uint8_t[]> frame(new uint8_t[largest]);
  for (uint64_t i = 0; i < info->frames.size(); ++i) {
    const uint64_t bytes = info->FrameRows(i) * row_bytes;
    if (auto s = DecompressFrame(*info, archive.bytes(), i, *decoder, frame.get()); !s.ok()) {
      return s;
    }
    if (auto s = out->Write({frame.get(), bytes}); !s.ok()) return s;
    progress.Advance(bytes);
  }
  return Summary{spec, info->header.abs_bound, "", ""};
}

}  // namespace

absl::Status DecompressCommand(const ParsedArgs& args) {
  if (args.positional().size() != 1) {
    return absl::InvalidArgumentError("usage: ebzip decompress [flags] INPUT.ebz -o OUTPUT.raw");
  }
  if (args.Switch("json") && args.Switch("quiet")) {
    return absl::InvalidArgumentError("--json and --quiet contradict each other");
  }
  const std::string output = args.Value("output");
  if (output.empty()) return absl::InvalidArgumentError("-o OUTPUT.raw is required");
  if (auto decoder = DecoderFromFlags(args); !decoder.ok()) return decoder.status();
  auto max_output_bytes = MaxOutputBytesFromFlags(args);
  if (!max_output_bytes.ok()) return max_output_bytes.status();
  if (auto s = CheckOutputMayBeWritten(output, args.Switch("force")); !s.ok()) return s;
  const auto start = std::chrono::steady_clock::now();
  auto archive = ReadArchive(args.positional()[0], *max_output_bytes);
  if (!archive.ok()) return archive.status();

  std::optional<OutputFile> out;
  const bool remote = RemoteRequested(args);
  if (remote && args.Has("region")) {
    return absl::UnimplementedError(
        "--region with --server: the service decodes whole archives only so far; decompress the "
        "region locally");
  }
  auto summary = remote ? RunRemote(args, *archive, output, *max_output_bytes, out)
                        : RunLocal(args, *archive, output, *max_output_bytes, out);
  if (!summary.ok()) return summary.status();
  if (!out) return absl::InternalError("the server sent no array header");
  if (auto s = out->Commit(); !s.ok()) return s;

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const ArraySpec& spec = summary->spec;
  if (args.Switch("json")) {
    PrintJson(
        {
            {"input", archive->name()},
            {"output", output},
            {"dtype", DTypeName(spec.dtype)},
            {"shape", spec.shape},
            {"input_bytes", archive->bytes().size()},
            {"output_bytes", out->bytes_written()},
            {"abs_bound", summary->abs_bound},
            {"seconds", seconds},
            {"region", summary->region.empty() ? Json() : Json(summary->region)},
            {"server", remote ? Json(args.Value("server")) : Json()},
            {"backend", remote ? Json(summary->backend) : Json()},
        },
        out->SameAsStandardOutput() ? stderr : stdout);
  } else if (!args.Switch("quiet") && !out->SameAsStandardOutput()) {
    std::printf(
        "%s: %s %s, %s, abs bound %.6g%s\n", output.c_str(), DTypeName(spec.dtype),
        ShapeToString(spec.shape).c_str(), HumanBytes(spec.num_bytes()).c_str(), summary->abs_bound,
        remote ? absl::StrCat(" on ", args.Value("server"), " (", summary->backend, ")").c_str()
               : "");
  }
  return absl::OkStatus();
}

}  // namespace ebzip::cli
