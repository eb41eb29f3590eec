#include "server/gpu_backend.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gpu/cuda_status.h"
#include "gpu/gpu_codec.h"
#include "server/log.h"

namespace ebzip::server {
namespace {

constexpr uint64_t kAlign = 256;
uint64_t AlignUp(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// A bump allocator over a device's pool, reset for every batch.
class Carver {
 public:
  Carver(void* base, uint64_t bytes) : base_(static_cast<uint8_t*>(base)), bytes_(bytes) {}
  // nullptr when the pool is exhausted.
  uint8_t* Take(uint64_t n) {
    if (AlignUp(n) > bytes_ - used_) return nullptr;
    uint8_t* p = base_ + used_;
    used_ += AlignUp(n);
    return p;
  }
  uint64_t left() const { return bytes_ - used_; }

 private:
  uint8_t* base_;
  uint64_t bytes_;
  uint64_t used_ = 0;
};

struct Device {
  int ordinal = 0;
  std::string name;         // "gpu:0"
  std::string description;  // "NVIDIA H100 ..."
  cudaStream_t stream = nullptr;
  void* pool = nullptr;
  uint64_t pool_bytes = 0;
  void* pinned = nullptr;
  uint64_t pinned_bytes = 0;
  uint64_t total_bytes = 0;
  std::atomic<int64_t> busy_ns{0};
  std::atomic<bool> failed{false};
};

class GpuBackend final : public Backend {
 public:
  ~GpuBackend() override {
    for (auto& d : devices_) {
      cudaSetDevice(d->ordinal);
      if (d->stream != nullptr) cudaStreamDestroy(d->stream);
      if (d->pool != nullptr) cudaFree(d->pool);
      if (d->pinned != nullptr) cudaFreeHost(d->pinned);
    }
  }

  absl::Status Init(const GpuBackendOptions& options) {
    int count = 0;
    CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&count));
    for (int i = 0; i < count; ++i) {
      auto d = std::make_unique<Device>();
      d->ordinal = i;
      d->name = absl::StrCat("gpu:", i);
      auto description = gpu::DeviceDescription(i);
      if (!description.ok()) return description.status();
      d->description = *description;
      CUDA_RETURN_IF_ERROR(cudaSetDevice(i));
      size_t free_bytes = 0, total_bytes = 0;
      CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
      d->total_bytes = total_bytes;
      d->pool_bytes = options.memory_bytes != 0 ? options.memory_bytes : free_bytes / 4 * 3;
      CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking));
      CUDA_RETURN_IF_ERROR(cudaMalloc(&d->pool, d->pool_bytes));
      d->pinned_bytes = options.pinned_bytes;
      CUDA_RETURN_IF_ERROR(cudaMallocHost(&d->pinned, d->pinned_bytes));
      LogEvent(LogLevel::kInfo, "gpu worker ready",
               {{"device", d->name},
                {"description", d->description},
                {"pool_bytes", absl::StrCat(d->pool_bytes)},
                {"pinned_bytes", absl::StrCat(d->pinned_bytes)}});
      devices_.push_back(std::move(d));
    }
    if (devices_.empty()) return absl::UnavailableError("no CUDA device");
    return absl::OkStatus();
  }

  std::string name() const override { return "gpu"; }
  std::vector<std::string> devices() const override {
    std::vector<std::string> out;
    for (const auto& d : devices_) out.push_back(absl::StrCat(d->name, " ", d->description));
    return out;
  }
  int workers() const override { return static_cast<int>(devices_.size()); }
  bool Compatible(const Work& a, const Work& b) const override {
    return a.method == b.method && a.dtype() == b.dtype();
  }

  void Run(int worker, absl::Span<const std::shared_ptr<Work>> batch) override {
    Device& d = *devices_[worker];
    const auto start = std::chrono::steady_clock::now();
    std::vector<Work*> cpu;  // what goes to the CPU codec instead
    if (d.failed.load()) {
      for (const auto& w : batch) cpu.push_back(w.get());
    } else {
      absl::Status s = batch.front()->method == Method::kCompress ? Compress(d, batch, &cpu)
                                                                  : Decompress(d, batch, &cpu);
      if (!s.ok()) {
        // A CUDA error leaves the context unusable; later batches run on
        // the CPU codec (same bytes) and the log says why.
        d.failed.store(true);
        LogEvent(LogLevel::kError, "gpu failed; its work moves to the CPU codec",
                 {{"device", d.name}, {"error", std::string(s.message())}});
        cpu.clear();
        for (const auto& w : batch) {
          if (w->output.empty()) cpu.push_back(w.get());
        }
      }
    }
    for (Work* w : cpu) {
      w->device = "cpu";
      RunOnCpu(*w);
    }
    d.busy_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count();
  }

  std::vector<DeviceState> DeviceStates() const override {
    std::vector<DeviceState> out;
    for (const auto& d : devices_) {
      DeviceState s;
      s.device = d->name;
      s.memory_total_bytes = d->total_bytes;
      size_t free_bytes = 0, total_bytes = 0;
      if (cudaSetDevice(d->ordinal) == cudaSuccess &&
          cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
        s.memory_used_bytes = total_bytes - free_bytes;
      }
      s.busy_seconds = static_cast<double>(d->busy_ns.load()) * 1e-9;
      out.push_back(s);
    }
    return out;
  }

 private:
  // Host workspace of the codec first, the rest of the pinned buffer for
  // archive sizes.
  absl::Status Compress(Device& d, absl::Span<const std::shared_ptr<Work>> batch,
                        std::vector<Work*>* cpu) {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(d.ordinal));
    // Take as many works as fit in the pool, in order; the rest go around
    // again. A work that does not fit alone, or that the kernels do not
    // take, runs on the CPU.
    size_t next = 0;
    while (next < batch.size()) {
      Carver pool(d.pool, d.pool_bytes);
      std::vector<Work*> works;
      std::vector<gpu::CompressTask> tasks;
      for (; next < batch.size(); ++next) {
        Work* w = batch[next].get();
        if (w->cancelled.load()) {
          w->status = absl::CancelledError("the call was cancelled");
          continue;
        }
        gpu::CompressTask t;
        t.spec = w->spec;
        t.options = w->options;
        if (!gpu::CompressWorkspaceSize({&t, 1}).ok()) {
          cpu->push_back(w);
          continue;
        }
        t.capacity = gpu::MaxArchiveBytes(w->spec, w->options);
        tasks.push_back(t);
        auto ws = gpu::CompressWorkspaceSize(tasks);
        uint64_t need = 0;
        for (const auto& u : tasks) need += AlignUp(u.spec.num_bytes()) + AlignUp(u.capacity) + kAlign;
        const bool fits = ws.ok() && need + AlignUp(ws->device_bytes) <= d.pool_bytes &&
                          ws->host_bytes + tasks.size() * sizeof(uint64_t) + kAlign <= d.pinned_bytes;
        if (!fits) {
          tasks.pop_back();
          if (tasks.empty()) {
            cpu->push_back(w);
            continue;
          }
          break;  // this one starts the next round
        }
        works.push_back(w);
      }
      if (tasks.empty()) continue;
      // Place every buffer.
      auto ws_size = gpu::CompressWorkspaceSize(tasks);
      if (!ws_size.ok()) return ws_size.status();
      auto* sizes_dev = reinterpret_cast<uint64_t*>(pool.Take(tasks.size() * sizeof(uint64_t)));
      for (size_t i = 0; i < tasks.size(); ++i) {
        tasks[i].input = pool.Take(tasks[i].spec.num_bytes());
        tasks[i].archive = pool.Take(tasks[i].capacity);
        tasks[i].archive_size = sizes_dev + i;
      }
      gpu::Workspace ws;
      ws.device = pool.Take(ws_size->device_bytes);
      ws.device_bytes = ws_size->device_bytes;
      ws.host = d.pinned;
      ws.host_bytes = ws_size->host_bytes;
      auto* sizes_host =
          reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(d.pinned) + AlignUp(ws.host_bytes));
      for (size_t i = 0; i < tasks.size(); ++i) {
        CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(const_cast<void*>(tasks[i].input),
                                             works[i]->input.data(), works[i]->input.size(),
                                             cudaMemcpyHostToDevice, d.stream));
      }
      if (absl::Status s = gpu::CompressBatch(tasks, ws, d.stream); !s.ok()) {
        if (s.code() != absl::StatusCode::kInternal) {
          for (Work* w : works) cpu->push_back(w);
          continue;
        }
        return s;
      }
      CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(sizes_host, sizes_dev, tasks.size() * sizeof(uint64_t),
                                           cudaMemcpyDeviceToHost, d.stream));
      CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(d.stream));
      std::vector<std::vector<uint8_t>> archives(tasks.size());
      for (size_t i = 0; i < tasks.size(); ++i) {
        archives[i].resize(sizes_host[i]);
        CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(archives[i].data(), tasks[i].archive,
                                             sizes_host[i], cudaMemcpyDeviceToHost, d.stream));
      }
      CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(d.stream));
      for (size_t i = 0; i < tasks.size(); ++i) {
        works[i]->device = d.name;
        works[i]->SetArchive(std::move(archives[i]));
      }
    }
    return absl::OkStatus();
  }

  absl::Status Decompress(Device& d, absl::Span<const std::shared_ptr<Work>> batch,
                          std::vector<Work*>* cpu) {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(d.ordinal));
    size_t next = 0;
    while (next < batch.size()) {
      Carver pool(d.pool, d.pool_bytes);
      std::vector<Work*> works;
      std::vector<gpu::DecompressTask> tasks;
      for (; next < batch.size(); ++next) {
        Work* w = batch[next].get();
        if (w->cancelled.load()) {
          w->status = absl::CancelledError("the call was cancelled");
          continue;
        }
        gpu::DecompressTask t;
        t.info = &*w->info;
        if (!gpu::DecompressWorkspaceSize({&t, 1}, DecoderKind::kAuto).ok()) {
          cpu->push_back(w);
          continue;
        }
        tasks.push_back(t);
        auto ws = gpu::DecompressWorkspaceSize(tasks, DecoderKind::kAuto);
        uint64_t need = 0;
        for (size_t i = 0; i + 1 < tasks.size(); ++i) {
          need += AlignUp(works[i]->input.size()) + AlignUp(works[i]->info->spec().num_bytes());
        }
        need += AlignUp(w->input.size()) + AlignUp(w->info->spec().num_bytes());
        const bool fits = ws.ok() && need + AlignUp(ws->device_bytes) <= d.pool_bytes &&
                          ws->host_bytes <= d.pinned_bytes;
        if (!fits) {
          tasks.pop_back();
          if (tasks.empty()) {
            cpu->push_back(w);
            continue;
          }
          break;
        }
        works.push_back(w);
      }
      if (tasks.empty()) continue;
      auto ws_size = gpu::DecompressWorkspaceSize(tasks, DecoderKind::kAuto);
      if (!ws_size.ok()) return ws_size.status();
      for (size_t i = 0; i < tasks.size(); ++i) {
        uint8_t* archive = pool.Take(works[i]->input.size());
        tasks[i].archive = archive;
        tasks[i].output = pool.Take(works[i]->info->spec().num_bytes());
        CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(archive, works[i]->input.data(),
                                             works[i]->input.size(), cudaMemcpyHostToDevice,
                                             d.stream));
      }
      gpu::Workspace ws;
      ws.device = pool.Take(ws_size->device_bytes);
      ws.device_bytes = ws_size->device_bytes;
      ws.host = d.pinned;
      ws.host_bytes = ws_size->host_bytes;
      if (absl::Status s = gpu::DecompressBatch(tasks, DecoderKind::kAuto, ws, d.stream);
          !s.ok()) {
        if (s.code() != absl::StatusCode::kInternal) {
          for (Work* w : works) cpu->push_back(w);
          continue;
        }
        return s;
      }
      absl::Status found = gpu::FinishDecompress(ws, d.stream);
      if (found.code() == absl::StatusCode::kDataLoss) {
        // The device reports the batch's first inconsistency, not whose it
        // is: the CPU codec sorts out which archive is corrupt and decodes
        // the others.
        for (Work* w : works) cpu->push_back(w);
        continue;
      }
      if (!found.ok()) return found;
      std::vector<std::vector<uint8_t>> arrays(tasks.size());
      for (size_t i = 0; i < tasks.size(); ++i) {
        arrays[i].resize(works[i]->info->spec().num_bytes());
        CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(arrays[i].data(), tasks[i].output, arrays[i].size(),
                                             cudaMemcpyDeviceToHost, d.stream));
      }
      CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(d.stream));
      for (size_t i = 0; i < tasks.size(); ++i) {
        works[i]->device = d.name;
        works[i]->SetArray(std::move(arrays[i]));
      }
    }
    return absl::OkStatus();
  }

  std::vector<std::unique_ptr<Device>> devices_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> MakeGpuBackend(const GpuBackendOptions& options) {
  auto backend = std::make_unique<GpuBackend>();
  if (absl::Status s = backend->Init(options); !s.ok()) return s;
  return backend;
}

}  // namespace ebzip::server
