// What one input of grpc_fuzzer asks for: a few rounds of calls to ebzipd,
// the calls of a round running at once, each a script of actions on one
// Compress or Decompress stream (or a GetServerInfo). The plan holds choices,
// not values: grpc_fuzzer.cc turns each choice into bytes on the wire.
//
// One Visit function per type walks the plan for both directions: PlanReader
// fills it from an input through FuzzedDataProvider (the fuzzer), PlanWriter
// writes the input that reads back as a given plan (the seed generator). With
// a single walk the two cannot drift apart. Every choice reads as 0 once the
// input runs out, and 0 is the benign choice (a valid header, a whole array,
// a half-close), so that short inputs are mostly well-formed requests and
// mutations move away from them one choice at a time.
#ifndef EBZIP_TESTS_FUZZ_GRPC_FUZZ_PLAN_H_
#define EBZIP_TESTS_FUZZ_GRPC_FUZZ_PLAN_H_

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

namespace ebzip::fuzz {

inline constexpr size_t kMaxRounds = 3;
inline constexpr size_t kMaxCallsPerRound = 3;
inline constexpr size_t kMaxActions = 24;
inline constexpr size_t kMaxMessageBytes = 64 << 10;
inline constexpr size_t kMaxRawBytes = 4096;  // raw messages and inserted bytes
inline constexpr size_t kMaxMutations = 4;
// The valid archives grpc_fuzzer makes at start-up, which every input's
// archive pool begins with (ActionPlan::source indexes the pool; archives
// that the input's Compress calls return follow them, round by round).
inline constexpr size_t kSeedArchives = 8;

struct DimPlan {
  uint8_t kind = 0;  // 0: 1 + value (value < 64); 1: 1 + value (< 4096); 2: zero; 3: value
  uint64_t value = 0;
};

// A CompressHeader, field by field. For each option, 0 leaves it unset.
struct HeaderPlan {
  uint8_t dtype = 0;  // 0 FLOAT32, 1 FLOAT64, 2 DTYPE_UNSPECIFIED, 3 dtype_raw
  int32_t dtype_raw = 0;
  uint8_t rank = 0;  // 0..5 dimensions: 1, 2, 3, 4, 0, 5 (0 first: one dimension)
  std::vector<DimPlan> dims = std::vector<DimPlan>(1);
  uint8_t mode = 0;  // 0 ABS, 1 REL, 2 ERROR_BOUND_MODE_UNSPECIFIED, 3 mode_raw
  int32_t mode_raw = 0;
  uint8_t bound = 0;  // 0 1e-2, 1 1e-4, 2 0.5, 3 NaN, 4 -1, 5 0, 6 inf, 7 1e-300, 8 1e300, 9 bits
  uint64_t bound_bits = 0;
  uint8_t frame_elements = 0;  // 1: value (1..8192); 2: value
  uint64_t frame_elements_value = 0;
  uint8_t gap_array = 0;  // 1 true, 2 false
  uint8_t fill = 0;       // 1 -9999, 2 NaN, 3 1e300, 4 fill_bits
  uint64_t fill_bits = 0;
  // 1: small (radius 1..64, chunk_symbols 1..4096, subsequence 32..256 in
  // steps of 32, chunk group 1..64); 2: any 32-bit value.
  uint8_t radius = 0, chunk_symbols = 0, subsequence_bits = 0, chunk_group = 0;
  uint32_t radius_value = 0, chunk_symbols_value = 0, subsequence_bits_value = 0,
           chunk_group_value = 0;
  std::vector<DimPlan> block;  // kind 0: value + 1; 1: 0; 2: value (any 32 bits)
  std::vector<uint8_t> request_id;
  int32_t priority = 0;
};

// One change to an archive before it is sent.
struct MutationPlan {
  enum Kind : uint8_t {
    kFlipBit,    // at pos, bit value % 8
    kSetByte,    // at pos, to value
    kTruncate,   // to pos
    kErase,      // len bytes at pos
    kInsert,     // bytes at pos
    kSplice,     // this archive up to pos, then archive `value` from `len`
    kDuplicate,  // len bytes at pos, value % 32 + 1 more times right after them
    kFixChecksums,
    kStoreU64,  // value at pos rounded down to 8 (sizes, offsets and counts are u64)
    kLast = kStoreU64,
  };
  uint8_t kind = kFlipBit;
  // Modulo the archive's size + 1; with the top bit set, counted from the
  // end (where the frame index and the trailer are).
  uint32_t pos = 0;
  uint32_t len = 0;
  uint64_t value = 0;
  std::vector<uint8_t> bytes;
};

struct ActionPlan {
  enum Kind : uint8_t {
    kHeader,     // a CompressRequest header
    kData,       // length payload bytes (content 0: smooth field, 1: specials, 2: bytes)
    kDataRest,   // the rest of the array the header declared (at most 1 MiB in all)
    kArchive,    // an archive of the pool, mutated, as payload messages
    kRaw,        // a message of raw bytes that may or may not parse
    kHalfClose,  // WritesDone
    kCancel,     // TryCancel
    kReadOne,    // start one read (when reading is manual)
    kReadAll,    // read everything from now on
    kSleep,      // length ms (at most 20)
    kLast = kSleep,
  };
  uint8_t kind = kHeader;
  HeaderPlan header;
  uint32_t length = 0;
  uint8_t content = 0;
  std::vector<uint8_t> bytes;
  uint8_t chunking = 0;  // how payload bytes are cut into messages
  uint8_t source = 0;    // which archive of the pool
  std::vector<MutationPlan> mutations;
  // kRaw: 0 the bytes; 1 a payload with overlong varints; 2 a payload whose
  // length is off by param - 128; 3 a payload field twice; 4 a payload and
  // an unknown field; 5 a header with bytes after it; 6 no bytes at all;
  // 7 a header field and a data field in one CompressRequest.
  uint8_t raw_kind = 0;
  uint8_t param = 0;
};

struct CallPlan {
  enum Method : uint8_t { kCompress, kDecompress, kServerInfo, kLastMethod = kServerInfo };
  enum Flags : uint8_t {
    kGzip = 1,           // the client compresses its messages
    kManualReading = 2,  // read only on kReadOne / kReadAll and at the end
    kRequestIdMeta = 4,  // "ebzip-request-id" metadata
    kPriorityMeta = 8,   // "ebzip-priority" metadata
  };
  enum End : uint8_t {
    kHalfCloseAndRead,  // half-close (unless done), read to the end
    kCancelAtEnd,       // TryCancel
    kReadOpen,          // read to the end without half-closing: ends at the deadline
    kLastEnd = kReadOpen,
  };
  uint8_t method = kCompress;
  uint8_t deadline = 0;  // 0: 2 s; else deadline * 8 ms
  uint8_t flags = 0;
  std::vector<uint8_t> request_id;
  int32_t priority = 0;
  // Empty: a well-formed request (a header and the whole array, or the
  // pool's first archive).
  std::vector<ActionPlan> actions;
  uint8_t end = kHalfCloseAndRead;
};

struct RoundPlan {
  std::vector<CallPlan> calls;  // at once
};

struct Plan {
  std::vector<RoundPlan> rounds;  // one after the other
};

// Reads choices from a fuzz input (FuzzedDataProvider: integers from the
// end, byte strings from the front).
class PlanReader {
 public:
  PlanReader(const uint8_t* data, size_t size) : provider_(data, size) {}
  template <class T>
  void Int(T& value, T min, T max) {
    value = provider_.ConsumeIntegralInRange<T>(min, max);
  }
  void Bytes(std::vector<uint8_t>& bytes, size_t max) {
    const size_t n = provider_.ConsumeIntegralInRange<size_t>(0, max);
    bytes = provider_.ConsumeBytes<uint8_t>(n);
  }
  template <class T>
  void Count(std::vector<T>& items, size_t min, size_t max) {
    items.resize(provider_.ConsumeIntegralInRange<size_t>(min, max));
  }

