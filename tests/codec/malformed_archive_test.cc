// Malformed archives must be rejected with a clear status and never decoded
// into data, crash, hang or read out of bounds (DESIGN §3). The inputs are
// truncations, bit flips, wrong magics, versions and reserved fields, frames
// that are wrong only in meaning (every checksum recomputed, so only the
// validation logic can catch them) and random garbage.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <new>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "codec/archive.h"
#include "codec/byte_io.h"
#include "codec/crc32c.h"
#include "codec/format.h"
#include "codec/huffman_code.h"
#include "gtest/gtest.h"

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
  parts.file_header.assign(archive.begin(), archive.begin() + format::kFileHeaderSize);
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

// A small archive with several frames and every section non-empty.
struct Sample {
  std::string name;
  ArraySpec spec;
  bool gap_array = false;
  Bytes archive;
  Bytes decoded;  // what the intact archive decodes to
};

template <typename T>
Bytes ToBytes(const std::vector<double>& values) {
  std::vector<T> typed(values.begin(), values.end());
  const auto* p = reinterpret_cast<const uint8_t*>(typed.data());
  return Bytes(p, p + typed.size() * sizeof(T));
}

constexpr double kFill = -9999;

// A smooth field where every frame also holds spikes (outliers), NaN, Inf and
// a subnormal (verbatim values) and two runs of the fill value.
Sample MakeSample(std::string name, DType dtype, std::vector<uint64_t> shape, uint64_t frame_rows,
                  bool gap_array) {
  Sample sample{std::move(name), {dtype, std::move(shape)}, gap_array, {}, {}};
  const uint64_t n = sample.spec.num_elements();
  const uint64_t frame_elements = frame_rows * (n / sample.spec.shape[0]);
  std::vector<double> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = 10 * std::sin(0.05 * i) + 3 * std::cos(0.11 * i);
  for (uint64_t base = 0; base < n; base += frame_elements) {
    const uint64_t m = std::min(frame_elements, n - base);
    v[base + m / 5] = 500;
    v[base + 3 * m / 5] = -700;
    v[base + m / 3] = NAN;
    v[base + m / 2 + 1] = INFINITY;
    v[base + 7] = dtype == DType::kFloat32 ? 1e-40 : 1e-310;
    for (uint64_t k = 0; k < 5; ++k) v[base + m / 4 + k] = kFill;
    for (uint64_t k = 0; k < 4; ++k) v[base + 4 * m / 5 + k] = kFill;
  }
  const Bytes data = dtype == DType::kFloat32 ? ToBytes<float>(v) : ToBytes<double>(v);
  CompressOptions o;
  o.predictor = Predictor::kLorenzo;  // version 1, whose layout the edits below know
  o.lossless = Lossless::kHuffman;
  o.mode = BoundMode::kAbs;
  o.bound = 0.01;
  o.fill_value = kFill;
  o.frame_elements = frame_elements;
  o.radius = 64;
  o.chunk_symbols = dtype == DType::kFloat32 ? 64 : 128;
  o.subsequence_bits = 32;
  o.chunk_group = 4;
  o.gap_array = gap_array;
  auto archive = Compress(sample.spec, data, o);
  EXPECT_TRUE(archive.ok()) << archive.status();
  if (!archive.ok()) return sample;
  sample.archive = *std::move(archive);
  auto decoded = Decompress(sample.archive, DecoderKind::kChunkParallel);
  EXPECT_TRUE(decoded.ok()) << decoded.status();
  if (decoded.ok()) sample.decoded = std::move(decoded->data);
  return sample;
}

const std::vector<Sample>& Samples() {
  static const auto* samples = new std::vector<Sample>{
      MakeSample("f32 48x40, gap array", DType::kFloat32, {48, 40}, 16, true),
      MakeSample("f32 48x40, no gap array", DType::kFloat32, {48, 40}, 16, false),
      MakeSample("f64 3000, gap array", DType::kFloat64, {3000}, 1024, true),
      MakeSample("f64 3000, no gap array", DType::kFloat64, {3000}, 1024, false),
  };
  return *samples;
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
    bool padded = false;
    for (const format::FrameIndexEntry& e : info->frames) {
      auto h = format::ParseFrameHeader(absl::MakeConstSpan(sample.archive).subspan(e.offset));
      ASSERT_TRUE(h.ok()) << h.status();
      EXPECT_GE(h->outlier_count, 2u);
      EXPECT_GE(h->verbatim_count, 2u);
      EXPECT_GE(h->fill_run_count, 2u);
      EXPECT_GE(h->num_groups(), 2u);
      for (int s = 0; s < format::kSectionCount; ++s) {
        const bool expect_empty = s == format::kGapArray && !sample.gap_array;
        EXPECT_EQ(h->sections[s].length == 0, expect_empty) << format::SectionName(s);
        padded |= h->sections[s].length % format::kAlignment != 0;
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
  const Sample& sample = Samples()[0];
  for (size_t extra : {1, 7, 8, 16, 100}) {
    Bytes a = sample.archive;
    a.resize(a.size() + extra, 0);
    ExpectDataLoss(a, sample.gap_array, absl::StrCat(extra, " zero bytes appended"));
  }
}

// Flips bits everywhere: every bit of the headers, index and trailer, and one
// bit of every section and padding byte (a different bit from byte to byte).
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
                              region.name == "frame index" || region.name == "trailer";
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
        }
      }
    }
    EXPECT_EQ(covered, sample.archive.size());
    EXPECT_GT(padding_regions, 0);
  }
}

