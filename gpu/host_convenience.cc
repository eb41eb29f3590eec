// DeviceAvailable, DeviceDescription, and the host-data conveniences: each
// allocates what one call needs, copies in, runs, copies out and frees.
#include <cuda_runtime_api.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "gpu/cuda_status.h"
#include "gpu/gpu_codec.h"
#include "gpu/region_reader.h"

namespace ebzip::gpu {
namespace {

struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
struct HostFree {
  void operator()(void* p) const { cudaFreeHost(p); }
};
using DeviceBuffer = std::unique_ptr<void, DeviceFree>;
using HostBuffer = std::unique_ptr<void, HostFree>;

absl::StatusOr<DeviceBuffer> DeviceAlloc(size_t bytes) {
  void* p = nullptr;
  CUDA_RETURN_IF_ERROR(cudaMalloc(&p, std::max<size_t>(bytes, 1)));
  return DeviceBuffer(p);
}
absl::StatusOr<HostBuffer> HostAlloc(size_t bytes) {
  void* p = nullptr;
  CUDA_RETURN_IF_ERROR(cudaMallocHost(&p, std::max<size_t>(bytes, 1)));
  return HostBuffer(p);
}

// A workspace of the given size, owned.
struct OwnedWorkspace {
  DeviceBuffer device;
  HostBuffer host;
  Workspace view;
};
absl::StatusOr<OwnedWorkspace> MakeWorkspace(const WorkspaceSize& size) {
  auto d = DeviceAlloc(size.device_bytes);
  if (!d.ok()) return d.status();
  auto h = HostAlloc(size.host_bytes);
  if (!h.ok()) return h.status();
  OwnedWorkspace w{*std::move(d), *std::move(h), {}};
  w.view = {w.device.get(), size.device_bytes, w.host.get(), size.host_bytes};
  return w;
}

}  // namespace

absl::Status DeviceAvailable() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    return absl::UnavailableError(absl::StrCat("no CUDA device: ", cudaGetErrorString(e)));
  }
  if (count == 0) return absl::UnavailableError("no CUDA device");
  return absl::OkStatus();
}

absl::StatusOr<std::string> DeviceDescription(int ordinal) {
  cudaDeviceProp p;
  CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&p, ordinal));
  return absl::StrCat(p.name, " (sm_", p.major, p.minor, ", ", p.multiProcessorCount, " SMs, ",
                      p.totalGlobalMem >> 30, " GiB)");
}

absl::StatusOr<std::vector<uint8_t>> CompressHost(const ArraySpec& spec,
                                                  absl::Span<const uint8_t> data,
                                                  const CompressOptions& options) {
  if (auto s = ValidateCompressOptions(spec, options); !s.ok()) return s;
  if (data.size() != spec.num_bytes()) {
    return absl::InvalidArgumentError("data size does not match the shape");
  }
  const uint64_t capacity = MaxArchiveBytes(spec, options);
  auto input = DeviceAlloc(data.size());
  if (!input.ok()) return input.status();
  auto archive = DeviceAlloc(capacity);
  if (!archive.ok()) return archive.status();
  uint8_t* archive_bytes = static_cast<uint8_t*>(archive->get());
  auto sizes = DeviceAlloc(sizeof(uint64_t));
  if (!sizes.ok()) return sizes.status();
  CompressTask task{spec, options, input->get(), archive_bytes, capacity,
                    static_cast<uint64_t*>(sizes->get())};
  auto need = CompressWorkspaceSize({&task, 1});
  if (!need.ok()) return need.status();
  auto ws = MakeWorkspace(*need);
  if (!ws.ok()) return ws.status();
  CUDA_RETURN_IF_ERROR(cudaMemcpy(input->get(), data.data(), data.size(), cudaMemcpyHostToDevice));
  if (auto s = CompressBatch({&task, 1}, ws->view, nullptr); !s.ok()) return s;
  uint64_t size = 0;
  CUDA_RETURN_IF_ERROR(cudaMemcpy(&size, sizes->get(), sizeof size, cudaMemcpyDeviceToHost));
  if (size > capacity) return absl::InternalError("archive exceeded its worst-case size");
  std::vector<uint8_t> out(size);
  CUDA_RETURN_IF_ERROR(cudaMemcpy(out.data(), archive_bytes, size, cudaMemcpyDeviceToHost));
  return out;
}

absl::StatusOr<DecompressedArray> DecompressHost(absl::Span<const uint8_t> archive,
                                                 DecoderKind decoder) {
  auto info = ReadArchiveInfo(archive);
  if (!info.ok()) return info.status();
  DecompressedArray result;
  result.spec = info->spec();
  result.abs_bound = info->header.abs_bound;
  result.data.resize(result.spec.num_bytes());
  auto d_archive = DeviceAlloc(archive.size());
  if (!d_archive.ok()) return d_archive.status();
  auto d_out = DeviceAlloc(result.data.size());
  if (!d_out.ok()) return d_out.status();
  DecompressTask task{&*info, static_cast<const uint8_t*>(d_archive->get()), d_out->get()};
  auto need = DecompressWorkspaceSize({&task, 1}, decoder);
  if (!need.ok()) return need.status();
  auto ws = MakeWorkspace(*need);
  if (!ws.ok()) return ws.status();
  CUDA_RETURN_IF_ERROR(
      cudaMemcpy(d_archive->get(), archive.data(), archive.size(), cudaMemcpyHostToDevice));
  if (auto s = DecompressBatch({&task, 1}, decoder, ws->view, nullptr); !s.ok()) return s;
  if (auto s = FinishDecompress(ws->view, nullptr); !s.ok()) return s;
  CUDA_RETURN_IF_ERROR(
      cudaMemcpy(result.data.data(), d_out->get(), result.data.size(), cudaMemcpyDeviceToHost));
  return result;
}

absl::StatusOr<std::vector<uint8_t>> DecompressRegionHost(absl::Span<const uint8_t> archive,
                                                          const Hyperslab& region,
                                                          DecoderKind decoder) {
  auto info = ReadArchiveInfo(archive);
  if (!info.ok()) return info.status();
  if (auto s = CheckHyperslab(region, info->header.shape); !s.ok()) return s;
  std::vector<uint8_t> out(region.NumElements() * DTypeSize(info->header.dtype));
  RegionReader reader(RegionReader::kDefaultGroups, decoder);
  if (auto s = reader.Read(*info, archive, region, out.data()); !s.ok()) return s;
  return out;
}

}  // namespace ebzip::gpu
