// The block decoder's speculative pass and its corrections (BlockDecodeKernel
// in gpu/decode_kernels.cu; Weißenberger and Schmidt) as per-thread steps,
// shared with the CPU test that simulates the block
// (tests/codec/run_steps_test.cc): plain C++ outside nvcc.
//
// A thread's run of bits is first decoded from its first bit, remembering
// where its first tokens started (its trace). A correction decodes again from
// the true start its predecessor found, and stops as soon as it lands on a
// traced start: from there on both paths are the same. What it then counts
// is its own tokens before that start plus the old path's after it. With run
// tokens (kRuns) counts are positions, not tokens, so a trace keeps half as
// many starts and, after them, the positions decoded before each.
//
// `decode(pos, &positions)` decodes the token at bit `pos`: its length in
// bits (0 when no codeword matches) and the positions it covers.
#ifndef EBZIP_GPU_DECODE_STEPS_H_
#define EBZIP_GPU_DECODE_STEPS_H_

#include <cstdint>

#include "codec/host_device.h"

namespace ebzip::gpu::decode_steps {

inline constexpr uint32_t kTrace = 16;  // words of a thread's trace
template <bool kRuns>
inline constexpr uint32_t kTraceStarts = kRuns ? kTrace / 2 : kTrace;
inline constexpr uint32_t kNoEnd = 0xFFFFFFFFu;  // a run that met an invalid codeword

// Counts from `pos` until the first token start at or after `stop` (or the
// chunk's `bits`), tracing the first starts. False on an invalid token.
template <bool kRuns, class Decode>
EBZIP_HD bool TraceRun(Decode&& decode, uint32_t& pos, uint32_t stop, uint32_t bits, uint32_t& n,
                       uint32_t* trace, uint32_t& traced) {
  while (pos < stop) {
    if (traced < kTraceStarts<kRuns>) {
      trace[traced] = pos;
      if constexpr (kRuns) trace[kTraceStarts<kRuns> + traced] = n;
      ++traced;
    }
    uint32_t positions;
    const int l = decode(pos, &positions);
    if (l == 0 || pos + l > bits) return false;
    n += positions;
    pos += l;
  }
  return true;
}

// A correction: the run decoded again from `want` (its true start) up to
// `stop`, given its trace, count `n` and end `*end` from its previous start.
// Updates all three: the count from `want`; the trace of the new path; the
// end, kept where the paths met (kNoEnd stays kNoEnd: the same path fails
// again), else where the new path ended (kNoEnd on an invalid token).
template <bool kRuns, class Decode>
EBZIP_HD void Correct(Decode&& decode, uint32_t want, uint32_t stop, uint32_t bits, uint32_t* trace,
                      uint32_t& traced, uint32_t& n, uint32_t* end) {
  constexpr uint32_t kStarts = kTraceStarts<kRuns>;
  uint32_t p = want, m = 0, k = 0;
  const uint32_t old_traced = traced;
  const uint32_t old_n = n;
  bool met = false, good = p <= bits;
  uint32_t fresh = 0;
  uint32_t fresh_trace[kStarts];
  [[maybe_unused]] uint32_t fresh_before[kRuns ? kStarts : 1];
  while (good && p < stop) {
    while (k < old_traced && trace[k] < p) ++k;
    if (k < old_traced && trace[k] == p) {
      met = true;
      break;
    }
    if (fresh < kStarts) {
      if constexpr (kRuns) fresh_before[fresh] = m;
      fresh_trace[fresh++] = p;
    }
    uint32_t positions;
    const int l = decode(p, &positions);
    if (l == 0 || p + l > bits) {
      good = false;
      break;
    }
    p += l;
    m += positions;
  }
  if (met) {
    // What the old path counted before trace[k] (k tokens; with kRuns the
    // positions recorded with it) is not this path's.
    uint32_t old_before = k;
    if constexpr (kRuns) old_before = trace[kStarts + k];
    n = m + (old_n - old_before);
    // The new trace: the fresh starts, then the old ones from k on, moved in
    // place (from the last, where they move right: fresh > k).
    const uint32_t keep = old_traced - k < kStarts - fresh ? old_traced - k : kStarts - fresh;
    auto move = [&](uint32_t j) {
      trace[fresh + j] = trace[k + j];
      if constexpr (kRuns) trace[kStarts + fresh + j] = m + (trace[kStarts + k + j] - old_before);
    };
    if (fresh > k) {
      for (uint32_t j = keep; j-- > 0;) move(j);
    } else {
      for (uint32_t j = 0; j < keep; ++j) move(j);
    }
    traced = fresh + keep;
  } else {
    n = m;
    traced = fresh;
    *end = good ? p : kNoEnd;
  }
  for (uint32_t i = 0; i < fresh; ++i) {
    trace[i] = fresh_trace[i];
    if constexpr (kRuns) trace[kStarts + i] = fresh_before[i];
  }
}

}  // namespace ebzip::gpu::decode_steps

#endif  // EBZIP_GPU_DECODE_STEPS_H_
