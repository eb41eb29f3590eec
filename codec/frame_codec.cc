#include "codec/frame_codec.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "codec/byte_io.h"
#include "codec/cancel.h"
#include "codec/chunk_layout.h"
#include "codec/crc32c.h"
#include "codec/entropy_coder.h"
#include "codec/fill_mask.h"
#include "codec/frame_content.h"
#include "codec/huffman_code.h"
#include "codec/interp_predictor.h"
#include "codec/lorenzo_frame.h"
#include "codec/predictor_choice.h"
#include "codec/special_sections.h"

namespace ebzip {
namespace {

using format::FrameHeader;

constexpr absl::string_view kEncoding = "frame encoding";
constexpr absl::string_view kDecoding = "frame decoding";

// Frees a vector's storage (assigning {} would keep it).
template <typename V>
void Release(V& v) {
  V().swap(v);
}

absl::Status Corrupt(absl::string_view what) { return format::CorruptArchive(what); }

// The entropy stage the frame uses: the one p.lossless names, or with kAuto
// the smallest (FORMAT.md §15.9).
StageCode ChooseStage(const FrameParams& p, absl::Span<const uint16_t> symbols) {
  return SmallerCode(symbols, p.radius, p.chunk_symbols, p.max_code_length, AllowedStages(p));
}

// Codes the content and writes the frame in place: every section's size is
// known before any is written, so none is built apart and copied.
absl::Status WriteFrame(const FrameParams& p, FrameContent& content, const uint8_t* data,
                        std::vector<uint8_t>* out, const std::atomic<bool>* cancel) {
  StageCode code = ChooseStage(p, content.symbols());
  EncodedSymbols encoded = EncodeWith(code, content.symbols(), p.chunk_symbols,
                                      p.subsequence_bits, p.gap_array, cancel);
  const uint32_t positions = static_cast<uint32_t>(content.symbols().size());
  content.ReleaseSymbols();
  Release(code.lengths);
  if (Cancelled(cancel)) return CancelledStatus(kEncoding);

  FrameHeader h = FrameHeaderFor(p);
  const PredictorConfig& config = content.config();
  h.predictor = config.predictor;
  h.order = config.order;
  h.block = config.block;
  h.lossless = code.runs.stage();
  h.fill_coding = content.fill_coding();
  h.positions = positions;
  h.outlier_count = content.outlier_count();
  h.verbatim_count = content.verbatim_count();
  h.fill_run_count = content.fill_run_count();
  h.sections[format::kCodeLengths].length = code.length_bytes.size();
  h.sections[format::kChunkIndex].length = format::ChunkIndexBytes(h);
  h.sections[format::kGapArray].length = encoded.gaps.size();
  h.sections[format::kBitstream].length = encoded.words.size() * sizeof(uint32_t);
  h.sections[format::kOutliers].length = format::OutlierBytes(h);
  h.sections[format::kVerbatim].length = format::VerbatimBytes(h);
  h.sections[format::kFillRuns].length = content.fill_bytes();
  std::array<uint8_t*, format::kSectionCount> at;
  const size_t start = out->size();
  out->reserve(start + h.frame_size());
  out->resize(start + h.frame_size(), 0);
  {
    uint8_t* next = out->data() + start + format::kFrameHeaderSize;
    for (int s = 0; s < format::kSectionCount; ++s) {
      at[s] = next;
      next += AlignUp(h.sections[s].length, format::kAlignment);
    }
  }

  std::memcpy(at[format::kCodeLengths], code.length_bytes.data(), code.length_bytes.size());
  Release(code.length_bytes);
  WriteChunkIndex(encoded.layout, p.chunk_group, at[format::kChunkIndex]);
  if (!encoded.gaps.empty()) {
    std::memcpy(at[format::kGapArray], encoded.gaps.data(), encoded.gaps.size());
  }
  Release(encoded.gaps);
  if (!encoded.words.empty()) {
    std::memcpy(at[format::kBitstream], encoded.words.data(), encoded.words.size() * 4);
  }
  Release(encoded.words);

  // Outliers: all indices, then all residuals. Verbatim: all indices, then
  // (aligned) all values.
  uint8_t* const outlier_index = at[format::kOutliers];
  content.WriteOutliers(outlier_index, outlier_index + 4 * h.outlier_count);
  uint8_t* const verbatim_index = at[format::kVerbatim];
  content.WriteVerbatim(data, DTypeSize(p.dtype), verbatim_index,
                        verbatim_index + AlignUp(4 * h.verbatim_count, format::kAlignment));
  content.WriteFill(at[format::kFillRuns]);

  for (int s = 0; s < format::kSectionCount; ++s) {
    h.sections[s].crc = Crc32c(at[s], h.sections[s].length);
  }
  std::vector<uint8_t> header;
  header.reserve(format::kFrameHeaderSize);
  format::AppendFrameHeader(h, &header);
  std::memcpy(out->data() + start, header.data(), header.size());
  return absl::OkStatus();
}

using Sections = FrameSections;

// The frame's symbols (run tokens expanded). What decoding them takes (code
// lengths, tables, chunk index, the bitstream's copy) is freed on return,
// before the frame's largest buffer is allocated.
absl::StatusOr<std::vector<uint16_t>> DecodeSymbols(const FrameHeader& h, const Sections& sec,
                                                    DecoderKind decoder,
                                                    const std::atomic<bool>* cancel) {
  auto lengths = ParseCodeLengths(sec[format::kCodeLengths], h.alphabet(), h.max_code_length);
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

  std::vector<uint16_t> symbols(h.positions);
  HuffmanTable table(*lengths);
  BitstreamView view{words,
                     &*layout,
                     sec[format::kGapArray],
                     h.chunk_symbols,
                     h.subsequence_bits,
                     RunTokens::ForStage(h.lossless, h.radius)};
  if (auto s = HuffmanDecode(decoder, table, view, absl::MakeSpan(symbols), cancel); !s.ok()) {
    return s;
  }
  return symbols;
}

// Interpolation's values from the symbols, given the outlier section.
absl::Status DecodeInterp(const FrameHeader& h, const std::vector<uint16_t>& symbols,
                          absl::Span<const uint8_t> outliers, const uint8_t* mask, uint8_t* out,
                          const std::atomic<bool>* cancel) {
  const uint64_t n = h.num_elements();
  const uint64_t count = h.outlier_count;
  std::vector<uint32_t> index(count);
  std::vector<int32_t> residual(count);
  for (uint64_t k = 0; k < count; ++k) {
    index[k] = LoadLE<uint32_t>(outliers.data() + 4 * k);
    residual[k] = LoadLE<int32_t>(outliers.data() + 4 * count + 4 * k);
    if (index[k] >= n || (k > 0 && index[k] <= index[k - 1])) {
      return Corrupt("outlier index out of order");
    }
  }
  return InterpDecode(InterpParamsFor(h), symbols, index, residual, mask, out, cancel);
}

template <typename T>
absl::Status OverwriteSpecials(const FrameHeader& h, const Sections& sec, const uint8_t* mask,
                               T* out, const std::atomic<bool>* cancel) {
  const uint64_t n = h.num_elements();
  const T fill = static_cast<T>(h.fill_value.value_or(0));
  if (h.fill_coding == format::kFillCodingMask) {
    // Fill is mostly in long runs: skip 8 mask bytes at a time. No mask:
    // no fill element.
    const uint64_t masked = mask == nullptr ? 0 : n;
    uint64_t i = 0;
    for (; i + 8 <= masked; i += 8) {
      uint64_t word;
      std::memcpy(&word, mask + i, 8);
      if (word == 0) continue;
      for (uint64_t j = i; j < i + 8; ++j) {
        if (mask[j]) out[j] = fill;
      }
    }
    for (; i < masked; ++i) {
      if (mask[i]) out[i] = fill;
    }
  } else if (absl::Status s = ForEachFillRun(
                 sec[format::kFillRuns].data(), h.fill_run_count, n, cancel, kDecoding,
                 [&](uint64_t start, uint64_t length) { std::fill_n(out + start, length, fill); });
             !s.ok()) {
    return s;
  }
  return ForEachVerbatim<T>(sec[format::kVerbatim].data(), h.verbatim_count, n, cancel, kDecoding,
                            [&](uint32_t index, T value) { out[index] = value; });
}

absl::Status DecodeContent(const FrameHeader& h, const Sections& sec, DecoderKind decoder,
                           uint8_t* out, const std::atomic<bool>* cancel) {
  // The mask first: it says which elements have symbols.
  // A mask without fill elements (a fill value given, none present) is no
  // mask: nothing to skip or to overwrite.
  std::vector<uint8_t> mask;
  if (h.fill_coding == format::kFillCodingMask) {
    auto runs = DecodeFillRuns(sec[format::kFillRuns], h.fill_run_count, h.num_elements());
    if (!runs.ok()) return runs.status();
    if (AnyFill(*runs)) {
      mask.resize(h.num_elements());
      // FORMAT.md §15.6: rows of n / shape[0] elements, or one row of n in 1-D.
      const uint64_t row = h.ndim == 1 ? h.num_elements() : h.num_elements() / h.shape[0];
      ExpandFillRuns(*runs, row, absl::MakeSpan(mask));
    }
  }
  absl::StatusOr<std::vector<uint16_t>> symbols = DecodeSymbols(h, sec, decoder, cancel);
  if (!symbols.ok()) return symbols.status();
  absl::Status status;
  if (h.predictor == format::kPredictorLorenzo) {
    status = LorenzoDecode(h, *std::move(symbols), sec[format::kOutliers], out, cancel);
  } else {
    status = DecodeInterp(h, *symbols, sec[format::kOutliers], mask.empty() ? nullptr : mask.data(),
                          out, cancel);
    Release(*symbols);
  }
  if (!status.ok()) return status;
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);
  const uint8_t* m = mask.empty() ? nullptr : mask.data();
  if (h.dtype == DType::kFloat32) {
    return OverwriteSpecials(h, sec, m, reinterpret_cast<float*>(out), cancel);
  }
  return OverwriteSpecials(h, sec, m, reinterpret_cast<double*>(out), cancel);
}

}  // namespace

