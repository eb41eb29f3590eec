#include "codec/memory_bounds.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>

#include "absl/types/span.h"
#include "codec/huffman_code.h"
#include "codec/huffman_decoder.h"
#include "codec/parallel.h"

namespace ebzip {
namespace {

// A byte count that saturates: once past UINT64_MAX it stays there through
// every operation, division and subtraction included, so a lying header
// gives "too much" rather than a small wrapped number.
class Bytes {
 public:
  static constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

  constexpr Bytes(uint64_t v = 0) : v_(v) {}  // NOLINT: counts convert freely
  uint64_t value() const { return v_; }
  bool saturated() const { return v_ == kMax; }

  friend Bytes operator+(Bytes a, Bytes b) {
    uint64_t r;
    return __builtin_add_overflow(a.v_, b.v_, &r) ? Bytes(kMax) : Bytes(r);
  }
  friend Bytes operator*(Bytes a, Bytes b) {
    if (a.v_ == 0 || b.v_ == 0) return 0;
    uint64_t r;
    return a.saturated() || b.saturated() || __builtin_mul_overflow(a.v_, b.v_, &r) ? Bytes(kMax)
                                                                                    : Bytes(r);
  }
  // a - b, or 0 when b is larger.
  friend Bytes operator-(Bytes a, Bytes b) {
    if (a.saturated()) return a;
    return a.v_ > b.v_ ? Bytes(a.v_ - b.v_) : Bytes(0);
  }
  Bytes& operator+=(Bytes b) { return *this = *this + b; }

  // ⌈a / d⌉ for d > 0 (0 counts as 1).
  friend Bytes CeilDiv(Bytes a, uint64_t d) {
    if (a.saturated()) return a;
    d = std::max<uint64_t>(d, 1);
    return a.v_ / d + (a.v_ % d != 0);
  }
  friend Bytes AlignUp8(Bytes a) { return CeilDiv(a, 8) * 8; }
  friend Bytes Max(Bytes a, Bytes b) { return a.v_ > b.v_ ? a : b; }
  friend Bytes Min(Bytes a, Bytes b) { return a.v_ < b.v_ ? a : b; }

 private:
  uint64_t v_;
};

// Elements per range of the frame codec's element-wise passes, and per task
// of its histogram (frame_codec.cc, huffman_encoder.cc).
constexpr uint64_t kRange = uint64_t{1} << 16;
constexpr uint64_t kHistogramTask = uint64_t{1} << 20;
// A range's list headers (RangeFindings: two vectors and a count), rounded up.
constexpr uint64_t kRangeFindingsBytes = 64;
// The decode table's fixed lookup (HuffmanTable::kLookupBits entries of u32).
constexpr uint64_t kLookupTableBytes = uint64_t{4} << HuffmanTable::kLookupBits;

// Small allocations not worth tracking one by one: ParallelFor's job and
// closure per pass and the queue entries offered to each thread, headers
// built on the side, statuses, shapes. A frame makes about a dozen passes.
Bytes FrameSlack(uint64_t threads) { return Bytes(64 << 10) + Bytes(1 << 10) * threads; }
Bytes CallSlack(uint64_t threads) { return Bytes(64 << 10) + Bytes(1 << 10) * threads; }

uint64_t Threads() { return static_cast<uint64_t>(std::max(1, DefaultThreadCount())); }

Bytes ElementSize(DType dtype) { return dtype == DType::kFloat32 ? 4 : 8; }

Bytes Product(absl::Span<const uint64_t> dims) {
  Bytes n = 1;
  for (uint64_t d : dims) n = n * d;
  return n;
}

// The Lorenzo block geometry ApplyPlaceholders allocates for: rows of the
// frame (its elements along the last dimension), blocks, and how many
// blocks can mix special and quantized elements (which takes two).
struct BlockCounts {
  Bytes rows;
  Bytes blocks;
  Bytes mixed;
};
BlockCounts CountBlocks(absl::Span<const uint64_t> shape, absl::Span<const uint16_t> block) {
  const Bytes n = Product(shape);
  if (shape.empty() || shape.size() > static_cast<size_t>(kMaxDims)) return {n, n, n};
  BlockCounts c{1, 1, 0};
  Bytes largest = 1;  // the most elements a block holds
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d + 1 < shape.size()) c.rows = c.rows * shape[d];
    const uint64_t b = d < block.size() ? std::max<uint64_t>(block[d], 1) : 1;
    c.blocks = c.blocks * CeilDiv(Bytes(shape[d]), b);
    largest = largest * std::min(b, shape[d]);
  }
  if (largest.value() >= 2) c.mixed = Min(c.blocks, CeilDiv(n, 2));
  return c;
}

