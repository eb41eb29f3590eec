// Recomputes an archive's checksums after a mutation, wherever its structure
// is still intact enough to say which bytes each one covers. Shared by the
// fuzzers that mutate archives: almost every mutant would otherwise fail a
// CRC, and the validation behind the CRCs, the part worth fuzzing, would
// never be reached (comparison tracing alone rarely repairs a CRC-32C).
#ifndef EBZIP_TESTS_FUZZ_ARCHIVE_CHECKSUMS_H_
#define EBZIP_TESTS_FUZZ_ARCHIVE_CHECKSUMS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "codec/byte_io.h"
#include "codec/crc32c.h"
#include "codec/format.h"

namespace ebzip::fuzz {

// Recomputes the section CRCs and then the header CRC of a frame, following
// the section table for as long as it stays inside the frame.
inline void FixFrameChecksums(uint8_t* frame, uint64_t size) {
  constexpr uint64_t kSectionTable = 136;  // 16 bytes per section
  constexpr uint64_t kHeaderCrc = format::kFrameHeaderSize - 4;
  if (size < format::kFrameHeaderSize) return;
  uint64_t at = format::kFrameHeaderSize;
  for (int s = 0; s < format::kSectionCount; ++s) {
    uint8_t* entry = frame + kSectionTable + 16 * s;
    const uint64_t length = LoadLE<uint64_t>(entry);
    if (at > size || length > size - at) break;
    StoreLE<uint32_t>(entry + 8, Crc32c(frame + at, length));
    at += AlignUp(length, format::kAlignment);
  }
  StoreLE<uint32_t>(frame + kHeaderCrc, Crc32c(frame, kHeaderCrc));
}

// Makes every checksum match the bytes it covers: file header, metadata
// block (version 2), the frames the index lists (as long as they tile the
// archive), index and trailer.
inline void FixChecksums(uint8_t* data, size_t size) {
  constexpr size_t kFileHeaderCrc = format::kFileHeaderSize - 4;
  if (size < format::kFileHeaderSize) return;
  StoreLE<uint32_t>(data + kFileHeaderCrc, Crc32c(data, kFileHeaderCrc));
  // The metadata block (FORMAT.md §15.1) after a version-2 file header: its
  // CRC covers the 4 bytes of its length and the document, when the length
  // stays inside the block. Frame 0 starts after the block.
  uint64_t first_frame = format::kFileHeaderSize;
  const uint32_t metadata_bytes = LoadLE<uint32_t>(data + 12);
  if (LoadLE<uint16_t>(data + 4) >= 2 && metadata_bytes >= 12 &&
      metadata_bytes <= size - format::kFileHeaderSize) {
    uint8_t* block = data + format::kFileHeaderSize;
    const uint32_t length = LoadLE<uint32_t>(block + 4);
    if (length <= metadata_bytes - 12) {
      StoreLE<uint32_t>(block + 8, Crc32cExtend(Crc32c(block + 4, 4), block + 12, length));
    }
    first_frame += metadata_bytes;
  }
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
    uint64_t expected = first_frame;
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

}  // namespace ebzip::fuzz

#endif  // EBZIP_TESTS_FUZZ_ARCHIVE_CHECKSUMS_H_
