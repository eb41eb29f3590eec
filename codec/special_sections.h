// Walks of a frame's fill-run and verbatim sections (FORMAT.md §8.4, §8.5)
// with their checks: shared by the whole-frame decoder (frame_codec.cc) and
// the region decoder (region_frame.cc), which differ only in what they do
// with each entry.
#ifndef EBZIP_CODEC_SPECIAL_SECTIONS_H_
#define EBZIP_CODEC_SPECIAL_SECTIONS_H_

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "codec/byte_io.h"
#include "codec/cancel.h"
#include "codec/format.h"

namespace ebzip {

// The sequential walks look at the cancel flag once per 2^16 entries.
inline bool StopAt(uint64_t k, const std::atomic<bool>* cancel) {
  return k % (1 << 16) == 0 && Cancelled(cancel);
}

// fn(start, length) for each of `count` fill runs at `runs`, in order.
// DATA_LOSS unless every run is nonempty, the runs ascend without overlap
// and they lie inside the frame's `n` elements; CANCELLED (`what`) once
// *cancel is set.
template <typename Fn>
absl::Status ForEachFillRun(const uint8_t* runs, uint64_t count, uint64_t n,
                            const std::atomic<bool>* cancel, absl::string_view what, Fn fn) {
  uint64_t covered = 0;
  for (uint64_t k = 0; k < count; ++k) {
    if (StopAt(k, cancel)) return CancelledStatus(what);
    const uint64_t start = LoadLE<uint32_t>(runs + 8 * k);
    const uint64_t length = LoadLE<uint32_t>(runs + 8 * k + 4);
    if (length == 0 || start < covered || start + length > n) {
      return format::CorruptArchive("fill runs overlap or leave the frame");
    }
    fn(start, length);
    covered = start + length;
  }
  return absl::OkStatus();
}

// fn(index, value) for each of `count` verbatim entries of the section at
// `verbatim` (ascending indices, then the values at the next alignment).
// DATA_LOSS unless the indices ascend strictly inside the frame's `n`
// elements; CANCELLED (`what`) once *cancel is set.
template <typename T, typename Fn>
absl::Status ForEachVerbatim(const uint8_t* verbatim, uint64_t count, uint64_t n,
                             const std::atomic<bool>* cancel, absl::string_view what, Fn fn) {
  const uint64_t values_at = AlignUp(4 * count, format::kAlignment);
  for (uint64_t k = 0; k < count; ++k) {
    if (StopAt(k, cancel)) return CancelledStatus(what);
    const uint32_t index = LoadLE<uint32_t>(verbatim + 4 * k);
    if (index >= n || (k > 0 && index <= LoadLE<uint32_t>(verbatim + 4 * (k - 1)))) {
      return format::CorruptArchive("verbatim index out of order");
    }
    fn(index, LoadLE<T>(verbatim + values_at + sizeof(T) * k));
  }
  return absl::OkStatus();
}

}  // namespace ebzip

#endif  // EBZIP_CODEC_SPECIAL_SECTIONS_H_