// The longest code the encoder gives a symbol: its limit, and no more than
// an alphabet of that size can need (a Huffman tree over m symbols is at
// most m - 1 deep; a lone symbol gets 1 bit).
uint64_t LongestCode(Bytes alphabet, int max_code_length) {
  const uint64_t limit = static_cast<uint64_t>(std::max(max_code_length, 1));
  return alphabet.value() <= 2 ? 1 : std::min(limit, alphabet.value() - 1);
}

// What a frame of `n` elements takes in chunks, bitstream words and gap
// entries when every code is as long as it can be.
struct Stream {
  Bytes chunks;
  Bytes words;        // u32 words of the bitstream
  Bytes gap_entries;  // one byte each
};
Stream StreamFor(const FrameParams& p, Bytes n) {
  const uint64_t code_bits = LongestCode(Bytes(2) * p.radius, p.max_code_length);
  Stream s;
  s.chunks = CeilDiv(n, p.chunk_symbols);
  const Bytes bits = n * code_bits;
  const Bytes chunk_bits = Bytes(std::max<uint64_t>(p.chunk_symbols, 1)) * code_bits;
  // Each chunk starts on a word and a subsequence: at most one more of each
  // per chunk than the bits alone need, and no more than a full chunk's.
  s.words = Min(CeilDiv(bits, 32) + s.chunks, s.chunks * CeilDiv(chunk_bits, 32));
  if (p.gap_array) {
    s.gap_entries = Min(CeilDiv(bits, p.subsequence_bits) + s.chunks,
                        s.chunks * CeilDiv(chunk_bits, p.subsequence_bits));
  }
  return s;
}

// ChunkLayout: u32 length, u64 start word and u64 gap offset per chunk.
Bytes LayoutBytes(Bytes chunks) { return chunks * 20; }

