// libFuzzer target for everything that reads an archive: ReadArchiveInfo,
// then Decompress with every decoder. Beyond "no crash and no sanitizer
// report" it checks the reader's contract (FORMAT.md §9), so that a wrong
// answer counts as a finding too: failures are DATA_LOSS or UNIMPLEMENTED
// (FAILED_PRECONDITION only from the gap-array decoder, for frames written
// without a gap array), a success has the declared size, and the decoders
// accept the same archives and produce the same bytes.
//
// A custom mutator recomputes every checksum after most mutations: otherwise
// almost every mutant fails a CRC and the validation behind the CRCs, the
// part worth fuzzing, is never reached (comparison tracing alone rarely
// repairs a CRC-32C).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codec/archive.h"
#include "tests/fuzz/archive_checksums.h"

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
  return 0;
}