uint8_t AllowedStages(const FrameParams& p) {
  if (p.version < 2) return 1u << format::kLosslessHuffman;
  switch (p.lossless) {
    case Lossless::kHuffman:
      return 1u << format::kLosslessHuffman;
    case Lossless::kZeroRuns:
      return 1u << format::kLosslessZeroRuns;
    case Lossless::kRunValues:
      return 1u << format::kLosslessRunValues;
    case Lossless::kAuto:
      break;
  }
  return (1u << format::kLosslessHuffman) | (1u << format::kLosslessZeroRuns) |
         (1u << format::kLosslessRunValues);
}

FrameHeader FrameHeaderFor(const FrameParams& p) {
  FrameHeader h;
  h.version = p.version;
  h.dtype = p.dtype;
  h.ndim = static_cast<int>(p.shape.size());
  h.bound_mode = p.bound_mode;
  h.has_gap_array = p.gap_array;
  h.max_code_length = static_cast<uint8_t>(p.max_code_length);
  uint64_t n = 1;
  for (int i = 0; i < h.ndim; ++i) {
    h.shape[i] = p.shape[i];
    h.block[i] = p.block[i];
    n *= p.shape[i];
  }
  h.positions = static_cast<uint32_t>(n);
  h.first_row = p.first_row;
  h.bound_value = p.bound_value;
  h.abs_bound = p.abs_bound;
  h.quant_step = p.quant_step;
  h.fill_value = p.fill_value;
  h.radius = p.radius;
  h.chunk_symbols = p.chunk_symbols;
  h.subsequence_bits = p.subsequence_bits;
  h.chunk_group = p.chunk_group;
  return h;
}

