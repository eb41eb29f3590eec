#include "bench/gpu_region_timing.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "codec/archive.h"
#include "gpu/gpu_codec.h"
#include "gpu/region_reader.h"

namespace ebzip::bench {
namespace {

// Buffers made once for the full decode: on the device (archive, array,
// workspace) and page-locked on the host (archive copy, array, region).
struct Buffers {
  void* d_archive = nullptr;
  void* d_array = nullptr;
  gpu::Workspace ws;
  void* h_archive = nullptr;
  void* h_array = nullptr;
  void* h_region = nullptr;
  ~Buffers() {
    cudaFree(d_archive), cudaFree(d_array), cudaFree(ws.device);
    cudaFreeHost(ws.host), cudaFreeHost(h_archive), cudaFreeHost(h_array), cudaFreeHost(h_region);
  }
};

std::string Check(cudaError_t e, const char* what) {
  return e == cudaSuccess ? "" : absl::StrCat(what, ": ", cudaGetErrorString(e));
}

template <typename F>
double Median3(F&& f, std::string* error) {
  std::vector<double> t;
  for (int r = 0; r < 3 && error->empty(); ++r) {
    const auto start = std::chrono::steady_clock::now();
    *error = f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

GpuRegionTimes TimeGpuRegions(const std::vector<uint8_t>& archive,
                              const std::vector<Hyperslab>& regions,
                              const std::vector<std::vector<uint8_t>>& expected) {
  GpuRegionTimes out;
  if (absl::Status s = gpu::DeviceAvailable(); !s.ok()) {
    out.error = std::string(s.message());
    return out;
  }
  out.device = gpu::DeviceDescription(0).value_or("?");
  auto info = ReadArchiveInfo(archive);
  if (!info.ok()) {
    out.error = std::string(info.status().message());
    return out;
  }
  const uint64_t array_bytes = info->spec().num_bytes();
  const size_t elem = DTypeSize(info->header.dtype);
  uint64_t region_bytes = 0;
  for (const Hyperslab& r : regions) region_bytes = std::max(region_bytes, r.NumElements() * elem);
  Buffers b;
  gpu::DecompressTask full_task{&*info, nullptr, nullptr};
  auto ws = gpu::DecompressWorkspaceSize({&full_task, 1}, DecoderKind::kAuto);
  if (!ws.ok()) {
    out.error = std::string(ws.status().message());
    return out;
  }
  std::string& e = out.error;
  e = Check(cudaMalloc(&b.d_archive, archive.size()), "device archive");
  if (e.empty()) e = Check(cudaMalloc(&b.d_array, array_bytes), "device array");
  if (e.empty()) e = Check(cudaMalloc(&b.ws.device, ws->device_bytes + 1), "workspace");
  if (e.empty()) e = Check(cudaMallocHost(&b.ws.host, ws->host_bytes + 1), "host workspace");
  if (e.empty()) e = Check(cudaMallocHost(&b.h_archive, archive.size()), "pinned archive");
  if (e.empty()) e = Check(cudaMallocHost(&b.h_array, array_bytes), "pinned array");
  if (e.empty()) e = Check(cudaMallocHost(&b.h_region, region_bytes + 1), "pinned region");
  if (!e.empty()) return out;
  b.ws.device_bytes = ws->device_bytes;
  b.ws.host_bytes = ws->host_bytes;
  std::memcpy(b.h_archive, archive.data(), archive.size());
  std::vector<uint8_t> pageable_array(array_bytes);
  std::vector<uint8_t> pageable_region(region_bytes);
  std::memset(pageable_array.data(), 0, array_bytes);  // mapped, as a caller's array is
  std::memset(b.h_array, 0, array_bytes);
  full_task = {&*info, static_cast<const uint8_t*>(b.d_archive), b.d_array};

  for (int pinned = 1; pinned >= 0 && e.empty(); --pinned) {
    const int at = pinned ? 0 : 1;
    const void* from = pinned ? b.h_archive : archive.data();
    out.full[at] = Median3(
        [&]() -> std::string {
          if (auto s = Check(cudaMemcpyAsync(b.d_archive, from, archive.size(),
                                             cudaMemcpyHostToDevice, nullptr),
                             "upload");
              !s.empty()) {
            return s;
          }
          if (auto s = gpu::DecompressBatch({&full_task, 1}, DecoderKind::kAuto, b.ws, nullptr);
              !s.ok()) {
            return std::string(s.message());
          }
          void* to = pinned ? b.h_array : pageable_array.data();
          if (auto s = Check(cudaMemcpyAsync(to, b.d_array, array_bytes, cudaMemcpyDeviceToHost,
                                             nullptr),
                             "download");
              !s.empty()) {
            return s;
          }
          absl::Status s = gpu::FinishDecompress(b.ws, nullptr);
          return s.ok() ? "" : std::string(s.message());
        },
        &e);
  }
  // Regions through gpu::RegionReader, in kRegionVariants' ways. Each
  // reader runs each region once before its timing, so its device buffers
  // are made.
  out.regions.assign(regions.size(), std::vector<double>(kRegionVariants.size(), 0));
  std::vector<std::unique_ptr<gpu::RegionReader>> readers;
  for (const RegionVariant& v : kRegionVariants) {
    readers.push_back(std::make_unique<gpu::RegionReader>(v.groups));
  }
  for (size_t k = 0; k < regions.size() && e.empty(); ++k) {
    const uint64_t bytes = regions[k].NumElements() * elem;
    for (size_t at = 0; at < kRegionVariants.size() && e.empty(); ++at) {
      const bool pinned = kRegionVariants[at].page_locked;
      const absl::Span<const uint8_t> from(
          pinned ? static_cast<const uint8_t*>(b.h_archive) : archive.data(), archive.size());
      uint8_t* to = pinned ? static_cast<uint8_t*>(b.h_region) : pageable_region.data();
      auto read = [&]() -> std::string {
        absl::Status s = readers[at]->Read(*info, from, regions[k], to);
        return s.ok() ? "" : std::string(s.message());
      };
      e = read();
      if (e.empty()) out.regions[k][at] = Median3(read, &e);
      if (e.empty() && std::memcmp(to, expected[k].data(), bytes) != 0) {
        e = absl::StrCat("region ", regions[k].ToString(), " differs from the CPU codec's");
      }
    }
  }
  return out;
}

}  // namespace ebzip::bench
