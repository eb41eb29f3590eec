#include "gpu/region_reader.h"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "codec/region_plan.h"
#include "gpu/cuda_status.h"

namespace ebzip::gpu {

RegionReader::RegionReader(size_t max_groups, DecoderKind decoder)
    : max_groups_(std::max<size_t>(max_groups, 1)), decoder_(decoder) {}

RegionReader::~RegionReader() {
  Sync().IgnoreError();  // nothing may still use a buffer freed below
  Free(&archive_, false);
  Free(&out_, false);
  for (Slot& s : slots_) {
    cudaStreamDestroy(s.stream);
    Free(&s.rows, false);
    Free(&s.ws_device, false);
    Free(&s.ws_host, true);
  }
}

void RegionReader::Free(Buffer* b, bool host) {
  if (b->p != nullptr) host ? cudaFreeHost(b->p) : cudaFree(b->p);
  *b = {};
}

absl::Status RegionReader::Grow(Buffer* b, size_t bytes, bool host) {
  if (b->p != nullptr && b->bytes >= bytes) return absl::OkStatus();
  Free(b, host);
  const size_t size = std::max<size_t>(bytes, 1);
  CUDA_RETURN_IF_ERROR(host ? cudaMallocHost(&b->p, size) : cudaMalloc(&b->p, size));
  b->bytes = size;
  return absl::OkStatus();
}

absl::Status RegionReader::Sync() {
  absl::Status status;
  for (const Slot& s : slots_) {
    status.Update(CudaStatus(cudaStreamSynchronize(s.stream), "region stream"));
  }
  return status;
}

absl::Status RegionReader::Read(const ArchiveInfo& info, absl::Span<const uint8_t> archive,
                                const Hyperslab& region, void* out) {
  absl::StatusOr<std::vector<WholeFramesPlan>> plans = PlanFrameGroups(info, region, max_groups_);
  if (!plans.ok()) return plans.status();
  if (plans->empty()) return absl::OkStatus();
  const size_t groups = plans->size();
  const uint64_t first_byte = plans->front().bytes_begin;
  if (plans->back().bytes_end > archive.size()) {
    return format::CorruptArchive("frames past the end of the archive");
  }
  const size_t elem = DTypeSize(info.header.dtype);
  if (auto s = Grow(&archive_, plans->back().bytes_end - first_byte, false); !s.ok()) return s;
  if (auto s = Grow(&out_, region.NumElements() * elem, false); !s.ok()) return s;
  while (slots_.size() < groups) {
    Slot slot;
    CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&slot.stream, cudaStreamNonBlocking));
    slots_.push_back(slot);
  }
  std::vector<Hyperslab> boxes(groups);
  std::vector<DecompressTask> tasks(groups);
  for (size_t g = 0; g < groups; ++g) {
    const WholeFramesPlan& p = (*plans)[g];
    boxes[g] = PiecesBox(p.pieces);
    tasks[g].info = &p.part;
    tasks[g].wanted = &boxes[g];
    absl::StatusOr<WorkspaceSize> need = DecompressWorkspaceSize({&tasks[g], 1}, decoder_);
    if (!need.ok()) return need.status();
    Slot& slot = slots_[g];
    if (auto s = Grow(&slot.rows, p.part.spec().num_bytes(), false); !s.ok()) return s;
    if (auto s = Grow(&slot.ws_device, need->device_bytes, false); !s.ok()) return s;
    if (auto s = Grow(&slot.ws_host, need->host_bytes, true); !s.ok()) return s;
  }

  // Every group is enqueued before any is waited for: up, decoded,
  // gathered, down, each on its own stream.
  auto* d_archive = static_cast<uint8_t*>(archive_.p);
  auto* d_out = static_cast<uint8_t*>(out_.p);
  auto* h_out = static_cast<uint8_t*>(out);
  auto workspace = [](const Slot& s) {
    return Workspace{s.ws_device.p, s.ws_device.bytes, s.ws_host.p, s.ws_host.bytes};
  };
  absl::Status status;
  size_t launched = 0;  // groups whose decode was enqueued
  for (size_t g = 0; g < groups && status.ok(); ++g) {
    const WholeFramesPlan& p = (*plans)[g];
    const Slot& slot = slots_[g];
    uint8_t* bytes = d_archive + (p.bytes_begin - first_byte);
    tasks[g].archive = bytes;
    tasks[g].output = slot.rows.p;
    status = CudaStatus(
        cudaMemcpyAsync(bytes, archive.data() + p.bytes_begin, p.bytes_end - p.bytes_begin,
                        cudaMemcpyHostToDevice, slot.stream),
        "region upload");
    if (status.ok()) {
      status = DecompressBatch({&tasks[g], 1}, decoder_, workspace(slot), slot.stream);
    }
    if (!status.ok()) break;
    ++launched;
    const ArraySpec rows_spec = p.part.spec();
    for (size_t k = 0; k < p.pieces.size() && status.ok(); ++k) {
      const WholeFramesPlan::Piece& piece = p.pieces[k];
      status = GatherRegion(slot.rows.p, rows_spec, piece.rows, d_out + piece.out_element * elem,
                            slot.stream);
    }
    if (!status.ok()) break;
    // The group's pieces are consecutive in the output.
    const WholeFramesPlan::Piece& last = p.pieces.back();
    const uint64_t begin = p.pieces.front().out_element * elem;
    const uint64_t end = (last.out_element + last.rows.NumElements()) * elem;
    status = CudaStatus(cudaMemcpyAsync(h_out + begin, d_out + begin, end - begin,
                                        cudaMemcpyDeviceToHost, slot.stream),
                        "region download");
  }
  for (size_t g = 0; g < launched; ++g) {
    status.Update(FinishDecompress(workspace(slots_[g]), slots_[g].stream));
  }
  if (!status.ok()) Sync().IgnoreError();  // nothing left running on the buffers
  return status;
}

}  // namespace ebzip::gpu
