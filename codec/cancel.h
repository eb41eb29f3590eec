// Cooperative cancellation: a caller (a server whose client went away) sets
// a flag, and the codec notices between frames, between stages and between
// the ranges of its parallel loops, then returns CANCELLED and frees what it
// holds. A relaxed load per range costs nothing next to the range's work;
// nothing is published through the flag, so no stronger order is needed.
#ifndef EBZIP_CODEC_CANCEL_H_
#define EBZIP_CODEC_CANCEL_H_

#include <atomic>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace ebzip {

// True once *cancel is set; a null flag never is.
inline bool Cancelled(const std::atomic<bool>* cancel) {
  return cancel != nullptr && cancel->load(std::memory_order_relaxed);
}

// The status every cancelled entry point returns, e.g. "decompression
// cancelled".
inline absl::Status CancelledStatus(absl::string_view what) {
  return absl::CancelledError(absl::StrCat(what, " cancelled"));
}

}  // namespace ebzip

#endif  // EBZIP_CODEC_CANCEL_H_
