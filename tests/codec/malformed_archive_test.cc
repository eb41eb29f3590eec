// Malformed archives must be rejected with a clear status and never decoded
// into data, crash, hang or read out of bounds (docs/design.md §3). The inputs are
// truncations, bit flips, wrong magics, versions and reserved fields, frames
// that are wrong only in meaning (every checksum recomputed, so only the
// validation logic can catch them) and random garbage, over samples of both
// format versions: version 1 (Lorenzo, plain Huffman, fill runs) and version
// 2 (FORMAT.md §15: interpolation with and without a fill mask, zero-run
// tokens and run-value tokens with either predictor, metadata blocks).
// Version 2's own rules are
// broken one at a time by editing the decoded tokens, symbols, outliers and
// fill mask and coding them again (Version2Corruptions, the metadata tests).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <new>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "codec/archive.h"
#include "codec/byte_io.h"
#include "codec/chunk_layout.h"
#include "codec/crc32c.h"
#include "codec/fill_mask.h"
#include "codec/format.h"
#include "codec/huffman_code.h"
#include "codec/region.h"
#include "gtest/gtest.h"
#include "tests/region_slice.h"

namespace ebzip {
namespace {

using Bytes = std::vector<uint8_t>;
using absl::StatusCode;

constexpr DecoderKind kDecoders[] = {DecoderKind::kAuto, DecoderKind::kChunkParallel,
                                     DecoderKind::kGapArray, DecoderKind::kSelfSync};

// Field offsets in the fixed-layout structures, as format.cc writes them.
constexpr size_t kVersionAt = 4;  // both headers
constexpr size_t kHeaderSizeAt = 6;
constexpr size_t kFlagsAt = 11;
constexpr size_t kFileReservedAt = 12;
constexpr size_t kFileShapeAt = 16;
constexpr size_t kFileBoundValueAt = 48;
constexpr size_t kFileAbsBoundAt = 56;
constexpr size_t kFileFrameRowsAt = 72;
constexpr size_t kFileFrameCountAt = 80;
constexpr size_t kFileTailReservedAt = 88;
constexpr size_t kFileCrcAt = 92;
constexpr size_t kFrameReserved8At = 13;
constexpr size_t kFrameReserved16At = 14;
constexpr size_t kFrameShapeAt = 16;
constexpr size_t kFrameBlockAt = 96;
constexpr size_t kFrameSectionTableAt = 136;  // 16 bytes per section
constexpr size_t kFrameTailReservedAt = 248;
constexpr size_t kFrameCrcAt = 252;

// Element i of a section read as an array of T.
template <typename T>
T At(const Bytes& b, uint64_t i) {
  return LoadLE<T>(b.data() + i * sizeof(T));
}
template <typename T>
void Put(Bytes& b, uint64_t i, T v) {
  StoreLE<T>(b.data() + i * sizeof(T), v);
}

void FixFileHeaderCrc(Bytes& a) {
  StoreLE<uint32_t>(a.data() + kFileCrcAt, Crc32c(a.data(), kFileCrcAt));
}
void FixFrameHeaderCrc(Bytes& a, uint64_t frame_offset) {
  StoreLE<uint32_t>(a.data() + frame_offset + kFrameCrcAt,
                    Crc32c(a.data() + frame_offset, kFrameCrcAt));
}
// The metadata block (§15.1): magic, length, CRC of length and document.
constexpr size_t kMetadataAt = format::kFileHeaderSize;
constexpr size_t kMetadataLengthAt = kMetadataAt + 4;
constexpr size_t kMetadataCrcAt = kMetadataAt + 8;
constexpr size_t kMetadataDocumentAt = kMetadataAt + 12;
// Recomputes the metadata CRC over the length and document the block
// declares, where they lie inside the archive.
void FixMetadataCrc(Bytes& a) {
  if (a.size() < kMetadataDocumentAt) return;
  const uint32_t length = LoadLE<uint32_t>(a.data() + kMetadataLengthAt);
  if (length > a.size() - kMetadataDocumentAt) return;
  StoreLE<uint32_t>(a.data() + kMetadataCrcAt,
                    Crc32cExtend(Crc32c(a.data() + kMetadataLengthAt, 4),
                                 a.data() + kMetadataDocumentAt, length));
}
uint64_t IndexOffset(const Bytes& a) {
  return LoadLE<uint64_t>(a.data() + a.size() - format::kTrailerSize);
}
void FixIndexCrc(Bytes& a) {
  const uint64_t at = IndexOffset(a);
  const uint64_t end = a.size() - format::kTrailerSize;
  StoreLE<uint32_t>(a.data() + at + 4, Crc32c(a.data() + at + 8, end - at - 8));
}
void FixTrailerCrc(Bytes& a) {
  uint8_t* t = a.data() + a.size() - format::kTrailerSize;
  StoreLE<uint32_t>(t + 12, Crc32c(t, 12));
}

// An archive taken apart so that a test can edit it; Join() puts it back
// with every section length, offset and checksum recomputed, so the edit is
// visible only to the validation logic.
struct FrameParts {
  format::FrameHeader header;
  std::array<Bytes, format::kSectionCount> sections;
};
struct ArchiveParts {
  Bytes file_header;
  std::vector<FrameParts> frames;
};

ArchiveParts Split(const Bytes& archive) {
  ArchiveParts parts;
  auto info = ReadArchiveInfo(archive);
  EXPECT_TRUE(info.ok()) << info.status();
  if (!info.ok()) return parts;
  // The file header and, in version 2, the metadata block after it.
  parts.file_header.assign(archive.begin(),
                           archive.begin() + format::kFileHeaderSize + info->header.metadata_bytes);
  for (const format::FrameIndexEntry& e : info->frames) {
    auto frame = absl::MakeConstSpan(archive).subspan(e.offset, e.size);
    auto header = format::ParseFrameHeader(frame);
    EXPECT_TRUE(header.ok()) << header.status();
    if (!header.ok()) return {};
    FrameParts& f = parts.frames.emplace_back();
    f.header = *header;
    uint64_t at = format::kFrameHeaderSize;
    for (int s = 0; s < format::kSectionCount; ++s) {
      const uint64_t length = header->sections[s].length;
      f.sections[s].assign(frame.begin() + at, frame.begin() + at + length);
      at += AlignUp(length, format::kAlignment);
    }
  }
  return parts;
}

Bytes Join(ArchiveParts parts) {
  Bytes out = parts.file_header;
  std::vector<format::FrameIndexEntry> index;
  for (FrameParts& f : parts.frames) {
    for (int s = 0; s < format::kSectionCount; ++s) {
      f.header.sections[s] = {f.sections[s].size(),
                              Crc32c(f.sections[s].data(), f.sections[s].size())};
    }
    const uint64_t start = out.size();
    format::AppendFrameHeader(f.header, &out);
    for (const Bytes& section : f.sections) {
      out.insert(out.end(), section.begin(), section.end());
      out.resize(AlignUp(out.size(), format::kAlignment), 0);
    }
    index.push_back({start, out.size() - start});
  }
  const uint64_t index_offset = out.size();
  format::AppendFrameIndex(index, &out);
  format::AppendTrailer(index_offset, &out);
  return out;
}

// Edits one section of one frame in place of the archive, recomputing that
// section's checksum and the frame header's (and, should the edit change
// the section's length, every offset after it).
void MutateSection(Bytes* archive, size_t frame, int section,
                   const std::function<void(Bytes&)>& mutate) {
  ArchiveParts parts = Split(*archive);
  ASSERT_LT(frame, parts.frames.size());
  mutate(parts.frames[frame].sections[section]);
  *archive = Join(std::move(parts));
}

// A contiguous stretch of an archive, named for failure messages.
struct Region {
  std::string name;
  uint64_t begin = 0;
  uint64_t end = 0;
  bool padding = false;
};

std::vector<Region> Regions(const Bytes& archive) {
  std::vector<Region> regions;
  auto info = ReadArchiveInfo(archive);
  EXPECT_TRUE(info.ok()) << info.status();
  if (!info.ok()) return regions;
  regions.push_back({"file header", 0, format::kFileHeaderSize});
  if (info->header.metadata_bytes != 0) {
    regions.push_back({"metadata block", format::kFileHeaderSize,
                       format::kFileHeaderSize + info->header.metadata_bytes});
  }
  for (size_t i = 0; i < info->frames.size(); ++i) {
    const uint64_t offset = info->frames[i].offset;
    auto header = format::ParseFrameHeader(absl::MakeConstSpan(archive).subspan(offset));
    EXPECT_TRUE(header.ok()) << header.status();
    if (!header.ok()) return {};
    const std::string frame = absl::StrCat("frame ", i, " ");
    regions.push_back({frame + "header", offset, offset + format::kFrameHeaderSize});
    uint64_t at = offset + format::kFrameHeaderSize;
    for (int s = 0; s < format::kSectionCount; ++s) {
      const uint64_t length = header->sections[s].length;
      const uint64_t padded = AlignUp(length, format::kAlignment);
      const std::string name = frame + format::SectionName(s);
      if (length > 0) regions.push_back({name, at, at + length});
      if (padded > length) regions.push_back({name + " padding", at + length, at + padded, true});
      at += padded;
    }
  }
  const uint64_t trailer = archive.size() - format::kTrailerSize;
  regions.push_back({"frame index", IndexOffset(archive), trailer});
  regions.push_back({"trailer", trailer, archive.size()});
  return regions;
}

// What a sample exercises of version 2 (FORMAT.md §15); kVersion1 is the
// Lorenzo predictor with plain Huffman and fill runs, which writes version 1.
enum class Flavor {
  kVersion1,
  kInterp,            // interpolation, plain Huffman
  kInterpRuns,        // interpolation and zero-run tokens
  kLorenzoRuns,       // Lorenzo and zero-run tokens (so version 2, fill runs)
  kInterpRunValues,   // interpolation and run-value tokens (lossless 2)
  kLorenzoRunValues,  // Lorenzo and run-value tokens
};

// A small archive with several frames and every section non-empty.
struct Sample {
  std::string name;
  ArraySpec spec;
  bool gap_array = false;
  Flavor flavor = Flavor::kVersion1;
  bool fill = true;      // has a fill value (interpolation: a fill mask)
  std::string metadata;  // the metadata block's document, or none
  Bytes archive;
  Bytes decoded;  // what the intact archive decodes to

