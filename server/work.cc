#include "server/work.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace ebzip::server {

absl::Status AppendHeld(absl::Span<const uint8_t> from, uint64_t most, std::vector<uint8_t>* to,
                        Reservation* held) {
  const uint64_t size = to->size() + from.size();
  const uint64_t old_capacity = to->capacity();
  if (size > old_capacity) {
    const uint64_t doubled = std::max<uint64_t>(2 * old_capacity, 64 << 10);
    const uint64_t capacity = std::max(size, std::min(most, doubled));
    if (absl::Status s = held->Grow(capacity); !s.ok()) return s;
    to->reserve(capacity);
    held->Resize(held->bytes() - old_capacity);
  }
  AppendBytes(from, to);
  return absl::OkStatus();
}

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

void Work::SetFrame(std::vector<uint8_t> frame) {
  std::vector<uint8_t>().swap(input);
  input_block.Release();
  output = std::move(frame);
  reservation.Resize(output.size());
  // A frame's header carries its counts: the codec wrote them there.
  auto header = format::ParseFrameHeader(output);
  if (!header.ok() || header->frame_size() != output.size()) {
    status = absl::InternalError("the frame just written does not parse");
    return;
  }
  abs_bound = header->abs_bound;
  frames = 1;
  outliers = header->outlier_count;
  verbatim = header->verbatim_count;
  fill_runs = header->fill_run_count;
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
