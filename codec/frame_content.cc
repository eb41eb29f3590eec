#include "codec/frame_content.h"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "codec/byte_io.h"
#include "codec/parallel.h"
#include "codec/quantize_point.h"

namespace ebzip {
namespace {

bool IsLorenzo(const PredictorConfig& c) { return c.predictor == format::kPredictorLorenzo; }

// With a mask: 1 to mask[i] for each element i in [begin, end) of `data`
// bit-equal to the fill value, 0 to the others. Without: whether one is.
template <typename T>
bool MarkFill(const T* data, uint64_t begin, uint64_t end, typename FloatTraits<T>::Bits fill_bits,
              uint8_t* mask) {
  uint64_t i = begin;
#if defined(__SSE2__)
  if constexpr (sizeof(T) == 4) {
    // Sixteen at a time: compare the bits, narrow the lanes to bytes.
    const __m128i f = _mm_set1_epi32(static_cast<int32_t>(fill_bits));
    const __m128i one = _mm_set1_epi8(1);
    for (; i + 16 <= end; i += 16) {
      const __m128i* p = reinterpret_cast<const __m128i*>(data + i);
      const __m128i a = _mm_packs_epi32(_mm_cmpeq_epi32(_mm_loadu_si128(p), f),
                                        _mm_cmpeq_epi32(_mm_loadu_si128(p + 1), f));
      const __m128i b = _mm_packs_epi32(_mm_cmpeq_epi32(_mm_loadu_si128(p + 2), f),
                                        _mm_cmpeq_epi32(_mm_loadu_si128(p + 3), f));
      const __m128i bytes = _mm_packs_epi16(a, b);
      if (mask == nullptr) {
        if (_mm_movemask_epi8(bytes) != 0) return true;
      } else {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(mask + i), _mm_and_si128(bytes, one));
      }
    }
  }
#endif
  bool any = false;
  for (; i < end; ++i) {
    const bool is_fill = ToBits(data[i]) == fill_bits;
    if (mask != nullptr) {
      mask[i] = is_fill;
    } else if (is_fill) {
      return true;
    }
    any = any || is_fill;
  }
  return any;
}

// One byte per element, 1 where it is bit-equal to the fill value as T;
// empty when no element is.
template <typename T>
std::vector<uint8_t> FillMask(const T* data, uint64_t n, double fill_value) {
  const auto fill_bits = ToBits(static_cast<T>(fill_value));
  constexpr uint64_t kTask = 1 << 20;
  const uint64_t tasks = (n + kTask - 1) / kTask;
  // Most frames with a fill value have no fill in places, or none at all:
  // look before allocating.
  std::vector<uint8_t> any(tasks, 0);
  ParallelFor(tasks, [&](uint64_t t) {
    any[t] = MarkFill(data, t * kTask, std::min(n, (t + 1) * kTask), fill_bits, nullptr);
  });
  if (std::find(any.begin(), any.end(), 1) == any.end()) return {};
  std::vector<uint8_t> mask(n);
  ParallelFor(tasks, [&](uint64_t t) {
    if (any[t]) MarkFill(data, t * kTask, std::min(n, (t + 1) * kTask), fill_bits, mask.data());
  });
  return mask;
}

uint64_t Elements(const FrameParams& p) {
  uint64_t n = 1;
  for (uint64_t d : p.shape) n *= d;
  return n;
}

// The coded mask; an empty mask stands for zeros.
EncodedFillMask Encode(const std::vector<uint8_t>& mask, uint64_t n, uint64_t row) {
  return mask.empty() ? EncodeNoFill(n) : EncodeFillMask(mask, row);
}

}  // namespace

InterpParams InterpParamsFor(const FrameParams& p, const PredictorConfig& config) {
  InterpParams ip;
  ip.dtype = p.dtype;
  ip.shape = p.shape;
  ip.tile = config.block;
  ip.order = static_cast<InterpOrder>(config.order);
  ip.radius = p.radius;
  ip.abs_bound = p.abs_bound;
  ip.quant_step = p.quant_step;
  ip.fill_value = p.fill_value;
  return ip;
}

InterpParams InterpParamsFor(const format::FrameHeader& h) {
  FrameParams p;
  p.dtype = h.dtype;
  p.shape.assign(h.shape.begin(), h.shape.begin() + h.ndim);
  p.radius = h.radius;
  p.abs_bound = h.abs_bound;
  p.quant_step = h.quant_step;
  p.fill_value = h.fill_value;
  return InterpParamsFor(p, PredictorConfig{h.predictor, h.block, h.order});
}

FrameFill FindFill(const FrameParams& p, const uint8_t* data) {
  const uint64_t n = Elements(p);
  FrameFill fill;
  fill.mask = p.dtype == DType::kFloat32
                  ? FillMask(reinterpret_cast<const float*>(data), n, *p.fill_value)
                  : FillMask(reinterpret_cast<const double*>(data), n, *p.fill_value);
  // FORMAT.md §15.6: rows of n / shape[0] elements, or one row of n in 1-D.
  fill.encoded = Encode(fill.mask, n, p.shape.size() == 1 ? n : n / p.shape[0]);
  return fill;
}

