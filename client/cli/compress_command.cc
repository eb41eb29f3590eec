// ebzip compress: raw, NetCDF or HDF5 input -> archive, frame by frame so
// the output streams and a progress bar can follow it.
#include <chrono>
#include <cstdio>
#include <optional>
#include <variant>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/cli/commands.h"
#include "client/cli/input_file.h"
#include "client/cli/json_output.h"
#include "client/cli/mapped_file.h"
#include "client/cli/modules.h"
#include "client/cli/options.h"
#include "client/cli/progress.h"
#include "client/cli/remote.h"
#include "client/cli/safety.h"
#include "client/io/array_source.h"
#include "codec/archive.h"

namespace ebzip::cli {
namespace {

// The input array and whatever keeps its bytes alive.
struct Input {
  ArraySpec spec;
  std::optional<double> file_fill;
  std::string name;
  std::variant<InputFile, LoadedArray> storage;
  absl::Span<const uint8_t> bytes;
  std::string metadata;  // a NetCDF/HDF5 variable's description (client/io/variable_metadata.h)
};

// Something the user should know about a compression that succeeded.
struct Warning {
  std::string kind;  // "dominated_range", "larger_archive"
  std::string message;
};

// A NetCDF or HDF5 file named without ":VARIABLE" (or with nothing after
// the ':'): the path, to list its variables instead of reading it raw.
std::optional<std::string> ArrayFileWithoutVariable(const std::string& arg) {
  if (arg == "-") return std::nullopt;
  std::string path = arg;
  if (std::optional<size_t> colon = ArraySourceColon(arg); colon && *colon + 1 == arg.size()) {
    path = arg.substr(0, *colon);
  }
  if (DetectArrayContainer(path) == ArrayContainer::kNone) return std::nullopt;
  return path;
}

// No variable chosen is a usage error (exit 2); its message lists the
// variables to choose from.
absl::Status ListVariables(const std::string& path) {
  auto module = LoadArrayFileModule();
  if (!module.ok()) return module.status();
  auto variables = (*module)->List(path);
  if (!variables.ok()) return variables.status();
  std::string text = absl::StrCat("no variable chosen: name one as ", path, ":VARIABLE");
  if (variables->empty())
    return absl::InvalidArgumentError(absl::StrCat(text, " (", path, " has none)"));
  absl::StrAppend(&text, "; ", path, " holds:");
  for (const VariableSummary& v : *variables) {
    absl::StrAppendFormat(
        &text, "\n  %-20s %-8s %-16s%s%s", v.name, v.type,
        v.shape.empty() ? "scalar" : ShapeToString(v.shape),
        v.dimensions.empty() ? "" : absl::StrCat(" (", absl::StrJoin(v.dimensions, ", "), ")"),
        v.loadable ? "" : "  (not compressible)");
  }
  return absl::InvalidArgumentError(text);
}

// A raw input's size must be the one --type and --shape give.
absl::Status CheckRawSize(const std::string& name, uint64_t bytes, bool more,
                          const ArraySpec& spec) {
  if (bytes == spec.num_bytes() && !more) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      name, " holds ", more ? "more than " : "", bytes, " bytes, but --shape ",
      ShapeToString(spec.shape), " of ", DTypeName(spec.dtype), " needs ", spec.num_bytes()));
}

absl::StatusOr<ArraySpec> RawSpec(const ParsedArgs& args) {
  auto dtype = DTypeFromFlags(args);
  if (!dtype.ok()) return dtype.status();
  auto shape = ShapeFromFlags(args);
  if (!shape.ok()) return shape.status();
  ArraySpec spec{*dtype, *shape};
  if (auto s = ValidateArraySpec(spec); !s.ok()) return s;
  return spec;
}

