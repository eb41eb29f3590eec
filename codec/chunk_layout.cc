#include "codec/chunk_layout.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "codec/byte_io.h"
#include "codec/format.h"

namespace ebzip {

ChunkLayout ChunkLayout::FromBits(std::vector<uint32_t> bits, uint32_t subsequence_bits) {
  ChunkLayout l;
  l.bits = std::move(bits);
  l.start_word.resize(l.bits.size());
  l.gap_offset.resize(l.bits.size());
  for (size_t c = 0; c < l.bits.size(); ++c) {
    l.start_word[c] = l.total_words;
    l.gap_offset[c] = l.total_gap_entries;
    l.total_words += WordsForBits(l.bits[c]);
    l.total_gap_entries += (l.bits[c] + subsequence_bits - 1) / subsequence_bits;
  }
  return l;
}

uint64_t ChunkIndexBytes(uint64_t num_chunks, uint32_t chunk_group) {
  return (num_chunks + chunk_group - 1) / chunk_group * 8 + num_chunks * 4;
}

void WriteChunkIndex(const ChunkLayout& layout, uint32_t chunk_group, uint8_t* out) {
  for (size_t c = 0; c < layout.bits.size(); c += chunk_group) {
    StoreLE<uint64_t>(out, layout.start_word[c]);
    out += 8;
  }
  for (uint32_t b : layout.bits) {
    StoreLE<uint32_t>(out, b);
    out += 4;
  }
}

void AppendChunkIndex(const ChunkLayout& layout, uint32_t chunk_group, std::vector<uint8_t>* out) {
  const size_t at = out->size();
  out->resize(at + ChunkIndexBytes(layout.bits.size(), chunk_group));
  WriteChunkIndex(layout, chunk_group, out->data() + at);
}

absl::StatusOr<ChunkLayout> ParseChunkIndex(absl::Span<const uint8_t> bytes, uint64_t num_chunks,
                                            uint32_t chunk_group, uint32_t subsequence_bits,
                                            uint64_t max_chunk_bits, uint64_t bitstream_words) {
  auto corrupt = [](absl::string_view what) {
    return format::CorruptArchive(absl::StrCat("chunk index: ", what));
  };
  const uint64_t groups = (num_chunks + chunk_group - 1) / chunk_group;
  if (bytes.size() != groups * 8 + num_chunks * 4) return corrupt("size");
  std::vector<uint32_t> bits(num_chunks);
  for (uint64_t c = 0; c < num_chunks; ++c) {
    bits[c] = LoadLE<uint32_t>(bytes.data() + groups * 8 + c * 4);
    if (bits[c] > max_chunk_bits) return corrupt("chunk longer than its symbols allow");
  }
  ChunkLayout layout = ChunkLayout::FromBits(std::move(bits), subsequence_bits);
  for (uint64_t g = 0; g < groups; ++g) {
    if (LoadLE<uint64_t>(bytes.data() + g * 8) != layout.start_word[g * chunk_group]) {
      return corrupt("group offset disagrees with chunk lengths");
    }
  }
  if (layout.total_words != bitstream_words) return corrupt("lengths disagree with bitstream size");
  return layout;
}

}  // namespace ebzip
