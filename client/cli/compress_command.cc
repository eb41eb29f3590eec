// ebzip compress: raw, NetCDF or HDF5 input -> archive, frame by frame so
// the output streams and a progress bar can follow it.
#include <chrono>
#include <cstdio>
#include <optional>
#include <variant>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "client/cli/commands.h"
#include "client/cli/flags.h"
#include "client/cli/mapped_file.h"
#include "client/cli/progress.h"
#include "client/cli/remote.h"
#include "client/io/array_source.h"
#include "codec/archive.h"

namespace ebzip::cli {
namespace {

// The input array and whatever keeps its bytes alive.
struct Input {
  ArraySpec spec;
  std::optional<double> file_fill;
  std::string name;
  std::variant<MappedFile, LoadedArray> storage;
  absl::Span<const uint8_t> bytes;
};

absl::StatusOr<Input> OpenInput(const std::string& arg) {
  if (LooksLikeArraySource(arg)) {
    if (!absl::GetFlag(FLAGS_type).empty() || !absl::GetFlag(FLAGS_shape).empty()) {
      return absl::InvalidArgumentError(
          "--type and --shape are for raw input; NetCDF and HDF5 files carry their own");
    }
    auto module = LoadArrayFileModule();
    if (!module.ok()) return module.status();
    auto loaded = (*module)->Load(arg);
    if (!loaded.ok()) return loaded.status();
    Input in{loaded->spec, loaded->fill_value, loaded->description, LoadedArray{}, {}};
    in.storage = *std::move(loaded);
    const auto& data = std::get<LoadedArray>(in.storage).data;
    in.bytes = {data.data(), data.size()};
    return in;
  }
  // Open first: a missing input (raw, or "missing.nc:VAR") is a failure to
  // report as such, not a request for --type and --shape.
  auto file = MappedFile::Open(arg);
  if (!file.ok()) return file.status();
  auto dtype = DTypeFromFlag();
  if (!dtype.ok()) return dtype.status();
  auto shape = ShapeFromFlag();
  if (!shape.ok()) return shape.status();
  ArraySpec spec{*dtype, *shape};
  if (auto s = ValidateArraySpec(spec); !s.ok()) return s;
  if (file->bytes().size() != spec.num_bytes()) {
    return absl::InvalidArgumentError(absl::StrCat(
        arg, " holds ", file->bytes().size(), " bytes, but --shape ", ShapeToString(spec.shape),
        " of ", DTypeName(spec.dtype), " needs ", spec.num_bytes()));
  }
  absl::Span<const uint8_t> bytes = file->bytes();
  return Input{spec, std::nullopt, arg, *std::move(file), bytes};
}

// The same file, compressed by ebzipd: the archive streams into the output
// as it arrives.
absl::Status RunRemote(const Input& in, const CompressOptions& options, const std::string& output,
                       std::chrono::steady_clock::time_point start) {
  auto client = ConnectFromFlags();
  if (!client.ok()) return client.status();
  auto out = OutputFile::Create(output);
  if (!out.ok()) return out.status();
  auto summary = (*client)->Compress(in.spec, in.bytes, options,
                                     [&](absl::Span<const uint8_t> b) { return out->Write(b); });
  if (!summary.ok()) return summary.status();
  if (auto s = out->Commit(); !s.ok()) return s;
  if (!absl::GetFlag(FLAGS_quiet) && !out->SameAsStandardOutput()) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const uint64_t n = in.spec.num_elements();
    std::printf(
        "%s: %s %s, %s -> %s, ratio %.2f, abs bound %.6g, outliers %.3f%%, "
        "verbatim %.3f%%, %.2f s on %s (%s)\n",
        in.name.c_str(), DTypeName(in.spec.dtype), ShapeToString(in.spec.shape).c_str(),
        HumanBytes(in.bytes.size()).c_str(), HumanBytes(out->bytes_written()).c_str(),
        static_cast<double>(in.bytes.size()) / static_cast<double>(out->bytes_written()),
        summary->abs_bound, 100.0 * static_cast<double>(summary->outliers) / n,
        100.0 * static_cast<double>(summary->verbatim) / n, seconds,
        absl::GetFlag(FLAGS_server).c_str(), summary->backend.c_str());
  }
  return absl::OkStatus();
}

absl::Status Run(const Args& args) {
  if (args.size() != 1) {
    return absl::InvalidArgumentError("usage: ebzip compress [flags] INPUT -o OUTPUT.ebz");
  }
  const std::string output = absl::GetFlag(FLAGS_o);
  if (output.empty()) return absl::InvalidArgumentError("-o OUTPUT.ebz is required");
  const auto start = std::chrono::steady_clock::now();
  auto in = OpenInput(args[0]);
  if (!in.ok()) return in.status();
  auto options = CompressOptionsFromFlags(in->file_fill);
  if (!options.ok()) return options.status();
  if (auto s = ValidateCompressOptions(in->spec, *options); !s.ok()) return s;
  if (RemoteRequested()) return RunRemote(*in, *options, output, start);

  ValueRange range;
  if (options->mode == BoundMode::kRel)
    range = FiniteRange(in->spec, in->bytes, options->fill_value);
  auto plan = PlanArchive(in->spec, *options, ResolveBound(*options, range));
  if (!plan.ok()) return plan.status();

  auto out = OutputFile::Create(output);
  if (!out.ok()) return out.status();
  ArchiveWriter writer(*plan);
  if (auto s = out->Write(writer.Begin()); !s.ok()) return s;
  uint64_t outliers = 0, verbatim = 0;
  {
    Progress progress("compressing", in->bytes.size());
    std::vector<uint8_t> frame;
    for (uint64_t i = 0; i < plan->frame_count(); ++i) {
      frame.clear();
      EncodeFrame(plan->ParamsForFrame(i), in->bytes.data() + plan->FrameDataOffset(i), &frame);
      auto header = format::ParseFrameHeader(frame);
      if (!header.ok()) return header.status();
      outliers += header->outlier_count;
      verbatim += header->verbatim_count;
      writer.AddFrame(frame.size());
      if (auto s = out->Write(frame); !s.ok()) return s;
      progress.Advance(plan->FrameDataBytes(i));
    }
  }
  if (auto s = out->Write(writer.Finish()); !s.ok()) return s;
  if (auto s = out->Commit(); !s.ok()) return s;

  if (!absl::GetFlag(FLAGS_quiet) && !out->SameAsStandardOutput()) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const uint64_t n = in->spec.num_elements();
    std::printf(
        "%s: %s %s, %s -> %s, ratio %.2f, abs bound %.6g, outliers %.3f%%, "
        "verbatim %.3f%%, %.2f s\n",
        in->name.c_str(), DTypeName(in->spec.dtype), ShapeToString(in->spec.shape).c_str(),
        HumanBytes(in->bytes.size()).c_str(), HumanBytes(out->bytes_written()).c_str(),
        static_cast<double>(in->bytes.size()) / static_cast<double>(out->bytes_written()),
        plan->header.abs_bound, 100.0 * static_cast<double>(outliers) / n,
        100.0 * static_cast<double>(verbatim) / n, seconds);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CompressCommand(const Args& args) { return Run(args); }

}  // namespace ebzip::cli
