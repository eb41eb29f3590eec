// ebzip decompress: archive -> raw little-endian array, frame by frame; or,
// for -o OUT.nc / OUT.h5, a NetCDF-4 file holding the array as the variable
// the archive's metadata describes (client/io/netcdf_export.h).
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
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "client/cli/commands.h"
#include "client/cli/input_file.h"
#include "client/cli/json_output.h"
#include "client/cli/mapped_file.h"
#include "client/cli/modules.h"
#include "client/cli/options.h"
#include "client/cli/progress.h"
#include "client/cli/remote.h"
#include "codec/archive.h"
#include "codec/region.h"

namespace ebzip::cli {
namespace {

// -o's extension picks what is written: a NetCDF-4 file (which is HDF5 too)
// for these, raw values for anything else.
bool WantsNetcdf(const std::string& output) {
  const std::string ext = absl::AsciiStrToLower(std::filesystem::path(output).extension().string());
  return ext == ".nc" || ext == ".nc4" || ext == ".cdf" || ext == ".netcdf" || ext == ".h5" ||
         ext == ".hdf5" || ext == ".he5";
}

// Where the decoded array goes: the output file's bytes, or a NetCDF-4
// writer working on the output file's temporary name, so that -f and the
// rename on success hold for both.
class ArrayOutput {
 public:
  // `region` is the part of the archive's array written (all of it without
  // --region); `header` and `metadata` the archive's, for NetCDF outputs.
  static absl::StatusOr<ArrayOutput> Create(const std::string& path, bool replace,
                                            const format::FileHeader& header,
                                            const Hyperslab& region, std::string_view metadata) {
    const bool netcdf = WantsNetcdf(path);
    std::error_code error;
    const auto status = std::filesystem::status(path, error);
    // Checked before opening: opening a FIFO waits for its reader.
    if (netcdf && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot write NetCDF to ", path, ": NetCDF goes to a regular file, not in place"));
    }
    auto file = OutputFile::Create(path, replace);
    if (!file.ok()) return file.status();
    ArrayOutput out(*std::move(file));
    if (!netcdf) return out;
    if (!out.file_.temporary_path()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot write NetCDF to ", path, ": NetCDF goes to a regular file, not in place"));
    }
    auto module = LoadArrayFileModule();
    if (!module.ok()) return module.status();
    auto writer = (*module)->CreateWriter(*out.file_.temporary_path(), header.dtype, region,
                                          header.fill_value, metadata, &out.note_);
    if (!writer.ok()) return writer.status();
    out.writer_ = *std::move(writer);
    return out;
  }

  absl::Status Write(absl::Span<const uint8_t> bytes) {
    return writer_ ? writer_->Write(bytes) : file_.Write(bytes);
  }

  absl::Status Commit() {
    if (writer_) {
      if (auto s = writer_->Finish(); !s.ok()) return s;
      std::error_code error;
      netcdf_bytes_ = std::filesystem::file_size(*file_.temporary_path(), error);
    }
    return file_.Commit();
  }

  uint64_t bytes_written() const { return writer_ ? netcdf_bytes_ : file_.bytes_written(); }
  bool SameAsStandardOutput() const { return file_.SameAsStandardOutput(); }
  const char* format() const { return writer_ ? "netcdf4" : "raw"; }
  // Why the archive's metadata was not used, or "".
  const std::string& note() const { return note_; }

 private:
  explicit ArrayOutput(OutputFile file) : file_(std::move(file)) {}

