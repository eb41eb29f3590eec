#include "server/gpu_backend.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gpu/cuda_status.h"
#include "gpu/gpu_codec.h"
#include "server/cpu_codec.h"
#include "server/log.h"

namespace ebzip::server {
namespace {

constexpr uint64_t kAlign = 256;
uint64_t AlignUp(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

const char* WaitName(GpuWait wait) {
  for (const GpuWaitName& w : kGpuWaitNames) {
    if (w.wait == wait) return w.name;
  }
  return "?";
}

unsigned ScheduleFlag(GpuWait wait) {
  switch (wait) {
    case GpuWait::kSpin:
      return cudaDeviceScheduleSpin;
    case GpuWait::kBlock:
      return cudaDeviceScheduleBlockingSync;
    case GpuWait::kYield:
      break;
  }
  return cudaDeviceScheduleYield;
}

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

// Bytes that move between a host buffer and a place on the device.
struct Piece {
  const uint8_t* host;
  uint8_t* device;
  uint64_t bytes;
  bool pinned = false;  // `host` is page-locked (a HostBlock of the backend's pool)
};

// Copies pieces up. A pinned piece goes by DMA from where it is. The others
// go through pinned `staging` (room bytes) when their device places, in
// ascending order, span no more than that and hold no pinned piece's place
// (the span's DMA would overwrite it): one host memcpy each and one DMA for
// them all, instead of a pageable copy each (which the driver stages through
// its own pinned buffer and finishes before returning). Otherwise they go
// directly, pageable.
absl::Status Upload(cudaStream_t stream, absl::Span<const Piece> all, uint8_t* staging,
                    uint64_t room) {
  std::vector<Piece> pieces;
  for (const Piece& p : all) {
    if (!p.pinned) {
      pieces.push_back(p);
      continue;
    }
    CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(p.device, p.host, p.bytes, cudaMemcpyHostToDevice, stream));
  }
  if (pieces.empty()) return absl::OkStatus();
  uint8_t* base = pieces.front().device;
  uint64_t span = 0;
  bool ascending = true;
  for (const Piece& p : pieces) {
    ascending = ascending && p.device >= base + span;
    span = static_cast<uint64_t>(p.device - base) + p.bytes;
  }
  for (const Piece& p : all) {
    if (p.pinned && p.device < base + span && p.device + p.bytes > base) ascending = false;
  }
  if (ascending && span <= room) {
    for (const Piece& p : pieces) std::memcpy(staging + (p.device - base), p.host, p.bytes);
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(base, staging, span, cudaMemcpyHostToDevice, stream));
    return absl::OkStatus();
  }
  for (const Piece& p : pieces) {
    CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(p.device, p.host, p.bytes, cudaMemcpyHostToDevice, stream));
  }
  return absl::OkStatus();
}

// Results on their way down, in two steps so that their copies can be
// enqueued before the stream is waited for anyway (decompression waits for
// the device's verdict). Start enqueues them: each straight into a block of
// `pool` (page-locked) when one is given and has a block to spare, which
// then is the result, with no copy on the worker; the others through pinned
// `staging` when they all fit in its `room` bytes, else straight into their
// result vectors. Once the stream has been synchronized, Finish hands the
// results over, those in staging copied out once (no zero-filled vector
// first).
class Download {
 public:
  struct Source {
    const uint8_t* device;
    uint64_t bytes;
  };
  struct Result {
    HostBlock block;  // when it came down into the pool
    std::vector<uint8_t> bytes;
  };

  Download() = default;
  Download(const Download&) = delete;
  Download& operator=(const Download&) = delete;
  // Left without Finish (an error on the way): copies into blocks may still
  // be running, so the blocks go back to the pool only once the stream is
  // done, and never if it cannot say so (its context is lost).
  ~Download() {
    if (stream_ == nullptr) return;
    const bool done = cudaStreamSynchronize(stream_) == cudaSuccess;
    for (Result& r : results_) {
      if (!done) r.block.Abandon();
    }
  }

