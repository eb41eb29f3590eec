#include "codec/archive.h"

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "codec/byte_io.h"
#include "codec/cancel.h"
#include "codec/lorenzo.h"
#include "codec/parallel.h"
#include "codec/quantize_point.h"

namespace ebzip {
namespace {

absl::Status Corrupt(absl::string_view what) { return format::CorruptArchive(what); }

template <typename T>
ValueRange FiniteRangeT(const T* data, uint64_t n, std::optional<double> fill,
                        const std::atomic<bool>* cancel) {
  constexpr uint64_t kTask = 1 << 20;
  const bool has_fill = fill.has_value();
  const auto fill_bits = ToBits(static_cast<T>(fill.value_or(0)));
  std::mutex mu;
  ValueRange total;
  ParallelFor((n + kTask - 1) / kTask, [&](uint64_t t) {
    if (Cancelled(cancel)) return;
    ValueRange r{false, INFINITY, -INFINITY};
    const uint64_t end = std::min(n, (t + 1) * kTask);
    for (uint64_t i = t * kTask; i < end; ++i) {
      const T x = data[i];
      if (!std::isfinite(x) || (has_fill && ToBits(x) == fill_bits)) continue;
      r.any = true;
      r.min = std::min<double>(r.min, x);
      r.max = std::max<double>(r.max, x);
    }
    if (!r.any) return;
    std::lock_guard<std::mutex> lock(mu);
    total.min = total.any ? std::min(total.min, r.min) : r.min;
    total.max = total.any ? std::max(total.max, r.max) : r.max;
    total.any = true;
  });
  return total;
}

}  // namespace

absl::Status ValidateCompressOptions(const ArraySpec& spec, const CompressOptions& o) {
  if (auto s = ValidateArraySpec(spec); !s.ok()) return s;
  if (o.mode != BoundMode::kAbs && o.mode != BoundMode::kRel) {
    return absl::InvalidArgumentError("unknown error-bound mode");
  }
  if (!(std::isfinite(o.bound) && o.bound > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("error bound must be a positive finite number, got ", o.bound));
  }
  if (o.fill_value && !format::ValidFillValue(spec.dtype, *o.fill_value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("fill value must be finite and representable as ", DTypeName(spec.dtype)));
  }
  if (o.radius < 1 || o.radius > format::kMaxRadius) {
    return absl::InvalidArgumentError(
        absl::StrCat("radius must be in [1, ", format::kMaxRadius, "]"));
  }
  if (o.chunk_symbols < 1 || o.chunk_symbols > format::kMaxChunkSymbols) {
    return absl::InvalidArgumentError("chunk size out of range");
  }
  if (o.subsequence_bits < 32 || o.subsequence_bits % 32 != 0 ||
      o.subsequence_bits > format::kMaxSubsequenceBits) {
    return absl::InvalidArgumentError("subsequence size must be a multiple of 32 up to 65536");
  }
  if (o.chunk_group < 1 || o.chunk_group > 65536) {
    return absl::InvalidArgumentError("chunk group out of range");
  }
  if (o.frame_elements < 1) return absl::InvalidArgumentError("frame size must be positive");
  if (o.range) {
    if (o.mode != BoundMode::kRel) {
      return absl::InvalidArgumentError("a value range applies to a relative bound only");
    }
    if (o.range->any && !(std::isfinite(o.range->min) && std::isfinite(o.range->max) &&
                          o.range->min <= o.range->max)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a value range needs finite min <= max, got [", o.range->min, ", ", o.range->max, "]"));
    }
  }
  if (o.interp_order != 0 && o.interp_order != 1 && o.interp_order != 3) {
    return absl::InvalidArgumentError("interpolation order must be 1 (linear) or 3 (cubic)");
  }
  if (o.predictor == Predictor::kLorenzo && o.interp_order != 0) {
    return absl::InvalidArgumentError("an interpolation order needs the interpolation predictor");
  }
  if (o.metadata.size() > format::kMaxMetadataDocument) {
    return absl::InvalidArgumentError(
        absl::StrCat("metadata is ", o.metadata.size(), " bytes; the limit is ",
                     format::kMaxMetadataDocument));
  }
  if (!o.metadata.empty()) {
    const size_t first = o.metadata.find_first_not_of(" \t\r\n");
    const size_t last = o.metadata.find_last_not_of(" \t\r\n");
    if (first == std::string::npos || o.metadata[first] != '{' || o.metadata[last] != '}' ||
        first == last) {
      return absl::InvalidArgumentError("metadata must be a JSON object");
    }
  }
  if (!o.block.empty()) {
    if (o.block.size() != spec.shape.size()) {
      return absl::InvalidArgumentError("block rank must match the array's rank");
    }
    for (uint16_t b : o.block) {
      if (b == 0) return absl::InvalidArgumentError("block dimensions must be positive");
    }
  }
  return absl::OkStatus();
}

ValueRange FiniteRange(const ArraySpec& spec, absl::Span<const uint8_t> data,
                       std::optional<double> fill_value, const std::atomic<bool>* cancel) {
  const uint64_t n = spec.num_elements();
  if (spec.dtype == DType::kFloat32) {
    return FiniteRangeT(reinterpret_cast<const float*>(data.data()), n, fill_value, cancel);
  }
  return FiniteRangeT(reinterpret_cast<const double*>(data.data()), n, fill_value, cancel);
}

Narrowing NarrowingFor(const CompressOptions& options, DType dtype) {
  if (ArchiveVersion(options) == format::kVersion1) return Narrowing::kNone;
  return dtype == DType::kFloat32 ? Narrowing::kFloat32 : Narrowing::kFloat64;
}

ResolvedBound ResolveBound(const CompressOptions& options, DType dtype, const ValueRange& range) {
  return ResolveBoundFor(options.mode, options.bound, range.any, range.min, range.max,
                         NarrowingFor(options, dtype));
}

ValueRange RangeFor(const ArraySpec& spec, absl::Span<const uint8_t> data,
                    const CompressOptions& options, const std::atomic<bool>* cancel) {
  if (options.mode != BoundMode::kRel) return {};
  if (options.range) return *options.range;
  return FiniteRange(spec, data, options.fill_value, cancel);
}

uint16_t ArchiveVersion(const CompressOptions& o) {
  const bool v1 = o.predictor == Predictor::kLorenzo && o.lossless == Lossless::kHuffman &&
                  o.metadata.empty();
  return v1 ? format::kVersion1 : format::kVersion;
}

FrameParams ArchivePlan::ParamsForFrame(uint64_t index) const {
  FrameParams p = frame;
  p.first_row = index * header.frame_rows;
  p.shape[0] = std::min(header.frame_rows, header.shape[0] - p.first_row);
  return p;
}
uint64_t ArchivePlan::FrameDataOffset(uint64_t index) const {
  return index * header.frame_rows * row_bytes;
}
uint64_t ArchivePlan::FrameDataBytes(uint64_t index) const {
  return ParamsForFrame(index).shape[0] * row_bytes;
}

absl::StatusOr<ArchivePlan> PlanArchive(const ArraySpec& spec, const CompressOptions& options,
                                        const ResolvedBound& bound) {
  if (auto s = ValidateCompressOptions(spec, options); !s.ok()) return s;
  const int ndim = static_cast<int>(spec.shape.size());
  ArchivePlan plan;
  FrameParams& f = plan.frame;
  f.dtype = spec.dtype;
  f.shape = spec.shape;
  f.bound_mode = options.mode;
  f.bound_value = options.bound;
  f.abs_bound = bound.abs_bound;
  f.quant_step = bound.quant_step;
  f.fill_value = options.fill_value;
  f.block = DefaultBlock(ndim);
  for (size_t i = 0; i < options.block.size(); ++i) f.block[i] = options.block[i];
  f.radius = options.radius;
  f.chunk_symbols = options.chunk_symbols;
  f.subsequence_bits = options.subsequence_bits;
  f.chunk_group = options.chunk_group;
  f.gap_array = options.gap_array;
  f.version = ArchiveVersion(options);
  f.predictor = options.predictor;
  f.lossless = options.lossless;
  f.interp_order = options.interp_order;
  if (f.version >= 2) {
    const uint8_t stages = AllowedStages(f);
    if (stages >> format::kLosslessRunValues & 1) {
      f.radius = std::min(f.radius, format::kMaxRadiusWithRunValues);
    } else if (stages >> format::kLosslessZeroRuns & 1) {
      f.radius = std::min(f.radius, format::kMaxRadiusWithRuns);
    }
  } else {
    f.predictor = Predictor::kLorenzo;
    f.lossless = Lossless::kHuffman;
  }

  uint64_t row_elements = 1;
  for (int i = 1; i < ndim; ++i) row_elements *= spec.shape[i];
  const uint64_t b0 = f.block[0];
  if (row_elements > format::kMaxFrameElements / std::min(b0, spec.shape[0])) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shape ", ShapeToString(spec.shape), ": ", b0, " rows of ", row_elements,
        " elements exceed the frame limit of ", format::kMaxFrameElements, " elements"));
  }
  const uint64_t limit = std::min(options.frame_elements, format::kMaxFrameElements);
  uint64_t rows = std::max<uint64_t>(1, limit / row_elements) / b0 * b0;
  rows = std::min(std::max(rows, b0), spec.shape[0]);
  plan.row_bytes = row_elements * DTypeSize(spec.dtype);

  format::FileHeader& h = plan.header;
  h.version = f.version;
  plan.metadata = options.metadata;
  h.metadata_bytes = options.metadata.empty()
                         ? 0
                         : static_cast<uint32_t>(format::MetadataBlockBytes(options.metadata.size()));
  h.dtype = spec.dtype;
  h.shape = spec.shape;
  h.bound_mode = options.mode;
  h.bound_value = options.bound;
  h.abs_bound = bound.abs_bound;
  h.fill_value = options.fill_value;
  h.frame_rows = rows;
  h.frame_count = (spec.shape[0] + rows - 1) / rows;
  return plan;
}