  OutputFile file_;
  std::unique_ptr<ArrayFileWriter> writer_;
  uint64_t netcdf_bytes_ = 0;
  std::string note_;
};

// The metadata document of an archive about to be sent to a server, "" when
// it has none or it does not parse (the server then says what is wrong).
std::string MetadataOf(absl::Span<const uint8_t> archive, const format::FileHeader& header) {
  if (header.metadata_bytes == 0) return "";
  auto document =
      format::ParseMetadataBlock(archive.subspan(format::kFileHeaderSize), header.metadata_bytes);
  return document.ok() ? *std::move(document) : "";
}

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
// client's checks (max_output_bytes among them). `archive` is null with
// --remote_path (the server reads its own file); --region is parsed
// against the archive's shape, which the server tells first (a header-only
// call) when the archive is the server's.
absl::StatusOr<Summary> RunRemote(const ParsedArgs& args, const InputFile* archive,
                                  const std::string& output, uint64_t max_output_bytes,
                                  std::optional<ArrayOutput>& out) {
  const absl::Span<const uint8_t> bytes =
      archive != nullptr ? archive->bytes() : absl::Span<const uint8_t>();
  const std::string name = archive != nullptr ? archive->name() : args.Value("remote_path");
  // The archive's own header, when it parses, says at once whether the
  // array is too large, without a call; the server's reply is checked
  // against the same limit (ConnectFromFlags) in case it says otherwise.
  absl::StatusOr<format::FileHeader> file_header =
      archive != nullptr ? format::ParseFileHeader(bytes)
                         : absl::NotFoundError("the archive is the server's");
  auto client = ConnectFromFlags(args, max_output_bytes);
  if (!client.ok()) return client.status();
  client::DecompressRequestOptions request;
  request.archive_path = args.Value("remote_path");
  if (args.Has("region")) {
    ArraySpec whole;
    if (file_header.ok()) {
      whole = {file_header->dtype, file_header->shape};
    } else if (archive == nullptr) {
      client::DecompressRequestOptions probe;
      probe.archive_path = request.archive_path;
      probe.header_only = true;
      auto h = (*client)->Decompress(
          {}, probe, [](const client::RemoteArrayHeader&) { return absl::OkStatus(); },
          [](absl::Span<const uint8_t>) { return absl::OkStatus(); });
      if (!h.ok()) return h.status();
      whole = h->archive_spec;
    } else {
      return file_header.status();
    }
    auto region = ParseHyperslab(args.Value("region"), whole.shape);
    if (!region.ok()) return region.status();
    if (auto s = CheckOutputSize(name, {whole.dtype, region->Shape()}, max_output_bytes); !s.ok()) {
      return s;
    }
    request.region = *std::move(region);
  } else if (file_header.ok()) {
    if (auto s = CheckOutputSize(name, {file_header->dtype, file_header->shape}, max_output_bytes);
        !s.ok()) {
      return s;
    }
  }
  auto header = (*client)->Decompress(
      bytes, request,
      [&](const client::RemoteArrayHeader& reply) -> absl::Status {
        // The server's array, with what the archive itself says of the
        // variable (the server sends no metadata).
        format::FileHeader archive_header = file_header.ok() ? *file_header : format::FileHeader{};
        archive_header.dtype = reply.spec.dtype;
        const std::string metadata = file_header.ok() ? MetadataOf(bytes, *file_header) : "";
        auto created = ArrayOutput::Create(
            output, args.Switch("force"), archive_header,
            request.region ? *request.region : WholeArray(reply.spec.shape), metadata);
        if (!created.ok()) return created.status();
        out.emplace(*std::move(created));
        return absl::OkStatus();
      },
      [&](absl::Span<const uint8_t> b) { return out->Write(b); });
  if (!header.ok()) return header.status();
  return Summary{header->spec, header->abs_bound, header->backend,
                 request.region ? request.region->ToString() : ""};
}

absl::StatusOr<Summary> RunRegion(const ParsedArgs& args, const InputFile& archive,
                                  const ArchiveInfo& info, const std::string& output,
                                  uint64_t max_output_bytes, std::optional<ArrayOutput>& out) {
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
  auto created =
      ArrayOutput::Create(output, args.Switch("force"), info.header, *region, info.metadata);
  if (!created.ok()) return created.status();
  out.emplace(*std::move(created));
  if (auto s = out->Write(values); !s.ok()) return s;
  return Summary{spec, info.header.abs_bound, "", region->ToString()};
}

absl::StatusOr<Summary> RunLocal(const ParsedArgs& args, const InputFile& archive,
                                 const std::string& output, uint64_t max_output_bytes,
                                 std::optional<ArrayOutput>& out) {
  auto decoder = DecoderFromFlags(args);
  if (!decoder.ok()) return decoder.status();
  auto info = ReadArchiveInfo(archive.bytes());
  if (!info.ok()) return info.status();
  if (args.Has("region")) return RunRegion(args, archive, *info, output, max_output_bytes, out);
  const ArraySpec spec = info->spec();
  if (auto s = CheckOutputSize(archive.name(), spec, max_output_bytes); !s.ok()) return s;

  auto created = ArrayOutput::Create(output, args.Switch("force"), info->header,
                                     WholeArray(spec.shape), info->metadata);
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
  const bool remote = RemoteRequested(args);
  const bool server_file = args.Has("remote_path");
  if (server_file && !remote) {
    return absl::InvalidArgumentError("--remote_path names an archive on a server: give --server");
  }
  if (args.positional().size() != (server_file ? 0u : 1u)) {
    return absl::InvalidArgumentError(
        server_file ? "usage: ebzip decompress --server HOST:PORT --remote_path PATH -o OUTPUT "
                      "(no INPUT: the archive is the server's)"
                    : "usage: ebzip decompress [flags] INPUT.ebz -o OUTPUT.raw");
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
  std::optional<InputFile> archive;
  if (!server_file) {
    auto read = ReadArchive(args.positional()[0], *max_output_bytes);
    if (!read.ok()) return read.status();
    archive.emplace(*std::move(read));
  }

  std::optional<ArrayOutput> out;
  auto summary =
      remote ? RunRemote(args, archive ? &*archive : nullptr, output, *max_output_bytes, out)
             : RunLocal(args, *archive, output, *max_output_bytes, out);
  if (!summary.ok()) return summary.status();
  if (!out) return absl::InternalError("the server sent no array header");
  if (auto s = out->Commit(); !s.ok()) return s;
  if (!out->note().empty()) {
    std::fprintf(stderr, "ebzip decompress: warning: %s\n", out->note().c_str());
  }

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const ArraySpec& spec = summary->spec;
  if (args.Switch("json")) {
    PrintJson(
        {
            {"input", archive ? archive->name() : args.Value("remote_path")},
            {"output", output},
            {"dtype", DTypeName(spec.dtype)},
            {"shape", spec.shape},
            {"input_bytes", archive ? archive->bytes().size() : 0},
            {"output_bytes", out->bytes_written()},
            {"format", out->format()},
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
