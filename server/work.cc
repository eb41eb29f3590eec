#include "server/work.h"

#include "absl/strings/str_cat.h"

namespace ebzip::server {

void Work::SetArchive(std::vector<uint8_t> archive) {
  std::vector<uint8_t>().swap(input);
  input_block.Release();
  output = std::move(archive);
  reservation.Resize(output.size());
  // The summary comes from the archive itself, so every backend reports the
  // same numbers for the same bytes.
  auto parsed = ReadArchiveInfo(output);
  if (!parsed.ok()) {
    status = absl::InternalError(
        absl::StrCat("the archive just written does not parse: ", parsed.status().message()));
    return;
  }
  abs_bound = parsed->header.abs_bound;
  frames = parsed->frames.size();
  outliers = verbatim = fill_runs = 0;
  for (const auto& h : parsed->frame_headers) {
    outliers += h.outlier_count;
    verbatim += h.verbatim_count;
    fill_runs += h.fill_run_count;
  }
  status = absl::OkStatus();
}

void Work::SetArray(std::vector<uint8_t> array) {
  output = std::move(array);
  ArraySet(output.size());
}

void Work::SetArray(HostBlock array) {
  output_block = std::move(array);
  ArraySet(output_block.size());
}

void Work::ArraySet(uint64_t bytes) {
  std::vector<uint8_t>().swap(input);
  input_block.Release();
  reservation.Resize(bytes);
  abs_bound = info->header.abs_bound;
  frames = info->frames.size();
  status = absl::OkStatus();
}

}  // namespace ebzip::server
