// Puts each archive together on the device once the data-dependent sizes are
// known: where every section of every frame goes, then the headers (from
// host-written templates, with the data-dependent fields and CRCs filled in),
// the frame index and the trailer (FORMAT.md §3-§6).
#include "gpu/device_util.cuh"
#include "gpu/kernels.h"

namespace ebzip::gpu {
namespace {

// One thread per item: its frames are laid out one after another.
__global__ void LayoutKernel(int elem_size, const Segment* segments, Item* items,
                             uint32_t num_items, const Codebook* codebooks,
                             const SpecialCounts* tile_prefix, const SpecialCounts* tile_counts,
                             const uint64_t* word_prefix, const uint64_t* gap_prefix,
                             const uint64_t* chunk_words, const uint64_t* chunk_gaps,
                             const uint64_t* fill_mask_sizes, uint8_t** fill_mask_at,
                             FrameLayout* layouts, CrcJob* crc_jobs, uint64_t* crc_job_pieces) {
  __shared__ CrcTables tables;
  tables.Build();
  const uint32_t it = blockIdx.x * blockDim.x + threadIdx.x;
  if (it >= num_items) return;
  Item& item = items[it];
  uint64_t offset = item.frame_only ? 0 : format::kFileHeaderSize;
  for (uint64_t s = item.first_segment; s < item.first_segment + item.num_segments; ++s) {
    const Segment& seg = segments[s];
    FrameLayout& l = layouts[s];
    const uint64_t first_tile = seg.mask_tile_base;
    const uint64_t last_tile = seg.mask_tile_base + seg.mask_tiles - 1;
    const SpecialCounts& a = tile_prefix[first_tile];
    const SpecialCounts& b = tile_prefix[last_tile];
    const SpecialCounts& c = tile_counts[last_tile];
    l.outliers = b.outliers + c.outliers - a.outliers;
    l.verbatim = b.verbatim + c.verbatim - a.verbatim;
    l.fill_runs = b.run_starts + c.run_starts - a.run_starts;
    const uint64_t last_chunk = seg.chunk_base + seg.num_chunks - 1;
    const uint64_t words =
        word_prefix[last_chunk] + chunk_words[last_chunk] - word_prefix[seg.chunk_base];
    const uint64_t gaps =
        gap_prefix[last_chunk] + chunk_gaps[last_chunk] - gap_prefix[seg.chunk_base];
    const uint64_t groups = (seg.num_chunks + seg.chunk_group - 1) / seg.chunk_group;
    l.section_length[format::kCodeLengths] = codebooks[s].section_bytes;
    l.section_length[format::kChunkIndex] = groups * 8 + seg.num_chunks * 4;
    l.section_length[format::kGapArray] = gaps;
    l.section_length[format::kBitstream] = words * 4;
    l.section_length[format::kOutliers] = l.outliers * 8;
    l.section_length[format::kVerbatim] = Align8(l.verbatim * 4) + l.verbatim * elem_size;
    l.section_length[format::kFillRuns] = l.fill_runs * 8;
    if (seg.fill_coding == format::kFillCodingMask) {
      l.fill_runs = fill_mask_sizes[2 * s + 1];  // the mask's tokens
      l.section_length[format::kFillRuns] = fill_mask_sizes[2 * s];
    }
    l.frame_offset = offset;
    uint64_t at = offset + format::kFrameHeaderSize;
    for (int k = 0; k < kSections; ++k) {
      l.section_offset[k] = at;
      at += Align8(l.section_length[k]);
    }
    l.frame_size = at - offset;
    offset = at;
    for (int k = 0; k < kSections; ++k) {
      CrcJob& job = crc_jobs[s * kSections + k];
      job.data = item.archive + l.section_offset[k];
      job.length = l.section_length[k];
      job.result = &l.section_crc[k];
      l.section_crc[k] = 0;
      job.expected = 0;
      job.segment = static_cast<uint32_t>(s);
      crc_job_pieces[s * kSections + k] = (job.length + kCrcPieceBytes - 1) / kCrcPieceBytes;
    }
  }
  *item.archive_size =
      item.frame_only ? offset
                      : offset + format::FrameIndexSize(item.num_segments) + format::kTrailerSize;
  // Too big for the caller's buffer: the size says so and nothing is written.
  item.overflow = *item.archive_size > item.capacity;
  for (uint64_t s = item.first_segment; s < item.first_segment + item.num_segments; ++s) {
    if (segments[s].fill_coding == format::kFillCodingMask) {
      fill_mask_at[s] =
          item.overflow ? nullptr : item.archive + layouts[s].section_offset[format::kFillRuns];
    }
  }
  if (item.overflow) {
    for (uint64_t j = item.first_segment * kSections;
         j < (item.first_segment + item.num_segments) * kSections; ++j) {
      crc_jobs[j].length = 0;
      crc_job_pieces[j] = 0;
    }
  }
}

__global__ void CopyCodeLengthsKernel(const Segment* segments, const Item* items,
                                      const FrameLayout* layouts, const Codebook* codebooks,
                                      const uint8_t* code_sections) {
  const uint32_t s = blockIdx.x;
  const Codebook& book = codebooks[s];
  if (items[segments[s].item].overflow) return;
  uint8_t* dst = items[segments[s].item].archive + layouts[s].section_offset[format::kCodeLengths];
  for (uint64_t i = threadIdx.x; i < book.section_bytes; i += blockDim.x) {
    dst[i] = code_sections[book.section_offset + i];
  }
}

// Block per segment: the frame header and the zero padding after sections.
// The header is assembled in shared memory, checksummed there and then
// written out.
__global__ void FrameHeaderKernel(const Segment* segments, const Item* items,
                                  const FrameLayout* layouts, const uint8_t* templates) {
  __shared__ alignas(8) uint8_t h[format::kFrameHeaderSize];
  __shared__ CrcTables tables;  // a bit at a time, the header's CRC took 20 us
  tables.Build();
  const uint32_t s = blockIdx.x;
  const Item& item = items[segments[s].item];
  if (item.overflow) return;
  const FrameLayout& l = layouts[s];
  const uint8_t* t = templates + uint64_t{s} * format::kFrameHeaderSize;
  for (uint32_t i = threadIdx.x; i < format::kFrameHeaderSize; i += blockDim.x) h[i] = t[i];
  if (threadIdx.x < kSections) {
    const int k = threadIdx.x;
    for (uint64_t i = l.section_length[k]; i < Align8(l.section_length[k]); ++i) {
      item.archive[l.section_offset[k] + i] = 0;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    StoreBytes<double>(h + format::kFrameHeaderAbsBoundAt, item.abs_bound);
    StoreBytes<double>(h + format::kFrameHeaderQuantStepAt, item.quant_step);
    StoreBytes<uint64_t>(h + format::kFrameHeaderCountsAt, l.outliers);
    StoreBytes<uint64_t>(h + format::kFrameHeaderCountsAt + 8, l.verbatim);
    StoreBytes<uint64_t>(h + format::kFrameHeaderCountsAt + 16, l.fill_runs);
    for (int k = 0; k < kSections; ++k) {
      uint8_t* e = h + format::kFrameHeaderSectionsAt + 16 * k;
      StoreBytes<uint64_t>(e, l.section_length[k]);
      StoreBytes<uint32_t>(e + 8, l.section_crc[k]);
    }
    StoreBytes<uint32_t>(h + format::kFrameHeaderSize - 4,
                         tables.Compute(h, format::kFrameHeaderSize - 4));
  }
  __syncthreads();
  uint8_t* out = item.archive + l.frame_offset;
  for (uint32_t i = threadIdx.x; i < format::kFrameHeaderSize; i += blockDim.x) out[i] = h[i];
}

// Thread per item: file header, frame index and trailer, each assembled and
// checksummed in local memory, then written out.
__global__ void FileHeaderKernel(const Item* items, uint32_t num_items, const FrameLayout* layouts,
                                 const uint8_t* templates) {
  __shared__ CrcTables tables;
  tables.Build();
  const uint32_t it = blockIdx.x * blockDim.x + threadIdx.x;
  if (it >= num_items) return;
  const Item& item = items[it];
  if (item.overflow || item.frame_only) return;
  uint8_t* a = item.archive;
  alignas(8) uint8_t header[format::kFileHeaderSize];
  const uint8_t* t = templates + uint64_t{it} * format::kFileHeaderSize;
  for (size_t i = 0; i < format::kFileHeaderSize; ++i) header[i] = t[i];
  StoreBytes<double>(header + format::kFileHeaderAbsBoundAt, item.abs_bound);
  StoreBytes<uint32_t>(header + format::kFileHeaderSize - 4,
                       tables.Compute(header, format::kFileHeaderSize - 4));
  for (size_t i = 0; i < format::kFileHeaderSize; ++i) a[i] = header[i];

  const FrameLayout& last = layouts[item.first_segment + item.num_segments - 1];
  const uint64_t index_at = last.frame_offset + last.frame_size;
  uint8_t* index = a + index_at;
  alignas(8) uint8_t entry[16];
  StoreBytes<uint64_t>(entry, item.num_segments);
  uint32_t crc = tables.Compute(entry, 8);
  StoreBytes<uint64_t>(index + 8, item.num_segments);
  for (uint64_t f = 0; f < item.num_segments; ++f) {
    const FrameLayout& l = layouts[item.first_segment + f];
    StoreBytes<uint64_t>(entry, l.frame_offset);
    StoreBytes<uint64_t>(entry + 8, l.frame_size);
    crc = tables.Extend(crc, entry, 16);
    for (int i = 0; i < 16; ++i) index[16 + 16 * f + i] = entry[i];
  }
  StoreBytes<uint32_t>(index, format::kIndexMagic);
  StoreBytes<uint32_t>(index + 4, crc);
  const uint64_t index_size = format::FrameIndexSize(item.num_segments);
  alignas(8) uint8_t trailer[format::kTrailerSize];
  StoreBytes<uint64_t>(trailer, index_at);
  StoreBytes<uint32_t>(trailer + 8, format::kTrailerMagic);
  StoreBytes<uint32_t>(trailer + 12, tables.Compute(trailer, 12));
  for (size_t i = 0; i < format::kTrailerSize; ++i) index[index_size + i] = trailer[i];
}

}  // namespace

cudaError_t LaunchLayout(int elem_size, const Segment* segments, Item* items, uint32_t num_items,
                         const Codebook* codebooks, const SpecialCounts* tile_prefix,
                         const SpecialCounts* tile_counts, const uint64_t* word_prefix,
                         const uint64_t* gap_prefix, const uint64_t* chunk_words,
                         const uint64_t* chunk_gaps, const uint64_t* fill_mask_sizes,
                         uint8_t** fill_mask_at, FrameLayout* layouts, CrcJob* crc_jobs,
                         uint64_t* crc_job_pieces, cudaStream_t stream) {
  LayoutKernel<<<(num_items + 63) / 64, 64, 0, stream>>>(
      elem_size, segments, items, num_items, codebooks, tile_prefix, tile_counts, word_prefix,
      gap_prefix, chunk_words, chunk_gaps, fill_mask_sizes, fill_mask_at, layouts, crc_jobs,
      crc_job_pieces);
  return cudaGetLastError();
}

cudaError_t LaunchCopyCodeLengths(const Segment* segments, uint32_t num_segments, const Item* items,
                                  const FrameLayout* layouts, const Codebook* codebooks,
                                  const uint8_t* code_sections, cudaStream_t stream) {
  CopyCodeLengthsKernel<<<num_segments, kThreads, 0, stream>>>(segments, items, layouts, codebooks,
                                                               code_sections);
  return cudaGetLastError();
}

cudaError_t LaunchHeaders(const Segment* segments, uint32_t num_segments, const Item* items,
                          uint32_t num_items, const FrameLayout* layouts,
                          const uint8_t* frame_templates, const uint8_t* file_templates,
                          cudaStream_t stream) {
  FrameHeaderKernel<<<num_segments, 64, 0, stream>>>(segments, items, layouts, frame_templates);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  FileHeaderKernel<<<(num_items + 63) / 64, 64, 0, stream>>>(items, num_items, layouts,
                                                             file_templates);
  return cudaGetLastError();
}

}  // namespace ebzip::gpu