  absl::Status Start(cudaStream_t stream, std::vector<Source> sources, uint8_t* staging,
                     uint64_t room, HostBlockPool* pool = nullptr) {
    stream_ = stream;
    sources_ = std::move(sources);
    results_.resize(sources_.size());
    uint64_t total = 0;
    for (size_t i = 0; i < sources_.size(); ++i) {
      if (pool != nullptr) results_[i].block = pool->Take(sources_[i].bytes);
      if (!results_[i].block) total += AlignUp(sources_[i].bytes);
    }
    staging_ = total <= room ? staging : nullptr;
    uint64_t at = 0;
    for (size_t i = 0; i < sources_.size(); ++i) {
      Result& r = results_[i];
      uint8_t* to;
      if (r.block) {
        r.block.SetFilled(sources_[i].bytes);
        to = r.block.data();
      } else if (staging_ != nullptr) {
        to = staging_ + at;
        at += AlignUp(sources_[i].bytes);
      } else {
        r.bytes.resize(sources_[i].bytes);
        to = r.bytes.data();
      }
      CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(to, sources_[i].device, sources_[i].bytes,
                                           cudaMemcpyDeviceToHost, stream));
    }
    return absl::OkStatus();
  }

  // After the stream has been synchronized.
  std::vector<Result> Finish() {
    stream_ = nullptr;
    if (staging_ != nullptr) {
      uint64_t at = 0;
      for (size_t i = 0; i < sources_.size(); ++i) {
        if (results_[i].block) continue;
        results_[i].bytes.assign(staging_ + at, staging_ + at + sources_[i].bytes);
        at += AlignUp(sources_[i].bytes);
      }
    }
    return std::move(results_);
  }

 private:
  cudaStream_t stream_ = nullptr;  // between Start and Finish
  std::vector<Source> sources_;
  uint8_t* staging_ = nullptr;
  std::vector<Result> results_;
};

// One GPU, shared by its workers (lanes).
struct Gpu {
  int ordinal = 0;
  std::string name;         // "gpu:0"
  std::string description;  // "NVIDIA H100 ..."
  uint64_t total_bytes = 0;
  void* pool = nullptr;
  std::atomic<int64_t> batches{0};  // started, over all its lanes
  std::atomic<bool> failed{false};
  std::atomic<bool> retired{false};  // failed with other GPUs left: its lanes stop

  // Busy time counts while at least one lane runs, so it never exceeds
  // wall time however many lanes there are.
  absl::Mutex mu;
  int running ABSL_GUARDED_BY(mu) = 0;
  std::chrono::steady_clock::time_point busy_since ABSL_GUARDED_BY(mu);
  int64_t busy_ns ABSL_GUARDED_BY(mu) = 0;
};

// One scheduler worker on a GPU: its own stream, pool slice and pinned
// memory, so lanes of one GPU never wait for each other.
struct Lane {
  Gpu* gpu = nullptr;
  cudaStream_t stream = nullptr;
  uint8_t* pool = nullptr;
  uint64_t pool_bytes = 0;
  void* pinned = nullptr;
  uint64_t pinned_bytes = 0;
};

class GpuBackend final : public Backend {
 public:
  ~GpuBackend() override {
    for (auto& l : lanes_) {
      cudaSetDevice(l->gpu->ordinal);
      if (l->stream != nullptr) cudaStreamDestroy(l->stream);
      if (l->pinned != nullptr) cudaFreeHost(l->pinned);
    }
    for (auto& g : gpus_) {
      cudaSetDevice(g->ordinal);
      if (g->pool != nullptr) cudaFree(g->pool);
    }
  }

