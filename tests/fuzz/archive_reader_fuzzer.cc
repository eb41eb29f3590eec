// libFuzzer target for everything that reads an archive: ReadArchiveInfo,
// then Decompress with every decoder. Beyond "no crash and no sanitizer
// report" it checks the reader's contract (FORMAT.md §9), so that a wrong
// answer counts as a finding too: failures are DATA_LOSS or UNIMPLEMENTED
// (FAILED_PRECONDITION only from the gap-array decoder, for frames written
// without a gap array), a success has the declared size, and the decoders
// accept the same archives and produce the same bytes. Regions of an
// accepted archive (codec/region.h) decode to the slice of the full decode,
// by whole frames, by parts of frames (codec/region_frame.h) and as the GPU
// takes them (codec/region_plan.h), and each frame alone as the service
// streams them (codec/frame_task.h); the regions: one parsed
// from the input's last bytes as text (so the parser is fuzzed too: OK or
// INVALID_ARGUMENT, nothing else), one picked from them as numbers, one
// small box. Parts of frames check only what they read, so on an archive
// the full decode rejects they may succeed, but fail only as it does.
//
// A custom mutator recomputes every checksum after most mutations: otherwise
// almost every mutant fails a CRC and the validation behind the CRCs, the
// part worth fuzzing, is never reached (comparison tracing alone rarely
// repairs a CRC-32C).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codec/archive.h"
#include "codec/frame_task.h"
#include "codec/region.h"
#include "codec/region_plan.h"
#include "tests/fuzz/archive_checksums.h"
#include "tests/region_slice.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using ebzip::DecoderKind;
using ebzip::fuzz::FixChecksums;

// The reader bounds the declared array by the archive's size (at least one
// bitstream bit per element), but should that regress, one input could ask
// for gigabytes and end the run on the RSS limit, far from the code at fault.
// Huge declarations are unit-tested instead (malformed_archive_test).
constexpr uint64_t kMaxDecodedBytes = uint64_t{64} << 20;

constexpr DecoderKind kDecoders[] = {DecoderKind::kAuto, DecoderKind::kChunkParallel,
                                     DecoderKind::kGapArray, DecoderKind::kSelfSync};

[[noreturn]] void Fail(const char* what, const absl::Status& status = absl::OkStatus()) {
  std::fprintf(stderr, "archive_reader_fuzzer: %s (%s)\n", what, status.ToString().c_str());
  std::abort();
}

bool IsRejection(const absl::Status& s, DecoderKind kind) {
  switch (s.code()) {
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kUnimplemented:
      return true;
    case absl::StatusCode::kFailedPrecondition:
      return kind == DecoderKind::kGapArray;
    default:
      return false;
  }
}

constexpr ebzip::RegionFrames kRegionFrames[] = {ebzip::RegionFrames::kAuto,
                                                 ebzip::RegionFrames::kWhole,
                                                 ebzip::RegionFrames::kPart};