// EncodeFrame's heap, apart from the histogram's per-task counts (which
// belong to threads, not frames), as its passes run: lists of verbatim
// elements and fill runs and the residuals for the whole frame, then the
// largest of what each later stage adds.
Bytes EncodeOwnedBytes(const FrameParams& p) {
  const Bytes n = Product(p.shape);
  const Bytes alphabet = Bytes(2) * p.radius;
  const Bytes ranges = CeilDiv(n, kRange);
  const Stream stream = StreamFor(p, n);
  const BlockCounts blocks = CountBlocks(p.shape, {p.block.data(), p.block.size()});
  const Bytes used_symbols = Min(alphabet, n);

  // Per range, u32 per verbatim element and u64 per fill run: a range of L
  // elements holds at most 6L + 2 bytes of them (fill runs alternating with
  // verbatim elements).
  const Bytes lists = ranges * kRangeFindingsBytes + n * 6 + ranges * 2;
  const Bytes residuals = n * 4;
  const Bytes symbols = n * 2;
  const Bytes encoded = LayoutBytes(stream.chunks) + stream.words * 4 + stream.gap_entries;
  // Placeholders: a byte per element, the first block of each row (u32), a
  // count and then a placeholder per block (u32), and the mixed blocks'
  // list (u64).
  const Bytes placeholders = n + blocks.rows * 4 + blocks.blocks * 4 + blocks.mixed * 8;
  // Code construction: the histogram (u32 per symbol), then code lengths
  // and, per used symbol, BuildCodeLengths' sorting and tree arrays.
  const Bytes code = alphabet * 5 + used_symbols * 58;
  // Huffman encoding: lengths (a byte) and codes (u32) per symbol.
  const Bytes encoding = symbols + alphabet * 5 + encoded;
  // Writing the frame: lengths, the code-length section and per-range
  // offsets besides the encoded stream; the frame header built on the side.
  const Bytes writing = alphabet + MaxCodeLengthBytes(alphabet.value()) + encoded + ranges * 16 +
                        format::kFrameHeaderSize;
  const Bytes lorenzo =
      lists + residuals + Max(Max(placeholders, symbols + code), Max(encoding, writing));
  if (p.version < 2) return lorenzo;
  // Version 2 (FORMAT.md §15): both entropy stages' codes are built (two
  // histograms and code-length tables), and interpolation holds, per
  // element, its working value, a symbol in element order and one in
  // symbol order, a flag, the fill mask, at most a verbatim index, and the
  // fill section (at most a 32-bit token per element). Before that the
  // candidates run one after another on a sample of at most 2^20 elements
  // (copied when it is not the whole frame), each freed before the next,
  // and only sized, not encoded.
  const Bytes element = ElementSize(p.dtype);
  const Bytes per_element = Max(Bytes(12), element + 14);
  const Bytes interp = n * (element + 14) + alphabet * 10 + Max(encoding, writing) +
                       Bytes(1) * (1 << 16);
  const Bytes sampled = Min(n, Bytes(uint64_t{1} << 20));
  const Bytes copy = sampled.value() < n.value() ? sampled * element : Bytes(0);
  // The best candidate's content is kept while the next one runs (a frame
  // that is its own sample is then coded from it): two at once.
  const Bytes sample = copy + sampled * per_element * 2 + ranges * kRangeFindingsBytes * 2 +
                       alphabet * 20 + Bytes(1) * (1 << 17);
  return Max(Max(lorenzo + alphabet * 10, interp), sample);
}

// The histogram's per-task counts (u32 per symbol) for tasks running at
// once on `threads` threads.
Bytes HistogramTaskBytes(const FrameParams& p, Bytes frames, uint64_t threads) {
  const Bytes tasks = frames * CeilDiv(Product(p.shape), kHistogramTask);
  return Min(tasks, threads) * (Bytes(4) * 2 * p.radius);
}

// One chunk's scratch in the gap-array or self-synchronizing decoder, for
// a chunk of `bits` bits: u64 start and end per subsequence (and a count
// offset), and a bit of codeword marks per bit.
Bytes ChunkScratch(Bytes bits, uint64_t subsequence_bits) {
  return CeilDiv(bits, subsequence_bits) * 16 + CeilDiv(bits, 64) * 8 + 8;
}

// The same for every chunk a frame decodes at once on `threads` threads,
// from either side: each thread's chunk at its largest, or (the chunks
// being disjoint pieces of the bitstream) the whole bitstream's worth plus
// a subsequence's rounding per thread.
Bytes FrameChunkScratch(Bytes bitstream_bytes, Bytes chunk_bits, uint64_t subsequence_bits,
                        uint64_t threads) {
  const Bytes per_thread = Bytes(threads) * ChunkScratch(chunk_bits, subsequence_bits);
  const Bytes whole =
      CeilDiv(bitstream_bytes * 128, subsequence_bits) + bitstream_bytes + Bytes(32) * threads;
  return Min(per_thread, whole);
}

// DecodeFrame while it decodes symbols, without the chunk scratch: code
// lengths, the bitstream's copy, the chunk layout, the symbols and the
// decode table. Afterwards it holds only symbols and residuals (6 bytes an
// element).
Bytes DecodeSymbolsBytes(Bytes n, Bytes alphabet, Bytes bitstream_bytes, Bytes chunks,
                         uint64_t max_code_length) {
  const Bytes table = Bytes(kLookupTableBytes) + alphabet * 2 + Bytes(16) * (max_code_length + 1);
  return alphabet + bitstream_bytes + LayoutBytes(chunks) + n * 2 + table;
}

