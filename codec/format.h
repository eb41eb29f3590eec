// The archive's fixed-layout structures (FORMAT.md is the normative text):
// the file header, the frame header with its section table, the frame index
// and the trailer. Parsing validates everything a later stage relies on, so
// decoders never see an out-of-range field.
#ifndef EBZIP_CODEC_FORMAT_H_
#define EBZIP_CODEC_FORMAT_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "codec/host_device.h"
#include "codec/types.h"

namespace ebzip::format {

// The newest version this code reads; it writes version 1 whenever the
// archive needs nothing of version 2 (FORMAT.md §11, §15).
inline constexpr uint16_t kVersion = 2;
inline constexpr uint16_t kVersion1 = 1;
inline constexpr uint32_t kFileMagic = 0x415A4245;     // "EBZA"
inline constexpr uint32_t kFrameMagic = 0x465A4245;    // "EBZF"
inline constexpr uint32_t kIndexMagic = 0x495A4245;    // "EBZI"
inline constexpr uint32_t kTrailerMagic = 0x455A4245;  // "EBZE"
inline constexpr uint32_t kMetadataMagic = 0x4D5A4245;  // "EBZM"
inline constexpr size_t kFileHeaderSize = 96;
inline constexpr size_t kFrameHeaderSize = 256;
inline constexpr size_t kTrailerSize = 16;
inline constexpr size_t kAlignment = 8;  // frames and sections start on it

// Where the header fields that depend on the data lie, for writers that
// serialize a header from a template and fill these in afterwards (the GPU
// writer does, on the device). Each header's CRC is its last 4 bytes.
inline constexpr size_t kFileHeaderAbsBoundAt = 56;   // f64
inline constexpr size_t kFrameHeaderAbsBoundAt = 64;  // f64
inline constexpr size_t kFrameHeaderQuantStepAt = 72;  // f64
inline constexpr size_t kFrameHeaderCountsAt = 112;  // u64 outliers, verbatim, fill runs
inline constexpr size_t kFrameHeaderSectionsAt = 136;  // {u64 length, u32 crc, u32 0} each

// Limits every reader enforces (FORMAT.md §Limits).
inline constexpr int kMaxCodeLength = 24;
inline constexpr uint32_t kMaxRadius = 32768;  // symbols fit in 16 bits
inline constexpr uint64_t kMaxFrameElements = (uint64_t{1} << 32) - 1;
inline constexpr uint32_t kMaxChunkSymbols = uint32_t{1} << 20;
inline constexpr uint32_t kMaxSubsequenceBits = uint32_t{1} << 16;
inline constexpr uint32_t kMaxChunkGroup = uint32_t{1} << 16;
inline constexpr uint64_t kMaxSectionBytes = uint64_t{1} << 48;
inline constexpr uint32_t kMaxMetadataDocument = uint32_t{1} << 20;

// Version 2's ids (FORMAT.md §15.2).
inline constexpr uint8_t kPredictorLorenzo = 0;
inline constexpr uint8_t kPredictorInterp = 1;
inline constexpr uint8_t kLosslessHuffman = 0;
inline constexpr uint8_t kLosslessZeroRuns = 1;
inline constexpr uint8_t kLosslessRunValues = 2;
inline constexpr uint8_t kFillCodingRuns = 0;
inline constexpr uint8_t kFillCodingMask = 1;

// Zero-run tokens (§15.4): classes 1..kRunClasses, class c followed by c
// extra bits, covering 2^c + e positions.
inline constexpr int kRunClasses = 12;
inline constexpr uint32_t kMaxRunPositions = (uint32_t{1} << (kRunClasses + 1)) - 1;  // 8191
inline constexpr int kMaxCodeLengthWithRuns = 20;  // + 12 extra bits fits a 32-bit window
inline constexpr uint32_t kMaxRadiusWithRuns = (65536 - kRunClasses) / 2;  // 32762

// Run-value tokens (§15.4.1): classes 0..12, each with one of kRunValues
// residuals after the run, numbered after the run tokens; 2^c + e zeros and
// the value, so up to 8192 positions.
inline constexpr int kRunValueClasses = kRunClasses + 1;
inline constexpr int kRunValues = 4;  // residuals -2, -1, +1, +2
inline constexpr int kRunValueTokens = kRunValueClasses * kRunValues;
inline constexpr int kTokensWithRunValues = kRunClasses + kRunValueTokens;  // 64
inline constexpr uint32_t kMaxRunValuePositions = kMaxRunPositions + 1;    // 8192
inline constexpr uint32_t kMaxRadiusWithRunValues = (65536 - kTokensWithRunValues) / 2;  // 32736

// The fill mask (§15.6): lengths as classes 0..12 with c extra bits.
inline constexpr int kMaskClasses = 13;
inline constexpr uint32_t kMaxMaskRun = (uint32_t{1} << kMaskClasses) - 2;  // 8190
inline constexpr uint32_t kMaskChunkTokens = 4096;
inline constexpr uint64_t kMaskHeaderBytes = 16;

// Whether `fill` can be the fill value of an array of `dtype`: finite, and
// for float32 within float32's range (so narrowing it is well defined).
bool ValidFillValue(DType dtype, double fill);

enum Section : int {
  kCodeLengths = 0,
  kChunkIndex,
  kGapArray,
  kBitstream,
  kOutliers,
  kVerbatim,
  kFillRuns,
  kSectionCount
};
const char* SectionName(int section);

// The one way every layer reports an archive it cannot trust: DATA_LOSS with
// a message that starts "corrupt archive: ".
absl::Status CorruptArchive(absl::string_view what);

inline constexpr uint8_t kFileFlagFill = 1;
inline constexpr uint8_t kFrameFlagGapArray = 1;
inline constexpr uint8_t kFrameFlagFill = 2;

struct FileHeader {
  uint16_t version = kVersion1;
  uint32_t metadata_bytes = 0;  // version 2: the metadata block after the header
  DType dtype = DType::kFloat32;
  std::vector<uint64_t> shape;  // the whole array, C order
  BoundMode bound_mode = BoundMode::kAbs;
  double bound_value = 0;  // as the user gave it
  double abs_bound = 0;    // the absolute bound every value honours
  std::optional<double> fill_value;
  uint64_t frame_rows = 0;  // slab thickness along dimension 0
  uint64_t frame_count = 0;
};

void AppendFileHeader(const FileHeader& h, std::vector<uint8_t>* out);
// Parses and validates the first kFileHeaderSize bytes of `bytes`.
absl::StatusOr<FileHeader> ParseFileHeader(absl::Span<const uint8_t> bytes);

// The metadata block (§15.1) holding `document`: its size is
// MetadataBlockBytes(document.size()).
uint64_t MetadataBlockBytes(uint64_t document_bytes);
void AppendMetadataBlock(absl::string_view document, std::vector<uint8_t>* out);
// Validates the block of `metadata_bytes` at the start of `bytes` (magic,
// length, CRC, padding, a JSON object's first and last characters) and
// returns the document.
absl::StatusOr<std::string> ParseMetadataBlock(absl::Span<const uint8_t> bytes,
                                               uint32_t metadata_bytes);

struct SectionEntry {
  uint64_t length = 0;  // bytes, without the padding that follows
  uint32_t crc = 0;     // CRC-32C of those bytes
};

struct FrameHeader {
  uint16_t version = kVersion1;
  uint8_t predictor = kPredictorLorenzo;
  uint8_t lossless = kLosslessHuffman;
  uint8_t fill_coding = kFillCodingRuns;
  uint8_t order = 0;       // interpolation: 1 linear, 3 cubic
  uint32_t positions = 0;  // S, the symbol positions (§15.3); n in version 1
  DType dtype = DType::kFloat32;
  int ndim = 1;
  BoundMode bound_mode = BoundMode::kAbs;
  bool has_gap_array = false;
  uint8_t max_code_length = 0;
  std::array<uint64_t, kMaxDims> shape{};  // this frame's own shape; unused dims 0
  uint64_t first_row = 0;                  // where the slab starts in the array
  double bound_value = 0;
  double abs_bound = 0;
  double quant_step = 0;  // reconstruction is (T)(q * quant_step)
  std::optional<double> fill_value;
  uint32_t radius = 0;
  uint32_t chunk_symbols = 0;
  std::array<uint16_t, kMaxDims> block{};  // Lorenzo block or interpolation tile; unused 0
  uint32_t subsequence_bits = 0;
  uint32_t chunk_group = 0;
  uint64_t outlier_count = 0;
  uint64_t verbatim_count = 0;
  uint64_t fill_run_count = 0;  // fill coding 1: mask tokens
  std::array<SectionEntry, kSectionCount> sections{};