// `full` is null when the full decode rejected the archive.
void CheckRegion(const ebzip::ArchiveInfo& info, absl::Span<const uint8_t> archive,
                 const std::vector<uint8_t>* full, const ebzip::Hyperslab& r) {
  const ebzip::ArraySpec spec = info.spec();
  const size_t elem = ebzip::DTypeSize(spec.dtype);
  std::vector<uint8_t> got(r.NumElements() * elem);
  for (ebzip::RegionFrames frames : kRegionFrames) {
    if (full == nullptr && frames != ebzip::RegionFrames::kPart) continue;
    const absl::Status s = ebzip::DecompressRegion(info, archive, r, DecoderKind::kAuto,
                                                   absl::MakeSpan(got), nullptr, frames);
    if (full == nullptr) {
      if (!s.ok() && !IsRejection(s, DecoderKind::kAuto)) Fail("a part of a frame failed", s);
      continue;
    }
    if (!s.ok()) Fail("a region of an accepted archive failed", s);
    if (got != ebzip::testing::SliceOf(*full, spec.shape, r, elem))
      Fail("a region differs from the full decode");
  }
  if (full == nullptr) return;
  // As the GPU takes it (codec/region_plan.h): the frames met, decoded from
  // their byte range alone, then each piece gathered.
  auto plan = ebzip::PlanWholeFrames(info, r);
  if (!plan.ok()) Fail("a region inside the array has no plan", plan.status());
  // Cut into groups (gpu::RegionReader's way): the same pieces in order,
  // each inside its group's box.
  auto groups = ebzip::PlanFrameGroups(info, r, 3);
  if (!groups.ok()) Fail("a region inside the array has no groups", groups.status());
  size_t k = 0;
  for (const ebzip::WholeFramesPlan& g : *groups) {
    const ebzip::Hyperslab box = ebzip::PiecesBox(g.pieces);
    for (const auto& piece : g.pieces) {
      if (k >= plan->pieces.size() || piece.out_element != plan->pieces[k].out_element ||
          piece.rows.NumElements() != plan->pieces[k].rows.NumElements()) {
        Fail("a group's piece is not the whole plan's");
      }
      ++k;
      for (size_t d = 0; d < box.start.size(); ++d) {
        const uint64_t last = piece.rows.start[d] + (piece.rows.count[d] - 1) * piece.rows.step[d];
        if (piece.rows.start[d] < box.start[d] ||
            last > box.start[d] + (box.count[d] - 1) * box.step[d]) {
          Fail("a piece outside its group's box");
        }
      }
    }
  }
  if (k != plan->pieces.size()) Fail("the groups miss pieces of the whole plan");
  if (plan->pieces.empty()) return;
  const ebzip::ArraySpec rows_spec = plan->part.spec();
  std::vector<uint8_t> rows(rows_spec.num_bytes());
  const absl::Status s = ebzip::DecompressInto(
      plan->part, archive.subspan(plan->bytes_begin, plan->bytes_end - plan->bytes_begin),
      absl::MakeSpan(rows));
  if (!s.ok()) Fail("the frames of a region of an accepted archive failed", s);
  for (const auto& piece : plan->pieces) {
    const std::vector<uint8_t> p = ebzip::testing::SliceOf(rows, rows_spec.shape, piece.rows, elem);
    std::copy(p.begin(), p.end(), got.begin() + piece.out_element * elem);
  }
  if (got != ebzip::testing::SliceOf(*full, spec.shape, r, elem))
    Fail("a region by whole frames differs from the full decode");
}

void CheckRegions(const ebzip::ArchiveInfo& info, absl::Span<const uint8_t> archive,
                  const std::vector<uint8_t>* full) {
  const std::vector<uint64_t>& shape = info.header.shape;
  const size_t tail = std::min<size_t>(archive.size(), 24);
  const absl::Span<const uint8_t> bytes = archive.subspan(archive.size() - tail);
  const std::string text(bytes.begin(), bytes.end());
  auto parsed = ebzip::ParseHyperslab(text, shape);
  if (parsed.ok()) {
    CheckRegion(info, archive, full, *parsed);
  } else if (parsed.status().code() != absl::StatusCode::kInvalidArgument) {
    Fail("ParseHyperslab", parsed.status());
  }
  ebzip::Hyperslab r;
  for (size_t d = 0; d < shape.size(); ++d) {
    const uint8_t b = bytes.empty() ? 0 : bytes[d % bytes.size()];
    const uint64_t start = shape[d] == 0 ? 0 : b % shape[d];
    const uint64_t step = 1 + (b >> 6);
    r.start.push_back(start);
    r.step.push_back(step);
    r.count.push_back(shape[d] == 0 ? 0 : (shape[d] - 1 - start) / step + 1);
  }
  if (!ebzip::CheckHyperslab(r, shape).ok()) Fail("a region built inside the array was refused");
  CheckRegion(info, archive, full, r);
  // A box of at most 3 per dimension: a small part of a frame.
  for (size_t d = 0; d < shape.size(); ++d) {
    const uint8_t b = bytes.empty() ? 0 : bytes[(d + 3) % bytes.size()];
    r.start[d] = shape[d] == 0 ? 0 : b % shape[d];
    r.step[d] = 1;
    r.count[d] = std::min<uint64_t>(shape[d] - r.start[d], 1 + (b >> 6) % 3);
  }
  if (!ebzip::CheckHyperslab(r, shape).ok()) Fail("a box built inside the array was refused");
  CheckRegion(info, archive, full, r);
}