std::vector<uint8_t> ArchiveWriter::Begin() {
  std::vector<uint8_t> bytes;
  format::AppendFileHeader(plan_.header, &bytes);
  if (!plan_.metadata.empty()) format::AppendMetadataBlock(plan_.metadata, &bytes);
  offset_ = bytes.size();
  entries_.clear();
  entries_.reserve(plan_.frame_count());
  return bytes;
}

void ArchiveWriter::AddFrame(uint64_t bytes) {
  entries_.push_back({offset_, bytes});
  offset_ += bytes;
}

std::vector<uint8_t> ArchiveWriter::Finish() const {
  std::vector<uint8_t> bytes;
  bytes.reserve(format::FrameIndexSize(entries_.size()) + format::kTrailerSize);
  Finish(&bytes);
  return bytes;
}

void ArchiveWriter::Finish(std::vector<uint8_t>* out) const {
  format::AppendFrameIndex(entries_, out);
  format::AppendTrailer(offset_, out);
}

absl::StatusOr<std::vector<uint8_t>> Compress(const ArraySpec& spec, absl::Span<const uint8_t> data,
                                              const CompressOptions& options,
                                              const std::atomic<bool>* cancel) {
  if (auto s = ValidateCompressOptions(spec, options); !s.ok()) return s;
  if (data.size() != spec.num_bytes()) {
    return absl::InvalidArgumentError(
        absl::StrCat("got ", data.size(), " bytes, but shape ", ShapeToString(spec.shape), " of ",
                     DTypeName(spec.dtype), " needs ", spec.num_bytes()));
  }
  constexpr absl::string_view kWhat = "compression";
  if (Cancelled(cancel)) return CancelledStatus(kWhat);
  const ValueRange range = RangeFor(spec, data, options, cancel);
  if (Cancelled(cancel)) return CancelledStatus(kWhat);
  auto plan = PlanArchive(spec, options, ResolveBound(options, spec.dtype, range));
  if (!plan.ok()) return plan.status();

  std::vector<std::vector<uint8_t>> frames(plan->frame_count());
  ParallelFor(frames.size(), [&](uint64_t i) {
    // A cancelled frame leaves its vector empty; the flag is checked after.
    EncodeFrame(plan->ParamsForFrame(i), data.data() + plan->FrameDataOffset(i), &frames[i], cancel)
        .IgnoreError();
  });
  if (Cancelled(cancel)) return CancelledStatus(kWhat);
  // One allocation of the exact size, and each frame freed once it is in:
  // the peak is the frames plus the archive, and no reallocation copies the
  // archive while it grows.
  ArchiveWriter writer(*plan);
  const std::vector<uint8_t> head = writer.Begin();
  uint64_t total = head.size() + format::FrameIndexSize(frames.size()) + format::kTrailerSize;
  for (const auto& f : frames) total += f.size();
  std::vector<uint8_t> out;
  out.reserve(total);
  out.insert(out.end(), head.begin(), head.end());
  for (auto& f : frames) {
    writer.AddFrame(f.size());
    out.insert(out.end(), f.begin(), f.end());
    std::vector<uint8_t>().swap(f);
  }
  writer.Finish(&out);
  return out;
}