// Frames of an archive: how many, and the rows of a full one and the last.
struct FrameRows {
  uint64_t count = 0;
  uint64_t full = 0;
  uint64_t last = 0;
};
FrameRows RowsOf(const format::FileHeader& h) {
  FrameRows r;
  r.count = h.frame_count;
  const uint64_t rows = h.shape.empty() ? 0 : h.shape[0];
  r.full = h.frame_rows == 0 ? rows : std::min(h.frame_rows, rows);
  r.last = r.full;
  // Only when the count agrees with the shape is the last frame known to
  // be the remainder; otherwise every frame counts as full. (Computed so
  // that no product exceeds `rows`: headers may be near 2^64.)
  if (r.full != 0 && r.count == rows / r.full + (rows % r.full != 0)) {
    r.last = rows - (r.count - 1) * r.full;
  }
  return r;
}

FrameParams WithRows(const FrameParams& p, uint64_t rows) {
  FrameParams f = p;
  if (!f.shape.empty()) f.shape[0] = rows;
  return f;
}

Bytes FramesBytes(const ArchivePlan& plan) {
  const FrameRows rows = RowsOf(plan.header);
  if (rows.count == 0) return 0;
  return Bytes(rows.count - 1) * MaxFrameBytes(WithRows(plan.frame, rows.full)) +
         MaxFrameBytes(WithRows(plan.frame, rows.last));
}

}  // namespace

uint64_t MaxFrameBytes(const FrameParams& p) {
  const Bytes n = Product(p.shape);
  const Bytes alphabet = Bytes(2) * p.radius;
  const Stream stream = StreamFor(p, n);
  const Bytes groups = CeilDiv(stream.chunks, p.chunk_group);
  Bytes size = format::kFrameHeaderSize;
  size += AlignUp8(alphabet.saturated() ? alphabet : MaxCodeLengthBytes(alphabet.value()));
  size += AlignUp8(groups * 8 + stream.chunks * 4);
  size += AlignUp8(stream.gap_entries);
  size += AlignUp8(stream.words * 4);
  size += AlignUp8(n * 8);  // every element an outlier: u32 index, i32 delta
  // Verbatim (u32 index and the value) and fill runs (u64 each, separated
  // by at least one element that is not fill) together take at most
  // (4 + element size) bytes an element and one run more; then the padding
  // inside the verbatim section and after both.
  size += n * (ElementSize(p.dtype) + 4) + 8 + 4 + 7 + 7;
  if (p.version >= 2) {
    // The run tokens' code lengths, and the fill mask: at most a token of
    // 32 bits per element and per split, its 16-byte header and a chunk
    // length per 4096 tokens.
    size += format::kTokensWithRunValues;
    const Bytes tokens = n + CeilDiv(n, format::kMaxMaskRun) * 2 + 2;
    size += tokens * 4 + 16 + CeilDiv(tokens, format::kMaskChunkTokens) * 4 + 8;
  }
  return size.value();
}

uint64_t MaxArchiveBytes(const ArchivePlan& plan) {
  return (Bytes(format::kFileHeaderSize) + plan.header.metadata_bytes + FramesBytes(plan) +
          format::FrameIndexSize(0) +
          Bytes(16) * plan.header.frame_count + format::kTrailerSize)
      .value();
}

uint64_t EncodeFrameWorkingBytes(const FrameParams& p) {
  const uint64_t threads = Threads();
  return (EncodeOwnedBytes(p) + HistogramTaskBytes(p, 1, threads) + FrameSlack(threads)).value();
}

uint64_t DecodeFrameWorkingBytes(const format::FrameHeader& h) {
  const uint64_t threads = Threads();
  const int ndim = std::clamp(h.ndim, 1, kMaxDims);
  const Bytes n = Product({h.shape.data(), static_cast<size_t>(ndim)});
  const Bytes alphabet = Bytes(2) * h.radius;
  const Bytes bitstream = h.sections[format::kBitstream].length;
  const uint64_t max_code_length = std::max<uint64_t>(h.max_code_length, 1);
  const Bytes chunks = CeilDiv(n, h.chunk_symbols);
  const Bytes chunk_bits =
      Min(Bytes(std::max<uint64_t>(h.chunk_symbols, 1)) * max_code_length, bitstream * 8);
  const Bytes symbols_phase = DecodeSymbolsBytes(n, alphabet, bitstream, chunks, max_code_length) +
                              FrameChunkScratch(bitstream, chunk_bits, h.subsequence_bits, threads);
  if (h.version < 2) return (Max(symbols_phase, n * 6) + FrameSlack(threads)).value();
  // Version 2: the fill mask (a byte an element) throughout, and
  // interpolation's symbols in both orders with a flag, plus its outliers.
  const Bytes outliers = Bytes(h.outlier_count) * 8;
  return (n + Max(symbols_phase + alphabet, n * 8 + outliers) + FrameSlack(threads)).value();
}