TEST(MalformedArchive, WrongMagicIsDataLoss) {
  const Sample& sample = Samples()[0];
  const uint64_t frame0 = format::kFileHeaderSize;
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
  const Sample& sample = Samples()[0];
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
    auto lengths = ParseCodeLengths(sec(p, f, kCodeLengths), 2 * h.radius, h.max_code_length);
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
                 Put<uint32_t>(sec(p, f, kOutliers), n - 1,
                               static_cast<uint32_t>(hdr(p, f).num_elements()));
                 return true;
               }});
  c.push_back({"outlier index 0xFFFFFFFF", [=](ArchiveParts& p, size_t f) {
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
                 o.erase(o.begin() + 4 * (2 * n - 1), o.end());        // the last value
                 o.erase(o.begin() + 4 * (n - 1), o.begin() + 4 * n);  // the last index
                 --hdr(p, f).outlier_count;
                 return true;
               }});
  c.push_back({"outlier count above the bitstream's zeros", [=](ArchiveParts& p, size_t f) {
                 Bytes& o = sec(p, f, kOutliers);
                 const uint64_t n = hdr(p, f).outlier_count;
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
                 Put<uint32_t>(sec(p, f, kVerbatim), hdr(p, f).verbatim_count - 1,
                               static_cast<uint32_t>(hdr(p, f).num_elements()));
                 return true;
               }});
  // Fill runs: (u32 start, u32 length) pairs.
  c.push_back({"fill runs overlap", [=](ArchiveParts& p, size_t f) {
                 Bytes& r = sec(p, f, kFillRuns);
                 if (hdr(p, f).fill_run_count < 2) return false;
                 Put<uint32_t>(r, 2, At<uint32_t>(r, 0) + At<uint32_t>(r, 1) - 1);
                 return true;
               }});
  c.push_back({"fill runs out of order", [=](ArchiveParts& p, size_t f) {
                 Bytes& r = sec(p, f, kFillRuns);
                 if (hdr(p, f).fill_run_count < 2) return false;
                 std::swap_ranges(r.begin(), r.begin() + 8, r.begin() + 8);
                 return true;
               }});
  c.push_back({"fill run past the end", [=](ArchiveParts& p, size_t f) {
                 Bytes& r = sec(p, f, kFillRuns);
                 const uint64_t last = hdr(p, f).fill_run_count - 1;
                 const uint64_t n = hdr(p, f).num_elements();
                 Put<uint32_t>(r, 2 * last,
                               static_cast<uint32_t>(n - At<uint32_t>(r, 2 * last + 1) + 1));
                 return true;
               }});
  c.push_back({"fill run starting at 0xFFFFFFFF", [=](ArchiveParts& p, size_t f) {
                 Bytes& r = sec(p, f, kFillRuns);
                 Put<uint32_t>(r, 2 * (hdr(p, f).fill_run_count - 1), 0xFFFFFFFFu);
                 return true;
               }});
  c.push_back({"fill run of length zero", [=](ArchiveParts& p, size_t f) {
                 Put<uint32_t>(sec(p, f, kFillRuns), 1, 0);
                 return true;
               }});
  c.push_back({"fill runs without a fill value", [=](ArchiveParts& p, size_t f) {
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
                 const uint32_t run = 2 * hdr(p, f).radius + 1;
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
                     ParseCodeLengths(sec(p, f, kCodeLengths), 2 * h.radius, h.max_code_length);
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
    file_edit("fill flag cleared", [&](Bytes& a) { a[kFlagsAt] = 0; });
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
    const uint64_t frame0 = format::kFileHeaderSize;
    for (uint64_t at = 0; at < frame0 + kFrameCrcAt; ++at) {
      const uint8_t b = sample.archive[at];
      for (uint8_t v : {static_cast<uint8_t>(b ^ 1), static_cast<uint8_t>(b ^ 0x80), uint8_t{0},
                        uint8_t{0xFF}}) {
        if (v == b) continue;
        Bytes a = sample.archive;
        a[at] = v;
        if (at < kFileCrcAt) FixFileHeaderCrc(a);
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