  bool v2() const { return flavor != Flavor::kVersion1 || !metadata.empty(); }
  bool interp() const {
    return flavor == Flavor::kInterp || flavor == Flavor::kInterpRuns ||
           flavor == Flavor::kInterpRunValues;
  }
  // Run-value tokens (lossless 2), and with runs() zero-run tokens alone.
  bool values() const {
    return flavor == Flavor::kInterpRunValues || flavor == Flavor::kLorenzoRunValues;
  }
  bool runs() const {
    return flavor == Flavor::kInterpRuns || flavor == Flavor::kLorenzoRuns || values();
  }
  uint8_t lossless() const {
    return values() ? format::kLosslessRunValues
                    : (runs() ? format::kLosslessZeroRuns : format::kLosslessHuffman);
  }
  bool mask() const { return interp() && fill; }
};

template <typename T>
Bytes ToBytes(const std::vector<double>& values) {
  std::vector<T> typed(values.begin(), values.end());
  const auto* p = reinterpret_cast<const uint8_t*>(typed.data());
  return Bytes(p, p + typed.size() * sizeof(T));
}

constexpr double kFill = -9999;

// Every decoded value within the bound of the input, or bit for bit where it
// must be (fill, NaN, infinities, -0.0 and subnormals): the samples are
// valid archives, so what the corruptions start from is right.
template <typename T>
void ExpectWithinBound(const Sample& sample, const Bytes& input, double abs_bound) {
  const uint64_t n = sample.spec.num_elements();
  int failures = 0;
  for (uint64_t i = 0; i < n && failures < 5; ++i) {
    const T x = LoadLE<T>(input.data() + i * sizeof(T));
    const T y = LoadLE<T>(sample.decoded.data() + i * sizeof(T));
    const bool exact = (sample.fill && x == static_cast<T>(kFill)) || !std::isfinite(x) ||
                       (x == 0 && std::signbit(x)) || std::fpclassify(x) == FP_SUBNORMAL;
    const bool ok = exact ? std::memcmp(&x, &y, sizeof(T)) == 0
                          : std::fabs(static_cast<double>(y) - static_cast<double>(x)) <= abs_bound;
    if (!ok) {
      ++failures;
      ADD_FAILURE() << sample.name << ": element " << i << " is " << x << ", decoded " << y;
    }
  }
}

// A smooth field where every frame also holds spikes (outliers), NaN, Inf and
// a subnormal (verbatim values) and two runs of the fill value. Version-2
// samples also get a fill value on a tile's anchor (the frame's first
// element) and a constant stretch (long zero-residual runs, which cross
// chunk ends).
Sample MakeSample(std::string name, DType dtype, std::vector<uint64_t> shape, uint64_t frame_rows,
                  bool gap_array, Flavor flavor = Flavor::kVersion1, bool fill = true,
                  std::string metadata = "", int interp_order = 0) {
  Sample sample{std::move(name),
                {dtype, std::move(shape)},
                gap_array,
                flavor,
                fill,
                std::move(metadata),
                {},
                {}};
  const uint64_t n = sample.spec.num_elements();
  const uint64_t frame_elements = frame_rows * (n / sample.spec.shape[0]);
  std::vector<double> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = 10 * std::sin(0.05 * i) + 3 * std::cos(0.11 * i);
  const double fill_value = fill ? kFill : 7777;  // without a fill value, just a value
  for (uint64_t base = 0; base < n; base += frame_elements) {
    const uint64_t m = std::min(frame_elements, n - base);
    if (sample.v2()) {
      for (uint64_t k = 0; k < m / 6; ++k) v[base + m / 2 + 20 + k] = 1.5;
      if (fill) v[base] = fill_value;  // on an anchor
    }
    v[base + m / 5] = 500;
    v[base + 3 * m / 5] = -700;
    v[base + m / 3] = NAN;
    v[base + m / 2 + 1] = INFINITY;
    v[base + 7] = dtype == DType::kFloat32 ? 1e-40 : 1e-310;
    for (uint64_t k = 0; k < 5; ++k) v[base + m / 4 + k] = fill_value;
    for (uint64_t k = 0; k < 4; ++k) v[base + 4 * m / 5 + k] = fill_value;
  }
  if (sample.interp()) {
    // Anchors far from 0 make outliers (the first anchor of each block of 8
    // of the anchor grid has its quantized value as residual), while the
    // interpolated elements, which a constant does not change, stay within
    // the radius.
    for (double& x : v) {
      if (std::isfinite(x) && x != kFill) x += 100;
    }
  }
  const Bytes data = dtype == DType::kFloat32 ? ToBytes<float>(v) : ToBytes<double>(v);
  CompressOptions o;
  switch (flavor) {
    case Flavor::kVersion1:
      o.predictor = Predictor::kLorenzo;
      o.lossless = Lossless::kHuffman;
      break;
    case Flavor::kInterp:
      o.predictor = Predictor::kInterp;
      o.lossless = Lossless::kHuffman;
      break;
    case Flavor::kInterpRuns:
      o.predictor = Predictor::kInterp;
      o.lossless = Lossless::kZeroRuns;
      break;
    case Flavor::kLorenzoRuns:
      o.predictor = Predictor::kLorenzo;
      o.lossless = Lossless::kZeroRuns;
      break;
    case Flavor::kInterpRunValues:
      o.predictor = Predictor::kInterp;
      o.lossless = Lossless::kRunValues;
      break;
    case Flavor::kLorenzoRunValues:
      o.predictor = Predictor::kLorenzo;
      o.lossless = Lossless::kRunValues;
      break;
  }
  o.interp_order = interp_order;
  o.metadata = sample.metadata;
  o.mode = BoundMode::kAbs;
  o.bound = 0.01;
  if (fill) o.fill_value = kFill;
  o.frame_elements = frame_elements;
  // Interpolation's residuals at the coarse levels are large: a small
  // radius would make most elements verbatim.
  o.radius = sample.interp() ? 2048 : 64;
  o.chunk_symbols = dtype == DType::kFloat32 ? 64 : 128;
  o.subsequence_bits = 32;
  o.chunk_group = 4;
  o.gap_array = gap_array;
  auto archive = Compress(sample.spec, data, o);
  EXPECT_TRUE(archive.ok()) << archive.status();
  if (!archive.ok()) return sample;
  sample.archive = *std::move(archive);
  auto decoded = Decompress(sample.archive, DecoderKind::kChunkParallel);
  EXPECT_TRUE(decoded.ok()) << sample.name << ": " << decoded.status();
  if (decoded.ok()) sample.decoded = std::move(decoded->data);
  if (sample.decoded.size() == data.size()) {
    if (dtype == DType::kFloat32) {
      ExpectWithinBound<float>(sample, data, o.bound);
    } else {
      ExpectWithinBound<double>(sample, data, o.bound);
    }
  }
  return sample;
}

constexpr char kMetadata[] = R"({"variable": "t", "units": "K", "dims": ["y", "x"]})";

const std::vector<Sample>& Samples() {
  static const auto* samples = new std::vector<Sample>{
      MakeSample("f32 48x40, gap array", DType::kFloat32, {48, 40}, 16, true),
      MakeSample("f32 48x40, no gap array", DType::kFloat32, {48, 40}, 16, false),
      MakeSample("f64 3000, gap array", DType::kFloat64, {3000}, 1024, true),
      MakeSample("f64 3000, no gap array", DType::kFloat64, {3000}, 1024, false),
      // Version 2.
      MakeSample("v2 f32 48x40 interp cubic, mask, runs, gap array", DType::kFloat32, {48, 40}, 16,
                 true, Flavor::kInterpRuns, true, "", 3),
      MakeSample("v2 f32 48x40 interp linear, mask, runs, no gap array, metadata", DType::kFloat32,
                 {48, 40}, 16, false, Flavor::kInterpRuns, true, kMetadata, 1),
      MakeSample("v2 f64 3000 interp, mask, gap array", DType::kFloat64, {3000}, 1024, true,
                 Flavor::kInterp, true, "", 3),
      MakeSample("v2 f64 3000 interp, mask, runs, no gap array", DType::kFloat64, {3000}, 1024,
                 false, Flavor::kInterpRuns, true, "", 1),
      MakeSample("v2 f32 24x8x10 interp, no fill value, runs, gap array, metadata", DType::kFloat32,
                 {24, 8, 10}, 8, true, Flavor::kInterpRuns, false, R"( {"a": 1} )", 3),
      MakeSample("v2 f32 48x40 Lorenzo, runs, gap array", DType::kFloat32, {48, 40}, 16, true,
                 Flavor::kLorenzoRuns),
      MakeSample("v2 f64 3000 Lorenzo, runs, no gap array, metadata", DType::kFloat64, {3000}, 1024,
                 false, Flavor::kLorenzoRuns, true, kMetadata),
      // Run-value tokens (lossless 2, §15.4.1).
      MakeSample("v2 f32 48x40 interp cubic, mask, run values, gap array", DType::kFloat32,
                 {48, 40}, 16, true, Flavor::kInterpRunValues, true, "", 3),
      MakeSample("v2 f64 3000 interp linear, mask, run values, no gap array, metadata",
                 DType::kFloat64, {3000}, 1024, false, Flavor::kInterpRunValues, true, kMetadata,
                 1),
      MakeSample("v2 f32 24x8x10 interp, no fill value, run values, no gap array", DType::kFloat32,
                 {24, 8, 10}, 8, false, Flavor::kInterpRunValues, false, "", 3),
      MakeSample("v2 f32 48x40 Lorenzo, run values, no gap array, metadata", DType::kFloat32,
                 {48, 40}, 16, false, Flavor::kLorenzoRunValues, true, kMetadata),
      MakeSample("v2 f64 3000 Lorenzo, run values, no fill value, gap array", DType::kFloat64,
                 {3000}, 1024, true, Flavor::kLorenzoRunValues, false),
  };
  return *samples;
}

// The first sample of each kind, for the tests that need only one.
const Sample& FirstSample(bool v2, bool with_metadata = false) {
  for (const Sample& s : Samples()) {
    if (s.v2() == v2 && (!with_metadata || !s.metadata.empty())) return s;
  }
  ADD_FAILURE() << "no such sample";
  return Samples()[0];
}

// Whether `code` is an acceptable rejection. The gap-array decoder on an
// archive without gap arrays may report FAILED_PRECONDITION from an intact
// frame instead of the corrupt frame's DATA_LOSS: frames decode
// concurrently and the first error wins.
bool IsRejection(StatusCode code, StatusCode expected, DecoderKind kind, bool gap_array) {
  if (code == expected) return true;
  return kind == DecoderKind::kGapArray && !gap_array && code == StatusCode::kFailedPrecondition;
}

void ExpectDataLoss(const Bytes& archive, bool gap_array, const std::string& what) {
  for (DecoderKind kind : kDecoders) {
    auto out = Decompress(archive, kind);
    EXPECT_TRUE(IsRejection(out.status().code(), StatusCode::kDataLoss, kind, gap_array))
        << what << ", " << DecoderKindName(kind) << " decoder: got "
        << (out.ok() ? std::string("OK and ") + std::to_string(out->data.size()) + " bytes"
                     : out.status().ToString());
  }
}

TEST(MalformedArchive, SamplesFillEverySection) {
  for (const Sample& sample : Samples()) {
    SCOPED_TRACE(sample.name);
    ASSERT_FALSE(sample.archive.empty());
    ASSERT_EQ(sample.decoded.size(), sample.spec.num_bytes());
    auto info = ReadArchiveInfo(sample.archive);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_GE(info->frames.size(), 3u);
    const uint16_t version = sample.v2() ? format::kVersion : format::kVersion1;
    EXPECT_EQ(info->header.version, version);
    EXPECT_EQ(info->metadata, sample.metadata);
    EXPECT_EQ(info->header.metadata_bytes != 0, !sample.metadata.empty());
    bool padded = false;
    for (const format::FrameIndexEntry& e : info->frames) {
      auto h = format::ParseFrameHeader(absl::MakeConstSpan(sample.archive).subspan(e.offset));
      ASSERT_TRUE(h.ok()) << h.status();
      EXPECT_EQ(h->version, version);
      EXPECT_EQ(h->predictor,
                sample.interp() ? format::kPredictorInterp : format::kPredictorLorenzo);
      EXPECT_EQ(h->lossless, sample.lossless());
      EXPECT_EQ(h->fill_coding, sample.mask() ? format::kFillCodingMask : format::kFillCodingRuns);
      if (sample.mask()) {
        EXPECT_LT(h->positions, h->num_elements());  // fill elements without a symbol
      } else {
        EXPECT_EQ(h->positions, h->num_elements());
      }
      // Interpolation frames have outliers only at anchors (a handful).
      EXPECT_GE(h->outlier_count, sample.interp() ? 1u : 2u);
      EXPECT_GE(h->verbatim_count, 2u);
      EXPECT_EQ(h->fill_run_count >= 2, sample.fill);
      EXPECT_GE(h->num_groups(), 2u);
      for (int s = 0; s < format::kSectionCount; ++s) {
        const bool expect_empty = (s == format::kGapArray && !sample.gap_array) ||
                                  (s == format::kFillRuns && !sample.fill);
        EXPECT_EQ(h->sections[s].length == 0, expect_empty) << format::SectionName(s);
        padded |= h->sections[s].length % format::kAlignment != 0;
      }
      // Run tokens are used, not merely allowed.
      if (sample.runs()) {
        const uint64_t at = e.offset + format::kFrameHeaderSize;
        auto lengths = ParseCodeLengths(absl::MakeConstSpan(sample.archive)
                                            .subspan(at, h->sections[format::kCodeLengths].length),
                                        h->alphabet(), h->max_code_length);
        ASSERT_TRUE(lengths.ok()) << lengths.status();
        int used = 0;
        for (uint32_t c = 2 * h->radius; c < h->alphabet(); ++c) used += (*lengths)[c] != 0;
        EXPECT_GE(used, 2) << "run classes with a code";
      }
    }
    EXPECT_TRUE(padded) << "no section has padding to flip";
    // The editing helpers must reproduce an untouched archive exactly.
    EXPECT_EQ(Join(Split(sample.archive)), sample.archive);
  }
}

TEST(MalformedArchive, EveryTruncationIsDataLoss) {
  for (const Sample& sample : Samples()) {
    SCOPED_TRACE(sample.name);
    int failures = 0;
    for (size_t length = 0; length < sample.archive.size() && failures < 10; ++length) {
      const Bytes prefix(sample.archive.begin(), sample.archive.begin() + length);
      for (DecoderKind kind : kDecoders) {
        auto out = Decompress(prefix, kind);
        if (out.status().code() != StatusCode::kDataLoss) {
          ++failures;
          ADD_FAILURE() << "prefix of " << length << " of " << sample.archive.size() << " bytes, "
                        << DecoderKindName(kind)
                        << " decoder: " << (out.ok() ? "OK" : out.status().ToString());
        }
      }
    }
  }
}

TEST(MalformedArchive, TrailingBytesAreDataLoss) {
  for (const Sample* sample : {&FirstSample(false), &FirstSample(true, true)}) {
    for (size_t extra : {1, 7, 8, 16, 100}) {
      Bytes a = sample->archive;
      a.resize(a.size() + extra, 0);
      ExpectDataLoss(a, sample->gap_array,
                     absl::StrCat(sample->name, ": ", extra, " zero bytes appended"));
    }
  }
}

// Flips bits everywhere: every bit of the headers, index and trailer, and one
// bit of every section and padding byte (a different bit from byte to byte).
// The whole array decoded by parts of frames (RegionFrames::kPart).
StatusCode DecodeByParts(const Bytes& archive) {
  auto info = ReadArchiveInfo(archive);
  if (!info.ok()) return info.status().code();
  Bytes out(info->spec().num_bytes());
  return DecompressRegion(*info, archive, WholeArray(info->header.shape), DecoderKind::kAuto,
                          absl::MakeSpan(out), nullptr, RegionFrames::kPart)
      .code();
}

TEST(MalformedArchive, BitFlipsAnywhereAreRejected) {
  for (const Sample& sample : Samples()) {
    SCOPED_TRACE(sample.name);
    const std::vector<Region> regions = Regions(sample.archive);
    ASSERT_FALSE(regions.empty());
    uint64_t covered = 0;
    int padding_regions = 0;
    int failures = 0;
    for (const Region& region : regions) {
      ASSERT_EQ(region.begin, covered) << region.name << " leaves a gap";
      covered = region.end;
      padding_regions += region.padding;
      const bool structural = region.name.find("header") != std::string::npos ||
                              region.name == "metadata block" || region.name == "frame index" ||
                              region.name == "trailer";
      for (uint64_t at = region.begin; at < region.end && failures < 10; ++at) {
        // A version field read as newer than this reader is UNIMPLEMENTED
        // before its checksum is looked at, by design.
        const uint64_t in_header = at - region.begin;
        const bool version_field = region.name.find("header") != std::string::npos &&
                                   in_header >= kVersionAt && in_header < kVersionAt + 2;
        for (int bit = 0; bit < 8; ++bit) {
          if (!structural && bit != static_cast<int>(at % 8)) continue;
          Bytes a = sample.archive;
          a[at] ^= static_cast<uint8_t>(1u << bit);
          for (DecoderKind kind : kDecoders) {
            auto out = Decompress(a, kind);
            const StatusCode code = out.status().code();
            const bool ok = IsRejection(code, StatusCode::kDataLoss, kind, sample.gap_array) ||
                            (version_field && code == StatusCode::kUnimplemented);
            if (!ok) {
              ++failures;
              ADD_FAILURE() << "bit " << bit << " of byte " << at << " (" << region.name << "), "
                            << DecoderKindName(kind)
                            << " decoder: " << (out.ok() ? "OK" : out.status().ToString());
            }
          }
          // Parts of frames (codec/region_frame.h) check every section's
          // CRC too: the whole array by parts is rejected alike.
          const StatusCode code = DecodeByParts(a);
          if (!(code == StatusCode::kDataLoss ||
                (version_field && code == StatusCode::kUnimplemented))) {
            ++failures;
            ADD_FAILURE() << "bit " << bit << " of byte " << at << " (" << region.name
                          << "), by parts of frames: " << code;
          }
        }
      }
    }
    EXPECT_EQ(covered, sample.archive.size());
    EXPECT_GT(padding_regions, 0);
  }
}

TEST(MalformedArchive, WrongMagicIsDataLoss) {
  for (const Sample* sample_ptr : {&FirstSample(false), &FirstSample(true, true)}) {
    const Sample& sample = *sample_ptr;
    SCOPED_TRACE(sample.name);
    const uint64_t frame0 = ReadArchiveInfo(sample.archive)->frames[0].offset;
    {
      Bytes a = sample.archive;
      a[0] ^= 0x20;
      FixFileHeaderCrc(a);
      auto info = ReadArchiveInfo(a);
      EXPECT_EQ(info.status().code(), StatusCode::kDataLoss);
      EXPECT_NE(info.status().message().find("not an ebzip archive"), absl::string_view::npos)
          << info.status();
      ExpectDataLoss(a, sample.gap_array, "file magic");
    }
    if (frame0 != format::kFileHeaderSize) {
      Bytes a = sample.archive;
      a[format::kFileHeaderSize + 3] ^= 0x01;  // "EBZM"
      auto info = ReadArchiveInfo(a);
      EXPECT_NE(info.status().message().find("metadata magic"), absl::string_view::npos)
          << info.status();
      ExpectDataLoss(a, sample.gap_array, "metadata magic");
    }
    {
      Bytes a = sample.archive;
      a[frame0 + 3] ^= 0x01;
      FixFrameHeaderCrc(a, frame0);
      auto out = Decompress(a);
      EXPECT_EQ(out.status().code(), StatusCode::kDataLoss);
      EXPECT_NE(out.status().message().find("magic"), absl::string_view::npos) << out.status();
      ExpectDataLoss(a, sample.gap_array, "frame magic");
    }
    {
      Bytes a = sample.archive;
      a[IndexOffset(a)] ^= 0x01;
      ExpectDataLoss(a, sample.gap_array, "frame index magic");
    }
    {
      Bytes a = sample.archive;
      a[a.size() - 8] ^= 0x01;
      FixTrailerCrc(a);
      ExpectDataLoss(a, sample.gap_array, "trailer magic");
    }
  }
  // Other formats' first bytes.
  for (const char* other :
       {"\x89HDF\r\n\x1a\n", "CDF\x01", "\x1f\x8b\x08\x00", "\x28\xb5\x2f\xfd"}) {
    Bytes a(4096, 0);
    std::copy(other, other + std::char_traits<char>::length(other), a.begin());
    auto out = Decompress(a);
    EXPECT_EQ(out.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(out.status().message().find("not an ebzip archive"), absl::string_view::npos)
        << out.status();
  }
}

TEST(MalformedArchive, NewerVersionIsUnimplemented) {
  for (const Sample* sample_ptr : {&FirstSample(false), &FirstSample(true, true)}) {
    const Sample& sample = *sample_ptr;
    SCOPED_TRACE(sample.name);
    for (uint16_t version : {uint16_t{format::kVersion + 1}, uint16_t{0xFFFF}}) {
      const std::string mention = absl::StrCat("version ", version);
      Bytes a = sample.archive;
      StoreLE<uint16_t>(a.data() + kVersionAt, version);
      FixFileHeaderCrc(a);
      auto info = ReadArchiveInfo(a);
      EXPECT_EQ(info.status().code(), StatusCode::kUnimplemented) << info.status();
      for (DecoderKind kind : kDecoders) {
        auto out = Decompress(a, kind);
        EXPECT_EQ(out.status().code(), StatusCode::kUnimplemented) << out.status();
        EXPECT_NE(out.status().message().find(mention), absl::string_view::npos) << out.status();
      }
      // A frame written by a newer ebzip inside an archive this one reads.
      Bytes f = sample.archive;
      const uint64_t frame1 = ReadArchiveInfo(f)->frames[1].offset;
      StoreLE<uint16_t>(f.data() + frame1 + kVersionAt, version);
      FixFrameHeaderCrc(f, frame1);
      for (DecoderKind kind : kDecoders) {
        auto out = Decompress(f, kind);
        EXPECT_EQ(out.status().code(), StatusCode::kUnimplemented) << out.status();
        EXPECT_NE(out.status().message().find(mention), absl::string_view::npos) << out.status();
      }
    }
    Bytes zero = sample.archive;
    StoreLE<uint16_t>(zero.data() + kVersionAt, 0);
    FixFileHeaderCrc(zero);
    ExpectDataLoss(zero, sample.gap_array, "file format version 0");
  }
}

TEST(MalformedArchive, ReservedFieldsSetAreDataLoss) {
  const Sample& sample = Samples()[0];  // 2-D: dimensions 2 and 3 are unused
  struct Patch {
    const char* what;
    size_t at;
    uint8_t value;
  };
  const Patch file_patches[] = {
      {"file header size", kHeaderSizeAt, 95},
      {"unknown file flag", kFlagsAt, 0x80},
      {"reserved word after flags", kFileReservedAt, 1},
      {"reserved word after flags, top byte", kFileReservedAt + 3, 0x80},
      {"unused shape dimension", kFileShapeAt + 2 * 8, 1},
      {"reserved word before the checksum", kFileTailReservedAt, 1},
  };
  for (const Patch& p : file_patches) {
    Bytes a = sample.archive;
    a[p.at] = p.value;
    FixFileHeaderCrc(a);
    ExpectDataLoss(a, sample.gap_array, p.what);
  }
  const uint64_t frame = ReadArchiveInfo(sample.archive)->frames[1].offset;
  std::vector<Patch> frame_patches = {
      {"frame header size", kHeaderSizeAt, 1},
      {"unknown frame flag", kFlagsAt, 0x05},
      {"reserved byte", kFrameReserved8At, 1},
      {"reserved half-word", kFrameReserved16At + 1, 0x10},
      {"unused frame shape dimension", kFrameShapeAt + 3 * 8, 1},
      {"unused block dimension", kFrameBlockAt + 2 * 2, 8},
      {"reserved word before the checksum", kFrameTailReservedAt, 1},
  };
  for (int s = 0; s < format::kSectionCount; ++s) {
    frame_patches.push_back({"reserved word of a section entry", kFrameSectionTableAt + 16 * s + 12,
                             static_cast<uint8_t>(1 + s)});
  }
  for (const Patch& p : frame_patches) {
    Bytes a = sample.archive;
    a[frame + p.at] = p.value;
    FixFrameHeaderCrc(a, frame);
    ExpectDataLoss(a, sample.gap_array, p.what);
  }
}

// Version 2 gives bytes 13-15 and 248 of the frame header, section 3's
// reserved word (S) and the file header's word at 12 (metadata_bytes) a
// meaning (§15.1, §15.2); everything else reserved stays reserved.
TEST(MalformedArchive, ReservedFieldsOfVersionTwoSetAreDataLoss) {
  for (const Sample* sample_ptr : {&FirstSample(true), &FirstSample(true, true)}) {
    const Sample& sample = *sample_ptr;
    SCOPED_TRACE(sample.name);
    struct Patch {
      const char* what;
      size_t at;
      uint8_t value;
    };
    const Patch file_patches[] = {
        {"unknown file flag", kFlagsAt, 0x03},
        {"reserved word before the checksum", kFileTailReservedAt + 2, 1},
        {"unused shape dimension", kFileShapeAt + 3 * 8 + 7, 1},
    };
    for (const Patch& p : file_patches) {
      Bytes a = sample.archive;
      a[p.at] = p.value;
      FixFileHeaderCrc(a);
      ExpectDataLoss(a, sample.gap_array, p.what);
    }
    const uint64_t frame = ReadArchiveInfo(sample.archive)->frames[1].offset;
    std::vector<Patch> frame_patches = {
        {"unknown frame flag", kFlagsAt, 0x04},
        {"reserved byte after the order", kFrameTailReservedAt + 1, 1},
        {"reserved byte after the order", kFrameTailReservedAt + 2, 0x80},
        {"reserved byte after the order", kFrameTailReservedAt + 3, 1},
    };
    for (int s = 0; s < format::kSectionCount; ++s) {
      if (s == format::kBitstream) continue;  // S
      frame_patches.push_back({"reserved word of a section entry",
                               kFrameSectionTableAt + 16 * s + 12 + s % 4,
                               static_cast<uint8_t>(1 + s)});
    }
    for (const Patch& p : frame_patches) {
      Bytes a = sample.archive;
      a[frame + p.at] = p.value;
      FixFrameHeaderCrc(a, frame);
      ExpectDataLoss(a, sample.gap_array, absl::StrCat(p.what, " (byte ", p.at, ")"));
    }
  }
}

// A frame edit that only the validation logic can catch.
struct Corruption {
  std::string name;
  // Edits frame `f`; false when the sample has nothing of the kind to edit.
  std::function<bool(ArchiveParts&, size_t f)> edit;
  // Only the gap-array decoder reads what this edits: it must fail, and the
  // other decoders must fail too or decode exactly what the intact archive
  // holds.
  bool gap_decoder_only = false;
};

std::vector<Corruption> Corruptions() {
  using format::kBitstream;
  using format::kChunkIndex;
  using format::kCodeLengths;
  using format::kFillRuns;
  using format::kGapArray;
  using format::kOutliers;
  using format::kVerbatim;
  auto hdr = [](ArchiveParts& p, size_t f) -> format::FrameHeader& { return p.frames[f].header; };
  auto sec = [](ArchiveParts& p, size_t f, int s) -> Bytes& { return p.frames[f].sections[s]; };
  // Code lengths: decoded, edited as a vector, re-encoded.
  auto edit_lengths = [sec](ArchiveParts& p, size_t f,
                            const std::function<bool(std::vector<uint8_t>&, int)>& fn) {
    const format::FrameHeader& h = p.frames[f].header;
    auto lengths = ParseCodeLengths(sec(p, f, kCodeLengths), h.alphabet(), h.max_code_length);
    EXPECT_TRUE(lengths.ok()) << lengths.status();
    if (!lengths.ok() || !fn(*lengths, h.max_code_length)) return false;
    sec(p, f, kCodeLengths).clear();
    AppendCodeLengths(*lengths, &sec(p, f, kCodeLengths));
    return true;
  };

  std::vector<Corruption> c;
  // Outliers: count u32 indices, then count i32 values.
  c.push_back({"outlier indices out of order", [=](ArchiveParts& p, size_t f) {
                 Bytes& o = sec(p, f, kOutliers);
                 const uint64_t n = hdr(p, f).outlier_count;
                 if (n < 2) return false;
                 const uint32_t i0 = At<uint32_t>(o, 0), i1 = At<uint32_t>(o, 1);
                 const uint32_t v0 = At<uint32_t>(o, n), v1 = At<uint32_t>(o, n + 1);
                 Put(o, 0, i1);
                 Put(o, 1, i0);
                 Put(o, n, v1);
                 Put(o, n + 1, v0);
                 return true;
               }});
  c.push_back({"outlier index equal to the element count", [=](ArchiveParts& p, size_t f) {
                 const uint64_t n = hdr(p, f).outlier_count;
                 if (n == 0) return false;
                 Put<uint32_t>(sec(p, f, kOutliers), n - 1,
                               static_cast<uint32_t>(hdr(p, f).num_elements()));
                 return true;
               }});
  c.push_back({"outlier index 0xFFFFFFFF", [=](ArchiveParts& p, size_t f) {
                 if (hdr(p, f).outlier_count == 0) return false;
                 Put<uint32_t>(sec(p, f, kOutliers), hdr(p, f).outlier_count - 1, 0xFFFFFFFFu);
                 return true;
               }});
  c.push_back({"outlier index on a non-outlier symbol", [=](ArchiveParts& p, size_t f) {
                 Bytes& o = sec(p, f, kOutliers);
                 const uint64_t n = hdr(p, f).outlier_count;
                 for (uint64_t k = 0; k + 1 < n; ++k) {
                   if (At<uint32_t>(o, k) + 1 < At<uint32_t>(o, k + 1)) {
                     Put<uint32_t>(o, k, At<uint32_t>(o, k) + 1);
                     return true;
                   }
                 }
                 return false;
               }});
  c.push_back({"outlier count below the bitstream's zeros", [=](ArchiveParts& p, size_t f) {
                 Bytes& o = sec(p, f, kOutliers);
                 const uint64_t n = hdr(p, f).outlier_count;
                 if (n == 0) return false;
                 o.erase(o.begin() + 4 * (2 * n - 1), o.end());        // the last value
                 o.erase(o.begin() + 4 * (n - 1), o.begin() + 4 * n);  // the last index
                 --hdr(p, f).outlier_count;
                 return true;
               }});
  c.push_back({"outlier count above the bitstream's zeros", [=](ArchiveParts& p, size_t f) {
                 Bytes& o = sec(p, f, kOutliers);
                 const uint64_t n = hdr(p, f).outlier_count;
                 if (n == 0) return false;
                 const uint32_t last = At<uint32_t>(o, n - 1);
                 if (last + 1 >= hdr(p, f).num_elements()) return false;
                 Bytes edited(o.begin(), o.begin() + 4 * n);
                 edited.resize(edited.size() + 4);
                 Put<uint32_t>(edited, n, last + 1);
                 edited.insert(edited.end(), o.begin() + 4 * n, o.end());
                 edited.resize(edited.size() + 4, 0);
                 o = edited;
                 ++hdr(p, f).outlier_count;
                 return true;
               }});
  // Verbatim: count u32 indices, padding to 8 bytes, count values.
  c.push_back({"verbatim indices out of order", [=](ArchiveParts& p, size_t f) {
                 Bytes& v = sec(p, f, kVerbatim);
                 if (hdr(p, f).verbatim_count < 2) return false;
                 const uint32_t i0 = At<uint32_t>(v, 0);
                 Put(v, 0, At<uint32_t>(v, 1));
                 Put(v, 1, i0);
                 return true;
               }});
  c.push_back({"verbatim index equal to the element count", [=](ArchiveParts& p, size_t f) {
                 if (hdr(p, f).verbatim_count == 0) return false;
                 Put<uint32_t>(sec(p, f, kVerbatim), hdr(p, f).verbatim_count - 1,
                               static_cast<uint32_t>(hdr(p, f).num_elements()));
                 return true;
               }});
  // Fill runs: (u32 start, u32 length) pairs (fill coding 0 only: with 1
  // the section is a fill mask, edited by Version2Corruptions).
  auto has_runs = [=](ArchiveParts& p, size_t f) {
    return hdr(p, f).fill_coding == format::kFillCodingRuns && hdr(p, f).fill_run_count > 0;
  };
  c.push_back({"fill runs overlap", [=](ArchiveParts& p, size_t f) {
                 Bytes& r = sec(p, f, kFillRuns);
                 if (!has_runs(p, f) || hdr(p, f).fill_run_count < 2) return false;
                 Put<uint32_t>(r, 2, At<uint32_t>(r, 0) + At<uint32_t>(r, 1) - 1);
                 return true;
               }});
  c.push_back({"fill runs out of order", [=](ArchiveParts& p, size_t f) {
                 Bytes& r = sec(p, f, kFillRuns);
                 if (!has_runs(p, f) || hdr(p, f).fill_run_count < 2) return false;
                 std::swap_ranges(r.begin(), r.begin() + 8, r.begin() + 8);
                 return true;
               }});
  c.push_back({"fill run past the end", [=](ArchiveParts& p, size_t f) {
                 if (!has_runs(p, f)) return false;
                 Bytes& r = sec(p, f, kFillRuns);
                 const uint64_t last = hdr(p, f).fill_run_count - 1;
                 const uint64_t n = hdr(p, f).num_elements();
                 Put<uint32_t>(r, 2 * last,
                               static_cast<uint32_t>(n - At<uint32_t>(r, 2 * last + 1) + 1));
                 return true;
               }});
  c.push_back({"fill run starting at 0xFFFFFFFF", [=](ArchiveParts& p, size_t f) {
                 if (!has_runs(p, f)) return false;
                 Bytes& r = sec(p, f, kFillRuns);
                 Put<uint32_t>(r, 2 * (hdr(p, f).fill_run_count - 1), 0xFFFFFFFFu);
                 return true;
               }});
  c.push_back({"fill run of length zero", [=](ArchiveParts& p, size_t f) {
                 if (!has_runs(p, f)) return false;
                 Put<uint32_t>(sec(p, f, kFillRuns), 1, 0);
                 return true;
               }});
  c.push_back({"fill runs (or a fill mask) without a fill value", [=](ArchiveParts& p, size_t f) {
                 if (!hdr(p, f).fill_value) return false;
                 hdr(p, f).fill_value.reset();
                 return true;
               }});
  // Chunk index: one u64 word offset per group, then one u32 bit length per
  // chunk.
  auto chunk_bits_at = [=](ArchiveParts& p, size_t f) { return 2 * hdr(p, f).num_groups(); };
  c.push_back({"group offset disagrees with chunk lengths", [=](ArchiveParts& p, size_t f) {
                 Bytes& ci = sec(p, f, kChunkIndex);
                 Put<uint64_t>(ci, 1, At<uint64_t>(ci, 1) + 1);
                 return true;
               }});
  c.push_back({"first group offset not zero", [=](ArchiveParts& p, size_t f) {
                 Put<uint64_t>(sec(p, f, kChunkIndex), 0, 1);
                 return true;
               }});
  c.push_back({"chunk a word longer than the group offsets say", [=](ArchiveParts& p, size_t f) {
                 Bytes& ci = sec(p, f, kChunkIndex);
                 const uint64_t at = chunk_bits_at(p, f);
                 Put<uint32_t>(ci, at, At<uint32_t>(ci, at) + 32);
                 return true;
               }});
  c.push_back({"last chunk a word longer than the bitstream", [=](ArchiveParts& p, size_t f) {
                 Bytes& ci = sec(p, f, kChunkIndex);
                 const uint64_t at = chunk_bits_at(p, f) + hdr(p, f).num_chunks() - 1;
                 Put<uint32_t>(ci, at, At<uint32_t>(ci, at) + 32);
                 return true;
               }});
  c.push_back({"last chunk a bit shorter", [=](ArchiveParts& p, size_t f) {
                 Bytes& ci = sec(p, f, kChunkIndex);
                 const uint64_t at = chunk_bits_at(p, f) + hdr(p, f).num_chunks() - 1;
                 if (At<uint32_t>(ci, at) == 0) return false;
                 Put<uint32_t>(ci, at, At<uint32_t>(ci, at) - 1);
                 return true;
               }});
  c.push_back({"chunk longer than its symbols allow", [=](ArchiveParts& p, size_t f) {
                 const format::FrameHeader& h = hdr(p, f);
                 Put<uint32_t>(sec(p, f, kChunkIndex), chunk_bits_at(p, f),
                               h.chunk_symbols * h.max_code_length + 1);
                 return true;
               }});
  c.push_back({"chunk lengths swapped", [=](ArchiveParts& p, size_t f) {
                 Bytes& ci = sec(p, f, kChunkIndex);
                 const uint64_t at = chunk_bits_at(p, f);
                 const uint32_t b0 = At<uint32_t>(ci, at), b1 = At<uint32_t>(ci, at + 1);
                 if (b0 == b1) return false;
                 Put(ci, at, b1);
                 Put(ci, at + 1, b0);
                 return true;
               }});
  c.push_back({"bitstream a word short", [=](ArchiveParts& p, size_t f) {
                 Bytes& b = sec(p, f, kBitstream);
                 if (b.size() < 4) return false;
                 b.resize(b.size() - 4);
                 return true;
               }});
  c.push_back({"bitstream a word long", [=](ArchiveParts& p, size_t f) {
                 Bytes& b = sec(p, f, kBitstream);
                 b.resize(b.size() + 4, 0);
                 return true;
               }});
  c.push_back({"every chunk empty and no bitstream", [=](ArchiveParts& p, size_t f) {
                 std::fill(sec(p, f, kChunkIndex).begin(), sec(p, f, kChunkIndex).end(), 0);
                 sec(p, f, kBitstream).clear();
                 sec(p, f, kGapArray).clear();
                 hdr(p, f).has_gap_array = false;
                 return true;
               }});
  // Code lengths. A Huffman code is complete (Kraft sum exactly 1), so any
  // shorter length over-subscribes it.
  c.push_back({"code lengths over-subscribed", [=](ArchiveParts& p, size_t f) {
                 return edit_lengths(p, f, [](std::vector<uint8_t>& l, int) {
                   auto it = std::find_if(l.begin(), l.end(), [](uint8_t x) { return x >= 2; });
                   if (it == l.end()) return false;
                   --*it;
                   return true;
                 });
               }});
  c.push_back({"code length above the maximum", [=](ArchiveParts& p, size_t f) {
                 return edit_lengths(p, f, [](std::vector<uint8_t>& l, int max_length) {
                   auto it = std::find_if(l.begin(), l.end(), [](uint8_t x) { return x != 0; });
                   if (it == l.end()) return false;
                   *it = static_cast<uint8_t>(max_length + 1);
                   return true;
                 });
               }});
  c.push_back({"code lengths for one symbol too few", [=](ArchiveParts& p, size_t f) {
                 return edit_lengths(p, f, [](std::vector<uint8_t>& l, int) {
                   l.pop_back();
                   return true;
                 });
               }});
  c.push_back({"code lengths for one symbol too many", [=](ArchiveParts& p, size_t f) {
                 return edit_lengths(p, f, [](std::vector<uint8_t>& l, int) {
                   l.push_back(1);
                   return true;
                 });
               }});
  c.push_back({"no symbol has a code", [=](ArchiveParts& p, size_t f) {
                 return edit_lengths(p, f, [](std::vector<uint8_t>& l, int) {
                   std::fill(l.begin(), l.end(), 0);
                   return true;
                 });
               }});
  c.push_back({"zero run of length zero", [=](ArchiveParts& p, size_t f) {
                 Bytes& l = sec(p, f, kCodeLengths);
                 l.insert(l.begin(), {0, 0});
                 return true;
               }});
  c.push_back({"zero run past the alphabet", [=](ArchiveParts& p, size_t f) {
                 const uint32_t run = hdr(p, f).alphabet() + 1;
                 sec(p, f, kCodeLengths) = {0, static_cast<uint8_t>(0x80 | (run & 0x7F)),
                                            static_cast<uint8_t>(run >> 7)};
                 return true;
               }});
  c.push_back({"unterminated zero run", [=](ArchiveParts& p, size_t f) {
                 sec(p, f, kCodeLengths).push_back(0);
                 return true;
               }});
  c.push_back({"zero run with an endless LEB128", [=](ArchiveParts& p, size_t f) {
                 Bytes& l = sec(p, f, kCodeLengths);
                 l.insert(l.begin(), 12, 0x80);
                 l.insert(l.begin(), 0);
                 return true;
               }});
  c.push_back({"maximum code length below the code's", [=](ArchiveParts& p, size_t f) {
                 const format::FrameHeader& h = hdr(p, f);
                 auto l =
                     ParseCodeLengths(sec(p, f, kCodeLengths), h.alphabet(), h.max_code_length);
                 if (!l.ok()) return false;
                 const uint8_t longest = *std::max_element(l->begin(), l->end());
                 if (longest < 2) return false;
                 hdr(p, f).max_code_length = longest - 1;
                 return true;
               }});
  c.push_back({"radius one larger than the code's alphabet", [=](ArchiveParts& p, size_t f) {
                 ++hdr(p, f).radius;
                 return true;
               }});
  // Gap array: one u8 per subsequence of each chunk.
  c.push_back({"gap array one entry short", [=](ArchiveParts& p, size_t f) {
                 Bytes& g = sec(p, f, kGapArray);
                 if (g.empty()) return false;
                 g.pop_back();
                 return true;
               }});
  c.push_back({"gap array one entry long", [=](ArchiveParts& p, size_t f) {
                 Bytes& g = sec(p, f, kGapArray);
                 if (g.empty()) return false;
                 g.push_back(0);
                 return true;
               }});
  c.push_back({"gap array present, flag cleared", [=](ArchiveParts& p, size_t f) {
                 if (!hdr(p, f).has_gap_array) return false;
                 hdr(p, f).has_gap_array = false;
                 return true;
               }});
  c.push_back({"gap array flag set, no entries", [=](ArchiveParts& p, size_t f) {
                 if (hdr(p, f).has_gap_array) return false;
                 hdr(p, f).has_gap_array = true;
                 return true;
               }});
  c.push_back({"subsequence size disagrees with the gap array", [=](ArchiveParts& p, size_t f) {
                 if (!hdr(p, f).has_gap_array) return false;
                 hdr(p, f).subsequence_bits *= 2;
                 return true;
               }});
  auto first_chunk_subsequences = [=](ArchiveParts& p, size_t f) {
    const uint32_t bits = At<uint32_t>(sec(p, f, kChunkIndex), chunk_bits_at(p, f));
    return (bits + hdr(p, f).subsequence_bits - 1) / hdr(p, f).subsequence_bits;
  };
  c.push_back({"first gap of a chunk not zero",
               [=](ArchiveParts& p, size_t f) {
                 if (!hdr(p, f).has_gap_array) return false;
                 sec(p, f, kGapArray)[0] = 1;
                 return true;
               },
               true});
  c.push_back({"gap pointing past the end of its chunk",
               [=](ArchiveParts& p, size_t f) {
                 const uint32_t m = first_chunk_subsequences(p, f);
                 if (!hdr(p, f).has_gap_array || m < 2) return false;
                 sec(p, f, kGapArray)[m - 1] = 255;
                 return true;
               },
               true});
  c.push_back({"gap off a codeword boundary",
               [=](ArchiveParts& p, size_t f) {
                 if (!hdr(p, f).has_gap_array || first_chunk_subsequences(p, f) < 2) return false;
                 sec(p, f, kGapArray)[1] ^= 1;
                 return true;
               },
               true});
  // Header fields the file header or the sections pin down.
  c.push_back({"frame rows disagree with the file header", [=](ArchiveParts& p, size_t f) {
                 if (hdr(p, f).shape[0] < 2) return false;
                 --hdr(p, f).shape[0];
                 return true;
               }});
  c.push_back({"frame row shape disagrees with the file header", [=](ArchiveParts& p, size_t f) {
                 format::FrameHeader& h = hdr(p, f);
                 if (h.ndim < 2 || h.shape[0] % 2 != 0) return false;
                 h.shape[0] /= 2;  // same element count, so the sections still fit
                 h.shape[1] *= 2;
                 return true;
               }});
  c.push_back({"first row wrong", [=](ArchiveParts& p, size_t f) {
                 ++hdr(p, f).first_row;
                 return true;
               }});
  c.push_back({"bound value disagrees", [=](ArchiveParts& p, size_t f) {
                 hdr(p, f).bound_value *= 2;
                 return true;
               }});
  c.push_back({"absolute bound disagrees", [=](ArchiveParts& p, size_t f) {
                 hdr(p, f).abs_bound *= 2;
                 return true;
               }});
  c.push_back({"fill value disagrees", [=](ArchiveParts& p, size_t f) {
                 hdr(p, f).fill_value = kFill + 1;
                 return true;
               }});
  c.push_back({"bound mode disagrees", [=](ArchiveParts& p, size_t f) {
                 hdr(p, f).bound_mode = BoundMode::kRel;
                 return true;
               }});
  c.push_back({"dtype disagrees", [=](ArchiveParts& p, size_t f) {
                 format::FrameHeader& h = hdr(p, f);
                 h.dtype = h.dtype == DType::kFloat32 ? DType::kFloat64 : DType::kFloat32;
                 return true;
               }});
  c.push_back({"chunk size disagrees with the chunk lengths", [=](ArchiveParts& p, size_t f) {
                 format::FrameHeader& h = hdr(p, f);
                 const uint64_t chunks = h.num_chunks();
                 ++h.chunk_symbols;  // same chunk count: the index still fits
                 return chunks >= 2 && h.num_chunks() == chunks;
               }});
  c.push_back({"frames swapped", [=](ArchiveParts& p, size_t f) {
                 if (f + 1 >= p.frames.size()) return false;
                 std::swap(p.frames[f], p.frames[f + 1]);
                 return true;
               }});
  c.push_back({"frame repeated", [=](ArchiveParts& p, size_t f) {
                 if (f + 1 >= p.frames.size()) return false;
                 p.frames[f + 1] = p.frames[f];
                 return true;
               }});
  return c;
}

TEST(MalformedArchive, SemanticallyCorruptFramesAreDataLoss) {
  for (const Corruption& corruption : Corruptions()) {
    SCOPED_TRACE(corruption.name);
    int applied = 0;
    for (const Sample& sample : Samples()) {
      const ArchiveParts intact = Split(sample.archive);
      for (size_t f = 0; f < intact.frames.size(); ++f) {
        ArchiveParts parts = intact;
        if (!corruption.edit(parts, f)) continue;
        ++applied;
        const Bytes a = Join(std::move(parts));
        const std::string what = absl::StrCat(sample.name, ", frame ", f);
        if (!corruption.gap_decoder_only) {
          ExpectDataLoss(a, sample.gap_array, what);
          continue;
        }
        auto gap = Decompress(a, DecoderKind::kGapArray);
        EXPECT_EQ(gap.status().code(), StatusCode::kDataLoss) << what << ": " << gap.status();
        for (DecoderKind kind : {DecoderKind::kChunkParallel, DecoderKind::kSelfSync}) {
          auto out = Decompress(a, kind);
          if (out.ok()) {
            EXPECT_TRUE(out->data == sample.decoded)
                << what << ", " << DecoderKindName(kind) << " decoded something else";
          } else {
            EXPECT_EQ(out.status().code(), StatusCode::kDataLoss) << what << ": " << out.status();
          }
        }
      }
    }
    EXPECT_GT(applied, 0) << "no sample had anything to edit";
  }
}

// The file header, frame index and trailer, each with its checksum fixed.
TEST(MalformedArchive, SemanticallyCorruptContainerIsDataLoss) {
  for (const Sample& sample : Samples()) {
    SCOPED_TRACE(sample.name);
    const Bytes& archive = sample.archive;
    auto info = ReadArchiveInfo(archive);
    ASSERT_TRUE(info.ok());
    const uint64_t rows = info->header.frame_rows;
    const uint64_t count = info->header.frame_count;
    auto file_edit = [&](const std::string& what, const std::function<void(Bytes&)>& edit) {
      Bytes a = archive;
      edit(a);
      FixFileHeaderCrc(a);
      ExpectDataLoss(a, sample.gap_array, what);
    };
    file_edit("frame rows doubled",
              [&](Bytes& a) { StoreLE<uint64_t>(a.data() + kFileFrameRowsAt, 2 * rows); });
    file_edit("frame rows and count changed together", [&](Bytes& a) {
      StoreLE<uint64_t>(a.data() + kFileFrameRowsAt, 2 * rows);
      StoreLE<uint64_t>(a.data() + kFileFrameCountAt,
                        (info->header.shape[0] + 2 * rows - 1) / (2 * rows));
    });
    file_edit("one row fewer", [&](Bytes& a) {
      StoreLE<uint64_t>(a.data() + kFileShapeAt, info->header.shape[0] - 1);
    });
    file_edit("frame count off by one",
              [&](Bytes& a) { StoreLE<uint64_t>(a.data() + kFileFrameCountAt, count + 1); });
    file_edit("dtype changed", [&](Bytes& a) { a[8] ^= 3; });
    if (sample.fill) file_edit("fill flag cleared", [&](Bytes& a) { a[kFlagsAt] = 0; });
    file_edit("bound value changed",
              [&](Bytes& a) { StoreLE<double>(a.data() + kFileBoundValueAt, 0.02); });
    file_edit("absolute bound changed",
              [&](Bytes& a) { StoreLE<double>(a.data() + kFileAbsBoundAt, 0.02); });

    const uint64_t index = IndexOffset(archive);
    auto index_edit = [&](const std::string& what, const std::function<void(Bytes&)>& edit) {
      Bytes a = archive;
      edit(a);
      FixIndexCrc(a);
      ExpectDataLoss(a, sample.gap_array, what);
    };
    index_edit("index entries swapped", [&](Bytes& a) {
      std::swap_ranges(a.begin() + index + 16, a.begin() + index + 32, a.begin() + index + 32);
    });
    index_edit("frame size grown by 8", [&](Bytes& a) {
      StoreLE<uint64_t>(a.data() + index + 24, info->frames[0].size + 8);
    });
    index_edit("frame offset moved by 8", [&](Bytes& a) {
      StoreLE<uint64_t>(a.data() + index + 32, info->frames[1].offset + 8);
    });
    index_edit("frame sizes traded", [&](Bytes& a) {
      StoreLE<uint64_t>(a.data() + index + 24, info->frames[0].size + 8);
      StoreLE<uint64_t>(a.data() + index + 32, info->frames[1].offset + 8);
      StoreLE<uint64_t>(a.data() + index + 40, info->frames[1].size - 8);
    });
    {
      // An index that tiles the archive but lists one frame fewer.
      Bytes a(archive.begin(), archive.begin() + info->frames.back().offset);
      std::vector<format::FrameIndexEntry> entries(info->frames.begin(), info->frames.end() - 1);
      format::AppendFrameIndex(entries, &a);
      format::AppendTrailer(info->frames.back().offset, &a);
      ExpectDataLoss(a, sample.gap_array, "last frame dropped");
    }
    for (int64_t delta : {-16, -8, 8, 16}) {
      Bytes a = archive;
      StoreLE<uint64_t>(a.data() + a.size() - 16, index + delta);
      FixTrailerCrc(a);
      ExpectDataLoss(a, sample.gap_array, absl::StrCat("trailer's index offset moved by ", delta));
    }
    Bytes a = archive;
    StoreLE<uint64_t>(a.data() + a.size() - 16, ~uint64_t{0});
    FixTrailerCrc(a);
    ExpectDataLoss(a, sample.gap_array, "trailer's index offset 2^64-1");
  }
}

// ---------------------------------------------------------------------------
// Version 2 (FORMAT.md §15), edited below the checksums: the bitstream's
// tokens, the symbols of the positions, the outliers and the fill mask are
// decoded here, edited, and coded again, so that an edit can break exactly
// one rule of the format while everything else stays consistent. The
// decoding and coding are written here from the text (canonical codes of
// §5.2, tokens of §15.4 and §15.4.1, the split of runs and the run-value
// tokens of §15.8, the gap array of
// §5.4, the symbol order of §15.5.3), and Version2ReencodingIsFaithful
// checks that re-coding an intact frame gives back its exact bytes, so an
// edit's rejection is the edit's doing and not the helpers'.

// One token (§15.4, §15.4.1): a symbol's codeword and then `extra_bits`
// bits of `extra`; it covers `positions` positions (a run token 2^c + e, a
// run-value token 2^c + e zeros and then one position of symbol `value`).
constexpr uint32_t kNoValue = 0xFFFFFFFFu;
struct Token {
  uint32_t symbol = 0;
  int extra_bits = 0;
  uint32_t extra = 0;
  uint32_t positions = 1;
  uint32_t value = kNoValue;  // a run-value token's last symbol, radius + v
};
using ChunkTokens = std::vector<Token>;

// Whether `s` is a token that stands for a run (lossless 1 or 2).
bool IsRunSymbol(const format::FrameHeader& h, uint32_t s) {
  return (h.lossless == format::kLosslessZeroRuns || h.lossless == format::kLosslessRunValues) &&
         s >= 2 * h.radius;
}

// The residuals v_j a run-value token ends with (§15.4.1).
constexpr int kRunValueResiduals[4] = {-2, -1, +1, +2};

// A run token of class c (1..12): 2·radius + c − 1. A run-value token of
// class c (0..12) and residual v_j: 2·radius + 12 + 4·c + j.
uint32_t RunSymbol(const format::FrameHeader& h, int c) { return 2 * h.radius + c - 1; }
uint32_t RunValueSymbol(const format::FrameHeader& h, int c, int j) {
  return 2 * h.radius + 12 + 4 * c + j;
}
bool IsRunValueSymbol(const format::FrameHeader& h, uint32_t s) {
  return h.lossless == format::kLosslessRunValues && s >= 2 * h.radius + 12;
}

std::vector<uint8_t> CodeLengthsOf(const FrameParts& f) {
  const format::FrameHeader& h = f.header;
  auto lengths =
      ParseCodeLengths(f.sections[format::kCodeLengths], h.alphabet(), h.max_code_length);
  EXPECT_TRUE(lengths.ok()) << lengths.status();
  return lengths.ok() ? *lengths : std::vector<uint8_t>{};
}

// Every chunk's tokens, read bit by bit.
std::vector<ChunkTokens> DecodeTokens(const FrameParts& f) {
  const format::FrameHeader& h = f.header;
  const std::vector<uint8_t> lengths = CodeLengthsOf(f);
  const std::vector<uint32_t> codes = CanonicalCodes(lengths);
  std::map<std::pair<int, uint32_t>, uint32_t> symbol_of;
  for (uint32_t s = 0; s < lengths.size(); ++s) {
    if (lengths[s] != 0) symbol_of[{lengths[s], codes[s]}] = s;
  }
  const Bytes& index = f.sections[format::kChunkIndex];
  const Bytes& stream = f.sections[format::kBitstream];
  auto bit = [&](uint64_t k) -> uint32_t {
    return (At<uint32_t>(stream, k / 32) >> (31 - k % 32)) & 1;
  };
  const uint64_t chunks = h.num_chunks();
  std::vector<ChunkTokens> out(chunks);
  uint64_t word = 0;
  for (uint64_t c = 0; c < chunks; ++c) {
    const uint32_t bits = At<uint32_t>(index, 2 * h.num_groups() + c);
    uint64_t pos = 32 * word;
    const uint64_t end = pos + bits;
    while (pos < end) {
      Token t;
      uint32_t code = 0;
      int length = 0;
      for (;;) {
        code = code << 1 | bit(pos++);
        auto it = symbol_of.find({++length, code});
        if (it != symbol_of.end()) {
          t.symbol = it->second;
          break;
        }
        if (length > format::kMaxCodeLength) {
          ADD_FAILURE() << "no codeword at bit " << pos << " of chunk " << c;
          return out;
        }
      }
      if (IsRunValueSymbol(h, t.symbol)) {
        const uint32_t u = t.symbol - 2 * h.radius - 12;
        t.extra_bits = static_cast<int>(u / 4);
        for (int i = 0; i < t.extra_bits; ++i) t.extra = t.extra << 1 | bit(pos++);
        t.value = h.radius + kRunValueResiduals[u % 4];
        t.positions = (1u << t.extra_bits) + t.extra + 1;
      } else if (IsRunSymbol(h, t.symbol)) {
        t.extra_bits = static_cast<int>(t.symbol - 2 * h.radius) + 1;
        for (int i = 0; i < t.extra_bits; ++i) t.extra = t.extra << 1 | bit(pos++);
        t.positions = (1u << t.extra_bits) + t.extra;
      }
      out[c].push_back(t);
    }
    EXPECT_EQ(pos, end) << "chunk " << c;
    word += (bits + 31) / 32;
  }
  return out;
}

// The symbol of every position: run tokens stand for runs of `radius`,
// run-value tokens for such a run and then their value.
std::vector<uint32_t> Expand(const format::FrameHeader& h, const std::vector<ChunkTokens>& chunks) {
  std::vector<uint32_t> symbols;
  for (const ChunkTokens& chunk : chunks) {
    for (const Token& t : chunk) {
      if (t.value != kNoValue) {
        symbols.insert(symbols.end(), t.positions - 1, h.radius);
        symbols.push_back(t.value);
      } else {
        symbols.insert(symbols.end(), t.positions, IsRunSymbol(h, t.symbol) ? h.radius : t.symbol);
      }
    }
  }
  return symbols;
}

// How many run-value tokens the chunks hold.
uint64_t RunValueTokens(const std::vector<ChunkTokens>& chunks) {
  uint64_t count = 0;
  for (const ChunkTokens& chunk : chunks) {
    for (const Token& t : chunk) count += t.value != kNoValue;
  }
  return count;
}

// §15.8's tokens of the positions [begin, end) of one chunk.
void AppendTokens(const format::FrameHeader& h, const std::vector<uint32_t>& symbols,
                  uint64_t begin, uint64_t end, ChunkTokens* out) {
  const bool runs =
      h.lossless == format::kLosslessZeroRuns || h.lossless == format::kLosslessRunValues;
  const bool values = h.lossless == format::kLosslessRunValues;
  for (uint64_t i = begin; i < end;) {
    if (!runs || symbols[i] != h.radius) {
      out->push_back({symbols[i], 0, 0, 1});
      ++i;
      continue;
    }
    uint64_t k = 0;
    while (i + k < end && symbols[i + k] == h.radius) ++k;
    i += k;
    while (k >= 8192) {
      out->push_back({RunSymbol(h, 12), 12, 4095, 8191});
      k -= 8191;
    }
    int c = 0;  // ⌊log2 k⌋, 1 ≤ k ≤ 8191
    while ((k >> (c + 1)) != 0) ++c;
    const uint32_t e = static_cast<uint32_t>(k - (uint64_t{1} << c));
    int j = -1;  // the residual after the run, in this chunk, among v_0..v_3
    if (values && i < end) {
      for (int v = 0; v < 4; ++v) {
        if (static_cast<int64_t>(symbols[i]) == int64_t{h.radius} + kRunValueResiduals[v]) j = v;
      }
    }
    if (j >= 0) {
      out->push_back({RunValueSymbol(h, c, j), c, e, static_cast<uint32_t>(k) + 1, symbols[i]});
      ++i;
    } else if (k >= 2) {
      out->push_back({RunSymbol(h, c), c, e, static_cast<uint32_t>(k)});
    } else {
      out->push_back({h.radius, 0, 0, 1});
    }
  }
}

// The tokens of `symbols` in chunks that end at `ends` (each chunk's end
// position; by default every chunk_symbols positions).
std::vector<ChunkTokens> Tokenize(const format::FrameHeader& h,
                                  const std::vector<uint32_t>& symbols,
                                  std::vector<uint64_t> ends = {}) {
  if (ends.empty()) {
    for (uint64_t e = h.chunk_symbols; e < symbols.size(); e += h.chunk_symbols) ends.push_back(e);
    ends.push_back(symbols.size());
  }
  std::vector<ChunkTokens> chunks(ends.size());
  uint64_t begin = 0;
  for (size_t c = 0; c < ends.size(); ++c) {
    AppendTokens(h, symbols, begin, ends[c], &chunks[c]);
    begin = ends[c];
  }
  return chunks;
}

struct EncodeOptions {
  bool rebuild_code = true;  // code lengths from the tokens' histogram (§10.4)
  int64_t trim_chunk = -1;   // this chunk's recorded length is cut by trim_bits
  uint32_t trim_bits = 0;
};

// Writes the tokens as frame f's code lengths (rebuilt, or the frame's),
// bitstream, chunk index and gap array (when the frame has one), and S.
void EncodeTokens(FrameParts& f, const std::vector<ChunkTokens>& chunks,
                  const EncodeOptions& options = {}) {
  format::FrameHeader& h = f.header;
  std::vector<uint8_t> lengths;
  if (options.rebuild_code) {
    std::vector<uint32_t> histogram(h.alphabet(), 0);
    for (const ChunkTokens& chunk : chunks) {
      for (const Token& t : chunk) ++histogram[t.symbol];
    }
    lengths = BuildCodeLengths(histogram, h.max_code_length);
    f.sections[format::kCodeLengths].clear();
    AppendCodeLengths(lengths, &f.sections[format::kCodeLengths]);
  } else {
    lengths = CodeLengthsOf(f);
  }
  const std::vector<uint32_t> codes = CanonicalCodes(lengths);
  Bytes& stream = f.sections[format::kBitstream];
  Bytes& gaps = f.sections[format::kGapArray];
  stream.clear();
  gaps.clear();
  std::vector<uint32_t> chunk_bits;
  uint64_t positions = 0;
  for (size_t c = 0; c < chunks.size(); ++c) {
    std::vector<uint8_t> bits;
    std::vector<uint64_t> starts;
    auto put = [&](uint32_t value, int count) {
      for (int i = count - 1; i >= 0; --i) bits.push_back((value >> i) & 1);
    };
    for (const Token& t : chunks[c]) {
      starts.push_back(bits.size());
      EXPECT_NE(lengths[t.symbol], 0) << "symbol " << t.symbol << " has no codeword";
      put(codes[t.symbol], lengths[t.symbol]);
      put(t.extra, t.extra_bits);
      positions += t.positions;
    }
    uint64_t length = bits.size();
    if (static_cast<int64_t>(c) == options.trim_chunk) length -= options.trim_bits;
    chunk_bits.push_back(static_cast<uint32_t>(length));
    bits.resize((length + 31) / 32 * 32, 0);  // bits past `length` stay: unchecked padding
    for (size_t w = 0; w < bits.size() / 32; ++w) {
      uint32_t word = 0;
      for (int i = 0; i < 32; ++i) word = word << 1 | bits[32 * w + i];
      stream.resize(stream.size() + 4);
      StoreLE<uint32_t>(stream.data() + stream.size() - 4, word);
    }
    if (h.has_gap_array) {
      const uint64_t sub = h.subsequence_bits;
      for (uint64_t j = 0; j * sub < length; ++j) {
        uint64_t p = length;
        for (uint64_t s : starts) {
          if (s >= j * sub) {
            p = std::min(s, length);
            break;
          }
        }
        gaps.push_back(static_cast<uint8_t>(p - j * sub));
      }
    }
  }
  f.sections[format::kChunkIndex].clear();
  AppendChunkIndex(ChunkLayout::FromBits(chunk_bits, h.subsequence_bits), h.chunk_group,
                   &f.sections[format::kChunkIndex]);
  h.positions = static_cast<uint32_t>(positions);
}

void EncodeSymbols(FrameParts& f, const std::vector<uint32_t>& symbols) {
  format::FrameHeader h = f.header;
  h.positions = static_cast<uint32_t>(symbols.size());
  EncodeTokens(f, Tokenize(h, symbols));
}

// The outlier section as (element, residual) pairs, and back.
std::vector<std::pair<uint32_t, int32_t>> Outliers(const FrameParts& f) {
  const Bytes& o = f.sections[format::kOutliers];
  const uint64_t n = f.header.outlier_count;
  std::vector<std::pair<uint32_t, int32_t>> out;
  for (uint64_t k = 0; k < n; ++k) {
    out.push_back({At<uint32_t>(o, k), static_cast<int32_t>(At<uint32_t>(o, n + k))});
  }
  return out;
}
void SetOutliers(FrameParts& f, std::vector<std::pair<uint32_t, int32_t>> outliers) {
  std::sort(outliers.begin(), outliers.end());
  const uint64_t n = outliers.size();
  Bytes& o = f.sections[format::kOutliers];
  o.assign(8 * n, 0);
  for (uint64_t k = 0; k < n; ++k) {
    Put<uint32_t>(o, k, outliers[k].first);
    Put<uint32_t>(o, n + k, static_cast<uint32_t>(outliers[k].second));
  }
  f.header.outlier_count = n;
}

// Which elements of frame f are fill (1), from what the intact sample
// decodes to: fill elements decode to the fill value, bit for bit, and no
// other element of the samples does.
std::vector<uint8_t> FrameMask(const Sample& sample, const format::FrameHeader& h) {
  const uint64_t n = h.num_elements();
  const size_t size = DTypeSize(h.dtype);
  const uint64_t first = h.first_row * (n / h.shape[0]);
  std::vector<uint8_t> mask(n, 0);
  if (!h.fill_value) return mask;
  Bytes fill(size);
  if (h.dtype == DType::kFloat32) {
    StoreLE<float>(fill.data(), static_cast<float>(*h.fill_value));
  } else {
    StoreLE<double>(fill.data(), *h.fill_value);
  }
  for (uint64_t i = 0; i < n; ++i) {
    mask[i] = std::memcmp(sample.decoded.data() + (first + i) * size, fill.data(), size) == 0;
  }
  return mask;
}

uint64_t MaskRow(const format::FrameHeader& h) {
  return h.ndim == 1 ? h.num_elements() : h.num_elements() / h.shape[0];
}

// Replaces frame f's fill mask with `mask` (n' elements, n' may be wrong).
void SetMask(FrameParts& f, const std::vector<uint8_t>& mask) {
  const EncodedFillMask encoded = EncodeFillMask(mask, MaskRow(f.header));
  f.sections[format::kFillRuns] = encoded.section;
  f.header.fill_run_count = encoded.tokens;
}

// The element of every symbol position of an interpolation frame, in symbol
// order (§15.3, §15.5.3), and which positions are anchors.
struct Positions {
  std::vector<uint32_t> element;
  std::vector<uint8_t> anchor;
};

Positions InterpPositions(const format::FrameHeader& h, const std::vector<uint8_t>& mask) {
  const int nd = h.ndim;
  uint64_t tile = 1;
  for (int d = 0; d < nd; ++d) tile = std::max<uint64_t>(tile, h.block[d]);
  std::vector<bool> interp(nd);
  std::vector<uint64_t> stride(nd, 1), tiles(nd);
  for (int d = nd - 1; d >= 0; --d) {
    interp[d] = h.block[d] == tile;
    if (d + 1 < nd) stride[d] = stride[d + 1] * h.shape[d + 1];
    tiles[d] = interp[d] ? (h.shape[d] + tile - 1) / tile : h.shape[d];
  }
  Positions out;
  std::vector<uint64_t> k(nd, 0);
  for (;;) {
    std::vector<uint64_t> lo(nd), extent(nd);
    uint64_t anchor = 0;
    for (int d = 0; d < nd; ++d) {
      lo[d] = interp[d] ? k[d] * tile : k[d];
      extent[d] = interp[d] ? std::min(tile, h.shape[d] - lo[d]) : 1;
      anchor += lo[d] * stride[d];
    }
    out.element.push_back(static_cast<uint32_t>(anchor));
    out.anchor.push_back(1);
    for (uint64_t step = tile / 2; step >= 1; step /= 2) {
      for (int d = 0; d < nd; ++d) {
        if (!interp[d]) continue;
        std::vector<uint64_t> o(nd, 0);  // the tile's elements in C order
        for (;;) {
          bool in_pass = true;
          uint64_t i = 0;
          for (int e = 0; e < nd; ++e) {
            const uint64_t p = lo[e] + o[e];
            i += p * stride[e];
            if (!interp[e]) continue;
            if (e == d) {
              in_pass &= p % (2 * step) == step;
            } else {
              in_pass &= p % (e < d ? step : 2 * step) == 0;
            }
          }
          if (in_pass && (mask.empty() || !mask[i])) {
            out.element.push_back(static_cast<uint32_t>(i));
            out.anchor.push_back(0);
          }
          int e = nd - 1;
          while (e >= 0 && ++o[e] == extent[e]) o[e--] = 0;
          if (e < 0) break;
        }
      }
    }
    int d = nd - 1;
    while (d >= 0 && ++k[d] == tiles[d]) k[d--] = 0;
    if (d < 0) break;
  }
  return out;
}

// Version-2 edits see the sample (its mask and decoded values).
struct Version2Corruption {
  std::string name;
  std::function<bool(ArchiveParts&, size_t f, const Sample&)> edit;
  // When not empty, the chunk-parallel decoder's message must contain it:
  // the edit breaks this rule and no other.
  std::string message = "";
};

// A non-anchor position whose element has no outlier entry, or -1.
int64_t NonAnchorPosition(const Positions& pos, const std::vector<uint32_t>& symbols,
                          uint32_t radius) {
  for (size_t p = pos.element.size() / 2; p < pos.element.size(); ++p) {
    if (!pos.anchor[p] && symbols[p] != 0 && symbols[p] != radius) return static_cast<int64_t>(p);
  }
  return -1;
}

// The symbols with every non-zero symbol moved from `from` to `to` as the
// radius (the residual stays).
std::vector<uint32_t> Recentre(const std::vector<uint32_t>& symbols, uint32_t from, uint32_t to) {
  std::vector<uint32_t> out(symbols);
  for (uint32_t& s : out) {
    if (s != 0) s = s - from + to;
  }
  return out;
}

// Frame f with radius `radius`: the same residuals, every chunk coded
// again over the new alphabet.
void SetRadius(FrameParts& f, uint32_t radius) {
  const std::vector<uint32_t> symbols = Expand(f.header, DecodeTokens(f));
  const uint32_t old = f.header.radius;
  f.header.radius = radius;
  EncodeSymbols(f, Recentre(symbols, old, radius));
}

std::vector<Version2Corruption> Version2Corruptions() {
  using format::kFillRuns;
  auto hdr = [](ArchiveParts& p, size_t f) -> format::FrameHeader& { return p.frames[f].header; };
  auto v2 = [](ArchiveParts& p, size_t f) { return p.frames[f].header.version >= 2; };
  auto interp = [](ArchiveParts& p, size_t f) {
    return p.frames[f].header.predictor == format::kPredictorInterp;
  };
  // Run tokens of either stage (lossless 1 or 2), and each stage alone.
  auto runs = [](ArchiveParts& p, size_t f) {
    return p.frames[f].header.lossless == format::kLosslessZeroRuns ||
           p.frames[f].header.lossless == format::kLosslessRunValues;
  };
  auto zero_runs = [](ArchiveParts& p, size_t f) {
    return p.frames[f].header.lossless == format::kLosslessZeroRuns;
  };
  // A frame whose tokens include run-value tokens (not merely allowed).
  auto run_values = [](ArchiveParts& p, size_t f) {
    return p.frames[f].header.lossless == format::kLosslessRunValues &&
           RunValueTokens(DecodeTokens(p.frames[f])) > 0;
  };
  auto masked = [](ArchiveParts& p, size_t f) {
    return p.frames[f].header.fill_coding == format::kFillCodingMask;
  };
  std::vector<Version2Corruption> c;
  auto header_edit = [&](std::string name, std::function<bool(format::FrameHeader&)> fn,
                         std::string message = "") {
    c.push_back(
        {std::move(name),
         [=](ArchiveParts& p, size_t f, const Sample&) { return v2(p, f) && fn(hdr(p, f)); },
         std::move(message)});
  };

  // §15.2's ids and their consistency.
  header_edit(
      "predictor 2", [](format::FrameHeader& h) { return h.predictor = 2, true; },
      "unknown predictor");
  header_edit(
      "predictor 255", [](format::FrameHeader& h) { return h.predictor = 255, true; },
      "unknown predictor");
  header_edit(
      "lossless 3", [](format::FrameHeader& h) { return h.lossless = 3, true; },
      "unknown predictor, lossless");
  header_edit(
      "lossless 255", [](format::FrameHeader& h) { return h.lossless = 255, true; },
      "unknown predictor, lossless");
  // Lossless 2 on a frame coded for 0 or 1: its code lengths describe
  // 2·radius or 2·radius + 12 symbols, not 2·radius + 64.
  header_edit(
      "lossless 2 on a frame coded without run-value tokens",
      [](format::FrameHeader& h) {
        if (h.lossless == format::kLosslessRunValues) return false;
        h.lossless = format::kLosslessRunValues;
        return true;
      },
      "code length");
  header_edit(
      "fill coding 2", [](format::FrameHeader& h) { return h.fill_coding = 2, true; },
      "unknown predictor, lossless stage or fill coding");
  header_edit(
      "fill coding 1 on a Lorenzo frame",
      [](format::FrameHeader& h) {
        if (h.predictor != format::kPredictorLorenzo) return false;
        h.fill_coding = format::kFillCodingMask;
        return true;
      },
      "fill coding disagrees");
  header_edit(
      "fill coding 0 on an interpolation frame with a fill value",
      [](format::FrameHeader& h) {
        if (h.fill_coding != format::kFillCodingMask) return false;
        h.fill_coding = format::kFillCodingRuns;
        return true;
      },
      "fill coding disagrees");
  header_edit(
      "fill coding 1 on an interpolation frame without a fill value",
      [](format::FrameHeader& h) {
        if (h.predictor != format::kPredictorInterp || h.fill_value) return false;
        h.fill_coding = format::kFillCodingMask;
        return true;
      },
      "fill coding disagrees");
  // Order and tile (§15.2).
  for (uint8_t order : {0, 2, 4, 255}) {
    header_edit(
        absl::StrCat("interpolation order ", order),
        [order](format::FrameHeader& h) {
          if (h.predictor != format::kPredictorInterp) return false;
          h.order = order;
          return true;
        },
        "interpolation order");
  }
  for (uint8_t order : {1, 3}) {
    header_edit(
        absl::StrCat("order ", order, " on a Lorenzo frame"),
        [order](format::FrameHeader& h) {
          if (h.predictor != format::kPredictorLorenzo) return false;
          h.order = order;
          return true;
        },
        "interpolation order on a Lorenzo frame");
  }
  auto tile_of = [](const format::FrameHeader& h) {
    uint16_t t = 0;
    for (int d = 0; d < h.ndim; ++d) t = std::max(t, h.block[d]);
    return t;
  };
  header_edit(
      "tile not a power of two",
      [=](format::FrameHeader& h) {
        if (h.predictor != format::kPredictorInterp) return false;
        const uint16_t t = tile_of(h);
        for (int d = 0; d < h.ndim; ++d) {
          if (h.block[d] == t) h.block[d] = static_cast<uint16_t>(t - 1);
        }
        return true;
      },
      "not one power of two");
  header_edit(
      "tile 3 times a power of two",
      [=](format::FrameHeader& h) {
        if (h.predictor != format::kPredictorInterp) return false;
        const uint16_t t = tile_of(h);
        for (int d = 0; d < h.ndim; ++d) {
          if (h.block[d] == t) h.block[d] = static_cast<uint16_t>(3 * t / 2);
        }
        return true;
      },
      "not one power of two");
  header_edit(
      "two tile extents",
      [=](format::FrameHeader& h) {
        if (h.predictor != format::kPredictorInterp) return false;
        const uint16_t t = tile_of(h);
        int interpolated = 0;
        for (int d = 0; d < h.ndim; ++d) interpolated += h.block[d] == t;
        if (interpolated < 2) return false;
        for (int d = 0; d < h.ndim; ++d) {
          if (h.block[d] == t) {
            h.block[d] = static_cast<uint16_t>(t / 2);
            break;
          }
        }
        return true;
      },
      "not one power of two");
  header_edit(
      "no interpolated dimension",
      [](format::FrameHeader& h) {
        if (h.predictor != format::kPredictorInterp) return false;
        for (int d = 0; d < h.ndim; ++d) h.block[d] = 1;
        return true;
      },
      "no interpolated dimension");
  // Positions S (§15.2, §15.3).
  header_edit(
      "S = 0", [](format::FrameHeader& h) { return h.positions = 0, true; },
      "symbol position count");
  header_edit(
      "S = n + 1",
      [](format::FrameHeader& h) {
        h.positions = static_cast<uint32_t>(h.num_elements() + 1);
        return true;
      },
      "symbol position count");
  header_edit(
      "S = 0xFFFFFFFF", [](format::FrameHeader& h) { return h.positions = 0xFFFFFFFF, true; },
      "symbol position count");
  // A consistent stream of S ± 1 positions: with fill coding 0 the header
  // says S = n; with the mask, S disagrees with the mask (§15.7 step 1).
  for (int delta : {-1, +1}) {
    c.push_back({absl::StrCat("bitstream of S ", delta > 0 ? "+ 1" : "- 1", " positions"),
                 [=](ArchiveParts& p, size_t f, const Sample&) {
                   if (!v2(p, f)) return false;
                   std::vector<uint32_t> s = Expand(hdr(p, f), DecodeTokens(p.frames[f]));
                   if (delta > 0) {
                     s.push_back(hdr(p, f).radius + 1);
                   } else {
                     if (s.back() == 0) return false;
                     s.pop_back();
                   }
                   EncodeSymbols(p.frames[f], s);
                   return true;
                 },
                 "symbol position"});
  }
  // Zero-run tokens (§15.4) and the radius and code lengths they allow.
  for (uint32_t radius : {format::kMaxRadiusWithRuns + 1, format::kMaxRadius}) {
    c.push_back({absl::StrCat("radius ", radius, " with zero-run tokens"),
                 [=](ArchiveParts& p, size_t f, const Sample&) {
                   if (!zero_runs(p, f)) return false;
                   SetRadius(p.frames[f], radius);
                   return true;
                 },
                 "too large for zero-run tokens"});
  }
  header_edit(
      "maximum code length 21 with zero-run tokens",
      [](format::FrameHeader& h) {
        if (h.lossless != format::kLosslessZeroRuns) return false;
        h.max_code_length = 21;
        return true;
      },
      "too large for zero-run tokens");
  header_edit(
      "lossless 0 on a frame coded with run tokens",
      [](format::FrameHeader& h) {
        if (h.lossless != format::kLosslessZeroRuns) return false;
        h.lossless = format::kLosslessHuffman;
        return true;
      },
      "code length");
  // Run-value tokens (§15.4.1): radius ≤ 32736 and code lengths ≤ 20, and
  // a frame that uses them must say lossless 2. 32762 is lossless 1's
  // largest radius, too large here.
  for (uint32_t radius :
       {format::kMaxRadiusWithRunValues + 1, format::kMaxRadiusWithRuns, format::kMaxRadius}) {
    c.push_back({absl::StrCat("radius ", radius, " with run-value tokens"),
                 [=](ArchiveParts& p, size_t f, const Sample&) {
                   if (!run_values(p, f)) return false;
                   SetRadius(p.frames[f], radius);
                   return true;
                 },
                 "too large for run-value tokens"});
  }
  header_edit(
      "maximum code length 21 with run-value tokens",
      [](format::FrameHeader& h) {
        if (h.lossless != format::kLosslessRunValues) return false;
        h.max_code_length = 21;
        return true;
      },
      "too large for run-value tokens");
  for (uint8_t stage : {format::kLosslessZeroRuns, format::kLosslessHuffman}) {
    c.push_back({absl::StrCat("lossless ", stage, " on a frame coded with run-value tokens"),
                 [=](ArchiveParts& p, size_t f, const Sample&) {
                   if (!run_values(p, f)) return false;
                   hdr(p, f).lossless = stage;
                   return true;
                 },
                 "code length"});
    // The code cut to the stage's alphabet, so only the bitstream's
    // run-value tokens (codewords of no symbol now) are wrong.
    c.push_back(
        {absl::StrCat("lossless ", stage,
                      " and the run-value tokens' codes dropped (run-value tokens in a lossless-",
                      stage, " frame)"),
         [=](ArchiveParts& p, size_t f, const Sample&) {
           if (!run_values(p, f)) return false;
           std::vector<uint8_t> lengths = CodeLengthsOf(p.frames[f]);
           lengths.resize(2 * hdr(p, f).radius + (stage == format::kLosslessZeroRuns ? 12 : 0));
           if (std::all_of(lengths.begin(), lengths.end(), [](uint8_t l) { return l == 0; })) {
             return false;
           }
           hdr(p, f).lossless = stage;
           p.frames[f].sections[format::kCodeLengths].clear();
           AppendCodeLengths(lengths, &p.frames[f].sections[format::kCodeLengths]);
           return true;
         },
         "bitstream"});
  }
  // A run-value token whose value is the next chunk's first position: chunk
  // c - 1 ends with k zeros, chunk c starts with radius + 1, and chunk c - 1
  // takes that position into its last token (the total stays S).
  for (uint64_t k : {1, 3}) {
    c.push_back({absl::StrCat("run-value token of ", k, " zeros crossing a chunk's end"),
                 [=](ArchiveParts& p, size_t f, const Sample&) {
                   if (hdr(p, f).lossless != format::kLosslessRunValues) return false;
                   format::FrameHeader& h = hdr(p, f);
                   std::vector<uint32_t> s = Expand(h, DecodeTokens(p.frames[f]));
                   const uint64_t cs = h.chunk_symbols;
                   for (uint64_t b = cs; b + 2 < s.size(); b += cs) {
                     if (std::count(s.begin() + b - k - 1, s.begin() + b + 2, 0u) != 0) continue;
                     std::fill(s.begin() + b - k, s.begin() + b, h.radius);
                     s[b - k - 1] = h.radius + 3;  // the run is exactly k
                     s[b] = h.radius + 1;
                     std::vector<uint64_t> ends;
                     for (uint64_t e = cs; e < s.size(); e += cs) {
                       ends.push_back(e == b ? e + 1 : e);
                     }
                     ends.push_back(s.size());
                     const std::vector<ChunkTokens> chunks = Tokenize(h, s, ends);
                     const Token& last = chunks[b / cs - 1].back();
                     EXPECT_EQ(last.value, h.radius + 1);
                     EXPECT_EQ(last.positions, k + 1);
                     EncodeTokens(p.frames[f], chunks);
                     return true;
                   }
                   return false;
                 },
                 "bitstream"});
  }
  c.push_back(
      {"lossless 0 and the run tokens' codes dropped (run tokens in a lossless-0 frame)",
       [=](ArchiveParts& p, size_t f, const Sample&) {
         if (!zero_runs(p, f)) return false;
         std::vector<uint8_t> lengths = CodeLengthsOf(p.frames[f]);
         lengths.resize(2 * hdr(p, f).radius);
         if (std::all_of(lengths.begin(), lengths.end(), [](uint8_t l) { return l == 0; })) {
           return false;
         }
         hdr(p, f).lossless = format::kLosslessHuffman;
         p.frames[f].sections[format::kCodeLengths].clear();
         AppendCodeLengths(lengths, &p.frames[f].sections[format::kCodeLengths]);
         return true;
       },
       "bitstream"});
  // A run that crosses a chunk's end: chunk c - 1 takes two positions of
  // chunk c into its last run token (the total stays S).
  c.push_back({"run token crossing a chunk's end",
               [=](ArchiveParts& p, size_t f, const Sample&) {
                 if (!runs(p, f)) return false;
                 format::FrameHeader& h = hdr(p, f);
                 std::vector<uint32_t> s = Expand(h, DecodeTokens(p.frames[f]));
                 const uint64_t cs = h.chunk_symbols;
                 for (uint64_t b = cs; b + 2 < s.size(); b += cs) {
                   if (std::count(s.begin() + b - 2, s.begin() + b + 2, 0u) != 0) continue;
                   std::fill(s.begin() + b - 2, s.begin() + b + 2, h.radius);
                   std::vector<uint64_t> ends;
                   for (uint64_t e = cs; e < s.size(); e += cs) ends.push_back(e == b ? e + 2 : e);
                   ends.push_back(s.size());
                   EncodeTokens(p.frames[f], Tokenize(h, s, ends));
                   return true;
                 }
                 return false;
               },
               "bitstream"});
  // The last token of a chunk a run whose extra bits pass the chunk's end.
  for (bool all : {false, true}) {
    c.push_back({absl::StrCat("run token's extra bits past the chunk's end (",
                              all ? "all of them" : "one bit", ")"),
                 [=](ArchiveParts& p, size_t f, const Sample&) {
                   if (!runs(p, f)) return false;
                   format::FrameHeader& h = hdr(p, f);
                   std::vector<uint32_t> s = Expand(h, DecodeTokens(p.frames[f]));
                   const uint64_t end = std::min<uint64_t>(h.chunk_symbols, s.size());
                   if (end < 6 || std::count(s.begin() + end - 5, s.begin() + end, 0u) != 0) {
                     return false;
                   }
                   std::fill(s.begin() + end - 5, s.begin() + end, h.radius);
                   const std::vector<ChunkTokens> chunks = Tokenize(h, s);
                   const Token& last = chunks[0].back();
                   EXPECT_GE(last.extra_bits, 2);
                   EncodeTokens(p.frames[f], chunks,
                                {true, 0, all ? static_cast<uint32_t>(last.extra_bits) : 1u});
                   return true;
                 },
                 "bitstream"});
  }
  for (int delta : {-1, +1}) {
    c.push_back(
        {absl::StrCat("a run token ", delta > 0 ? "one position long" : "one position short"),
         [=](ArchiveParts& p, size_t f, const Sample&) {
           if (!runs(p, f)) return false;
           std::vector<ChunkTokens> chunks = DecodeTokens(p.frames[f]);
           for (ChunkTokens& chunk : chunks) {
             for (Token& t : chunk) {
               const uint32_t top = (1u << t.extra_bits) - 1;
               if (t.extra_bits == 0 || (delta > 0 ? t.extra == top : t.extra == 0)) continue;
               t.extra += delta;
               t.positions += delta;
               EncodeTokens(p.frames[f], chunks, {false});
               hdr(p, f).positions -= delta;  // S as it was
               return true;
             }
           }
           return false;
         },
         "bitstream"});
  }
  // Symbol 0 and outliers in an interpolation frame (§15.5.2, §15.7 step 1).
  c.push_back({"outlier at a non-anchor (symbol 0 and an outlier entry)",
               [=](ArchiveParts& p, size_t f, const Sample& sample) {
                 if (!interp(p, f)) return false;
                 FrameParts& fr = p.frames[f];
                 std::vector<uint32_t> s = Expand(fr.header, DecodeTokens(fr));
                 const Positions pos = InterpPositions(fr.header, FrameMask(sample, fr.header));
                 const int64_t q = NonAnchorPosition(pos, s, fr.header.radius);
                 if (q < 0) return false;
                 s[q] = 0;
                 auto outliers = Outliers(fr);
                 outliers.push_back({pos.element[q], 17});
                 SetOutliers(fr, outliers);
                 EncodeSymbols(fr, s);
                 return true;
               },
               // Which of the broken rules the decoder meets first (the
               // entry's place, or the count of symbol-0 anchors) is its own.
               "corrupt archive: interpolation: "});
  c.push_back({"symbol 0 at a non-anchor without an outlier entry",
               [=](ArchiveParts& p, size_t f, const Sample& sample) {
                 if (!interp(p, f)) return false;
                 FrameParts& fr = p.frames[f];
                 std::vector<uint32_t> s = Expand(fr.header, DecodeTokens(fr));
                 const Positions pos = InterpPositions(fr.header, FrameMask(sample, fr.header));
                 const int64_t q = NonAnchorPosition(pos, s, fr.header.radius);
                 if (q < 0) return false;
                 s[q] = 0;
                 EncodeSymbols(fr, s);
                 return true;
               },
               "not an anchor"});
  c.push_back({"outlier entry moved to an anchor whose symbol is not 0",
               [=](ArchiveParts& p, size_t f, const Sample& sample) {
                 if (!interp(p, f)) return false;
                 FrameParts& fr = p.frames[f];
                 const std::vector<uint32_t> s = Expand(fr.header, DecodeTokens(fr));
                 const Positions pos = InterpPositions(fr.header, FrameMask(sample, fr.header));
                 auto outliers = Outliers(fr);
                 if (outliers.empty()) return false;
                 for (size_t q = 0; q < pos.element.size(); ++q) {
                   if (!pos.anchor[q] || s[q] == 0) continue;
                   outliers[0].first = pos.element[q];
                   SetOutliers(fr, outliers);
                   return true;
                 }
                 return false;
               },
               "symbol is not 0"});
  // The fill mask (§15.6), fill coding 1.
  auto mask_edit = [&](std::string name, std::function<bool(Bytes&, format::FrameHeader&)> fn,
                       std::string message = "fill mask") {
    c.push_back({std::move(name),
                 [=](ArchiveParts& p, size_t f, const Sample&) {
                   return masked(p, f) && fn(p.frames[f].sections[kFillRuns], hdr(p, f));
                 },
                 std::move(message)});
  };
  mask_edit("mask class lengths over-subscribed (all 1)", [](Bytes& m, format::FrameHeader&) {
    std::fill(m.begin(), m.begin() + 13, 1);
    return true;
  });
  mask_edit("mask class length one shorter (Kraft)", [](Bytes& m, format::FrameHeader&) {
    int used = 0;
    for (int k = 0; k < 13; ++k) used += m[k] != 0;
    for (int k = 0; k < 13 && used >= 2; ++k) {
      if (m[k] >= 2) return --m[k], true;
    }
    return false;
  });
  mask_edit("mask class length 21", [](Bytes& m, format::FrameHeader&) {
    for (int k = 0; k < 13; ++k) {
      if (m[k] != 0) return m[k] = 21, true;
    }
    return false;
  });
  mask_edit("no mask class has a code", [](Bytes& m, format::FrameHeader&) {
    std::fill(m.begin(), m.begin() + 13, 0);
    return true;
  });
  for (int at : {13, 14, 15}) {
    mask_edit(absl::StrCat("mask reserved byte ", at, " set"),
              [at](Bytes& m, format::FrameHeader&) {
                m[at] = static_cast<uint8_t>(at);
                return true;
              });
  }
  auto mask_chunks = [](const format::FrameHeader& h) {
    return format::MaskChunks(h.fill_run_count);
  };
  for (int delta : {-1, +1, +32}) {
    mask_edit(absl::StrCat("first mask chunk's length ", delta > 0 ? "+" : "", delta, " bits"),
              [=](Bytes& m, format::FrameHeader&) {
                const uint32_t bits = LoadLE<uint32_t>(m.data() + 16);
                StoreLE<uint32_t>(m.data() + 16, bits + delta);
                return true;
              });
  }
  mask_edit("last mask chunk longer than the mask bitstream",
            [=](Bytes& m, format::FrameHeader& h) {
              uint8_t* last = m.data() + 16 + 4 * (mask_chunks(h) - 1);
              StoreLE<uint32_t>(last, LoadLE<uint32_t>(last) + 64);
              return true;
            });
  mask_edit("mask bitstream a word long", [](Bytes& m, format::FrameHeader&) {
    m.resize(m.size() + 4, 0);
    return true;
  });
  mask_edit(
      "mask bitstream a word short",
      [=](Bytes& m, format::FrameHeader& h) {
        if (m.size() < 16 + 4 * mask_chunks(h) + 4) return false;
        m.resize(m.size() - 4);
        return true;
      },
      "");
  mask_edit(
      "fill section only its fixed part",
      [=](Bytes& m, format::FrameHeader& h) {
        m.resize(16 + 4 * mask_chunks(h));
        return true;
      },
      "");
  mask_edit(
      "mask token count one more",
      [](Bytes&, format::FrameHeader& h) { return ++h.fill_run_count, true; }, "");
  mask_edit(
      "mask token count one fewer",
      [](Bytes&, format::FrameHeader& h) { return --h.fill_run_count, true; }, "");
  mask_edit(
      "mask token count 0",
      [](Bytes&, format::FrameHeader& h) { return h.fill_run_count = 0, true; },
      "fill mask section size");
  for (int delta : {-1, +1}) {
    c.push_back({absl::StrCat("mask runs summing to n ", delta > 0 ? "+ 1" : "- 1"),
                 [=](ArchiveParts& p, size_t f, const Sample& sample) {
                   if (!masked(p, f)) return false;
                   std::vector<uint8_t> m = FrameMask(sample, hdr(p, f));
                   if (delta > 0) {
                     m.push_back(0);
                   } else {
                     m.pop_back();
                   }
                   SetMask(p.frames[f], m);
                   return true;
                 },
                 "fill mask"});
  }
  // A valid mask that disagrees with S: one more, or one fewer, element
  // without a symbol.
  for (bool more_fill : {true, false}) {
    c.push_back(
        {absl::StrCat("mask with one ", more_fill ? "more" : "fewer", " fill element than S says"),
         [=](ArchiveParts& p, size_t f, const Sample& sample) {
           if (!masked(p, f)) return false;
           std::vector<uint8_t> m = FrameMask(sample, hdr(p, f));
           const Positions pos = InterpPositions(hdr(p, f), {});
           std::vector<uint8_t> is_anchor(m.size(), 0);
           for (size_t q = 0; q < pos.element.size(); ++q) {
             if (pos.anchor[q]) is_anchor[pos.element[q]] = 1;
           }
           for (size_t i = m.size() / 3; i < m.size(); ++i) {
             if (!is_anchor[i] && m[i] == (more_fill ? 0 : 1)) {
               m[i] ^= 1;
               SetMask(p.frames[f], m);
               return true;
             }
           }
           return false;
         },
         "symbol position"});
  }
  return c;
}

TEST(MalformedArchive, SemanticallyCorruptVersionTwoFramesAreDataLoss) {
  for (const Version2Corruption& corruption : Version2Corruptions()) {
    SCOPED_TRACE(corruption.name);
    int applied = 0;
    for (const Sample& sample : Samples()) {
      if (!sample.v2()) continue;
      const ArchiveParts intact = Split(sample.archive);
      for (size_t f = 0; f < intact.frames.size(); ++f) {
        ArchiveParts parts = intact;
        if (!corruption.edit(parts, f, sample)) continue;
        ++applied;
        const Bytes a = Join(std::move(parts));
        const std::string what = absl::StrCat(sample.name, ", frame ", f);
        ExpectDataLoss(a, sample.gap_array, what);
        if (!corruption.message.empty()) {
          auto out = Decompress(a, DecoderKind::kChunkParallel);
          EXPECT_NE(out.status().message().find(corruption.message), absl::string_view::npos)
              << what << ": expected \"" << corruption.message << "\", got " << out.status();
        }
      }
    }
    EXPECT_GT(applied, 0) << "no sample had anything to edit";
  }
}

// The helpers above give back an intact frame's exact bytes, and the edits
// that keep a frame valid decode to what the intact archive does: so the
// edits above are rejected for what they change, not for a helper's error.
TEST(MalformedArchive, Version2ReencodingIsFaithful) {
  for (const Sample& sample : Samples()) {
    if (!sample.v2()) continue;
    SCOPED_TRACE(sample.name);
    const ArchiveParts intact = Split(sample.archive);
    for (size_t f = 0; f < intact.frames.size(); ++f) {
      SCOPED_TRACE(absl::StrCat("frame ", f));
      const format::FrameHeader& h = intact.frames[f].header;
      const std::vector<ChunkTokens> tokens = DecodeTokens(intact.frames[f]);
      const std::vector<uint32_t> symbols = Expand(h, tokens);
      ASSERT_EQ(symbols.size(), h.positions);
      {
        ArchiveParts p = intact;
        EncodeTokens(p.frames[f], tokens);
        EXPECT_TRUE(Join(p) == sample.archive) << "tokens coded again";
      }
      {
        // §15.8's split of runs is what the writer does.
        ArchiveParts p = intact;
        EncodeSymbols(p.frames[f], symbols);
        EXPECT_TRUE(Join(p) == sample.archive) << "symbols tokenized and coded again";
      }
      if (h.fill_coding == format::kFillCodingMask) {
        ArchiveParts p = intact;
        SetMask(p.frames[f], FrameMask(sample, h));
        EXPECT_TRUE(Join(p) == sample.archive) << "mask coded again";
      }
      if (h.predictor == format::kPredictorInterp) {
        // The symbol order: S positions; symbol 0 exactly at the outliers,
        // which are anchors.
        const Positions pos = InterpPositions(h, FrameMask(sample, h));
        ASSERT_EQ(pos.element.size(), h.positions);
        std::set<uint32_t> zeros;
        for (size_t q = 0; q < symbols.size(); ++q) {
          if (symbols[q] == 0) {
            zeros.insert(pos.element[q]);
            EXPECT_TRUE(pos.anchor[q]) << "symbol 0 at position " << q;
          }
        }
        std::set<uint32_t> listed;
        for (const auto& [index, residual] : Outliers(intact.frames[f])) listed.insert(index);
        EXPECT_EQ(zeros, listed);
      }
      if (h.lossless == format::kLosslessZeroRuns) {
        // The largest radius zero-run tokens allow: valid, same values.
        ArchiveParts p = intact;
        SetRadius(p.frames[f], format::kMaxRadiusWithRuns);
        auto out = Decompress(Join(p), DecoderKind::kChunkParallel);
        ASSERT_TRUE(out.ok()) << "radius 32762: " << out.status();
        EXPECT_TRUE(out->data == sample.decoded) << "radius 32762";
      } else if (h.lossless == format::kLosslessHuffman) {
        // Zero-run tokens allowed but none used: valid, same values.
        ArchiveParts p = intact;
        p.frames[f].header.lossless = format::kLosslessZeroRuns;
        EncodeTokens(p.frames[f], tokens);
        auto out = Decompress(Join(p), DecoderKind::kChunkParallel);
        ASSERT_TRUE(out.ok()) << "lossless 1 without run tokens: " << out.status();
        EXPECT_TRUE(out->data == sample.decoded) << "lossless 1 without run tokens";
      } else {
        // The largest radius run-value tokens allow: valid, same values,
        // by every decoder.
        ArchiveParts p = intact;
        SetRadius(p.frames[f], format::kMaxRadiusWithRunValues);
        EXPECT_EQ(RunValueTokens(DecodeTokens(p.frames[f])), RunValueTokens(tokens));
        const Bytes a = Join(p);
        for (DecoderKind kind : kDecoders) {
          if (kind == DecoderKind::kGapArray && !h.has_gap_array) continue;
          auto out = Decompress(a, kind);
          ASSERT_TRUE(out.ok()) << "radius 32736, " << DecoderKindName(kind) << ": "
                                << out.status();
          EXPECT_TRUE(out->data == sample.decoded) << "radius 32736, " << DecoderKindName(kind);
        }
      }
      if (h.lossless != format::kLosslessRunValues) {
        // Run-value tokens allowed but none used (the tokens of lossless 0
        // or 1 mean the same in lossless 2): valid, same values.
        ArchiveParts p = intact;
        p.frames[f].header.lossless = format::kLosslessRunValues;
        EncodeTokens(p.frames[f], tokens);
        auto out = Decompress(Join(p), DecoderKind::kChunkParallel);
        ASSERT_TRUE(out.ok()) << "lossless 2 without run-value tokens: " << out.status();
        EXPECT_TRUE(out->data == sample.decoded) << "lossless 2 without run-value tokens";
      }
    }
  }
}

// The run-value samples use run-value tokens, not merely allow them, of
// several classes and values; and the zero-run samples' tokens are only
// those of §15.4.
TEST(MalformedArchive, RunValueSamplesHoldRunValueTokens) {
  int samples = 0;
  for (const Sample& sample : Samples()) {
    if (!sample.runs()) continue;
    SCOPED_TRACE(sample.name);
    const ArchiveParts parts = Split(sample.archive);
    uint64_t tokens = 0;
    std::set<uint32_t> kinds;  // (class, j) as 4c + j
    for (const FrameParts& f : parts.frames) {
      ASSERT_EQ(f.header.lossless, sample.lossless());
      const std::vector<ChunkTokens> chunks = DecodeTokens(f);
      tokens += RunValueTokens(chunks);
      for (const ChunkTokens& chunk : chunks) {
        for (const Token& t : chunk) {
          if (t.value != kNoValue) kinds.insert(t.symbol - 2 * f.header.radius - 12);
        }
      }
    }
    if (sample.values()) {
      ++samples;
      EXPECT_GT(tokens, 0u) << "no run-value token in any frame";
      EXPECT_GE(kinds.size(), 2u) << "one kind of run-value token only";
    } else {
      EXPECT_EQ(tokens, 0u);
    }
  }
  EXPECT_GT(samples, 0);
}

// §15.2 and §15.8.1: S ≤ 8 · (bitstream bytes) · P, with P = 1 for lossless 0, 8191 for
// lossless 1 and 8192 for lossless 2, is checked from the frame header alone
// (so before any allocation), here on a 4-byte bitstream.
TEST(MalformedArchive, BitstreamTooShortForTheFrameIsDataLoss) {
  const Sample* sample = nullptr;
  for (const Sample& s : Samples()) {
    if (s.values() && !s.interp() && s.spec.shape.size() == 1 && s.metadata.empty()) sample = &s;
  }
  ASSERT_NE(sample, nullptr);
  const ArchiveParts intact = Split(sample->archive);
  for (uint8_t stage :
       {format::kLosslessHuffman, format::kLosslessZeroRuns, format::kLosslessRunValues}) {
    const uint64_t per_bit = stage == format::kLosslessRunValues  ? 8192
                             : stage == format::kLosslessZeroRuns ? 8191
                                                                  : 1;
    for (uint64_t n : {8 * 4 * per_bit, 8 * 4 * per_bit + 1}) {
      const bool too_short = n > 8 * 4 * per_bit;
      const std::string what = absl::StrCat("lossless ", stage, ", S = n = ", n);
      SCOPED_TRACE(what);
      // One frame of n elements (fill coding 0, so S = n) whose sections
      // have the sizes n asks for, and a bitstream of one word.
      ArchiveParts p;
      p.file_header = intact.file_header;
      StoreLE<uint64_t>(p.file_header.data() + kFileShapeAt, n);
      StoreLE<uint64_t>(p.file_header.data() + kFileFrameRowsAt, n);
      StoreLE<uint64_t>(p.file_header.data() + kFileFrameCountAt, 1);
      FixFileHeaderCrc(p.file_header);
      FrameParts& f = p.frames.emplace_back(intact.frames[0]);
      format::FrameHeader& h = f.header;
      h.lossless = stage;
      h.shape[0] = n;
      h.first_row = 0;
      h.positions = static_cast<uint32_t>(n);
      h.has_gap_array = false;
      f.sections[format::kGapArray].clear();
      std::vector<uint32_t> chunk_bits = {32};  // then empty chunks
      chunk_bits.resize(h.num_chunks(), 0);
      f.sections[format::kChunkIndex].clear();
      AppendChunkIndex(ChunkLayout::FromBits(chunk_bits, h.subsequence_bits), h.chunk_group,
                       &f.sections[format::kChunkIndex]);
      f.sections[format::kBitstream].assign(4, 0);
      std::vector<uint8_t> lengths(h.alphabet(), 0);
      lengths[h.radius] = lengths[h.radius + 1] = 1;
      f.sections[format::kCodeLengths].clear();
      AppendCodeLengths(lengths, &f.sections[format::kCodeLengths]);
      const Bytes a = Join(std::move(p));
      // The header alone.
      const uint64_t frame0 = format::kFileHeaderSize;
      auto parsed = format::ParseFrameHeader(absl::MakeConstSpan(a).subspan(frame0));
      auto info = ReadArchiveInfo(a);
      if (too_short) {
        EXPECT_EQ(parsed.status().code(), StatusCode::kDataLoss);
        EXPECT_NE(parsed.status().message().find("bitstream too short for the frame"),
                  absl::string_view::npos)
            << parsed.status();
        EXPECT_EQ(info.status().code(), StatusCode::kDataLoss);
        EXPECT_NE(info.status().message().find("bitstream too short"), absl::string_view::npos)
            << info.status();
      } else {
        EXPECT_TRUE(parsed.ok()) << parsed.status();
        EXPECT_TRUE(info.ok()) << info.status();
      }
      // Either way the frame cannot decode: one word holds at most 32 tokens.
      ExpectDataLoss(a, false, what);
    }
  }
}

// ---------------------------------------------------------------------------
// The metadata block (§15.1).

Bytes MetadataBlock(absl::string_view document) {
  Bytes block;
  format::AppendMetadataBlock(document, &block);
  return block;
}

// The archive with `block` after its file header, which declares
// `metadata_bytes`; the frames, index and trailer move to follow it.
Bytes WithMetadataBlock(const Bytes& archive, const Bytes& block, uint32_t metadata_bytes) {
  ArchiveParts parts = Split(archive);
  Bytes& head = parts.file_header;
  head.resize(format::kFileHeaderSize);
  StoreLE<uint32_t>(head.data() + kFileReservedAt, metadata_bytes);
  FixFileHeaderCrc(head);
  head.insert(head.end(), block.begin(), block.end());
  return Join(std::move(parts));
}

TEST(MalformedArchive, MetadataBlocksThatAreValidDecode) {
  for (const Sample& sample : Samples()) {
    if (!sample.v2()) continue;
    SCOPED_TRACE(sample.name);
    for (const char* document : {"{}", " {\"a\": 1}\n", "\t\r\n{ }\r\n", "{\"x\": \"\xC3\xA9\"}"}) {
      const Bytes block = MetadataBlock(document);
      const Bytes a = WithMetadataBlock(sample.archive, block, static_cast<uint32_t>(block.size()));
      auto info = ReadArchiveInfo(a);
      ASSERT_TRUE(info.ok()) << document << ": " << info.status();
      EXPECT_EQ(info->metadata, document);
      auto out = Decompress(a);
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_TRUE(out->data == sample.decoded);
    }
    // No metadata at all.
    const Bytes none = WithMetadataBlock(sample.archive, {}, 0);
    auto info = ReadArchiveInfo(none);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_TRUE(info->metadata.empty());
  }
}

TEST(MalformedArchive, CorruptMetadataBlockIsDataLoss) {
  int applied = 0;
  for (const Sample& sample : Samples()) {
    if (sample.metadata.empty()) continue;
    SCOPED_TRACE(sample.name);
    ++applied;
    auto expect = [&](const Bytes& a, const std::string& what, const std::string& message) {
      ExpectDataLoss(a, sample.gap_array, what);
      auto info = ReadArchiveInfo(a);
      EXPECT_EQ(info.status().code(), StatusCode::kDataLoss) << what;
      if (!message.empty()) {
        EXPECT_NE(info.status().message().find(message), absl::string_view::npos)
            << what << ": expected \"" << message << "\", got " << info.status();
      }
    };
    const Bytes& archive = sample.archive;
    const uint32_t mb = ReadArchiveInfo(archive)->header.metadata_bytes;
    ASSERT_EQ(mb, format::MetadataBlockBytes(sample.metadata.size()));
    // Edits in place, the CRC recomputed unless the CRC is the edit.
    auto in_place = [&](const std::string& what, const std::function<void(Bytes&)>& edit,
                        const std::string& message, bool fix_crc = true) {
      Bytes a = archive;
      edit(a);
      if (fix_crc) FixMetadataCrc(a);
      expect(a, what, message);
    };
    in_place(
        "metadata magic", [](Bytes& a) { a[kMetadataAt] ^= 0x01; }, "metadata magic");
    in_place(
        "metadata CRC off by one", [](Bytes& a) { ++a[kMetadataCrcAt]; }, "metadata checksum",
        false);
    in_place(
        "metadata document byte changed, CRC kept",
        [](Bytes& a) { a[kMetadataDocumentAt + 1] ^= 1; }, "metadata checksum", false);
    in_place(
        "metadata length + 8",
        [](Bytes& a) {
          StoreLE<uint32_t>(a.data() + kMetadataLengthAt,
                            LoadLE<uint32_t>(a.data() + kMetadataLengthAt) + 8);
        },
        "metadata length");
    in_place(
        "metadata length - 8",
        [](Bytes& a) {
          StoreLE<uint32_t>(a.data() + kMetadataLengthAt,
                            LoadLE<uint32_t>(a.data() + kMetadataLengthAt) - 8);
        },
        "metadata length");
    in_place(
        "metadata length - 1",
        [](Bytes& a) {
          StoreLE<uint32_t>(a.data() + kMetadataLengthAt,
                            LoadLE<uint32_t>(a.data() + kMetadataLengthAt) - 1);
        },
        "");
    in_place(
        "metadata length 0", [](Bytes& a) { StoreLE<uint32_t>(a.data() + kMetadataLengthAt, 0); },
        "metadata length");
    in_place(
        "metadata length 2^20 + 1",
        [](Bytes& a) { StoreLE<uint32_t>(a.data() + kMetadataLengthAt, (1u << 20) + 1); },
        "metadata length");
    in_place(
        "metadata length 0xFFFFFFFF",
        [](Bytes& a) { StoreLE<uint32_t>(a.data() + kMetadataLengthAt, 0xFFFFFFFFu); },
        "metadata length");
    if (12 + sample.metadata.size() < mb) {
      in_place(
          "metadata padding not zero", [&](Bytes& a) { a[kMetadataAt + mb - 1] = 0x20; },
          "non-zero padding");
    }
    // Documents that are not a JSON object (§15.1: the C++ reader checks
    // the first and last characters after JSON whitespace).
    for (const char* document : {"[1]", "{", "}", "\"{}\"", "x{}", "{}x", "\xEF\xBB\xBF{}", "   ",
                                 "\v{}", "{}\f", "null", "{}\0"}) {
      const std::string doc = std::string(document) == "{}\0" ? std::string("{}\0", 3) : document;
      const Bytes block = MetadataBlock(doc);
      expect(WithMetadataBlock(archive, block, static_cast<uint32_t>(block.size())),
             absl::StrCat("document \"", doc, "\""), "not a JSON object");
    }
    {
      // A length-0 document, laid out as the writer would.
      Bytes block(16, 0);
      StoreLE<uint32_t>(block.data(), format::kMetadataMagic);
      StoreLE<uint32_t>(block.data() + 8, Crc32c(block.data() + 4, 4));
      expect(WithMetadataBlock(archive, block, 16), "empty document", "metadata length");
    }
    // metadata_bytes (the file header's word at 12) against the block.
    const Bytes block(archive.begin() + kMetadataAt, archive.begin() + kMetadataAt + mb);
    {
      Bytes longer = block;
      longer.resize(longer.size() + 8, 0);
      expect(WithMetadataBlock(archive, longer, mb + 8), "metadata_bytes 8 more than the block",
             "metadata length");
    }
    {
      Bytes shorter(block.begin(), block.end() - 8);
      expect(WithMetadataBlock(archive, shorter, mb - 8), "metadata_bytes 8 less than the block",
             "");
    }
    {
      Bytes odd = block;
      odd.resize(odd.size() + 4, 0);
      expect(WithMetadataBlock(archive, odd, mb + 4), "metadata_bytes not a multiple of 8",
             "metadata block size");
    }
    expect(WithMetadataBlock(archive, Bytes(8, 0), 8), "metadata_bytes 8", "metadata block size");
    expect(WithMetadataBlock(archive, {},
                             static_cast<uint32_t>(format::MetadataBlockBytes(1u << 20) + 8)),
           "metadata_bytes above the largest block", "metadata block size");
    expect(
        WithMetadataBlock(archive, {}, static_cast<uint32_t>(format::MetadataBlockBytes(1u << 20))),
        "metadata_bytes past the archive's end", "");
    {
      // The header says none, the block is still there: frame 0 is not
      // where the index says.
      Bytes a = archive;
      StoreLE<uint32_t>(a.data() + kFileReservedAt, 0);
      FixFileHeaderCrc(a);
      expect(a, "metadata_bytes 0 with a block", "");
    }
    {
      // A version-1 file header has no metadata_bytes (reserved); the
      // frames, which say version 2 themselves, are not the point.
      Bytes a = archive;
      StoreLE<uint16_t>(a.data() + kVersionAt, format::kVersion1);
      FixFileHeaderCrc(a);
      expect(a, "metadata in a version-1 file header", "reserved");
    }
  }
  EXPECT_GT(applied, 0);
  // A version-1 archive given a valid block: still version 1, so reserved.
  const Sample& v1 = FirstSample(false);
  const Bytes block = MetadataBlock("{}");
  ExpectDataLoss(WithMetadataBlock(v1.archive, block, static_cast<uint32_t>(block.size())),
                 v1.gap_array, "metadata block in a version-1 archive");
}

// A file header whose frame count makes FrameIndexSize() wrap around 2^64:
// 16 + 16 * 2^60 == 16 (mod 2^64), so an empty index "fits".
TEST(MalformedArchive, FrameCountOverflowingTheIndexSizeIsDataLoss) {
  format::FileHeader h;
  h.dtype = DType::kFloat32;
  h.shape = {uint64_t{1} << 60};  // 2^62 bytes: a valid ArraySpec
  h.bound_mode = BoundMode::kAbs;
  h.bound_value = h.abs_bound = 0.01;
  h.frame_rows = 1;
  h.frame_count = uint64_t{1} << 60;
  Bytes a;
  format::AppendFileHeader(h, &a);
  format::AppendFrameIndex({}, &a);
  format::AppendTrailer(format::kFileHeaderSize, &a);
  auto info = ReadArchiveInfo(a);
  EXPECT_EQ(info.status().code(), StatusCode::kDataLoss)
      << "a " << a.size() << "-byte archive whose header declares 2^60 frames and whose index "
      << "lists none was accepted (" << (info.ok() ? info->frames.size() : 0)
      << " frames); Decompress would then allocate 2^62 bytes";
  // Only when it is rejected: otherwise Decompress asks for 4 EiB at once.
  if (!info.ok()) ExpectDataLoss(a, false, "2^60 frames, empty index");
}

// A 400-byte archive whose valid header, index and trailer declare a 2^62-byte
// array (larger than any address space, so no machine can grant it) around a
// frame that is nothing but zeros.
TEST(MalformedArchive, HugeDeclaredShapeIsDataLossNotAnAllocation) {
  const uint64_t rows = uint64_t{1} << 60;
  format::FileHeader h;
  h.dtype = DType::kFloat32;
  h.shape = {rows};
  h.bound_mode = BoundMode::kAbs;
  h.bound_value = h.abs_bound = 0.01;
  h.frame_rows = rows;
  h.frame_count = 1;
  Bytes a;
  format::AppendFileHeader(h, &a);
  a.resize(a.size() + format::kFrameHeaderSize, 0);
  format::AppendFrameIndex({{format::kFileHeaderSize, format::kFrameHeaderSize}}, &a);
  format::AppendTrailer(format::kFileHeaderSize + format::kFrameHeaderSize, &a);
  for (DecoderKind kind : kDecoders) {
    // The codec reports errors as statuses; an escaping std::bad_alloc is the
    // crash this test is about, caught so that the failure reads clearly.
    StatusCode code = StatusCode::kOk;
    bool threw = false;
    try {
      code = Decompress(a, kind).status().code();
    } catch (const std::bad_alloc&) {
      threw = true;
    }
    EXPECT_FALSE(threw) << "Decompress (" << DecoderKindName(kind) << ") of a " << a.size()
                        << "-byte archive threw std::bad_alloc: it allocates the declared "
                        << "2^62 bytes before validating any frame";
    if (!threw) {
      EXPECT_EQ(code, StatusCode::kDataLoss);
    }
  }
}

// Every byte of the first frame's header and sections (and of the file
// header) set to a few other values, with every checksum recomputed. Any
// status may come back, but nothing may crash, every success must have the
// declared size, and decoders that succeed must agree.
TEST(MalformedArchive, ChecksummedByteEditsNeverCrashAndDecodersAgree) {
  for (const Sample& sample : Samples()) {
    SCOPED_TRACE(sample.name);
    int failures = 0;
    auto check = [&](const Bytes& a, const std::string& what) {
      if (failures >= 10) return;
      auto info = ReadArchiveInfo(a);
      if (!info.ok()) {
        const StatusCode code = info.status().code();
        const bool ok = code == StatusCode::kDataLoss || code == StatusCode::kUnimplemented;
        EXPECT_TRUE(ok) << what << ": " << info.status();
        failures += !ok;
        return;
      }
      const uint64_t frame_bytes =
          info->spec().num_bytes() / info->header.shape[0] * info->FrameRows(0);
      // An edited shape can declare terabytes, which HugeDeclaredShape covers.
      if (frame_bytes > (uint64_t{64} << 20)) return;
      Bytes reference;
      for (DecoderKind kind : kDecoders) {
        Bytes out(frame_bytes);
        absl::Status s = DecompressFrame(*info, a, 0, kind, out.data());
        if (s.ok()) {
          if (reference.empty()) reference = out;
          if (out != reference) {
            ++failures;
            ADD_FAILURE() << what << ": " << DecoderKindName(kind) << " disagrees";
          }
        } else if (!IsRejection(s.code(), StatusCode::kDataLoss, kind, sample.gap_array) &&
                   s.code() != StatusCode::kUnimplemented) {
          ++failures;
          ADD_FAILURE() << what << ", " << DecoderKindName(kind) << ": " << s;
        }
      }
      // Small boxes of frame 0 by parts of it: they check only what they
      // read, so they may accept a frame the full decode rejects, but fail
      // only as it does, and equal its slice where it succeeds.
      std::vector<uint64_t> frame_shape = info->header.shape;
      frame_shape[0] = info->FrameRows(0);
      for (int corner = 0; corner < 3; ++corner) {
        Hyperslab box = WholeArray(frame_shape);
        for (size_t d = 0; d < frame_shape.size(); ++d) {
          box.count[d] = std::min<uint64_t>(frame_shape[d], 3);
          box.start[d] = (frame_shape[d] - box.count[d]) * corner / 2;
        }
        Bytes got(box.NumElements() * DTypeSize(info->spec().dtype));
        const absl::Status s = DecompressRegion(*info, a, box, DecoderKind::kAuto,
                                                absl::MakeSpan(got), nullptr, RegionFrames::kPart);
        if (s.ok() && !reference.empty()) {
          if (got != testing::SliceOf(reference, frame_shape, box, DTypeSize(info->spec().dtype))) {
            ++failures;
            ADD_FAILURE() << what << ": box " << box.ToString() << " differs from the frame's";
          }
        } else if (!s.ok() && !reference.empty()) {
          ++failures;
          ADD_FAILURE() << what << ": box " << box.ToString() << " of an accepted frame: " << s;
        } else if (!s.ok() && s.code() != StatusCode::kDataLoss &&
                   s.code() != StatusCode::kUnimplemented) {
          ++failures;
          ADD_FAILURE() << what << ": box " << box.ToString() << ": " << s;
        }
      }
    };
    const ArchiveParts intact = Split(sample.archive);
    for (int s = 0; s < format::kSectionCount; ++s) {
      for (size_t at = 0; at < intact.frames[0].sections[s].size(); ++at) {
        const uint8_t b = intact.frames[0].sections[s][at];
        for (uint8_t v : {static_cast<uint8_t>(b ^ 1), static_cast<uint8_t>(b ^ 0x80), uint8_t{0},
                          uint8_t{0xFF}}) {
          if (v == b) continue;
          Bytes a = sample.archive;
          MutateSection(&a, 0, s, [&](Bytes& section) { section[at] = v; });
          check(a, absl::StrCat(format::SectionName(s), " byte ", at, " set to ", v));
        }
      }
    }
    // The file header, the metadata block (version 2) and frame 0's header.
    const uint64_t frame0 = ReadArchiveInfo(sample.archive)->frames[0].offset;
    for (uint64_t at = 0; at < frame0 + kFrameCrcAt; ++at) {
      const uint8_t b = sample.archive[at];
      for (uint8_t v : {static_cast<uint8_t>(b ^ 1), static_cast<uint8_t>(b ^ 0x80), uint8_t{0},
                        uint8_t{0xFF}}) {
        if (v == b) continue;
        Bytes a = sample.archive;
        a[at] = v;
        if (at < kFileCrcAt) FixFileHeaderCrc(a);
        if (at >= kMetadataAt && at < frame0 && (at < kMetadataCrcAt || at >= kMetadataCrcAt + 4)) {
          FixMetadataCrc(a);
        }
        FixFrameHeaderCrc(a, frame0);
        check(a, absl::StrCat("header byte ", at, " set to ", v));
      }
    }
  }
}

TEST(MalformedArchive, RandomGarbageIsRejected) {
  std::mt19937_64 rng(0xEB21F);
  const Bytes& valid = Samples()[0].archive;
  const size_t sizes[] = {0,  1,   2,   3,   4,   7,   8,   15,  16,  17,   95,   96,
                          97, 111, 112, 127, 128, 351, 352, 353, 500, 1000, 4096, 65536};
  for (size_t size : sizes) {
    for (int flavour = 0; flavour < 4; ++flavour) {
      Bytes junk(size);
      for (uint8_t& b : junk) b = static_cast<uint8_t>(rng());
      std::string what;
      switch (flavour) {
        case 0:
          what = "noise";
          break;
        case 1:  // the right magic and version, then noise
          what = "magic and version, then noise";
          for (size_t i = 0; i < std::min<size_t>(size, 6); ++i) junk[i] = valid[i];
          break;
        case 2:  // a valid file header, then noise
          what = "file header, then noise";
          std::copy(valid.begin(), valid.begin() + std::min(size, format::kFileHeaderSize),
                    junk.begin());
          break;
        case 3:  // a valid file header and a valid trailer around noise
          what = "file header and trailer around noise";
          std::copy(valid.begin(), valid.begin() + std::min(size, format::kFileHeaderSize),
                    junk.begin());
          if (size >= format::kFileHeaderSize + format::kTrailerSize) {
            junk.resize(size - format::kTrailerSize);
            format::AppendTrailer(rng() % size, &junk);
          }
          break;
      }
      for (DecoderKind kind : kDecoders) {
        auto out = Decompress(junk, kind);
        EXPECT_EQ(out.status().code(), StatusCode::kDataLoss)
            << what << ", " << size << " bytes, " << DecoderKindName(kind) << ": " << out.status();
      }
    }
  }
  // A valid archive with a few random bytes replaced by different ones.
  for (const Sample& sample : Samples()) {
    for (int trial = 0; trial < 200; ++trial) {
      Bytes a = sample.archive;
      const int edits = 1 + static_cast<int>(rng() % 16);
      for (int e = 0; e < edits; ++e) a[rng() % a.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
      if (a == sample.archive) continue;
      for (DecoderKind kind : kDecoders) {
        auto out = Decompress(a, kind);
        const StatusCode code = out.status().code();
        EXPECT_TRUE(IsRejection(code, StatusCode::kDataLoss, kind, sample.gap_array) ||
                    code == StatusCode::kUnimplemented)
            << sample.name << ", trial " << trial << ", " << DecoderKindName(kind) << ": "
            << out.status();
      }
    }
  }
}

}  // namespace
}  // namespace ebzip