uint64_t ArchiveInfo::FrameRows(uint64_t index) const {
  return std::min(header.frame_rows, header.shape[0] - index * header.frame_rows);
}

namespace {

// Frame `index`'s header, parsed from its first bytes, checked against the
// file header and the index.
absl::StatusOr<format::FrameHeader> CheckedFrameHeader(const ArchiveInfo& info,
                                                      absl::Span<const uint8_t> bytes,
                                                      uint64_t index) {
  return ParseFrameAt(info.header, index, bytes, info.frames[index].size);
}

// `bytes` read at `offset`, or a buffer of them.
absl::StatusOr<std::vector<uint8_t>> ReadVector(ArchiveReader read, uint64_t offset,
                                                uint64_t bytes) {
  std::vector<uint8_t> out(bytes);
  if (absl::Status s = read(offset, absl::MakeSpan(out)); !s.ok()) return s;
  return out;
}

}  // namespace

absl::StatusOr<format::FrameHeader> ParseFrameAt(const format::FileHeader& f, uint64_t index,
                                                 absl::Span<const uint8_t> bytes, uint64_t size) {
  if (index >= f.frame_count) {
    return Corrupt(absl::StrCat("frame ", index, " of an archive of ", f.frame_count, " frames"));
  }
  auto h = format::ParseFrameHeader(bytes);
  if (!h.ok()) return h.status();
  const uint64_t rows = std::min(f.frame_rows, f.shape[0] - index * f.frame_rows);
  bool same = h->frame_size() == size && h->dtype == f.dtype &&
              h->ndim == static_cast<int>(f.shape.size()) && h->shape[0] == rows &&
              h->first_row == index * f.frame_rows && h->bound_mode == f.bound_mode &&
              h->bound_value == f.bound_value && h->abs_bound == f.abs_bound &&
              h->fill_value.has_value() == f.fill_value.has_value() &&
              (!f.fill_value || ToBits(*h->fill_value) == ToBits(*f.fill_value));
  for (int i = 1; same && i < h->ndim; ++i) same = h->shape[i] == f.shape[i];
  if (!same) return Corrupt(absl::StrCat("frame ", index, " disagrees with the file header"));
  return h;
}