absl::StatusOr<Input> OpenInput(const ParsedArgs& args, const std::string& arg) {
  if (arg == "-") {
    // A pipe has no size: --type and --shape say how much to read, and
    // reading stops one byte past that.
    auto spec = RawSpec(args);
    if (!spec.ok()) return spec.status();
    StandardInput in;
    auto ended = in.ReadToEnd(spec->num_bytes());
    if (!ended.ok()) return ended.status();
    if (auto s =
            CheckRawSize(kStandardInputName, in.bytes().size() - (*ended ? 0 : 1), !*ended, *spec);
        !s.ok()) {
      return s;
    }
    InputFile file = InputFile::FromStandardInput(std::move(in));
    const absl::Span<const uint8_t> bytes = file.bytes();
    return Input{*spec, std::nullopt, kStandardInputName, std::move(file), bytes, ""};
  }
  if (LooksLikeArraySource(arg)) {
    if (args.Has("type") || args.Has("shape")) {
      return absl::InvalidArgumentError(
          "--type and --shape are for raw input; NetCDF and HDF5 files carry their own");
    }
    auto module = LoadArrayFileModule();
    if (!module.ok()) return module.status();
    auto loaded = (*module)->Load(arg);
    if (!loaded.ok()) return loaded.status();
    Input in{loaded->spec, loaded->fill_value, loaded->description, LoadedArray{}, {}, {}};
    in.metadata = std::move(loaded->metadata);
    in.storage = *std::move(loaded);
    const auto& data = std::get<LoadedArray>(in.storage).data;
    in.bytes = {data.data(), data.size()};
    return in;
  }
  // Open first: a missing input (raw, or "missing.nc:VAR") is a failure to
  // report as such, not a request for --type and --shape.
  auto file = InputFile::Open(arg);
  if (!file.ok()) return file.status();
  auto spec = RawSpec(args);
  if (!spec.ok()) return spec.status();
  if (auto s = CheckRawSize(arg, file->bytes().size(), false, *spec); !s.ok()) return s;
  const absl::Span<const uint8_t> bytes = file->bytes();
  return Input{*spec, std::nullopt, arg, *std::move(file), bytes, ""};
}

// What a compress did, for the summary line or --json.
struct Summary {
  uint64_t output_bytes = 0;
  double abs_bound = 0;
  uint64_t outliers = 0;
  uint64_t verbatim = 0;
  uint64_t frames = 0;
  uint64_t metadata_bytes = 0;  // the metadata document stored
  std::string backend;          // remote only
};

// What the user should hear about: the rules of safety.h.
std::vector<Warning> WarningsFor(const Input& in, const CompressOptions& options,
                                 const Summary& s) {
  std::vector<Warning> warnings;
  if (options.mode == BoundMode::kRel) {
    if (auto reason =
            DominatedRange(in.spec, in.bytes, options.fill_value, s.abs_bound / options.bound)) {
      warnings.push_back({"dominated_range",
                          absl::StrFormat("--rel %g gives every value an error of up to %.4g: %s",
                                          options.bound, s.abs_bound, *reason)});
    }
  }
  if (auto reason = LargerArchive(s.output_bytes, in.spec, in.bytes)) {
    warnings.push_back({"larger_archive", *reason});
  }
  return warnings;
}