  absl::Status Init(const GpuBackendOptions& options) {
    options_ = options;
    const int per_gpu = std::max(1, options.workers_per_gpu);
    int count = 0;
    CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&count));
    for (int i = 0; i < count; ++i) {
      auto g = std::make_unique<Gpu>();
      g->ordinal = i;
      g->name = absl::StrCat("gpu:", i);
      auto description = gpu::DeviceDescription(i);
      if (!description.ok()) return description.status();
      g->description = *description;
      CUDA_RETURN_IF_ERROR(cudaSetDevice(i));
      CUDA_RETURN_IF_ERROR(cudaSetDeviceFlags(ScheduleFlag(options.wait)));
      size_t free_bytes = 0, total_bytes = 0;
      CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
      g->total_bytes = total_bytes;
      const uint64_t pool_bytes =
          options.memory_bytes != 0 ? options.memory_bytes : free_bytes / 4 * 3;
      CUDA_RETURN_IF_ERROR(cudaMalloc(&g->pool, pool_bytes));
      const uint64_t slice = pool_bytes / per_gpu / kAlign * kAlign;
      for (int k = 0; k < per_gpu; ++k) {
        auto l = std::make_unique<Lane>();
        l->gpu = g.get();
        l->pool = static_cast<uint8_t*>(g->pool) + k * slice;
        l->pool_bytes = slice;
        CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&l->stream, cudaStreamNonBlocking));
        l->pinned_bytes = options.pinned_bytes;
        CUDA_RETURN_IF_ERROR(cudaMallocHost(&l->pinned, l->pinned_bytes));
        lanes_.push_back(std::move(l));
      }
      LogEvent(LogLevel::kInfo, "gpu ready",
               {{"device", g->name},
                {"description", g->description},
                {"workers", per_gpu},
                {"wait", WaitName(options.wait)},
                {"pool_bytes_per_worker", slice},
                {"pinned_bytes_per_worker", options.pinned_bytes}});
      gpus_.push_back(std::move(g));
    }
    if (gpus_.empty()) return absl::UnavailableError("no CUDA device");
    if (options.host_pool_bytes > 0) {
      void* region = nullptr;
      CUDA_RETURN_IF_ERROR(cudaHostAlloc(&region, options.host_pool_bytes, cudaHostAllocPortable));
      host_pool_ = HostBlockPool::Create(static_cast<uint8_t*>(region), options.host_pool_bytes,
                                         [](uint8_t* p) { cudaFreeHost(p); });
    }
    for (auto& lane : lanes_) {
      if (absl::Status s = WarmUp(*lane); !s.ok()) {
        return absl::Status(s.code(),
                            absl::StrCat(lane->gpu->name, " failed its warm-up: ", s.message()));
      }
    }
    return absl::OkStatus();
  }

  std::string name() const override { return "gpu"; }
  std::vector<std::string> devices() const override {
    std::vector<std::string> out;
    for (const auto& g : gpus_) out.push_back(absl::StrCat(g->name, " ", g->description));
    return out;
  }
  int workers() const override { return static_cast<int>(lanes_.size()); }
  bool Compatible(const Work& a, const Work& b) const override {
    return a.method == b.method && a.dtype() == b.dtype() &&
           a.region.has_value() == b.region.has_value();
  }
  bool Retired(int worker) const override { return lanes_[worker]->gpu->retired.load(); }
  HostBlock InputBlock(uint64_t bytes) const override {
    return host_pool_ ? host_pool_->Take(bytes) : HostBlock();
  }
  std::optional<HostPoolStats> HostPool() const override {
    if (host_pool_ == nullptr) return std::nullopt;
    return host_pool_->stats();
  }

  std::vector<std::shared_ptr<Work>> Run(int worker,
                                         absl::Span<const std::shared_ptr<Work>> batch) override {
    Lane& lane = *lanes_[worker];
    Gpu& g = *lane.gpu;
    if (g.retired.load()) return {batch.begin(), batch.end()};  // another lane saw it fail
    StartBusy(g);
    std::vector<Work*> cpu;  // what goes to the CPU codec instead
    std::vector<std::shared_ptr<Work>> returned;
    // The last GPU left, failed, or regions (decoded on the CPU codec for
    // now, docs/operations.md): the CPU codec does the work.
    if (g.failed.load() || batch.front()->region) {
      for (const auto& w : batch) cpu.push_back(w.get());
    } else {
      const bool inject = (options_.fail_device < 0 || options_.fail_device == g.ordinal) &&
                          g.batches++ == options_.fail_at_batch;
      absl::Status s =
          inject
              ? absl::InternalError("fault injected for a test (GpuBackendOptions::fail_at_batch)")
          : batch.front()->method == Method::kCompress ? Compress(lane, batch, &cpu)
                                                       : Decompress(lane, batch, &cpu);
      if (!s.ok()) {
        const bool retired = GiveUp(g, s);
        cpu.clear();
        for (const auto& w : batch) {
          if (w->has_output() || !w->status.ok()) continue;  // finished before the failure
          if (options_.on_failure == GpuFailurePolicy::kFail) {
            w->status = absl::UnavailableError(
                absl::StrCat(g.name, " failed while running this request (", s.message(),
                             "); the server goes on without it: send the request again"));
          } else if (retired) {
            returned.push_back(w);
          } else {
            cpu.push_back(w.get());
          }
        }
      }
    }
    for (Work* w : cpu) {
      w->device = "cpu";
      RunOnCpu(*w);
    }
    StopBusy(g);
    return returned;
  }

  std::vector<DeviceState> DeviceStates() const override {
    std::vector<DeviceState> out;
    for (const auto& g : gpus_) {
      DeviceState s;
      s.device = g->name;
      s.memory_total_bytes = g->total_bytes;
      size_t free_bytes = 0, total_bytes = 0;
      if (cudaSetDevice(g->ordinal) == cudaSuccess &&
          cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
        s.memory_used_bytes = total_bytes - free_bytes;
      }
      {
        absl::MutexLock lock(&g->mu);
        int64_t ns = g->busy_ns;
        if (g->running > 0) {
          ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now() - g->busy_since)
                    .count();
        }
        s.busy_seconds = static_cast<double>(ns) * 1e-9;
      }
      s.healthy = !g->failed.load();
      out.push_back(s);
    }
    return out;
  }

 private:
  // A small array of each dtype through the worker, both ways, before the
  // server takes requests: CUDA loads a device's kernels at their first
  // launch and a worker's pinned and pool pages are first touched by its
  // first batch, so without this the first requests pay for both (and
  // resident memory grows under load, reading like a leak). A GPU that
  // cannot do this much stops the start.
  absl::Status WarmUp(Lane& lane) {
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
      auto compress = std::make_shared<Work>();
      compress->spec = {dtype, {64, 64}};
      compress->options.mode = BoundMode::kRel;
      compress->options.bound = 1e-3;
      compress->input.resize(compress->spec.num_bytes());
      for (size_t i = 0; i < compress->input.size(); ++i) {
        compress->input[i] = static_cast<uint8_t>(i * 7 / 3);  // not constant
      }
      std::vector<Work*> cpu;
      if (absl::Status s = Compress(lane, {&compress, 1}, &cpu); !s.ok()) return s;
      if (!cpu.empty() || !compress->status.ok() || compress->output.empty()) {
        return absl::InternalError("a small array did not compress on the GPU");
      }
      auto decompress = std::make_shared<Work>();
      decompress->method = Method::kDecompress;
      decompress->input = compress->output;
      auto info = ReadArchiveInfo(decompress->input);
      if (!info.ok()) return info.status();
      decompress->info = *std::move(info);
      if (absl::Status s = Decompress(lane, {&decompress, 1}, &cpu); !s.ok()) return s;
      if (!cpu.empty() || !decompress->status.ok() ||
          decompress->output_block.size() + decompress->output.size() !=
              compress->spec.num_bytes()) {
        return absl::InternalError("a small archive did not decompress on the GPU");
      }
    }
    return absl::OkStatus();
  }

  static void StartBusy(Gpu& g) {
    absl::MutexLock lock(&g.mu);
    if (g.running++ == 0) g.busy_since = std::chrono::steady_clock::now();
  }
  static void StopBusy(Gpu& g) {
    absl::MutexLock lock(&g.mu);
    if (--g.running == 0) {
      g.busy_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now() - g.busy_since)
                       .count();
    }
  }

  // Marks `g` failed after `error`; returns whether it is retired (another
  // GPU is still healthy), which decides where its work goes.
  bool GiveUp(Gpu& g, const absl::Status& error) {
    absl::MutexLock lock(&mu_);
    if (!g.failed.load()) {
      g.failed.store(true);
      int healthy = 0;
      for (const auto& other : gpus_) healthy += other->failed.load() ? 0 : 1;
      g.retired.store(healthy > 0);
      LogEvent(LogLevel::kError,
               healthy > 0 ? "gpu failed; its work goes to the other GPUs"
                           : "gpu failed, the last one; its work goes to the CPU codec",
               {{"device", g.name}, {"error", std::string(error.message())}});
    }
    return g.retired.load();
  }

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
  static std::vector<Round<Task>> SplitIntoRounds(const Lane& d,
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
  static gpu::Workspace PlaceWorkspace(const Lane& d, Carver& pool,
                                       const gpu::WorkspaceSize& size) {
    gpu::Workspace ws;
    ws.device = pool.Take(size.device_bytes);
    ws.device_bytes = size.device_bytes;
    ws.host = d.pinned;
    ws.host_bytes = size.host_bytes;
    return ws;
  }

  absl::Status Compress(Lane& d, absl::Span<const std::shared_ptr<Work>> batch,
                        std::vector<Work*>* cpu) {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(d.gpu->ordinal));
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
        d, candidates,
        [](absl::Span<const gpu::CompressTask> t) { return gpu::CompressWorkspaceSize(t); },
        sizeof(uint64_t), cpu);
    for (auto& r : rounds) {
      Carver pool(d.pool, d.pool_bytes);
      std::vector<gpu::CompressTask>& tasks = r.tasks;
      // Inputs in ordinary memory side by side in the pool (one staged DMA
      // for them all), then those in page-locked blocks (a DMA each): a
      // block's place inside the staged span would be overwritten by it.
      std::vector<Piece> inputs;
      for (const bool pinned : {false, true}) {
        for (size_t i = 0; i < tasks.size(); ++i) {
          if (bool(r.works[i]->input_block) != pinned) continue;
          uint8_t* input = pool.Take(tasks[i].spec.num_bytes());
          tasks[i].input = input;
          const absl::Span<const uint8_t> bytes = r.works[i]->input_bytes();
          inputs.push_back({bytes.data(), input, bytes.size(), pinned});
        }
      }
      for (size_t i = 0; i < tasks.size(); ++i) {
        tasks[i].archive = pool.Take(tasks[i].capacity);
        tasks[i].archive_size = reinterpret_cast<uint64_t*>(pool.Take(sizeof(uint64_t)));
      }
      const gpu::Workspace ws = PlaceWorkspace(d, pool, r.workspace);
      // Pinned memory: the codec's part, the archive sizes, then staging.
      auto* sizes =
          reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(d.pinned) + AlignUp(ws.host_bytes));
      uint8_t* staging =
          reinterpret_cast<uint8_t*>(sizes) + AlignUp(sizeof(uint64_t) * tasks.size());
      const uint64_t room = d.pinned_bytes - (staging - static_cast<uint8_t*>(d.pinned));
      if (absl::Status s = Upload(d.stream, inputs, staging, room); !s.ok()) return s;
      if (absl::Status s = gpu::CompressBatch(tasks, ws, d.stream); !s.ok()) {
        if (s.code() != absl::StatusCode::kInternal) {
          for (Work* w : r.works) cpu->push_back(w);
          continue;
        }
        return s;
      }
      for (size_t i = 0; i < tasks.size(); ++i) {
        CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(sizes + i, tasks[i].archive_size, sizeof(uint64_t),
                                             cudaMemcpyDeviceToHost, d.stream));
      }
      CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(d.stream));  // the inputs are up: staging is free
      // An archive's size is known only now: it joins the work's budget
      // before host memory is taken for it (cpu_codec.h does the same).
      std::vector<Download::Source> outputs;
      std::vector<Work*> fitting;
      for (size_t i = 0; i < tasks.size(); ++i) {
        if (absl::Status g = r.works[i]->reservation.Grow(sizes[i]); !g.ok()) {
          r.works[i]->status = std::move(g);
          continue;
        }
        outputs.push_back({tasks[i].archive, sizes[i]});
        fitting.push_back(r.works[i]);
      }
      Download download;
      if (absl::Status s = download.Start(d.stream, std::move(outputs), staging, room); !s.ok()) {
        return s;
      }
      CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(d.stream));
      std::vector<Download::Result> archives = download.Finish();
      for (size_t i = 0; i < fitting.size(); ++i) {
        fitting[i]->device = d.gpu->name;
        fitting[i]->SetArchive(std::move(archives[i].bytes));
      }
    }
    return absl::OkStatus();
  }

  absl::Status Decompress(Lane& d, absl::Span<const std::shared_ptr<Work>> batch,
                          std::vector<Work*>* cpu) {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(d.gpu->ordinal));
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
      std::vector<Piece> inputs;  // side by side in the pool: one DMA when staged
      for (size_t i = 0; i < tasks.size(); ++i) {
        uint8_t* archive = pool.Take(r.works[i]->input.size());
        tasks[i].archive = archive;
        inputs.push_back({r.works[i]->input.data(), archive, r.works[i]->input.size()});
      }
      for (size_t i = 0; i < tasks.size(); ++i) {
        tasks[i].output = pool.Take(r.works[i]->info->spec().num_bytes());
      }
      const gpu::Workspace ws = PlaceWorkspace(d, pool, r.workspace);
      // Pinned memory: the codec's part, then staging.
      uint8_t* staging = static_cast<uint8_t*>(d.pinned) + AlignUp(ws.host_bytes);
      const uint64_t room = d.pinned_bytes - AlignUp(ws.host_bytes);
      if (absl::Status s = Upload(d.stream, inputs, staging, room); !s.ok()) return s;
      if (absl::Status s = gpu::DecompressBatch(tasks, DecoderKind::kAuto, ws, d.stream); !s.ok()) {
        if (s.code() != absl::StatusCode::kInternal) {
          for (Work* w : r.works) cpu->push_back(w);
          continue;
        }
        return s;
      }
      // The arrays come down behind the kernels, before the wait for the
      // device's verdict, which then covers both (the uploads before them
      // on the stream have left staging by then).
      std::vector<Download::Source> outputs;
      for (size_t i = 0; i < tasks.size(); ++i) {
        outputs.push_back(
            {static_cast<const uint8_t*>(tasks[i].output), r.works[i]->info->spec().num_bytes()});
      }
      Download download;
      if (absl::Status s =
              download.Start(d.stream, std::move(outputs), staging, room, host_pool_.get());
          !s.ok()) {
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
      std::vector<Download::Result> arrays = download.Finish();
      for (size_t i = 0; i < tasks.size(); ++i) {
        r.works[i]->device = d.gpu->name;
        if (arrays[i].block) {
          r.works[i]->SetArray(std::move(arrays[i].block));
        } else {
          r.works[i]->SetArray(std::move(arrays[i].bytes));
        }
      }
    }
    return absl::OkStatus();
  }

  GpuBackendOptions options_;
  std::shared_ptr<HostBlockPool> host_pool_;  // page-locked, for InputBlock
  absl::Mutex mu_;                            // serializes GiveUp
  std::vector<std::unique_ptr<Gpu>> gpus_;
  std::vector<std::unique_ptr<Lane>> lanes_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> MakeGpuBackend(const GpuBackendOptions& options) {
  auto backend = std::make_unique<GpuBackend>();
  if (absl::Status s = backend->Init(options); !s.ok()) return s;
  return backend;
}

}  // namespace ebzip::server