absl::Status EncodeFrame(const FrameParams& params, const uint8_t* data, std::vector<uint8_t>* out,
                         const std::atomic<bool>* cancel) {
  if (Cancelled(cancel)) return CancelledStatus(kEncoding);
  // The fill mask, found once for the choice and the frame's content.
  FrameFill fill;
  const bool interp = params.version >= 2 && params.predictor != Predictor::kLorenzo;
  if (interp && params.fill_value) fill = FindFill(params, data);
  const FrameFill* frame_fill = interp && params.fill_value ? &fill : nullptr;
  std::optional<FrameContent> content;
  auto config = ChoosePredictor(params, data, cancel, frame_fill, &content);
  if (!config.ok()) return config.status();
  if (!content) {
    auto predicted = FrameContent::Predict(params, *config, data, cancel, frame_fill);
    if (!predicted.ok()) return predicted.status();
    content = *std::move(predicted);
  }
  fill = FrameFill();
  if (Cancelled(cancel)) return CancelledStatus(kEncoding);
  return WriteFrame(params, *content, data, out, cancel);
}

void EncodeFrame(const FrameParams& params, const uint8_t* data, std::vector<uint8_t>* out) {
  // Without a flag nothing can stop it: the status is always OK.
  EncodeFrame(params, data, out, nullptr).IgnoreError();
}

absl::StatusOr<FrameSections> CheckedSections(absl::Span<const uint8_t> frame,
                                              const FrameHeader& h) {
  if (frame.size() < h.frame_size()) return Corrupt("truncated frame");
  FrameSections sec;
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
  return sec;
}

absl::Status DecodeFrame(absl::Span<const uint8_t> frame, const FrameHeader& h, DecoderKind decoder,
                         uint8_t* out, const std::atomic<bool>* cancel) {
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);
  absl::StatusOr<FrameSections> sec = CheckedSections(frame, h);
  if (!sec.ok()) return sec.status();
  if (Cancelled(cancel)) return CancelledStatus(kDecoding);
  return DecodeContent(h, *sec, decoder, out, cancel);
}

}  // namespace ebzip