// Each frame received alone, as the service's streamed decompression takes
// it (codec/frame_task.h): a frame of an accepted archive is accepted where
// it lies and refused anywhere else, and the frames alone decode to the full
// decode's rows exactly when the whole archive decodes.
void CheckFrameParts(const ebzip::ArchiveInfo& info, absl::Span<const uint8_t> archive,
                     const std::vector<uint8_t>* full) {
  const uint64_t count = info.frames.size();
  const uint64_t row_bytes = count == 0 ? 0 : info.spec().num_bytes() / info.header.shape[0];
  bool every_frame_decodes = true;
  for (uint64_t i = 0; i < count; ++i) {
    const auto& e = info.frames[i];
    const absl::Span<const uint8_t> frame = archive.subspan(e.offset, e.size);
    auto part = ebzip::FramePart(info.header, i, frame);
    if (!part.ok()) Fail("a frame of an accepted archive is refused alone", part.status());
    if (count > 1 && ebzip::FramePart(info.header, (i + 1) % count, frame).ok()) {
      Fail("a frame accepted at another frame's place");
    }
    std::vector<uint8_t> rows(part->spec().num_bytes());
    const absl::Status s = ebzip::DecompressInto(*part, frame, absl::MakeSpan(rows));
    if (!s.ok()) {
      if (!IsRejection(s, DecoderKind::kAuto)) Fail("a frame alone failed", s);
      every_frame_decodes = false;
      continue;
    }
    if (full != nullptr && !std::equal(rows.begin(), rows.end(),
                                       full->begin() + i * info.header.frame_rows * row_bytes)) {
      Fail("a frame alone differs from the full decode");
    }
  }
  if (every_frame_decodes != (full != nullptr)) {
    Fail("the frames alone and the whole archive disagree on validity");
  }
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  size = LLVMFuzzerMutate(data, size, max_size);
  // One mutant in eight keeps whatever checksums it has, so that the CRC
  // checks stay covered as well.
  if (seed % 8 != 0) FixChecksums(data, size);
  return size;
}

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // One codec thread: the fuzzing machine has few cores to spare, and a
  // finding then reproduces on the thread that made it.
  setenv("EBZIP_THREADS", "1", /*overwrite=*/0);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::Span<const uint8_t> archive(data, size);
  auto info = ebzip::ReadArchiveInfo(archive);
  if (!info.ok()) {
    if (!IsRejection(info.status(), DecoderKind::kAuto)) Fail("ReadArchiveInfo", info.status());
    return 0;
  }
  if (info->frames.size() != info->header.frame_count) {
    Fail("ReadArchiveInfo accepted an index whose entry count is not the frame count");
  }
  const uint64_t bytes = info->spec().num_bytes();
  if (bytes > kMaxDecodedBytes) return 0;

  bool accepted[4] = {};
  std::vector<uint8_t> reference;
  bool have_reference = false;
  for (int k = 0; k < 4; ++k) {
    const DecoderKind kind = kDecoders[k];
    auto out = ebzip::Decompress(archive, kind);
    if (!out.ok()) {
      if (!IsRejection(out.status(), kind)) Fail(ebzip::DecoderKindName(kind), out.status());
      continue;
    }
    accepted[k] = true;
    if (out->data.size() != bytes) Fail("decoded size differs from the declared shape");
    if (!have_reference) {
      reference = std::move(out->data);
      have_reference = true;
    } else if (out->data != reference) {
      Fail("decoders disagree on the decoded bytes");
    }
  }
  // The sequential decoders check exactly the same things. The gap-array
  // decoder also checks the gap array, which the others may ignore
  // (FORMAT.md §5.4), so it may reject more, never less.
  if (accepted[0] != accepted[1] || accepted[1] != accepted[3]) {
    Fail("auto, chunk-parallel and self-sync decoders disagree on validity");
  }
  if (accepted[2] && !accepted[1]) Fail("gap-array decoder accepted what chunk-parallel rejects");
  CheckRegions(*info, archive, have_reference ? &reference : nullptr);
  CheckFrameParts(*info, archive, have_reference ? &reference : nullptr);
  return 0;
}