uint64_t CompressHeapBytes(const ArchivePlan& plan, uint64_t concurrent_frames) {
  const uint64_t threads = Threads();
  const FrameRows rows = RowsOf(plan.header);
  const Bytes open = std::min(std::max<uint64_t>(concurrent_frames, 1), rows.count);
  const FrameParams full = WithRows(plan.frame, rows.full);
  // The frames' vectors (24 bytes each) and the writer's index entries (16).
  const Bytes bookkeeping = Bytes(40) * rows.count;
  const Bytes working = open * (EncodeOwnedBytes(full) + FrameSlack(threads)) +
                        HistogramTaskBytes(full, open, threads);
  return (FramesBytes(plan) + Bytes(MaxArchiveBytes(plan)) + working + bookkeeping +
          CallSlack(threads))
      .value();
}

uint64_t DecompressHeapBytes(const format::FileHeader& header, uint64_t max_frame_bytes,
                             uint64_t concurrent_frames) {
  const uint64_t threads = Threads();
  const FrameRows rows = RowsOf(header);
  const Bytes open = std::min(std::max<uint64_t>(concurrent_frames, 1), rows.count);
  const Bytes output = Product(header.shape) * ElementSize(header.dtype);
  const Bytes row_elements =
      header.shape.empty() ? Bytes(0) : Product(absl::MakeConstSpan(header.shape).subspan(1));
  const Bytes n = row_elements * rows.full;

  // The frame header is not here: its parameters are taken at their worst
  // (the largest alphabet and code length, the smallest subsequence and
  // chunk). A frame's sections take at most F = max_frame_bytes less its
  // header; the bitstream B and the chunk index (at least 4 bytes a chunk)
  // share it, so the layout's 20 bytes a chunk, the bitstream's copy and
  // the chunk scratch (5 bytes a bitstream byte at 32-bit subsequences)
  // come to at most 6F together.
  const Bytes f = Bytes(max_frame_bytes) - format::kFrameHeaderSize;
  const Bytes alphabet = Bytes(2) * format::kMaxRadius;
  const uint64_t max_code_length = format::kMaxCodeLength;
  const uint64_t subsequence_bits = 32;
  // Version 2's fill mask and interpolation (see DecodeFrameWorkingBytes)
  // are counted for every archive, and its outliers (8 bytes each) lie in
  // the frame's F bytes.
  const Bytes fixed = DecodeSymbolsBytes(n, alphabet, 0, 0, max_code_length) + n + alphabet;
  // Either the chunk scratch is counted with each frame's bitstream...
  const Bytes per_frame_scratch =
      open * Max(fixed + f * 6 + Bytes(32) * threads, n * 9 + f);
  // ...or once for the threads, each at the largest chunk.
  const Bytes chunk_bits = Min(Bytes(format::kMaxChunkSymbols) * max_code_length, f * 8);
  const Bytes stream_and_layout = Min(f * 5, f + n * 20);
  const Bytes per_thread_scratch = open * Max(fixed + stream_and_layout, n * 9 + f) +
                                   Bytes(threads) * ChunkScratch(chunk_bits, subsequence_bits);
  // ArchiveInfo: an index entry and a parsed header per frame.
  const Bytes info = Bytes(16 + sizeof(format::FrameHeader)) * rows.count;
  return (output + Min(per_frame_scratch, per_thread_scratch) + open * FrameSlack(threads) + info +
          CallSlack(threads))
      .value();
}

}  // namespace ebzip