FrameFill FillOfStripes(const FrameParams& p, const FrameFill& frame,
                        absl::Span<const uint64_t> first_rows, uint64_t rows) {
  const uint64_t row = Elements(p) / p.shape[0];
  const uint64_t stripe = rows * row;
  FrameFill fill;
  bool any = false;
  for (uint64_t first : first_rows) {
    if (frame.mask.empty()) break;
    const auto from = frame.mask.begin() + first * row;
    any = any || std::find(from, from + stripe, 1) != from + stripe;
  }
  if (any) {
    fill.mask.reserve(first_rows.size() * stripe);
    for (uint64_t first : first_rows) {
      const auto from = frame.mask.begin() + first * row;
      fill.mask.insert(fill.mask.end(), from, from + stripe);
    }
  }
  const uint64_t sample = first_rows.size() * stripe;
  fill.encoded = Encode(fill.mask, sample, p.shape.size() == 1 ? sample : row);
  return fill;
}

absl::StatusOr<FrameContent> FrameContent::Predict(const FrameParams& p,
                                                   const PredictorConfig& config,
                                                   const uint8_t* data,
                                                   const std::atomic<bool>* cancel,
                                                   const FrameFill* fill) {
  FrameContent c;
  c.config_ = config;
  if (IsLorenzo(config)) {
    FrameParams lp = p;
    lp.block = config.block;
    if (auto s = LorenzoEncode(lp, data, &c.lorenzo_, cancel); !s.ok()) return s;
    return c;
  }
  FrameFill own;
  if (p.fill_value && fill == nullptr) {
    own = FindFill(p, data);
    fill = &own;
  }
  const uint8_t* mask = nullptr;
  if (fill != nullptr) {
    c.fill_coding_ = format::kFillCodingMask;
    c.mask_ = fill->encoded;
    if (!fill->mask.empty()) mask = fill->mask.data();
  }
  if (auto s = InterpEncode(InterpParamsFor(p, config), data, mask, &c.interp_, cancel); !s.ok()) {
    return s;
  }
  return c;
}

absl::Span<const uint16_t> FrameContent::symbols() const {
  return IsLorenzo(config_) ? absl::MakeConstSpan(lorenzo_.symbols)
                            : absl::MakeConstSpan(interp_.symbols);
}

void FrameContent::ReleaseSymbols() {
  std::vector<uint16_t>().swap(IsLorenzo(config_) ? lorenzo_.symbols : interp_.symbols);
}

uint64_t FrameContent::outlier_count() const {
  return IsLorenzo(config_) ? lorenzo_.outlier_count() : interp_.outlier_index.size();
}

uint64_t FrameContent::verbatim_count() const {
  return IsLorenzo(config_) ? lorenzo_.verbatim_count() : interp_.verbatim_index.size();
}

uint64_t FrameContent::fill_run_count() const {
  return fill_coding_ == format::kFillCodingMask ? mask_.tokens
         : IsLorenzo(config_)                    ? lorenzo_.fill_run_count()
                                                 : 0;
}

uint64_t FrameContent::fill_bytes() const {
  return fill_coding_ == format::kFillCodingMask ? mask_.section.size() : 8 * fill_run_count();
}

void FrameContent::WriteOutliers(uint8_t* index_at, uint8_t* residual_at) const {
  if (IsLorenzo(config_)) return lorenzo_.WriteOutliers(index_at, residual_at);
  for (size_t k = 0; k < interp_.outlier_index.size(); ++k) {
    StoreLE<uint32_t>(index_at + 4 * k, interp_.outlier_index[k]);
    StoreLE<int32_t>(residual_at + 4 * k, interp_.outlier_residual[k]);
  }
}

void FrameContent::WriteVerbatim(const uint8_t* data, size_t element_size, uint8_t* index_at,
                                 uint8_t* value_at) const {
  if (IsLorenzo(config_)) return lorenzo_.WriteVerbatim(data, element_size, index_at, value_at);
  for (size_t k = 0; k < interp_.verbatim_index.size(); ++k) {
    const uint32_t i = interp_.verbatim_index[k];
    StoreLE<uint32_t>(index_at + 4 * k, i);
    std::memcpy(value_at + element_size * k, data + element_size * i, element_size);
  }
}

void FrameContent::WriteFill(uint8_t* at) const {
  if (fill_coding_ == format::kFillCodingMask) {
    std::memcpy(at, mask_.section.data(), mask_.section.size());
  } else if (IsLorenzo(config_)) {
    lorenzo_.WriteFillRuns(at);
  }
}

}  // namespace ebzip
