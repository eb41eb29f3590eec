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
  int64_t batches = 0;  // started; only its worker touches it
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
    fail_at_batch_ = options.fail_at_batch;
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
      absl::Status s =
          d.batches++ == fail_at_batch_
              ? absl::InternalError("fault injected for a test (GpuBackendOptions::fail_at_batch)")
          : batch.front()->method == Method::kCompress ? Compress(d, batch, &cpu)
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
  int64_t fail_at_batch_ = -1;

  // A work the kernels take, with its task and the pool bytes its own
  // buffers need.
  template <typename Task>
  struct Candidate {
    Work* work;
    Task task;
    uint64_t buffer_bytes;
  };
  // Works that run in one set of launches, and the codec workspace they need.
  template <typename Task>
  struct Round {
    std::vector<Work*> works;
    std::vector<Task> tasks;
    gpu::WorkspaceSize workspace;
  };

  // Cuts the candidates, in order, into rounds whose buffers and workspace
  // fit the device's pool and pinned memory. The workspace is planned once
  // per round, halving a round that does not fit, so a batch of n works costs
  // O(n) plans, not one per work added. A work too large to fit alone goes to
  // the CPU.
  template <typename Task, typename WorkspaceFor>
  static std::vector<Round<Task>> SplitIntoRounds(const Device& d,
                                                  const std::vector<Candidate<Task>>& c,
                                                  WorkspaceFor workspace_for,
                                                  uint64_t host_bytes_per_task,
                                                  std::vector<Work*>* cpu) {
    std::vector<Round<Task>> rounds;
    size_t i = 0;
    while (i < c.size()) {
      size_t end = i;
      uint64_t buffers = 0;
      while (end < c.size() && buffers + c[end].buffer_bytes <= d.pool_bytes) {
        buffers += c[end++].buffer_bytes;
      }
      for (;;) {
        if (end == i) {
          cpu->push_back(c[i++].work);
          break;
        }
        Round<Task> r;
        buffers = 0;
        for (size_t k = i; k < end; ++k) {
          r.works.push_back(c[k].work);
          r.tasks.push_back(c[k].task);
          buffers += c[k].buffer_bytes;
        }
        absl::StatusOr<gpu::WorkspaceSize> ws = workspace_for(r.tasks);
        if (ws.ok() && buffers + AlignUp(ws->device_bytes) <= d.pool_bytes &&
            AlignUp(ws->host_bytes) + host_bytes_per_task * r.tasks.size() <= d.pinned_bytes) {
          r.workspace = *ws;
          rounds.push_back(std::move(r));
          i = end;
          break;
        }
        end = i + (end - i) / 2;
      }
    }
    return rounds;
  }

  // The codec's workspace on the device at the pool's end, and at the start
  // of the pinned buffer.
  static gpu::Workspace PlaceWorkspace(const Device& d, Carver& pool,
                                       const gpu::WorkspaceSize& size) {
    gpu::Workspace ws;
    ws.device = pool.Take(size.device_bytes);
    ws.device_bytes = size.device_bytes;
    ws.host = d.pinned;
    ws.host_bytes = size.host_bytes;
    return ws;
  }

  absl::Status Compress(Device& d, absl::Span<const std::shared_ptr<Work>> batch,
                        std::vector<Work*>* cpu) {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(d.ordinal));
    std::vector<Candidate<gpu::CompressTask>> candidates;
    for (const auto& w : batch) {
      if (w->cancelled.load()) {
        w->status = absl::CancelledError("the call was cancelled");
        continue;
      }
      gpu::CompressTask t;
      t.spec = w->spec;
      t.options = w->options;
      if (!gpu::CompressWorkspaceSize({&t, 1}).ok()) {  // the kernels do not take it
        cpu->push_back(w.get());
        continue;
      }
      t.capacity = gpu::MaxArchiveBytes(w->spec, w->options);
      candidates.push_back(
          {w.get(), t, AlignUp(t.spec.num_bytes()) + AlignUp(t.capacity) + AlignUp(8)});
    }
    auto rounds = SplitIntoRounds(
        d, candidates, [](absl::Span<const gpu::CompressTask> t) { return gpu::CompressWorkspaceSize(t); },
        sizeof(uint64_t), cpu);
    for (auto& r : rounds) {
      Carver pool(d.pool, d.pool_bytes);
      std::vector<gpu::CompressTask>& tasks = r.tasks;
      for (size_t i = 0; i < tasks.size(); ++i) {
        tasks[i].input = pool.Take(tasks[i].spec.num_bytes());
        tasks[i].archive = pool.Take(tasks[i].capacity);
        tasks[i].archive_size = reinterpret_cast<uint64_t*>(pool.Take(sizeof(uint64_t)));
        CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(const_cast<void*>(tasks[i].input),
                                             r.works[i]->input.data(), r.works[i]->input.size(),
                                             cudaMemcpyHostToDevice, d.stream));
      }
      const gpu::Workspace ws = PlaceWorkspace(d, pool, r.workspace);
      if (absl::Status s = gpu::CompressBatch(tasks, ws, d.stream); !s.ok()) {
        if (s.code() != absl::StatusCode::kInternal) {
          for (Work* w : r.works) cpu->push_back(w);
          continue;
        }
        return s;
      }
      // Archive sizes land in the pinned buffer after the codec's part.
      auto* sizes =
          reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(d.pinned) + AlignUp(ws.host_bytes));
      for (size_t i = 0; i < tasks.size(); ++i) {
        CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(sizes + i, tasks[i].archive_size, sizeof(uint64_t),
                                             cudaMemcpyDeviceToHost, d.stream));
      }
      CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(d.stream));
      std::vector<std::vector<uint8_t>> archives(tasks.size());
      for (size_t i = 0; i < tasks.size(); ++i) {
        archives[i].resize(sizes[i]);
        CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(archives[i].data(), tasks[i].archive, sizes[i],
                                             cudaMemcpyDeviceToHost, d.stream));
      }
      CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(d.stream));
      for (size_t i = 0; i < tasks.size(); ++i) {
        r.works[i]->device = d.name;
        r.works[i]->SetArchive(std::move(archives[i]));
      }
    }
    return absl::OkStatus();
  }

  absl::Status Decompress(Device& d, absl::Span<const std::shared_ptr<Work>> batch,
                          std::vector<Work*>* cpu) {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(d.ordinal));
    std::vector<Candidate<gpu::DecompressTask>> candidates;
    for (const auto& w : batch) {
      if (w->cancelled.load()) {
        w->status = absl::CancelledError("the call was cancelled");
        continue;
      }
      gpu::DecompressTask t;
      t.info = &*w->info;
      if (!gpu::DecompressWorkspaceSize({&t, 1}, DecoderKind::kAuto).ok()) {
        cpu->push_back(w.get());
        continue;
      }
      candidates.push_back(
          {w.get(), t, AlignUp(w->input.size()) + AlignUp(w->info->spec().num_bytes())});
    }
    auto rounds = SplitIntoRounds(
        d, candidates,
        [](absl::Span<const gpu::DecompressTask> t) {
          return gpu::DecompressWorkspaceSize(t, DecoderKind::kAuto);
        },
        0, cpu);
    for (auto& r : rounds) {
      Carver pool(d.pool, d.pool_bytes);
      std::vector<gpu::DecompressTask>& tasks = r.tasks;
      for (size_t i = 0; i < tasks.size(); ++i) {
        uint8_t* archive = pool.Take(r.works[i]->input.size());
        tasks[i].archive = archive;
        tasks[i].output = pool.Take(r.works[i]->info->spec().num_bytes());
        CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(archive, r.works[i]->input.data(),
                                             r.works[i]->input.size(), cudaMemcpyHostToDevice,
                                             d.stream));
      }
      const gpu::Workspace ws = PlaceWorkspace(d, pool, r.workspace);
      if (absl::Status s = gpu::DecompressBatch(tasks, DecoderKind::kAuto, ws, d.stream);
          !s.ok()) {
        if (s.code() != absl::StatusCode::kInternal) {
          for (Work* w : r.works) cpu->push_back(w);
          continue;
        }
        return s;
      }
      absl::Status found = gpu::FinishDecompress(ws, d.stream);
      if (found.code() == absl::StatusCode::kDataLoss) {
        // The device reports the batch's first inconsistency, not whose it
        // is: the CPU codec sorts out which archive is corrupt and decodes
        // the others.
        for (Work* w : r.works) cpu->push_back(w);
        continue;
      }
      if (!found.ok()) return found;
      std::vector<std::vector<uint8_t>> arrays(tasks.size());
      for (size_t i = 0; i < tasks.size(); ++i) {
        arrays[i].resize(r.works[i]->info->spec().num_bytes());
        CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(arrays[i].data(), tasks[i].output, arrays[i].size(),
                                             cudaMemcpyDeviceToHost, d.stream));
      }
      CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(d.stream));
      for (size_t i = 0; i < tasks.size(); ++i) {
        r.works[i]->device = d.name;
        r.works[i]->SetArray(std::move(arrays[i]));
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