void PrintSummary(const ParsedArgs& args, const Input& in, const CompressOptions& options,
                  const std::string& output, bool output_is_stdout, const Summary& s,
                  const std::vector<Warning>& warnings,
                  std::chrono::steady_clock::time_point start) {
  // Warnings go to standard error in every mode, --json and --quiet too: a
  // script that reads only the JSON object, or nothing, still shows them.
  for (const Warning& w : warnings) {
    std::fprintf(stderr, "ebzip compress: warning: %s\n", w.message.c_str());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const uint64_t n = in.spec.num_elements();
  const double ratio = static_cast<double>(in.bytes.size()) / static_cast<double>(s.output_bytes);
  const bool remote = RemoteRequested(args);
  if (args.Switch("json")) {
    Json warnings_json = Json::array();
    for (const Warning& w : warnings) {
      warnings_json.push_back({{"kind", w.kind}, {"message", w.message}});
    }
    // Standard output carries the archive when it is the output.
    PrintJson(
        {
            {"input", in.name},
            {"output", output},
            {"dtype", DTypeName(in.spec.dtype)},
            {"shape", in.spec.shape},
            {"input_bytes", in.bytes.size()},
            {"output_bytes", s.output_bytes},
            {"ratio", ratio},
            {"bound_mode", absl::AsciiStrToLower(BoundModeName(options.mode))},
            {"bound", options.bound},
            {"abs_bound", s.abs_bound},
            {"outliers", s.outliers},
            {"verbatim", s.verbatim},
            {"frames", s.frames},
            {"seconds", seconds},
            {"server", remote ? Json(args.Value("server")) : Json()},
            {"backend", remote ? Json(s.backend) : Json()},
            {"metadata_bytes", s.metadata_bytes},
            {"warnings", warnings_json},
        },
        output_is_stdout ? stderr : stdout);
    return;
  }
  if (args.Switch("quiet") || output_is_stdout) return;
  std::printf(
      "%s: %s %s, %s -> %s, ratio %.2f, abs bound %.6g, outliers %.3f%%, "
      "verbatim %.3f%%, %.2f s%s\n",
      in.name.c_str(), DTypeName(in.spec.dtype), ShapeToString(in.spec.shape).c_str(),
      HumanBytes(in.bytes.size()).c_str(), HumanBytes(s.output_bytes).c_str(), ratio, s.abs_bound,
      100.0 * static_cast<double>(s.outliers) / static_cast<double>(n),
      100.0 * static_cast<double>(s.verbatim) / static_cast<double>(n), seconds,
      remote ? absl::StrCat(" on ", args.Value("server"), " (", s.backend, ")").c_str() : "");
}

// The same file, compressed by ebzipd: the archive streams into the output
// as it arrives.
absl::StatusOr<Summary> RunRemote(const ParsedArgs& args, const Input& in,
                                  const CompressOptions& options, OutputFile& out) {
  // Compress replies are bounded by the client library (MaxArchiveBytes),
  // not by --max_output_bytes, which is decompress's.
  auto client = ConnectFromFlags(args, client::PhysicalMemoryBytes());
  if (!client.ok()) return client.status();
  auto summary = (*client)->Compress(in.spec, in.bytes, options,
                                     [&](absl::Span<const uint8_t> b) { return out.Write(b); });
  if (!summary.ok()) return summary.status();
  Summary result;
  result.output_bytes = out.bytes_written();
  result.abs_bound = summary->abs_bound;
  result.outliers = summary->outliers;
  result.verbatim = summary->verbatim;
  result.frames = summary->frames;
  result.backend = summary->backend;
  return result;
}

absl::StatusOr<Summary> RunLocal(const Input& in, const CompressOptions& options, OutputFile& out) {
  const ValueRange range = RangeFor(in.spec, in.bytes, options);
  auto plan = PlanArchive(in.spec, options, ResolveBound(options, in.spec.dtype, range));
  if (!plan.ok()) return plan.status();
  ArchiveWriter writer(*plan);
  if (auto s = out.Write(writer.Begin()); !s.ok()) return s;
  Summary summary;
  summary.metadata_bytes = options.metadata.size();
  summary.abs_bound = plan->header.abs_bound;
  summary.frames = plan->frame_count();
  Progress progress("compressing", in.bytes.size());
  std::vector<uint8_t> frame;
  for (uint64_t i = 0; i < plan->frame_count(); ++i) {
    frame.clear();
    EncodeFrame(plan->ParamsForFrame(i), in.bytes.data() + plan->FrameDataOffset(i), &frame);
    auto header = format::ParseFrameHeader(frame);
    if (!header.ok()) return header.status();
    summary.outliers += header->outlier_count;
    summary.verbatim += header->verbatim_count;
    writer.AddFrame(frame.size());
    if (auto s = out.Write(frame); !s.ok()) return s;
    progress.Advance(plan->FrameDataBytes(i));
  }
  if (auto s = out.Write(writer.Finish()); !s.ok()) return s;
  return summary;
}

}  // namespace

absl::Status CompressCommand(const ParsedArgs& args) {
  if (args.positional().size() != 1) {
    return absl::InvalidArgumentError("usage: ebzip compress [flags] INPUT -o OUTPUT.ebz");
  }
  if (auto path = ArrayFileWithoutVariable(args.positional()[0])) return ListVariables(*path);
  if (args.Switch("json") && args.Switch("quiet")) {
    return absl::InvalidArgumentError("--json and --quiet contradict each other");
  }
  const std::string output = args.Value("output");
  if (output.empty()) return absl::InvalidArgumentError("-o OUTPUT.ebz is required");
  const bool replace = args.Switch("force");
  // Before the input is read: standard input cannot be read twice.
  if (auto s = CheckOutputMayBeWritten(output, replace); !s.ok()) return s;
  const auto start = std::chrono::steady_clock::now();
  auto in = OpenInput(args, args.positional()[0]);
  if (!in.ok()) return in.status();
  auto options = CompressOptionsFromFlags(args, in->file_fill);
  if (!options.ok()) return options.status();
  // Sent to the service as well (CompressHeader.metadata): the same archive.
  if (args.Switch("metadata", true)) options->metadata = in->metadata;
  if (auto s = ValidateCompressOptions(in->spec, *options); !s.ok()) return s;

  auto out = OutputFile::Create(output, replace);
  if (!out.ok()) return out.status();
  auto summary =
      RemoteRequested(args) ? RunRemote(args, *in, *options, *out) : RunLocal(*in, *options, *out);
  if (!summary.ok()) return summary.status();
  if (auto s = out->Commit(); !s.ok()) return s;
  summary->output_bytes = out->bytes_written();
  PrintSummary(args, *in, *options, output, out->SameAsStandardOutput(), *summary,
               WarningsFor(*in, *options, *summary), start);
  return absl::OkStatus();
}

}  // namespace ebzip::cli
