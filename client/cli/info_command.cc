// ebzip info: what an archive holds and where its bytes go, from the
// headers alone (no decoding).
#include <array>
#include <cstdio>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/cli/commands.h"
#include "client/cli/flags.h"
#include "client/cli/mapped_file.h"
#include "codec/archive.h"

namespace ebzip::cli {
namespace {

absl::Status Run(const Args& args) {
  if (args.size() != 1) return absl::InvalidArgumentError("usage: ebzip info ARCHIVE.ebz");
  auto file = MappedFile::Open(args[0]);
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
    std::string choice =
        h->predictor == format::kPredictorLorenzo
            ? absl::StrCat("Lorenzo ",
                           absl::StrJoin(h->block.begin(), h->block.begin() + h->ndim, "x"))
            : absl::StrCat("interpolation ", h->order == 3 ? "cubic " : "linear ",
                           absl::StrJoin(h->block.begin(), h->block.begin() + h->ndim, "x"));
    absl::StrAppend(&choice, h->lossless == format::kLosslessZeroRuns ? ", zero-run tokens"
                                                                      : ", Huffman");
    if (h->fill_coding == format::kFillCodingMask) absl::StrAppend(&choice, ", fill mask");
    ++choices[choice];
  }

  const format::FileHeader& f = info->header;
  const ArraySpec spec = info->spec();
  const uint64_t total = file->bytes().size();
  const uint64_t n = spec.num_elements();
  std::printf("archive          %s (format version %d)\n", args[0].c_str(), f.version);
  std::printf("array            %s %s (%s)\n", DTypeName(spec.dtype),
              ShapeToString(spec.shape).c_str(), HumanBytes(spec.num_bytes()).c_str());
  std::printf("error bound      %s %.6g -> absolute %.17g\n", BoundModeName(f.bound_mode),
              f.bound_value, f.abs_bound);
  if (f.fill_value) std::printf("fill value       %.9g\n", *f.fill_value);
  std::printf("frames           %llu of %llu rows\n",
              static_cast<unsigned long long>(info->frames.size()),
              static_cast<unsigned long long>(f.frame_rows));
  std::printf(
      "parameters       block %s, radius %u, chunk %u symbols, subsequence %u bits, "
      "max code length %d, gap array %s\n",
      absl::StrJoin(first.block.begin(), first.block.begin() + first.ndim, "x").c_str(),
      first.radius, first.chunk_symbols, first.subsequence_bits, first.max_code_length,
      first.has_gap_array ? "yes" : "no");
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

}  // namespace

absl::Status InfoCommand(const Args& args) { return Run(args); }

}  // namespace ebzip::cli
