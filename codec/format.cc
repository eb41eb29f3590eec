#include "codec/format.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "codec/byte_io.h"
#include "codec/crc32c.h"
#include "codec/quantize_point.h"

namespace ebzip::format {
namespace {

absl::Status Corrupt(absl::string_view what) { return CorruptArchive(what); }

absl::Status CheckMagicAndVersion(uint32_t magic, uint32_t expected_magic, uint16_t version,
                                  absl::string_view what) {
  if (magic != expected_magic) return Corrupt(absl::StrCat("bad ", what, " magic"));
  if (version > kVersion) {
    return absl::UnimplementedError(absl::StrCat(what, " has format version ", version,
                                                 ", newer than this ebzip reads (", kVersion,
                                                 "); upgrade ebzip"));
  }
  if (version == 0) return Corrupt(absl::StrCat(what, " has format version 0"));
  return absl::OkStatus();
}

bool ValidDType(uint8_t v) { return v == 1 || v == 2; }

bool IsPowerOfTwo(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }

// FORMAT.md §15.2's rules on the version-2 fields. `n` is the frame's
// element count; h.positions is S.
absl::Status CheckVersion2Fields(const FrameHeader& h, uint64_t n) {
  if (h.predictor == kPredictorInterp) {
    uint32_t tile = 0;
    for (int d = 0; d < h.ndim; ++d) {
      if (h.block[d] == 1) continue;
      if (!IsPowerOfTwo(h.block[d]) || (tile != 0 && h.block[d] != tile)) {
        return Corrupt("interpolation tile is not one power of two");
      }
      tile = h.block[d];
    }
    if (tile == 0) return Corrupt("interpolation tile has no interpolated dimension");
    if (h.order != 1 && h.order != 3) return Corrupt("unknown interpolation order");
  } else if (h.order != 0) {
    return Corrupt("interpolation order on a Lorenzo frame");
  }
  if ((h.fill_coding == kFillCodingMask) !=
      (h.predictor == kPredictorInterp && h.fill_value.has_value())) {
    return Corrupt("fill coding disagrees with the predictor and fill value");
  }
  if (h.lossless == kLosslessZeroRuns &&
      (h.radius > kMaxRadiusWithRuns || h.max_code_length > kMaxCodeLengthWithRuns)) {
    return Corrupt("radius or code length too large for zero-run tokens");
  }
  if (h.lossless == kLosslessRunValues &&
      (h.radius > kMaxRadiusWithRunValues || h.max_code_length > kMaxCodeLengthWithRuns)) {
    return Corrupt("radius or code length too large for run-value tokens");
  }
  if (h.fill_coding == kFillCodingMask ? (h.positions == 0 || h.positions > n)
                                        : h.positions != n) {
    return Corrupt("symbol position count disagrees with the frame");
  }
  return absl::OkStatus();
}

bool NonNegative(double v) { return std::isfinite(v) && v >= 0 && !std::signbit(v); }
bool ValidMode(uint8_t v) { return v == 1 || v == 2; }

// Reads ndim dimensions and checks the unused ones are zero.
template <typename T, size_t N>
bool ReadDims(ByteReader& r, int ndim, std::array<T, N>* dims) {
  for (size_t i = 0; i < N; ++i) {
    (*dims)[i] = r.Get<T>();
    bool used = static_cast<int>(i) < ndim;
    if (used != ((*dims)[i] != 0)) return false;
  }
  return r.ok();
}

}  // namespace

bool ValidFillValue(DType dtype, double fill) {
  if (!std::isfinite(fill)) return false;
  return dtype != DType::kFloat32 || std::fabs(fill) <= 3.4028234663852886e38;
}

absl::Status CorruptArchive(absl::string_view what) {
  return absl::DataLossError(absl::StrCat("corrupt archive: ", what));
}

const char* SectionName(int section) {
  static constexpr const char* kNames[kSectionCount] = {
      "code lengths", "chunk index", "gap array", "bitstream", "outliers", "verbatim", "fill runs"};
  return section >= 0 && section < kSectionCount ? kNames[section] : "unknown";
}

void AppendFileHeader(const FileHeader& h, std::vector<uint8_t>* out) {
  size_t start = out->size();
  ByteWriter w(out);
  w.Put<uint32_t>(kFileMagic);
  w.Put<uint16_t>(h.version);
  w.Put<uint16_t>(kFileHeaderSize);
  w.Put<uint8_t>(static_cast<uint8_t>(h.dtype));
  w.Put<uint8_t>(static_cast<uint8_t>(h.shape.size()));
  w.Put<uint8_t>(static_cast<uint8_t>(h.bound_mode));
  w.Put<uint8_t>(h.fill_value ? kFileFlagFill : 0);
  w.Put<uint32_t>(h.version >= 2 ? h.metadata_bytes : 0);
  for (int i = 0; i < kMaxDims; ++i) {
    w.Put<uint64_t>(i < static_cast<int>(h.shape.size()) ? h.shape[i] : 0);
  }
  w.Put<double>(h.bound_value);
  w.Put<double>(h.abs_bound);
  w.Put<double>(h.fill_value.value_or(0.0));
  w.Put<uint64_t>(h.frame_rows);
  w.Put<uint64_t>(h.frame_count);
  w.Put<uint32_t>(0);
  w.Put<uint32_t>(Crc32c(out->data() + start, kFileHeaderSize - 4));
}

absl::StatusOr<FileHeader> ParseFileHeader(absl::Span<const uint8_t> bytes) {
  if (bytes.size() < kFileHeaderSize) {
    if (bytes.size() >= 4 && LoadLE<uint32_t>(bytes.data()) != kFileMagic) {
      return Corrupt("not an ebzip archive (bad magic)");
    }
    return Corrupt(absl::StrCat("truncated: ", bytes.size(), " bytes, shorter than the ",
                                kFileHeaderSize, "-byte file header"));
  }
  ByteReader r(bytes.subspan(0, kFileHeaderSize));
  uint32_t magic = r.Get<uint32_t>();
  uint16_t version = r.Get<uint16_t>();
  if (magic != kFileMagic) return Corrupt("not an ebzip archive (bad magic)");
  if (auto s = CheckMagicAndVersion(magic, kFileMagic, version, "archive"); !s.ok()) return s;
  uint32_t stored_crc = LoadLE<uint32_t>(bytes.data() + kFileHeaderSize - 4);
  if (Crc32c(bytes.data(), kFileHeaderSize - 4) != stored_crc) {
    return Corrupt("file header checksum mismatch");
  }
  FileHeader h;
  uint16_t header_size = r.Get<uint16_t>();
  uint8_t dtype = r.Get<uint8_t>();
  uint8_t ndim = r.Get<uint8_t>();
  uint8_t mode = r.Get<uint8_t>();
  uint8_t flags = r.Get<uint8_t>();
  uint32_t metadata_bytes = r.Get<uint32_t>();
  if (header_size != kFileHeaderSize) return Corrupt("unexpected file header size");
  if (!ValidDType(dtype)) return Corrupt("unknown dtype");
  if (ndim < 1 || ndim > kMaxDims) return Corrupt("rank out of range");
  if (!ValidMode(mode)) return Corrupt("unknown bound mode");
  if ((flags & ~kFileFlagFill) != 0) return Corrupt("reserved bits set");
  if (version < 2 && metadata_bytes != 0) return Corrupt("reserved bits set");
  if (metadata_bytes != 0 &&
      (metadata_bytes % kAlignment != 0 || metadata_bytes < 16 ||
       metadata_bytes > MetadataBlockBytes(kMaxMetadataDocument))) {
    return Corrupt("metadata block size out of range");
  }
  h.version = version;
  h.metadata_bytes = metadata_bytes;
  std::array<uint64_t, kMaxDims> shape;
  if (!ReadDims(r, ndim, &shape)) return Corrupt("shape and rank disagree");
  h.dtype = static_cast<DType>(dtype);
  h.shape.assign(shape.begin(), shape.begin() + ndim);
  h.bound_mode = static_cast<BoundMode>(mode);
  h.bound_value = r.Get<double>();
  h.abs_bound = r.Get<double>();
  double fill = r.Get<double>();
  h.frame_rows = r.Get<uint64_t>();
  h.frame_count = r.Get<uint64_t>();
  if (r.Get<uint32_t>() != 0) return Corrupt("reserved bits set");
  if (!r.ok()) return Corrupt("file header");
  if (auto s = ValidateArraySpec({h.dtype, h.shape}); !s.ok()) return Corrupt(s.message());
  if (!(std::isfinite(h.bound_value) && h.bound_value > 0)) return Corrupt("bad bound value");
  if (!NonNegative(h.abs_bound)) return Corrupt("bad absolute bound");
  if (flags & kFileFlagFill) {
    if (!ValidFillValue(h.dtype, fill)) return Corrupt("bad fill value");
    h.fill_value = fill;
  } else if (ToBits(fill) != 0) {
    return Corrupt("fill value without its flag");
  }
  if (h.frame_rows == 0 || h.frame_rows > h.shape[0]) return Corrupt("bad frame rows");
  // Every frame must fit the frame limit; this also bounds frame_count.
  uint64_t row_elements = 1;
  for (size_t i = 1; i < h.shape.size(); ++i) row_elements *= h.shape[i];
  if (row_elements > kMaxFrameElements / h.frame_rows) return Corrupt("frames too large");
  if (h.frame_count != (h.shape[0] + h.frame_rows - 1) / h.frame_rows) {
    return Corrupt("frame count disagrees with shape");
  }
  return h;
}

uint64_t FrameHeader::num_elements() const {
  uint64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}
uint64_t FrameHeader::num_chunks() const {
  return (uint64_t{positions} + chunk_symbols - 1) / chunk_symbols;
}
uint32_t FrameHeader::alphabet() const {
  switch (lossless) {
    case kLosslessZeroRuns:
      return 2 * radius + kRunClasses;
    case kLosslessRunValues:
      return 2 * radius + kTokensWithRunValues;
    default:
      return 2 * radius;
  }
}
uint64_t FrameHeader::num_groups() const { return (num_chunks() + chunk_group - 1) / chunk_group; }
uint64_t FrameHeader::frame_size() const {
  uint64_t size = kFrameHeaderSize;
  for (const SectionEntry& s : sections) size += AlignUp(s.length, kAlignment);
  return size;
}

uint64_t ChunkIndexBytes(const FrameHeader& h) { return h.num_groups() * 8 + h.num_chunks() * 4; }
uint64_t OutlierBytes(const FrameHeader& h) { return h.outlier_count * 8; }
uint64_t VerbatimBytes(const FrameHeader& h) {
  return AlignUp(h.verbatim_count * 4, kAlignment) + h.verbatim_count * DTypeSize(h.dtype);
}
uint64_t FillRunBytes(const FrameHeader& h) { return h.fill_run_count * 8; }
uint64_t MaskChunks(uint64_t mask_tokens) {
  return (mask_tokens + kMaskChunkTokens - 1) / kMaskChunkTokens;
}

uint64_t MetadataBlockBytes(uint64_t document_bytes) {
  return AlignUp(12 + document_bytes, kAlignment);
}

void AppendMetadataBlock(absl::string_view document, std::vector<uint8_t>* out) {
  ByteWriter w(out);
  const size_t start = out->size();
  w.Put<uint32_t>(kMetadataMagic);
  w.Put<uint32_t>(static_cast<uint32_t>(document.size()));
  w.Put<uint32_t>(Crc32cExtend(Crc32c(out->data() + start + 4, 4), document.data(),
                               document.size()));
  out->insert(out->end(), document.begin(), document.end());
  out->resize(out->size() + MetadataBlockBytes(document.size()) - 12 - document.size(), 0);
}

absl::StatusOr<std::string> ParseMetadataBlock(absl::Span<const uint8_t> bytes,
                                               uint32_t metadata_bytes) {
  if (bytes.size() < metadata_bytes || metadata_bytes < 16) {
    return Corrupt("truncated metadata block");
  }
  if (LoadLE<uint32_t>(bytes.data()) != kMetadataMagic) return Corrupt("bad metadata magic");
  const uint32_t length = LoadLE<uint32_t>(bytes.data() + 4);
  if (length == 0 || length > kMaxMetadataDocument ||
      MetadataBlockBytes(length) != metadata_bytes) {
    return Corrupt("metadata length disagrees with the block's size");
  }
  const uint8_t* doc = bytes.data() + 12;
  if (Crc32cExtend(Crc32c(bytes.data() + 4, 4), doc, length) != LoadLE<uint32_t>(bytes.data() + 8)) {
    return Corrupt("metadata checksum mismatch");
  }
  for (uint64_t i = 12 + length; i < metadata_bytes; ++i) {
    if (bytes[i] != 0) return Corrupt("non-zero padding");
  }
  // The document is the application's; the format only promises a JSON
  // object, which is all that is checked here (the CRC covers the rest).
  auto is_space = [](uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  uint32_t first = 0, last = length;
  while (first < length && is_space(doc[first])) ++first;
  while (last > first && is_space(doc[last - 1])) --last;
  if (last - first < 2 || doc[first] != '{' || doc[last - 1] != '}') {
    return Corrupt("metadata is not a JSON object");
  }
  return std::string(reinterpret_cast<const char*>(doc), length);
}

void AppendFrameHeader(const FrameHeader& h, std::vector<uint8_t>* out) {
  size_t start = out->size();
  ByteWriter w(out);
  const bool v2 = h.version >= 2;
  w.Put<uint32_t>(kFrameMagic);
  w.Put<uint16_t>(h.version);
  w.Put<uint16_t>(kFrameHeaderSize);
  w.Put<uint8_t>(static_cast<uint8_t>(h.dtype));
  w.Put<uint8_t>(static_cast<uint8_t>(h.ndim));
  w.Put<uint8_t>(static_cast<uint8_t>(h.bound_mode));
  w.Put<uint8_t>((h.has_gap_array ? kFrameFlagGapArray : 0) | (h.fill_value ? kFrameFlagFill : 0));
  w.Put<uint8_t>(h.max_code_length);
  w.Put<uint8_t>(v2 ? h.predictor : 0);
  w.Put<uint8_t>(v2 ? h.lossless : 0);
  w.Put<uint8_t>(v2 ? h.fill_coding : 0);
  for (uint64_t d : h.shape) w.Put<uint64_t>(d);
  w.Put<uint64_t>(h.first_row);
  w.Put<double>(h.bound_value);
  w.Put<double>(h.abs_bound);
  w.Put<double>(h.quant_step);
  w.Put<double>(h.fill_value.value_or(0.0));
  w.Put<uint32_t>(h.radius);
  w.Put<uint32_t>(h.chunk_symbols);
  for (uint16_t b : h.block) w.Put<uint16_t>(b);
  w.Put<uint32_t>(h.subsequence_bits);
  w.Put<uint32_t>(h.chunk_group);
  w.Put<uint64_t>(h.outlier_count);
  w.Put<uint64_t>(h.verbatim_count);
  w.Put<uint64_t>(h.fill_run_count);
  for (int i = 0; i < kSectionCount; ++i) {
    w.Put<uint64_t>(h.sections[i].length);
    w.Put<uint32_t>(h.sections[i].crc);
    w.Put<uint32_t>(v2 && i == kBitstream ? h.positions : 0);
  }
  w.Put<uint32_t>(v2 ? h.order : 0);
  w.Put<uint32_t>(Crc32c(out->data() + start, kFrameHeaderSize - 4));
}

absl::StatusOr<FrameHeader> ParseFrameHeader(absl::Span<const uint8_t> bytes) {
  if (bytes.size() < kFrameHeaderSize) return Corrupt("truncated frame header");
  ByteReader r(bytes.subspan(0, kFrameHeaderSize));
  uint32_t magic = r.Get<uint32_t>();
  uint16_t version = r.Get<uint16_t>();
  if (auto s = CheckMagicAndVersion(magic, kFrameMagic, version, "frame"); !s.ok()) return s;
  if (Crc32c(bytes.data(), kFrameHeaderSize - 4) !=
      LoadLE<uint32_t>(bytes.data() + kFrameHeaderSize - 4)) {
    return Corrupt("frame header checksum mismatch");
  }
  FrameHeader h;
  uint16_t header_size = r.Get<uint16_t>();
  uint8_t dtype = r.Get<uint8_t>();
  uint8_t ndim = r.Get<uint8_t>();
  uint8_t mode = r.Get<uint8_t>();
  uint8_t flags = r.Get<uint8_t>();
  h.max_code_length = r.Get<uint8_t>();
  h.version = version;
  h.predictor = r.Get<uint8_t>();
  h.lossless = r.Get<uint8_t>();
  h.fill_coding = r.Get<uint8_t>();
  if (header_size != kFrameHeaderSize) return Corrupt("unexpected frame header size");
  if (!ValidDType(dtype)) return Corrupt("unknown dtype in frame");
  if (ndim < 1 || ndim > kMaxDims) return Corrupt("frame rank out of range");
  if (!ValidMode(mode)) return Corrupt("unknown bound mode in frame");
  if ((flags & ~(kFrameFlagGapArray | kFrameFlagFill)) != 0 ||
      (version < 2 && (h.predictor != 0 || h.lossless != 0 || h.fill_coding != 0))) {
    return Corrupt("reserved frame bits set");
  }
  if (h.predictor > kPredictorInterp || h.lossless > kLosslessRunValues ||
      h.fill_coding > kFillCodingMask) {
    return Corrupt("unknown predictor, lossless stage or fill coding");
  }
  h.dtype = static_cast<DType>(dtype);
  h.ndim = ndim;
  h.bound_mode = static_cast<BoundMode>(mode);
  h.has_gap_array = flags & kFrameFlagGapArray;
  if (!ReadDims(r, ndim, &h.shape)) return Corrupt("frame shape and rank disagree");
  h.first_row = r.Get<uint64_t>();
  h.bound_value = r.Get<double>();
  h.abs_bound = r.Get<double>();
  h.quant_step = r.Get<double>();
  double fill = r.Get<double>();
  h.radius = r.Get<uint32_t>();
  h.chunk_symbols = r.Get<uint32_t>();
  if (!ReadDims(r, ndim, &h.block)) return Corrupt("block shape and rank disagree");
  h.subsequence_bits = r.Get<uint32_t>();
  h.chunk_group = r.Get<uint32_t>();
  h.outlier_count = r.Get<uint64_t>();
  h.verbatim_count = r.Get<uint64_t>();
  h.fill_run_count = r.Get<uint64_t>();
  uint32_t positions = 0;
  for (int i = 0; i < kSectionCount; ++i) {
    h.sections[i].length = r.Get<uint64_t>();
    h.sections[i].crc = r.Get<uint32_t>();
    const uint32_t extra = r.Get<uint32_t>();
    if (version >= 2 && i == kBitstream) {
      positions = extra;
    } else if (extra != 0) {
      return Corrupt("reserved frame bits set");
    }
  }
  const uint32_t order_word = r.Get<uint32_t>();
  if (!r.ok()) return Corrupt("frame header");
  if ((order_word & ~uint32_t{0xFF}) != 0 || (version < 2 && order_word != 0)) {
    return Corrupt("reserved frame bits set");
  }
  h.order = static_cast<uint8_t>(order_word);

  uint64_t n = 1;
  for (int i = 0; i < ndim; ++i) {
    if (h.shape[i] > kMaxFrameElements || n * h.shape[i] > kMaxFrameElements) {
      return Corrupt("frame has too many elements");
    }
    n *= h.shape[i];
  }
  if (!(std::isfinite(h.bound_value) && h.bound_value > 0)) return Corrupt("bad bound value");
  if (!NonNegative(h.abs_bound)) return Corrupt("bad absolute bound");
  if (!(std::isfinite(h.quant_step) && h.quant_step > 0)) return Corrupt("bad quantization step");
  if (flags & kFrameFlagFill) {
    if (!ValidFillValue(h.dtype, fill)) return Corrupt("bad fill value");
    h.fill_value = fill;
  } else if (ToBits(fill) != 0) {
    return Corrupt("fill value without its flag");
  }
  if (h.radius < 1 || h.radius > kMaxRadius) return Corrupt("radius out of range");
  h.positions = version >= 2 ? positions : static_cast<uint32_t>(n);
  if (auto s = CheckVersion2Fields(h, n); !s.ok()) return s;
  if (h.chunk_symbols < 1 || h.chunk_symbols > kMaxChunkSymbols) {
    return Corrupt("chunk size out of range");
  }
  if (h.max_code_length < 1 || h.max_code_length > kMaxCodeLength) {
    return Corrupt("maximum code length out of range");
  }
  if (h.subsequence_bits < 32 || h.subsequence_bits % 32 != 0 ||
      h.subsequence_bits > kMaxSubsequenceBits) {
    return Corrupt("subsequence size out of range");
  }
  if (h.chunk_group < 1 || h.chunk_group > kMaxChunkGroup) {
    return Corrupt("chunk group out of range");
  }
  if (h.outlier_count > n || h.verbatim_count > n ||
      (h.fill_coding == kFillCodingRuns && h.fill_run_count > n)) {
    return Corrupt("section count exceeds element count");
  }
  if (h.sections[kCodeLengths].length == 0) return Corrupt("empty code lengths");
  if (h.sections[kChunkIndex].length != ChunkIndexBytes(h)) return Corrupt("chunk index size");
  if (h.has_gap_array != (h.sections[kGapArray].length != 0)) {
    return Corrupt("gap array flag and size disagree");
  }
  if (h.sections[kBitstream].length % 4 != 0) return Corrupt("bitstream is not whole words");
  for (const SectionEntry& s : h.sections) {
    if (s.length > kMaxSectionBytes) return Corrupt("section too large");
  }
  // Every token is at least one bit and covers at most kMaxRunPositions
  // positions (kMaxRunValuePositions with run-value tokens, one without
  // tokens), and every mask token covers at most kMaxMaskRun elements: a
  // frame cannot claim more elements than its bits allow, which caps what a
  // reader allocates.
  const uint64_t per_bit = h.lossless == kLosslessZeroRuns    ? kMaxRunPositions
                           : h.lossless == kLosslessRunValues ? kMaxRunValuePositions
                                                              : 1;
  if (h.sections[kBitstream].length * 8 * per_bit < h.positions) {
    return Corrupt("bitstream too short for the frame");
  }
  if (h.sections[kOutliers].length != OutlierBytes(h)) return Corrupt("outlier section size");
  if (h.sections[kVerbatim].length != VerbatimBytes(h)) return Corrupt("verbatim section size");
  if (h.fill_coding == kFillCodingRuns) {
    if (h.sections[kFillRuns].length != FillRunBytes(h)) return Corrupt("fill run section size");
  } else {
    const uint64_t fixed = kMaskHeaderBytes + 4 * MaskChunks(h.fill_run_count);
    const uint64_t length = h.sections[kFillRuns].length;
    if (h.fill_run_count == 0 || length < fixed || (length - fixed) % 4 != 0 ||
        (length - fixed) * 8 < h.fill_run_count) {
      return Corrupt("fill mask section size");
    }
    if (n - h.positions > (length - fixed) * 8 * kMaxMaskRun) {
      return Corrupt("fill mask too short for the frame");
    }
  }
  if (!h.fill_value && h.fill_run_count != 0) return Corrupt("fill runs without a fill value");
  return h;
}

void AppendFrameIndex(absl::Span<const FrameIndexEntry> entries, std::vector<uint8_t>* out) {
  size_t start = out->size();
  ByteWriter w(out);
  w.Put<uint32_t>(kIndexMagic);
  w.Put<uint32_t>(0);  // CRC, patched below
  w.Put<uint64_t>(entries.size());
  for (const FrameIndexEntry& e : entries) {
    w.Put<uint64_t>(e.offset);
    w.Put<uint64_t>(e.size);
  }
  uint32_t crc = Crc32c(out->data() + start + 8, out->size() - start - 8);
  StoreLE<uint32_t>(out->data() + start + 4, crc);
}

absl::StatusOr<std::vector<FrameIndexEntry>> ParseFrameIndex(absl::Span<const uint8_t> bytes) {
  ByteReader r(bytes);
  uint32_t magic = r.Get<uint32_t>();
  uint32_t crc = r.Get<uint32_t>();
  uint64_t count = r.Get<uint64_t>();
  if (!r.ok() || magic != kIndexMagic) return Corrupt("bad frame index magic");
  if (count > r.remaining() / 16 || bytes.size() != FrameIndexSize(count)) {
    return Corrupt("frame index size");
  }
  if (Crc32c(bytes.data() + 8, bytes.size() - 8) != crc) {
    return Corrupt("frame index checksum mismatch");
  }
  std::vector<FrameIndexEntry> entries(count);
  for (FrameIndexEntry& e : entries) {
    e.offset = r.Get<uint64_t>();
    e.size = r.Get<uint64_t>();
  }
  return entries;
}

void AppendTrailer(uint64_t index_offset, std::vector<uint8_t>* out) {
  size_t start = out->size();
  ByteWriter w(out);
  w.Put<uint64_t>(index_offset);
  w.Put<uint32_t>(kTrailerMagic);
  w.Put<uint32_t>(Crc32c(out->data() + start, 12));
}

absl::StatusOr<uint64_t> ParseTrailer(absl::Span<const uint8_t> bytes) {
  if (bytes.size() < kTrailerSize) return Corrupt("truncated: no trailer");
  const uint8_t* t = bytes.data() + bytes.size() - kTrailerSize;
  if (LoadLE<uint32_t>(t + 8) != kTrailerMagic) return Corrupt("truncated: bad trailer magic");
  if (Crc32c(t, 12) != LoadLE<uint32_t>(t + 12)) return Corrupt("trailer checksum mismatch");
  return LoadLE<uint64_t>(t);
}

}  // namespace ebzip::format
