#include "codec/frame_codec.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "codec/byte_io.h"
#include "codec/chunk_layout.h"
#include "codec/crc32c.h"
#include "codec/huffman_code.h"
#include "codec/huffman_encoder.h"
#include "codec/lorenzo.h"
#include "codec/parallel.h"
#include "codec/quantize_point.h"

namespace ebzip {
namespace {

using format::FrameHeader;

constexpr uint64_t kRange = 1 << 16;  // elements per parallel task

uint64_t NumRanges(uint64_t n) { return (n + kRange - 1) / kRange; }

struct FillRun {
  uint32_t start;
  uint32_t length;
};

// What the element-wise passes find, per range of kRange elements, so the
// ranges can run in parallel and still concatenate in index order.
template <typename T>
struct RangeFindings {
  std::vector<uint32_t> verbatim_index;
  std::vector<T> verbatim_value;
  std::vector<FillRun> fill_runs;
  int64_t quantized_sum = 0;  // exact, so the placeholder is order-independent
  uint64_t quantized_count = 0;
  std::vector<uint32_t> outlier_index;
  std::vector<int32_t> outlier_delta;
};

template <typename T>
QuantRule MakeRule(const FrameParams& p) {
  QuantRule rule{p.abs_bound, p.quant_step, p.fill_value.has_value(), 0};
  if (p.fill_value) rule.fill_bits = ToBits(static_cast<T>(*p.fill_value));
  return rule;
}

template <typename T>
void PutArray(ByteWriter& w, const std::vector<T>& v) {
  w.PutBytes({reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)});
}

template <typename T>
void EncodeFrameT(const FrameParams& p, const T* data, std::vector<uint8_t>* out) {
  uint64_t n = 1;
  for (uint64_t d : p.shape) n *= d;
  const QuantRule rule = MakeRule<T>(p);
  const uint64_t ranges = NumRanges(n);
  std::vector<RangeFindings<T>> found(ranges);

  // Dual quantization: every element independently.
  std::vector<int32_t> q(n);
  ParallelFor(ranges, [&](uint64_t r) {
    RangeFindings<T>& f = found[r];
    const uint64_t end = std::min(n, (r + 1) * kRange);
    for (uint64_t i = r * kRange; i < end; ++i) {
      switch (QuantizePoint(data[i], rule, &q[i])) {
        case PointKind::kQuantized:
          f.quantized_sum += q[i];
          ++f.quantized_count;
          break;
        case PointKind::kVerbatim:
          f.verbatim_index.push_back(static_cast<uint32_t>(i));
          f.verbatim_value.push_back(data[i]);
          break;
        case PointKind::kFill:
          if (!f.fill_runs.empty() && f.fill_runs.back().start + f.fill_runs.back().length == i) {
            ++f.fill_runs.back().length;
          } else {
            f.fill_runs.push_back({static_cast<uint32_t>(i), 1});
          }
          break;
      }
    }
  });

  // Fill and verbatim elements are overwritten by the decoder, so their q is
  // free: the frame's mean q keeps the predictor from seeing a cliff at every
  // coastline (0 would be one).
  int64_t sum = 0;
  uint64_t count = 0;
  for (const RangeFindings<T>& f : found) {
    sum += f.quantized_sum;
    count += f.quantized_count;
  }
  const int32_t placeholder = count ? static_cast<int32_t>(sum / static_cast<int64_t>(count)) : 0;
  ParallelFor(ranges, [&](uint64_t r) {
    for (uint32_t i : found[r].verbatim_index) q[i] = placeholder;
    for (const FillRun& run : found[r].fill_runs) {
      std::fill_n(q.begin() + run.start, run.length, placeholder);
    }
  });

  // Lorenzo residuals, then symbols; residuals outside the radius are outliers.
  const std::array<uint16_t, kMaxDims>& block = p.block;
  LorenzoForward(BlockGrid::Make(p.shape, {block.data(), p.shape.size()}), q.data());
  std::vector<uint16_t> symbols(n);
  const int64_t radius = p.radius;
  ParallelFor(ranges, [&](uint64_t r) {
    RangeFindings<T>& f = found[r];
    const uint64_t end = std::min(n, (r + 1) * kRange);
    for (uint64_t i = r * kRange; i < end; ++i) {
      const int64_t delta = q[i];
      if (delta > -radius && delta < radius) {
        symbols[i] = static_cast<uint16_t>(delta + radius);
      } else {
        symbols[i] = 0;
        f.outlier_index.push_back(static_cast<uint32_t>(i));
        f.outlier_delta.push_back(q[i]);
      }
    }
  });
  q = {};

  const uint32_t alphabet = 2 * p.radius;
  std::vector<uint8_t> lengths = BuildCodeLengths(Histogram(symbols, alphabet), p.max_code_length);
  std::vector<uint32_t> codes = CanonicalCodes(lengths);
  EncodedSymbols encoded =
      HuffmanEncode(symbols, lengths, codes, p.chunk_symbols, p.subsequence_bits, p.gap_array);

  RangeFindings<T> all;
  for (RangeFindings<T>& f : found) {
    auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
    append(all.verbatim_index, f.verbatim_index);
    append(all.verbatim_value, f.verbatim_value);
    append(all.outlier_index, f.outlier_index);
    append(all.outlier_delta, f.outlier_delta);
    for (const FillRun& run : f.fill_runs) {
      FillRun* last = all.fill_runs.empty() ? nullptr : &all.fill_runs.back();
      if (last && last->start + last->length == run.start) {
        last->length += run.length;
      } else {
        all.fill_runs.push_back(run);
      }
    }
  }

  // Sections in format order.
  std::array<std::vector<uint8_t>, format::kSectionCount> sec;
  AppendCodeLengths(lengths, &sec[format::kCodeLengths]);
  AppendChunkIndex(encoded.layout, p.chunk_group, &sec[format::kChunkIndex]);
  sec[format::kGapArray] = std::move(encoded.gaps);
  {
    ByteWriter w(&sec[format::kBitstream]);
    PutArray(w, encoded.words);
  }
  {
    ByteWriter w(&sec[format::kOutliers]);
    PutArray(w, all.outlier_index);
    PutArray(w, all.outlier_delta);
  }
  {
    ByteWriter w(&sec[format::kVerbatim]);
    PutArray(w, all.verbatim_index);
    w.Align(format::kAlignment);
    PutArray(w, all.verbatim_value);
  }
  {
    ByteWriter w(&sec[format::kFillRuns]);
    for (const FillRun& run : all.fill_runs) {
      w.Put<uint32_t>(run.start);
      w.Put<uint32_t>(run.length);
    }
  }

  FrameHeader h;
  h.dtype = p.dtype;
  h.ndim = static_cast<int>(p.shape.size());
  h.bound_mode = p.bound_mode;
  h.has_gap_array = p.gap_array;
  h.max_code_length = static_cast<uint8_t>(p.max_code_length);
  for (int i = 0; i < h.ndim; ++i) {
    h.shape[i] = p.shape[i];
    h.block[i] = p.block[i];
  }
  h.first_row = p.first_row;
  h.bound_value = p.bound_value;
  h.abs_bound = p.abs_bound;
  h.quant_step = p.quant_step;
  h.fill_value = p.fill_value;
  h.radius = p.radius;
  h.chunk_symbols = p.chunk_symbols;
  h.subsequence_bits = p.subsequence_bits;
  h.chunk_group = p.chunk_group;
  h.outlier_count = all.outlier_index.size();
  h.verbatim_count = all.verbatim_index.size();
  h.fill_run_count = all.fill_runs.size();
  for (int s = 0; s < format::kSectionCount; ++s) {
    h.sections[s].length = sec[s].size();
    h.sections[s].crc = Crc32c(sec[s].data(), sec[s].size());
  }
  out->reserve(out->size() + h.frame_size());
  format::AppendFrameHeader(h, out);
  ByteWriter w(out);
  for (const auto& bytes : sec) {
    w.PutBytes(bytes);
    w.Align(format::kAlignment);
  }
}

absl::Status Corrupt(absl::string_view what) { return format::CorruptArchive(what); }

template <typename T>
absl::Status DecodeFrameT(const FrameHeader& h,
                          const std::array<absl::Span<const uint8_t>, format::kSectionCount>& sec,
                          DecoderKind decoder, T* out) {
  const uint64_t n = h.num_elements();
  const uint32_t alphabet = 2 * h.radius;
  auto lengths = ParseCodeLengths(sec[format::kCodeLengths], alphabet, h.max_code_length);
  if (!lengths.ok()) return lengths.status();
  const auto& bitstream = sec[format::kBitstream];
  std::vector<uint32_t> words(bitstream.size() / 4);
  if (!bitstream.empty()) std::memcpy(words.data(), bitstream.data(), bitstream.size());
  auto layout =
      ParseChunkIndex(sec[format::kChunkIndex], h.num_chunks(), h.chunk_group, h.subsequence_bits,
                      uint64_t{h.chunk_symbols} * h.max_code_length, words.size());
  if (!layout.ok()) return layout.status();
  if (h.has_gap_array && sec[format::kGapArray].size() != layout->total_gap_entries) {
    return Corrupt("gap array size disagrees with chunk lengths");
  }

  std::vector<uint16_t> symbols(n);
  HuffmanTable table(*lengths);
  BitstreamView view{words, &*layout, sec[format::kGapArray], h.chunk_symbols, h.subsequence_bits};
  if (auto s = HuffmanDecode(decoder, table, view, absl::MakeSpan(symbols)); !s.ok()) return s;
  words = {};

  // Outliers: ascending indices, exactly the elements whose symbol is 0.
  const uint8_t* outliers = sec[format::kOutliers].data();
  const uint64_t outlier_count = h.outlier_count;
  std::vector<int32_t> q(n);
  std::atomic<uint64_t> zeros{0};
  const int32_t radius = static_cast<int32_t>(h.radius);
  ParallelFor(NumRanges(n), [&](uint64_t r) {
    const uint64_t end = std::min(n, (r + 1) * kRange);
    uint64_t z = 0;
    for (uint64_t i = r * kRange; i < end; ++i) {
      q[i] = static_cast<int32_t>(symbols[i]) - radius;
      z += symbols[i] == 0;
    }
    zeros += z;
  });
  if (zeros != outlier_count) return Corrupt("outlier count disagrees with the bitstream");
  for (uint64_t k = 0; k < outlier_count; ++k) {
    const uint32_t index = LoadLE<uint32_t>(outliers + 4 * k);
    if (index >= n || (k > 0 && index <= LoadLE<uint32_t>(outliers + 4 * (k - 1))) ||
        symbols[index] != 0) {
      return Corrupt("outlier index out of order or not an outlier symbol");
    }
    q[index] = LoadLE<int32_t>(outliers + 4 * outlier_count + 4 * k);
  }
  symbols = {};

  LorenzoInverse(BlockGrid::Make({h.shape.data(), static_cast<size_t>(h.ndim)},
                                 {h.block.data(), static_cast<size_t>(h.ndim)}),
                 q.data());
  const double step = h.quant_step;
  ParallelFor(NumRanges(n), [&](uint64_t r) {
    const uint64_t end = std::min(n, (r + 1) * kRange);
    for (uint64_t i = r * kRange; i < end; ++i) out[i] = Dequantize<T>(q[i], step);
  });

  // Fill runs, then verbatim values, overwrite what dequantization produced.
  const uint8_t* runs = sec[format::kFillRuns].data();
  uint64_t covered = 0;
  for (uint64_t k = 0; k < h.fill_run_count; ++k) {
    const uint64_t start = LoadLE<uint32_t>(runs + 8 * k);
    const uint64_t length = LoadLE<uint32_t>(runs + 8 * k + 4);
    if (length == 0 || start < covered || start + length > n) {
      return Corrupt("fill runs overlap or leave the frame");
    }
    std::fill_n(out + start, length, static_cast<T>(*h.fill_value));
    covered = start + length;
  }
  const uint8_t* verbatim = sec[format::kVerbatim].data();
  const uint64_t values_at = AlignUp(4 * h.verbatim_count, format::kAlignment);
  for (uint64_t k = 0; k < h.verbatim_count; ++k) {
    const uint32_t index = LoadLE<uint32_t>(verbatim + 4 * k);
    if (index >= n || (k > 0 && index <= LoadLE<uint32_t>(verbatim + 4 * (k - 1)))) {
      return Corrupt("verbatim index out of order");
    }
    out[index] = LoadLE<T>(verbatim + values_at + sizeof(T) * k);
  }
  return absl::OkStatus();
}

}  // namespace

