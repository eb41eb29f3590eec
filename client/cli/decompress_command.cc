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
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

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
// The output is created only once the reply's header has passed the
// client's checks (max_output_bytes among them).
absl::Status RunRemote(const std::string& input, absl::Span<const uint8_t> archive,
                       const std::string& output, uint64_t max_output_bytes) {
  // The archive's own header, when it parses, says at once whether the
  // array is too large, without a call; the server's reply is checked
  // against the same limit (ConnectFromFlags) in case it says otherwise.
  if (auto file_header = format::ParseFileHeader(archive); file_header.ok()) {
    if (auto s = CheckOutputSize(input, {file_header->dtype, file_header->shape}, max_output_bytes);
        !s.ok()) {
      return s;
    }
  }
  auto client = ConnectFromFlags();
  if (!client.ok()) return client.status();
  std::optional<OutputFile> out;
  auto header = (*client)->Decompress(
      archive,
      [&](const client::RemoteArrayHeader&) -> absl::Status {
        auto created = OutputFile::Create(output);
        if (!created.ok()) return created.status();
        out.emplace(*std::move(created));
        return absl::OkStatus();
      },
      [&](absl::Span<const uint8_t> b) { return out->Write(b); });
  if (!header.ok()) return header.status();
  if (auto s = out->Commit(); !s.ok()) return s;
  if (!absl::GetFlag(FLAGS_quiet) && !out->SameAsStandardOutput()) {
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
  auto max_output_bytes = MaxOutputBytesFromFlag();
  if (!max_output_bytes.ok()) return max_output_bytes.status();
  auto file = MappedFile::Open(args[0]);
  if (!file.ok()) return file.status();
  if (RemoteRequested()) return RunRemote(args[0], file->bytes(), output, *max_output_bytes);
  auto info = ReadArchiveInfo(file->bytes());
  if (!info.ok()) return info.status();
  const ArraySpec spec = info->spec();
  if (auto s = CheckOutputSize(args[0], spec, *max_output_bytes); !s.ok()) return s;

  auto out = OutputFile::Create(output);
  if (!out.ok()) return out.status();
  const uint64_t row_bytes = spec.num_bytes() / spec.shape[0];
  {
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
      if (auto s = DecompressFrame(*info, file->bytes(), i, *decoder, frame.get()); !s.ok()) {
        return s;
      }
      if (auto s = out->Write({frame.get(), bytes}); !s.ok()) return s;
      progress.Advance(bytes);
    }
  }
  if (auto s = out->Commit(); !s.ok()) return s;
  if (!absl::GetFlag(FLAGS_quiet) && !out->SameAsStandardOutput()) {
    std::printf("%s: %s %s, %s, abs bound %.6g\n", output.c_str(), DTypeName(spec.dtype),
                ShapeToString(spec.shape).c_str(), HumanBytes(spec.num_bytes()).c_str(),
                info->header.abs_bound);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status DecompressCommand(const Args& args) { return Run(args); }

}  // namespace ebzip::cli
