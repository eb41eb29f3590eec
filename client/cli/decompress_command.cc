// ebzip decompress: archive -> raw little-endian array, frame by frame.
#include <cstdio>

#include "absl/flags/flag.h"
#include "client/cli/commands.h"
#include "client/cli/flags.h"
#include "client/cli/mapped_file.h"
#include "client/cli/progress.h"
#include "client/cli/remote.h"
#include "codec/archive.h"

namespace ebzip::cli {
namespace {

// Decompressed by ebzipd; the array streams into the output as it arrives.
absl::Status RunRemote(absl::Span<const uint8_t> archive, const std::string& output) {
  auto client = ConnectFromFlags();
  if (!client.ok()) return client.status();
  auto out = OutputFile::Create(output);
  if (!out.ok()) return out.status();
  auto header = (*client)->Decompress(
      archive, [](const client::RemoteArrayHeader&) { return absl::OkStatus(); },
      [&](absl::Span<const uint8_t> b) { return out->Write(b); });
  if (!header.ok()) return header.status();
  if (auto s = out->Commit(); !s.ok()) return s;
  if (!absl::GetFlag(FLAGS_quiet) && output != "-") {
    std::printf("%s: %s %s, %s, abs bound %.6g, on %s (%s)\n", output.c_str(),
                DTypeName(header->spec.dtype), ShapeToString(header->spec.shape).c_str(),
                HumanBytes(header->spec.num_bytes()).c_str(), header->abs_bound,
                absl::GetFlag(FLAGS_server).c_str(), header->backend.c_str());
  }
  return absl::OkStatus();
}

absl::Status Run(const Args& args) {
  if (args.size() != 1) {
    return absl::InvalidArgumentError("usage: ebzip decompress [flags] INPUT.ebz -o OUTPUT.raw");
  }
  const std::string output = absl::GetFlag(FLAGS_o);
  if (output.empty()) return absl::InvalidArgumentError("-o OUTPUT.raw is required");
  auto decoder = DecoderFromFlag();
  if (!decoder.ok()) return decoder.status();
  auto file = MappedFile::Open(args[0]);
  if (!file.ok()) return file.status();
  if (RemoteRequested()) return RunRemote(file->bytes(), output);
  auto info = ReadArchiveInfo(file->bytes());
  if (!info.ok()) return info.status();

  auto out = OutputFile::Create(output);
  if (!out.ok()) return out.status();
  const ArraySpec spec = info->spec();
  const uint64_t row_bytes = spec.num_bytes() / spec.shape[0];
  {
    Progress progress("decompressing", spec.num_bytes());
    std::vector<uint8_t> frame;
    for (uint64_t i = 0; i < info->frames.size(); ++i) {
      frame.resize(info->FrameRows(i) * row_bytes);
      if (auto s = DecompressFrame(*info, file->bytes(), i, *decoder, frame.data()); !s.ok()) {
        return s;
      }
      if (auto s = out->Write(frame); !s.ok()) return s;
      progress.Advance(frame.size());
    }
  }
  if (auto s = out->Commit(); !s.ok()) return s;
  if (!absl::GetFlag(FLAGS_quiet) && output != "-") {
    std::printf("%s: %s %s, %s, abs bound %.6g\n", output.c_str(), DTypeName(spec.dtype),
                ShapeToString(spec.shape).c_str(), HumanBytes(spec.num_bytes()).c_str(),
                info->header.abs_bound);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status DecompressCommand(const Args& args) { return Run(args); }

}  // namespace ebzip::cli
