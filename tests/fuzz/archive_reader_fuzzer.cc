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
#include "codec/byte_io.h"
#include "codec/crc32c.h"
#include "codec/format.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using ebzip::Crc32c;
using ebzip::DecoderKind;
using ebzip::LoadLE;
using ebzip::StoreLE;
namespace format = ebzip::format;

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

// Recomputes the section CRCs and then the header CRC of a frame, following
// the section table for as long as it stays inside the frame.
void FixFrameChecksums(uint8_t* frame, uint64_t size) {
  constexpr uint64_t kSectionTable = 136;  // 16 bytes per section
  constexpr uint64_t kHeaderCrc = format::kFrameHeaderSize - 4;
  uint64_t at = format::kFrameHeaderSize;
  for (int s = 0; s < format::kSectionCount; ++s) {
    uint8_t* entry = frame + kSectionTable + 16 * s;
    const uint64_t length = LoadLE<uint64_t>(entry);
    if (at > size || length > size - at) break;
    StoreLE<uint32_t>(entry + 8, Crc32c(frame + at, length));
    at += ebzip::AlignUp(length, format::kAlignment);
  }
  StoreLE<uint32_t>(frame + kHeaderCrc, Crc32c(frame, kHeaderCrc));
}

// Makes every checksum match the bytes it covers, wherever the structure is
// intact enough to say which bytes those are.
void FixChecksums(uint8_t* data, size_t size) {
  constexpr size_t kFileHeaderCrc = format::kFileHeaderSize - 4;
  if (size < format::kFileHeaderSize) return;
  StoreLE<uint32_t>(data + kFileHeaderCrc, Crc32c(data, kFileHeaderCrc));
  if (size < format::kFileHeaderSize + format::kTrailerSize) return;
  uint8_t* trailer = data + size - format::kTrailerSize;
  const uint64_t index_offset = LoadLE<uint64_t>(trailer);
  const uint64_t index_end = size - format::kTrailerSize;
  if (index_offset >= format::kFileHeaderSize && index_offset <= index_end &&
      index_end - index_offset >= 16) {
    uint8_t* index = data + index_offset;
    const uint64_t count =
        std::min<uint64_t>(LoadLE<uint64_t>(index + 8), (index_end - index_offset - 16) / 16);
    // Only frames that tile the archive, as the reader demands: this also
    // keeps the work linear in the input's size.
    uint64_t expected = format::kFileHeaderSize;
    for (uint64_t i = 0; i < count; ++i) {
      const uint64_t offset = LoadLE<uint64_t>(index + 16 + 16 * i);
      const uint64_t frame_size = LoadLE<uint64_t>(index + 24 + 16 * i);
      if (offset != expected || frame_size < format::kFrameHeaderSize ||
          frame_size > index_offset - offset) {
        break;
      }
      FixFrameChecksums(data + offset, frame_size);
      expected += frame_size;
    }
    StoreLE<uint32_t>(index + 4, Crc32c(index + 8, index_end - index_offset - 8));
  }
  StoreLE<uint32_t>(trailer + 12, Crc32c(trailer, 12));
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