void EncodeFrame(const FrameParams& params, const uint8_t* data, std::vector<uint8_t>* out) {
  if (params.dtype == DType::kFloat32) {
    EncodeFrameT(params, reinterpret_cast<const float*>(data), out);
  } else {
    EncodeFrameT(params, reinterpret_cast<const double*>(data), out);
  }
}

absl::Status DecodeFrame(absl::Span<const uint8_t> frame, const FrameHeader& h, DecoderKind decoder,
                         uint8_t* out) {
  if (frame.size() < h.frame_size()) return Corrupt("truncated frame");
  std::array<absl::Span<const uint8_t>, format::kSectionCount> sec;
  uint64_t offset = format::kFrameHeaderSize;
  for (int s = 0; s < format::kSectionCount; ++s) {
    const uint64_t length = h.sections[s].length;
    sec[s] = frame.subspan(offset, length);
    if (Crc32c(sec[s].data(), length) != h.sections[s].crc) {
      return Corrupt(absl::StrCat(format::SectionName(s), " checksum mismatch"));
    }
    const uint64_t padded = AlignUp(length, format::kAlignment);
    for (uint64_t i = length; i < padded; ++i) {
      if (frame[offset + i] != 0) return Corrupt("non-zero padding");
    }
    offset += padded;
  }
  if (h.dtype == DType::kFloat32) {
    return DecodeFrameT(h, sec, decoder, reinterpret_cast<float*>(out));
  }
  return DecodeFrameT(h, sec, decoder, reinterpret_cast<double*>(out));
}

}  // namespace ebzip