absl::StatusOr<format::FrameHeader> ReadFrameHeader(const ArchiveInfo& info,
                                                    absl::Span<const uint8_t> archive,
                                                    uint64_t index) {
  const format::FrameIndexEntry& e = info.frames[index];
  return CheckedFrameHeader(info, archive.subspan(e.offset, e.size), index);
}

absl::StatusOr<ArchiveInfo> ReadArchiveInfo(absl::Span<const uint8_t> archive) {
  return ReadArchiveInfoFrom(archive.size(), [archive](uint64_t offset, absl::Span<uint8_t> out) {
    if (offset > archive.size() || out.size() > archive.size() - offset) {
      return Corrupt("truncated archive");
    }
    if (!out.empty()) std::memcpy(out.data(), archive.data() + offset, out.size());
    return absl::OkStatus();
  });
}

absl::StatusOr<ArchiveInfo> ReadArchiveInfoFrom(uint64_t size, ArchiveReader read) {
  ArchiveInfo info;
  auto head = ReadVector(read, 0, std::min<uint64_t>(size, format::kFileHeaderSize));
  if (!head.ok()) return head.status();
  auto header = format::ParseFileHeader(*head);
  if (!header.ok()) return header.status();
  info.header = *header;
  const uint64_t tail_bytes = std::min<uint64_t>(size, format::kTrailerSize);
  auto tail = ReadVector(read, size - tail_bytes, tail_bytes);
  if (!tail.ok()) return tail.status();
  auto index_offset = format::ParseTrailer(*tail);
  if (!index_offset.ok()) return index_offset.status();
  // Each frame takes at least a frame header, which bounds the count before
  // any size is computed from it.
  if (info.header.frame_count > size / format::kFrameHeaderSize) {
    return Corrupt("more frames than the archive can hold");
  }
  const uint64_t first_frame = format::kFileHeaderSize + info.header.metadata_bytes;
  if (info.header.metadata_bytes != 0) {
    if (size < first_frame) return Corrupt("truncated metadata block");
    auto block = ReadVector(read, format::kFileHeaderSize, info.header.metadata_bytes);
    if (!block.ok()) return block.status();
    auto metadata = format::ParseMetadataBlock(*block, info.header.metadata_bytes);
    if (!metadata.ok()) return metadata.status();
    info.metadata = *std::move(metadata);
  }
  const uint64_t index_size = format::FrameIndexSize(info.header.frame_count);
  if (*index_offset < first_frame || *index_offset > size ||
      size - *index_offset != index_size + format::kTrailerSize) {
    return Corrupt("truncated or misplaced frame index");
  }
  auto index = ReadVector(read, *index_offset, index_size);
  if (!index.ok()) return index.status();
  auto frames = format::ParseFrameIndex(*index);
  if (!frames.ok()) return frames.status();
  info.frames = *std::move(frames);
  if (info.frames.size() != info.header.frame_count) {
    return Corrupt("frame index disagrees with the file header");
  }
  uint64_t expected = first_frame;
  for (const format::FrameIndexEntry& e : info.frames) {
    if (e.offset != expected || e.size < format::kFrameHeaderSize || e.size % 8 != 0 ||
        e.size > *index_offset - e.offset) {
      return Corrupt("frame index does not tile the archive");
    }
    expected += e.size;
  }
  if (expected != *index_offset) return Corrupt("frame index does not tile the archive");
  info.frame_headers.reserve(info.frames.size());
  std::vector<uint8_t> bytes(format::kFrameHeaderSize);
  for (uint64_t i = 0; i < info.frames.size(); ++i) {
    if (absl::Status s = read(info.frames[i].offset, absl::MakeSpan(bytes)); !s.ok()) return s;
    auto h = CheckedFrameHeader(info, bytes, i);
    if (!h.ok()) return h.status();
    info.frame_headers.push_back(*h);
  }
  return info;
}

