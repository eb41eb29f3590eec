// ebzip info: what an archive holds and where its bytes go, from the
// headers alone (no decoding). "-" reads the archive from standard input,
// at most the machine's physical memory.
#include <array>
#include <cstdio>
#include <map>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/cli/commands.h"
#include "client/cli/input_file.h"
#include "client/cli/json_output.h"
#include "client/cli/options.h"
#include "client/remote/remote_client.h"
#include "codec/archive.h"

namespace ebzip::cli {
namespace {

std::string PredictorChoice(const format::FrameHeader& h) {
  std::string choice =
      h.predictor == format::kPredictorLorenzo
          ? absl::StrCat("Lorenzo ", absl::StrJoin(h.block.begin(), h.block.begin() + h.ndim, "x"))
          : absl::StrCat("interpolation ", h.order == 3 ? "cubic " : "linear ",
                         absl::StrJoin(h.block.begin(), h.block.begin() + h.ndim, "x"));
  absl::StrAppend(&choice, h.lossless == format::kLosslessZeroRuns    ? ", zero-run tokens"
                           : h.lossless == format::kLosslessRunValues ? ", run-value tokens"
                                                                      : ", Huffman");
  if (h.fill_coding == format::kFillCodingMask) absl::StrAppend(&choice, ", fill mask");
  return choice;
}

// The grid a region is decoded on (codec/region.h): frames of frame_rows
// rows along dimension 0; inside a frame its predictor's units (Lorenzo
// blocks or interpolation tiles), as extents per dimension.
Json GridJson(const ArchiveInfo& info) {
  Json units = Json::array();
  std::map<std::string, uint64_t> seen;
  for (const format::FrameHeader& h : info.frame_headers) {
    const std::string unit = absl::StrJoin(h.block.begin(), h.block.begin() + h.ndim, "x");
    const std::string kind =
        h.predictor == format::kPredictorLorenzo ? "lorenzo block" : "interpolation tile";
    ++seen[absl::StrCat(kind, " ", unit)];
  }
  for (const auto& [unit, frames] : seen) units.push_back({{"unit", unit}, {"frames", frames}});
  return {{"frame_rows", info.header.frame_rows}, {"frames", info.frames.size()}, {"units", units}};
}

}  // namespace

absl::Status InfoCommand(const ParsedArgs& args) {
  if (args.positional().size() != 1) {
    return absl::InvalidArgumentError("usage: ebzip info ARCHIVE.ebz");
  }
  const std::string& path = args.positional()[0];
  auto file =
      InputFile::OpenOrRead(path, client::PhysicalMemoryBytes(), "the machine's physical memory");
  if (!file.ok()) return file.status();
  auto info = ReadArchiveInfo(file->bytes());
  if (!info.ok()) return info.status();

  std::array<uint64_t, format::kSectionCount> section_bytes{};
  uint64_t headers =
      format::kFileHeaderSize + format::FrameIndexSize(info->frames.size()) + format::kTrailerSize;
  uint64_t outliers = 0, verbatim = 0, fill_runs = 0;
  // Frames choose their predictor and lossless stage (FORMAT.md §15.9):
  // how many chose each.
  std::map<std::string, uint64_t> choices;
  format::FrameHeader first;
  for (uint64_t i = 0; i < info->frames.size(); ++i) {
    const format::FrameHeader* h = &info->frame_headers[i];
    if (i == 0) first = *h;
    headers += format::kFrameHeaderSize;
    for (int s = 0; s < format::kSectionCount; ++s) section_bytes[s] += h->sections[s].length;
    outliers += h->outlier_count;
    verbatim += h->verbatim_count;
    fill_runs += h->fill_run_count;
    ++choices[PredictorChoice(*h)];
  }

  const format::FileHeader& f = info->header;
  const ArraySpec spec = info->spec();
  const uint64_t total = file->bytes().size();
  const uint64_t n = spec.num_elements();
  const std::string block =
      absl::StrJoin(first.block.begin(), first.block.begin() + first.ndim, "x");
  if (args.Switch("json")) {
    Json predictors = Json::array();
    for (const auto& [choice, count] : choices) {
      predictors.push_back({{"choice", choice}, {"frames", count}});
    }
    Json sections = {{"headers+index", headers}};
    for (int s = 0; s < format::kSectionCount; ++s) {
      sections[format::SectionName(s)] = section_bytes[s];
    }
    // The metadata block holds a JSON object (FORMAT.md §15.1): nested as
    // such when it parses, else as the string it is.
    Json metadata;
    if (!info->metadata.empty()) {
      metadata = Json::parse(info->metadata, nullptr, /*allow_exceptions=*/false);
      if (metadata.is_discarded()) metadata = info->metadata;
    }
    PrintJson({
        {"archive", file->name()},
        {"format_version", f.version},
        {"dtype", DTypeName(spec.dtype)},
        {"shape", spec.shape},
        {"array_bytes", spec.num_bytes()},
        {"archive_bytes", total},
        {"ratio", static_cast<double>(spec.num_bytes()) / static_cast<double>(total)},
        {"bits_per_value", 8.0 * static_cast<double>(total) / static_cast<double>(n)},
        {"bound_mode", absl::AsciiStrToLower(BoundModeName(f.bound_mode))},
        {"bound", f.bound_value},
        {"abs_bound", f.abs_bound},
        {"fill_value", f.fill_value ? Json(*f.fill_value) : Json()},
        {"frames", info->frames.size()},
        {"frame_rows", f.frame_rows},
        {"block", block},
        {"radius", first.radius},
        {"chunk_symbols", first.chunk_symbols},
        {"subsequence_bits", first.subsequence_bits},
        {"max_code_length", first.max_code_length},
        {"gap_array", first.has_gap_array},
        {"predictors", predictors},
        {"metadata", metadata},
        {"quant_step", first.quant_step},
        {"outliers", outliers},
        {"verbatim", verbatim},
        {"fill_runs", fill_runs},
        {"sections", sections},
        {"grid", GridJson(*info)},
    });
    return absl::OkStatus();
  }
  std::printf("archive          %s (format version %d)\n", file->name().c_str(), f.version);
  std::printf("array            %s %s (%s)\n", DTypeName(spec.dtype),
              ShapeToString(spec.shape).c_str(), HumanBytes(spec.num_bytes()).c_str());
  std::printf("error bound      %s %.6g -> absolute %.17g\n", BoundModeName(f.bound_mode),
              f.bound_value, f.abs_bound);
  if (f.fill_value) std::printf("fill value       %.9g\n", *f.fill_value);
  std::printf(
      "frames           %llu of %llu rows along dimension 0 (the grid --region "
      "decodes on)\n",
      static_cast<unsigned long long>(info->frames.size()),
      static_cast<unsigned long long>(f.frame_rows));
  std::printf(
      "parameters       block %s, radius %u, chunk %u symbols, subsequence %u bits, "
      "max code length %d, gap array %s\n",
      block.c_str(), first.radius, first.chunk_symbols, first.subsequence_bits,
      first.max_code_length, first.has_gap_array ? "yes" : "no");
  for (const auto& [choice, count] : choices) {
    std::printf("predictor        %s (%llu of %llu frames)\n", choice.c_str(),
                static_cast<unsigned long long>(count),
                static_cast<unsigned long long>(info->frames.size()));
  }
  if (!info->metadata.empty()) std::printf("metadata         %s\n", info->metadata.c_str());
  std::printf(
      "quantization     step %.9g, outliers %llu (%.3f%%), verbatim %llu (%.3f%%), "
      "fill runs %llu\n",
      first.quant_step, static_cast<unsigned long long>(outliers),
      100.0 * static_cast<double>(outliers) / static_cast<double>(n),
      static_cast<unsigned long long>(verbatim),
      100.0 * static_cast<double>(verbatim) / static_cast<double>(n),
      static_cast<unsigned long long>(fill_runs));
  std::printf("size             %s, ratio %.3f, %.3f bits/value\n", HumanBytes(total).c_str(),
              static_cast<double>(spec.num_bytes()) / static_cast<double>(total),
              8.0 * static_cast<double>(total) / static_cast<double>(n));
  std::printf("%-16s %14s %8s\n", "section", "bytes", "share");
  auto row = [&](const char* name, uint64_t bytes) {
    std::printf("%-16s %14llu %7.2f%%\n", name, static_cast<unsigned long long>(bytes),
                100.0 * static_cast<double>(bytes) / static_cast<double>(total));
  };
  row("headers+index", headers);
  for (int s = 0; s < format::kSectionCount; ++s) row(format::SectionName(s), section_bytes[s]);
  return absl::OkStatus();
}

}  // namespace ebzip::cli