  uint64_t num_elements() const;
  // The alphabet of the symbol stream: 2 * radius, plus the run tokens.
  uint32_t alphabet() const;
  uint64_t num_chunks() const;
  uint64_t num_groups() const;
  // Header plus every section padded to kAlignment.
  uint64_t frame_size() const;
};

void AppendFrameHeader(const FrameHeader& h, std::vector<uint8_t>* out);
// Parses and validates a frame header, including that the section lengths
// agree with the counts in it. Does not look at the section bytes.
absl::StatusOr<FrameHeader> ParseFrameHeader(absl::Span<const uint8_t> bytes);

// Expected byte lengths of the sections whose size the header fixes.
uint64_t ChunkIndexBytes(const FrameHeader& h);
uint64_t OutlierBytes(const FrameHeader& h);
uint64_t VerbatimBytes(const FrameHeader& h);
uint64_t FillRunBytes(const FrameHeader& h);  // fill coding 0
uint64_t MaskChunks(uint64_t mask_tokens);

struct FrameIndexEntry {
  uint64_t offset = 0;  // from the start of the archive
  uint64_t size = 0;
};

void AppendFrameIndex(absl::Span<const FrameIndexEntry> entries, std::vector<uint8_t>* out);
absl::StatusOr<std::vector<FrameIndexEntry>> ParseFrameIndex(absl::Span<const uint8_t> bytes);
EBZIP_HD inline uint64_t FrameIndexSize(uint64_t frame_count) { return 16 + 16 * frame_count; }

void AppendTrailer(uint64_t index_offset, std::vector<uint8_t>* out);
// Returns the index offset recorded in the last kTrailerSize bytes.
absl::StatusOr<uint64_t> ParseTrailer(absl::Span<const uint8_t> bytes);

}  // namespace ebzip::format

#endif  // EBZIP_CODEC_FORMAT_H_