 private:
  FuzzedDataProvider provider_;
};

// Writes the input that PlanReader reads back as the same choices: the
// integers, in the order they are read, go at the end, each as the bytes
// FuzzedDataProvider::ConsumeIntegralInRange takes (most significant first,
// from the back); byte strings go at the front in order. A value outside its
// range would read back as another: the writer aborts instead.
class PlanWriter {
 public:
  template <class T>
  void Int(T& value, T min, T max) {
    if (value < min || value > max) {
      std::fprintf(stderr, "PlanWriter: a choice out of its range\n");
      std::abort();
    }
    const uint64_t range = static_cast<uint64_t>(max) - static_cast<uint64_t>(min);
    const uint64_t v = static_cast<uint64_t>(value) - static_cast<uint64_t>(min);
    int bytes = 0;
    for (size_t offset = 0; offset < sizeof(T) * CHAR_BIT && (range >> offset) > 0;
         offset += CHAR_BIT) {
      ++bytes;
    }
    for (int i = bytes - 1; i >= 0; --i) back_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void Bytes(std::vector<uint8_t>& bytes, size_t max) {
    size_t n = bytes.size();
    Int<size_t>(n, 0, max);
    front_.insert(front_.end(), bytes.begin(), bytes.end());
  }
  template <class T>
  void Count(std::vector<T>& items, size_t min, size_t max) {
    size_t n = items.size();
    Int<size_t>(n, min, max);
  }
  std::vector<uint8_t> Input() const {
    std::vector<uint8_t> out = front_;
    out.insert(out.end(), back_.rbegin(), back_.rend());
    return out;
  }

 private:
  std::vector<uint8_t> front_;
  std::vector<uint8_t> back_;  // in the order they are read
};

template <class IO>
void Visit(IO& io, DimPlan& d, bool block) {
  if (block) {
    io.Int(d.kind, uint8_t{0}, uint8_t{2});
    if (d.kind == 0) io.Int(d.value, uint64_t{0}, uint64_t{31});
    if (d.kind == 2) io.Int(d.value, uint64_t{0}, uint64_t{UINT32_MAX});
    return;
  }
  io.Int(d.kind, uint8_t{0}, uint8_t{3});
  switch (d.kind) {
    case 0:
      io.Int(d.value, uint64_t{0}, uint64_t{63});
      break;
    case 1:
      io.Int(d.value, uint64_t{0}, uint64_t{4095});
      break;
    case 3:
      io.Int(d.value, uint64_t{0}, std::numeric_limits<uint64_t>::max());
      break;
    default:
      break;
  }
}

template <class IO>
void VisitSmallOrAny(IO& io, uint8_t& choice, uint32_t& value, uint32_t small_max) {
  io.Int(choice, uint8_t{0}, uint8_t{2});
  if (choice == 1) io.Int(value, uint32_t{0}, small_max);
  if (choice == 2) io.Int(value, uint32_t{0}, uint32_t{UINT32_MAX});
}

template <class IO>
void Visit(IO& io, HeaderPlan& h) {
  io.Int(h.dtype, uint8_t{0}, uint8_t{3});
  if (h.dtype == 3) io.Int(h.dtype_raw, INT32_MIN, INT32_MAX);
  io.Int(h.rank, uint8_t{0}, uint8_t{5});
  static constexpr size_t kRanks[] = {1, 2, 3, 4, 0, 5};
  h.dims.resize(kRanks[h.rank]);
  for (DimPlan& d : h.dims) Visit(io, d, /*block=*/false);
  io.Int(h.mode, uint8_t{0}, uint8_t{3});
  if (h.mode == 3) io.Int(h.mode_raw, INT32_MIN, INT32_MAX);
  io.Int(h.bound, uint8_t{0}, uint8_t{9});
  if (h.bound == 9) io.Int(h.bound_bits, uint64_t{0}, std::numeric_limits<uint64_t>::max());
  io.Int(h.frame_elements, uint8_t{0}, uint8_t{2});
  if (h.frame_elements == 1) io.Int(h.frame_elements_value, uint64_t{1}, uint64_t{8192});
  if (h.frame_elements == 2) {
    io.Int(h.frame_elements_value, uint64_t{0}, std::numeric_limits<uint64_t>::max());
  }
  io.Int(h.gap_array, uint8_t{0}, uint8_t{2});
  io.Int(h.fill, uint8_t{0}, uint8_t{4});
  if (h.fill == 4) io.Int(h.fill_bits, uint64_t{0}, std::numeric_limits<uint64_t>::max());
  VisitSmallOrAny(io, h.radius, h.radius_value, 63);
  VisitSmallOrAny(io, h.chunk_symbols, h.chunk_symbols_value, 4095);
  VisitSmallOrAny(io, h.subsequence_bits, h.subsequence_bits_value, 7);
  VisitSmallOrAny(io, h.chunk_group, h.chunk_group_value, 63);
  io.Count(h.block, 0, 5);
  for (DimPlan& b : h.block) Visit(io, b, /*block=*/true);
  io.Bytes(h.request_id, 32);
  io.Int(h.priority, INT32_MIN, INT32_MAX);
}

template <class IO>
void Visit(IO& io, MutationPlan& m) {
  io.Int(m.kind, uint8_t{0}, uint8_t{MutationPlan::kLast});
  io.Int(m.pos, uint32_t{0}, uint32_t{UINT32_MAX});
  switch (m.kind) {
    case MutationPlan::kFlipBit:
    case MutationPlan::kSetByte:
      io.Int(m.value, uint64_t{0}, uint64_t{255});
      break;
    case MutationPlan::kErase:
      io.Int(m.len, uint32_t{0}, uint32_t{65535});
      break;
    case MutationPlan::kDuplicate:
      io.Int(m.len, uint32_t{0}, uint32_t{65535});
      io.Int(m.value, uint64_t{0}, uint64_t{31});
      break;
    case MutationPlan::kInsert:
      io.Bytes(m.bytes, kMaxRawBytes);
      break;
    case MutationPlan::kSplice:
      io.Int(m.value, uint64_t{0}, uint64_t{255});
      io.Int(m.len, uint32_t{0}, uint32_t{UINT32_MAX});
      break;
    case MutationPlan::kStoreU64:
      io.Int(m.value, uint64_t{0}, std::numeric_limits<uint64_t>::max());
      break;
    default:
      break;
  }
}

template <class IO>
void Visit(IO& io, ActionPlan& a) {
  io.Int(a.kind, uint8_t{0}, uint8_t{ActionPlan::kLast});
  switch (a.kind) {
    case ActionPlan::kHeader:
      Visit(io, a.header);
      break;
    case ActionPlan::kData:
      io.Int(a.content, uint8_t{0}, uint8_t{2});
      if (a.content == 2) {
        io.Bytes(a.bytes, kMaxMessageBytes);
      } else {
        io.Int(a.length, uint32_t{0}, uint32_t{kMaxMessageBytes});
      }
      break;
    case ActionPlan::kDataRest:
      io.Int(a.content, uint8_t{0}, uint8_t{1});
      io.Int(a.chunking, uint8_t{0}, uint8_t{7});
      break;
    case ActionPlan::kArchive:
      io.Int(a.source, uint8_t{0}, uint8_t{255});
      io.Count(a.mutations, 0, kMaxMutations);
      for (MutationPlan& m : a.mutations) Visit(io, m);
      io.Int(a.chunking, uint8_t{0}, uint8_t{7});
      break;
    case ActionPlan::kRaw:
      io.Int(a.raw_kind, uint8_t{0}, uint8_t{7});
      io.Int(a.param, uint8_t{0}, uint8_t{255});
      io.Bytes(a.bytes, kMaxRawBytes);
      break;
    case ActionPlan::kSleep:
      io.Int(a.length, uint32_t{0}, uint32_t{20});
      break;
    default:
      break;
  }
}

template <class IO>
void Visit(IO& io, CallPlan& c) {
  io.Int(c.method, uint8_t{0}, uint8_t{CallPlan::kLastMethod});
  io.Int(c.deadline, uint8_t{0}, uint8_t{255});
  io.Int(c.flags, uint8_t{0}, uint8_t{15});
  if (c.flags & CallPlan::kRequestIdMeta) io.Bytes(c.request_id, 32);
  if (c.flags & CallPlan::kPriorityMeta) io.Int(c.priority, INT32_MIN, INT32_MAX);
  io.Count(c.actions, 0, kMaxActions);
  for (ActionPlan& a : c.actions) Visit(io, a);
  io.Int(c.end, uint8_t{0}, uint8_t{CallPlan::kLastEnd});
}

template <class IO>
void Visit(IO& io, Plan& plan) {
  io.Count(plan.rounds, 1, kMaxRounds);
  for (RoundPlan& round : plan.rounds) {
    io.Count(round.calls, 1, kMaxCallsPerRound);
    for (CallPlan& call : round.calls) Visit(io, call);
  }
}

inline Plan ReadPlan(const uint8_t* data, size_t size) {
  Plan plan;
  PlanReader reader(data, size);
  Visit(reader, plan);
  return plan;
}

inline std::vector<uint8_t> WritePlan(Plan plan) {
  PlanWriter writer;
  Visit(writer, plan);
  return writer.Input();
}

}  // namespace ebzip::fuzz

#endif  // EBZIP_TESTS_FUZZ_GRPC_FUZZ_PLAN_H_
