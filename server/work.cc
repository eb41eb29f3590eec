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

namespace {

// The rest of SetArray, once the work's output holds the array's `bytes`.
void ArraySet(Work& w, uint64_t bytes) {
  std::vector<uint8_t>().swap(w.input);
  w.input_block.Release();
  w.reservation.Resize(bytes);
  w.abs_bound = w.info->header.abs_bound;
  w.frames = w.info->frames.size();
  w.status = absl::OkStatus();
}

}  // namespace

void Work::SetArray(std::vector<uint8_t> array) {
  output = std::move(array);
  ArraySet(*this, output.size());
}

void Work::SetArray(HostBlock array) {
  output_block = std::move(array);
  ArraySet(*this, output_block.size());
}

}  // namespace ebzip::server