absl::Status DecompressFrame(const ArchiveInfo& info, absl::Span<const uint8_t> archive,
                             uint64_t index, DecoderKind decoder, uint8_t* out,
                             const std::atomic<bool>* cancel) {
  const format::FrameIndexEntry& e = info.frames[index];
  return DecodeFrame(archive.subspan(e.offset, e.size), info.frame_headers[index], decoder, out,
                     cancel);
}

absl::Status DecompressInto(const ArchiveInfo& info, absl::Span<const uint8_t> archive,
                            absl::Span<uint8_t> out, DecoderKind decoder,
                            const std::atomic<bool>* cancel) {
  constexpr absl::string_view kWhat = "decompression";
  const ArraySpec spec = info.spec();
  if (out.size() != spec.num_bytes()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the output buffer holds ", out.size(), " bytes, but the archive's ",
                     DTypeName(spec.dtype), " ", ShapeToString(spec.shape), " array needs ",
                     spec.num_bytes()));
  }
  const uint64_t row_bytes = spec.num_bytes() / info.header.shape[0];
  std::mutex mu;
  absl::Status first_error;
  ParallelFor(info.frames.size(), [&](uint64_t i) {
    uint8_t* frame_out = out.data() + i * info.header.frame_rows * row_bytes;
    absl::Status s = DecompressFrame(info, archive, i, decoder, frame_out, cancel);
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      if (first_error.ok()) first_error = s;
    }
  });
  // Cancellation wins over whatever a frame reported: a frame stopped
  // midway may report CANCELLED or nothing at all.
  if (Cancelled(cancel)) return CancelledStatus(kWhat);
  return first_error;
}

absl::StatusOr<DecompressedArray> Decompress(absl::Span<const uint8_t> archive, DecoderKind decoder,
                                             const std::atomic<bool>* cancel) {
  constexpr absl::string_view kWhat = "decompression";
  if (Cancelled(cancel)) return CancelledStatus(kWhat);
  auto info = ReadArchiveInfo(archive);
  if (!info.ok()) return info.status();
  if (Cancelled(cancel)) return CancelledStatus(kWhat);
  DecompressedArray result;
  result.spec = info->spec();
  result.abs_bound = info->header.abs_bound;
  // A valid version-2 archive can describe some 2^19 times its size
  // (FORMAT.md §9): an output that cannot be had is an error, not a crash.
  try {
    result.data.resize(result.spec.num_bytes());
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "decompression: cannot allocate the ", result.spec.num_bytes(), "-byte array (",
        DTypeName(result.spec.dtype), " ", ShapeToString(result.spec.shape), ")"));
  } catch (const std::length_error&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "decompression: the ", result.spec.num_bytes(), "-byte array is too large to hold"));
  }
  if (auto s = DecompressInto(*info, archive, absl::MakeSpan(result.data), decoder, cancel);
      !s.ok()) {
    return s;
  }
  return result;
}

}  // namespace ebzip
