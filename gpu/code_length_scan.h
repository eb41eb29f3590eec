// The code-length section (FORMAT.md §5.1) parsed by a whole block instead of
// one thread: each thread takes a span of a staged piece of the section, and
// two block scans give it what a serial walk would have known on reaching its
// span (whether it starts inside a zero run, and how many symbols precede
// it). These are the per-thread steps, shared by BuildTablesKernel and the
// CPU test that simulates the block (tests/codec/code_length_scan_test.cc).
//
// Why a span can be judged alone: a byte's role depends only on the parser's
// state before it, and that state only on the bytes before it, never on
// their values' validity. Up to the first invalid item, then, every thread
// sees the states and symbol counts the serial walk sees: on a section the
// walk accepts, the same items and lengths; on one it rejects, the same
// first invalid item (found however later counts go), or the section ending
// inside a run, or a count other than the alphabet.
#ifndef EBZIP_GPU_CODE_LENGTH_SCAN_H_
#define EBZIP_GPU_CODE_LENGTH_SCAN_H_

#include <cstdint>

#include "codec/host_device.h"

namespace ebzip::gpu::code_lengths {

// The kernel's shape: a block of kThreads threads takes kPiece bytes of the
// section at a time, kPiece / kThreads consecutive bytes per thread.
inline constexpr uint32_t kThreads = 1024;
inline constexpr uint32_t kPiece = 8192;
// A zero run's LEB128 has at most 6 bytes (a 7th would shift by 42 bits).
inline constexpr int kMaxLebBytes = 6;
// Bytes before each staged piece kept for the runs that end in it: a run's
// last byte reads back over at most kMaxLebBytes of them. 8 keeps the piece
// 8-byte aligned.
inline constexpr uint32_t kHistory = 8;
static_assert(kHistory >= kMaxLebBytes);
// Sums of symbol counts stay below 2^32: each byte ends at most one item,
// counted at most alphabet + 1 (65537), and the carry is capped the same.
static_assert(uint64_t{kPiece + 1} * 65537 < (uint64_t{1} << 32));

// The parser's state before a byte: at the start of an item, or inside a
// zero run's LEB128 (after its 0 byte).
inline constexpr uint32_t kAtItem = 0;
inline constexpr uint32_t kInRun = 1;

EBZIP_HD inline uint32_t NextState(uint32_t state, uint8_t b) {
  return state == kAtItem ? (b == 0 ? kInRun : kAtItem) : (b & 0x80 ? kInRun : kAtItem);
}

// A span's effect on the state, for both states before it: bit s is the state
// after the span given state s before. Maps compose associatively (so a
// block scan can combine them) but not commutatively.
inline constexpr uint32_t kIdentityMap = kAtItem | kInRun << 1;

EBZIP_HD inline uint32_t ApplyMap(uint32_t map, uint32_t state) { return (map >> state) & 1; }

// `first`'s span followed by `second`'s.
EBZIP_HD inline uint32_t ThenMap(uint32_t first, uint32_t second) {
  const uint32_t from_item = ApplyMap(second, ApplyMap(first, kAtItem));
  const uint32_t from_run = ApplyMap(second, ApplyMap(first, kInRun));
  return from_item | from_run << 1;
}

EBZIP_HD inline uint32_t SpanMap(const uint8_t* bytes, uint32_t count) {
  uint32_t from_item = kAtItem, from_run = kInRun;
  for (uint32_t i = 0; i < count; ++i) {
    from_item = NextState(from_item, bytes[i]);
    from_run = NextState(from_run, bytes[i]);
  }
  return from_item | from_run << 1;
}

// The length of the zero run that `last` ends (a byte inside a run, without
// bit 7), read back over the run's earlier LEB128 bytes: exactly the bytes
// with bit 7 before it, since the run's 0 byte lacks it. So it reads at most
// kMaxLebBytes bytes before `last`. 0, invalid as a run of 0 is, where the
// LEB128 is longer than kMaxLebBytes; alphabet + 1, as invalid, for anything
// longer than the alphabet, so that sums of lengths stay small.
EBZIP_HD inline uint32_t RunLength(const uint8_t* last, uint32_t alphabet) {
  uint64_t run = last[0] & 0x7F;
  for (int k = 1; last[-k] & 0x80; ++k) {
    if (k == kMaxLebBytes) return 0;
    run = run << 7 | (last[-k] & 0x7F);
  }
  return run > alphabet ? alphabet + 1 : static_cast<uint32_t>(run);
}

// Symbols of the items that end in a span, given the state before it: 1 per
// length byte, a run's length per run. Reads back as RunLength does.
EBZIP_HD inline uint32_t SpanSymbols(const uint8_t* bytes, uint32_t count, uint32_t state,
                                     uint32_t alphabet) {
  uint32_t symbols = 0;
  for (uint32_t i = 0; i < count; ++i) {
    if (state == kAtItem) {
      symbols += bytes[i] != 0;
    } else if (!(bytes[i] & 0x80)) {
      symbols += RunLength(bytes + i, alphabet);
    }
    state = NextState(state, bytes[i]);
  }
  return symbols;
}

// Checks the items that end in a span, given the state before it and `n`, the
// symbols before it, and writes its length items' lengths to `lengths`
// (alphabet bytes). False if any item is invalid; then the section is
// rejected, whatever was written.
EBZIP_HD inline bool SpanLengths(const uint8_t* bytes, uint32_t count, uint32_t state, uint32_t n,
                                 uint32_t alphabet, uint32_t max_length, uint8_t* lengths) {
  bool ok = true;
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t b = bytes[i];
    if (state == kAtItem && b != 0) {
      const bool valid = b <= max_length && n < alphabet;
      if (valid) lengths[n] = b;
      ok &= valid;
      ++n;
    } else if (state == kInRun && !(b & 0x80)) {
      const uint32_t run = RunLength(bytes + i, alphabet);
      // n may exceed the alphabet after an invalid item: no unsigned wrap.
      ok &= run != 0 && uint64_t{n} + run <= alphabet;
      n += run;
    }
    state = NextState(state, b);
  }
  return ok;
}

// The bytes of a piece that thread `thread` takes.
struct Span {
  uint32_t begin;
  uint32_t count;
};
EBZIP_HD inline Span ThreadSpan(uint32_t thread, uint32_t piece_length, uint32_t per_thread) {
  const uint32_t begin = thread * per_thread;
  const uint32_t end = begin + per_thread;
  if (begin >= piece_length) return {piece_length, 0};
  return {begin, (end < piece_length ? end : piece_length) - begin};
}

// What a piece hands the next: the serial walk's state and symbol count after
// it (the count capped at alphabet + 1, which is invalid anyway).
struct Carry {
  uint32_t state = kAtItem;
  uint32_t n = 0;
};
EBZIP_HD inline Carry AfterPiece(Carry before, uint32_t piece_map, uint32_t piece_symbols,
                                 uint32_t alphabet) {
  const uint32_t n = before.n + piece_symbols;
  return {ApplyMap(piece_map, before.state), n > alphabet ? alphabet + 1 : n};
}

// After the last piece, with no invalid item seen: the section must not end
// inside a run and must describe exactly the alphabet.
EBZIP_HD inline bool Complete(Carry end, uint32_t alphabet) {
  return end.state == kAtItem && end.n == alphabet;
}

}  // namespace ebzip::gpu::code_lengths

#endif  // EBZIP_GPU_CODE_LENGTH_SCAN_H_
