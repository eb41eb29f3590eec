#include "gpu/runtime/host_codec.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <memory>
#include <mutex>

#include "gpu/gpu_codec.h"
#include "gpu/runtime/device.h"
#include "gpu/runtime/worker.h"

namespace ebzip::gpu::runtime {
namespace {

// Pinned memory for the worker's workspace and staging: arrays larger than
// it still go, in pieces (staged_copy.h).
constexpr uint64_t kPinnedBytes = uint64_t{256} << 20;

// The process's one device and worker, opened on first use. A device that
// failed (a CUDA error leaves its context unusable) is not used again.
class HostGpu {
 public:
  static HostGpu& Get() {
    static HostGpu* gpu = new HostGpu();  // never destroyed: CUDA may be gone at exit
    return *gpu;
  }

  // Runs `f` on the worker, or returns false when there is none.
  template <class F>
  bool Run(F&& f) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!Open()) return false;
    if (!worker_->MakeCurrent().ran()) {
      failed_ = true;
      return false;
    }
    const RunResult r = f(*worker_);
    if (r.device_lost()) failed_ = true;
    return r.ran();
  }

 private:
  bool Open() {
    if (failed_) return false;
    if (worker_) return true;
    failed_ = true;  // until it opens
    if (!GpuVisible()) return false;
    if (cudaSetDevice(0) != cudaSuccess) return false;
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) return false;
    // A quarter of what is free: the process may have other uses for it.
    auto device = Device::Open(0, DeviceOptions{HostWait::kBlock, free_bytes / 4});
    if (!device.ok()) return false;
    device_ = *std::move(device);
    auto worker = Worker::Create(*device_, device_->SplitPool(1)[0], kPinnedBytes);
    if (!worker.ok()) return false;
    worker_ = *std::move(worker);
    failed_ = false;
    return true;
  }

  std::mutex mu_;
  bool failed_ = false;
  std::unique_ptr<Device> device_;
  std::unique_ptr<Worker> worker_;  // destroyed before the device
};

}  // namespace

bool GpuVisible() {
  auto count = DeviceCount();
  return count.ok() && *count > 0;
}

absl::StatusOr<std::vector<uint8_t>> CompressOnGpu(const ArraySpec& spec,
                                                   absl::Span<const uint8_t> data,
                                                   const CompressOptions& options, RanOn* ran_on) {
  if (ran_on != nullptr) *ran_on = RanOn::kCpu;
  if (absl::Status s = ValidateCompressOptions(spec, options); !s.ok()) return s;
  if (data.size() != spec.num_bytes()) return Compress(spec, data, options);  // its error
  CompressTask task;
  task.spec = spec;
  task.options = options;
  auto workspace = CompressWorkspaceSize({&task, 1});
  std::vector<uint8_t> archive;
  if (workspace.ok()) {
    task.capacity = MaxArchiveBytes(spec, options);
    const bool ran = HostGpu::Get().Run([&](Worker& worker) {
      if (!worker.CompressFits(Worker::CompressBufferBytes(task), *workspace, 1)) {
        return RunResult::Unsupported(absl::ResourceExhaustedError("the array does not fit the device's pool"));
      }
      const Worker::CompressJob job{task, data, false};
      Worker::CompressRound round =
          worker.Compress({&job, 1}, *workspace, [](size_t, uint64_t) { return true; });
      if (round.result.ran()) archive = std::move(round.archives[0]);
      return round.result;
    });
    if (ran) {
      if (ran_on != nullptr) *ran_on = RanOn::kGpu;
      return archive;
    }
  }
  return Compress(spec, data, options);
}

absl::Status DecompressIntoOnGpu(const ArchiveInfo& info, absl::Span<const uint8_t> archive,
                                 absl::Span<uint8_t> out, RanOn* ran_on) {
  if (ran_on != nullptr) *ran_on = RanOn::kCpu;
  if (out.size() != info.spec().num_bytes()) return DecompressInto(info, archive, out);
  DecompressTask task;
  task.info = &info;
  auto workspace = DecompressWorkspaceSize({&task, 1}, DecoderKind::kAuto);
  if (workspace.ok()) {
    const bool ran = HostGpu::Get().Run([&](Worker& worker) {
      if (!worker.DecompressFits(Worker::DecompressBufferBytes(archive.size(), out.size()),
                                 *workspace)) {
        return RunResult::Unsupported(absl::ResourceExhaustedError("the archive does not fit the device's pool"));
      }
      const Worker::DecompressJob job{&info, archive};
      // The array comes down through pinned staging into the round's
      // vector (the caller's memory is not page-locked), then here.
      Worker::DecompressRound round =
          worker.Decompress({&job, 1}, *workspace, [](size_t, uint64_t) -> uint8_t* {
            return nullptr;
          });
      if (round.result.ran()) std::memcpy(out.data(), round.arrays[0].data(), out.size());
      return round.result;
    });
    // A corrupt archive makes the GPU round unsupported: the CPU codec
    // then says what is wrong with it.
    if (ran) {
      if (ran_on != nullptr) *ran_on = RanOn::kGpu;
      return absl::OkStatus();
    }
  }
  return DecompressInto(info, archive, out);
}

}  // namespace ebzip::gpu::runtime
