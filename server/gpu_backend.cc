#include "server/gpu_backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "codec/region_plan.h"
#include "gpu/gpu_codec.h"
#include "gpu/runtime/device.h"
#include "gpu/runtime/pinned_buffer.h"
#include "gpu/runtime/run_result.h"
#include "gpu/runtime/worker.h"
#include "server/cpu_codec.h"
#include "server/log.h"

namespace ebzip::server {
namespace {

using gpu::runtime::RunResult;

gpu::runtime::HostWait HostWaitOf(GpuWait wait) {
  switch (wait) {
    case GpuWait::kSpin:
      return gpu::runtime::HostWait::kSpin;
    case GpuWait::kBlock:
      return gpu::runtime::HostWait::kBlock;
    case GpuWait::kYield:
      break;
  }
  return gpu::runtime::HostWait::kYield;
}

// One GPU, shared by its workers (lanes): the device, and what the backend
// keeps about it (its health, for the failure policy; its busy time).
struct Gpu {
  std::unique_ptr<gpu::runtime::Device> device;
  std::string name;  // "gpu:0"
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

// One scheduler worker on a GPU (gpu/runtime/worker.h).
struct Lane {
  Gpu* gpu = nullptr;
  std::unique_ptr<gpu::runtime::Worker> worker;
};

class GpuBackend final : public Backend {
 public:
  absl::Status Init(const GpuBackendOptions& options) {
    options_ = options;
    const int per_gpu = std::max(1, options.workers_per_gpu);
    auto count = gpu::runtime::DeviceCount();
    if (!count.ok()) return count.status();
    for (int i = 0; i < *count; ++i) {
      auto g = std::make_unique<Gpu>();
      g->name = absl::StrCat("gpu:", i);
      auto device =
          gpu::runtime::Device::Open(i, {HostWaitOf(options.wait), options.memory_bytes});
      if (!device.ok()) return device.status();
      g->device = *std::move(device);
      const std::vector<gpu::runtime::PoolSlice> slices = g->device->SplitPool(per_gpu);
      for (const gpu::runtime::PoolSlice& slice : slices) {
        auto l = std::make_unique<Lane>();
        l->gpu = g.get();
        auto worker = gpu::runtime::Worker::Create(*g->device, slice, options.pinned_bytes);
        if (!worker.ok()) return worker.status();
        l->worker = *std::move(worker);
        lanes_.push_back(std::move(l));
      }
      LogEvent(LogLevel::kInfo, "gpu ready",
               {{"device", g->name},
                {"description", g->device->description()},
                {"workers", per_gpu},
                {"wait", NameOf(kGpuWaitNames, options.wait)},
                {"pool_bytes_per_worker", slices.front().bytes()},
                {"pinned_bytes_per_worker", options.pinned_bytes}});
      gpus_.push_back(std::move(g));
    }
    if (gpus_.empty()) return absl::UnavailableError("no CUDA device");
    if (options.host_pool_bytes > 0) {
      auto region = gpu::runtime::PinnedBuffer::AllocatePortable(options.host_pool_bytes);
      if (!region.ok()) return region.status();
      auto owned = std::make_shared<gpu::runtime::PinnedBuffer>(*std::move(region));
      host_pool_ = HostBlockPool::Create(owned->data(), owned->bytes(),
                                         [owned](uint8_t*) mutable { owned.reset(); });
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
    for (const auto& g : gpus_) out.push_back(absl::StrCat(g->name, " ", g->device->description()));
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
    // The last GPU left, failed: the CPU codec does the work.
    if (g.failed.load()) {
      for (const auto& w : batch) cpu.push_back(w.get());
    } else {
      const bool inject =
          (options_.fail_device < 0 || options_.fail_device == g.device->ordinal()) &&
          g.batches++ == options_.fail_at_batch;
      const RunResult r =
          inject ? RunResult::DeviceLost(absl::InternalError(
                       "fault injected for a test (GpuBackendOptions::fail_at_batch)"))
          : batch.front()->method == Method::kCompress ? Compress(lane, batch, &cpu)
                                                       : Decompress(lane, batch, &cpu);
      if (r.device_lost()) {
        const bool retired = GiveUp(g, r.why());
        cpu.clear();
        for (const auto& w : batch) {
          if (w->has_output() || !w->status.ok()) continue;  // finished before the failure
          if (options_.on_failure == GpuFailurePolicy::kFail) {
            w->status = absl::UnavailableError(
                absl::StrCat(g.name, " failed while running this request (", r.why().message(),
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
      s.memory_total_bytes = g->device->total_bytes();
      s.memory_used_bytes = g->device->MemoryUsedBytes().value_or(0);
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
      if (RunResult r = Compress(lane, {&compress, 1}, &cpu); r.device_lost()) return r.why();
      if (!cpu.empty() || !compress->status.ok() || compress->output.empty()) {
        return absl::InternalError("a small array did not compress on the GPU");
      }
      auto decompress = std::make_shared<Work>();
      decompress->method = Method::kDecompress;
      decompress->input = compress->output;
      auto info = ReadArchiveInfo(decompress->input);
      if (!info.ok()) return info.status();
      decompress->info = *std::move(info);
      if (RunResult r = Decompress(lane, {&decompress, 1}, &cpu); r.device_lost()) return r.why();
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
  // fit the worker's pool slice and pinned memory (fits(buffer bytes,
  // workspace, tasks)). The workspace is planned once per round, halving a
  // round that does not fit, so a batch of n works costs O(n) plans, not one
  // per work added. A work too large to fit alone, or one the kernels do
  // not take (its query fails however small its round), goes to the CPU.
  template <typename Task, typename WorkspaceFor, typename Fits>
  static std::vector<Round<Task>> SplitIntoRounds(const gpu::runtime::Worker& d,
                                                  const std::vector<Candidate<Task>>& c,
                                                  WorkspaceFor workspace_for, Fits fits,
                                                  std::vector<Work*>* cpu) {
    std::vector<Round<Task>> rounds;
    size_t i = 0;
    while (i < c.size()) {
      size_t end = i;
      uint64_t buffers = 0;
      while (end < c.size() && buffers + c[end].buffer_bytes <= d.pool_bytes()) {
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
        if (ws.ok() && fits(buffers, *ws, r.tasks.size())) {
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

  // Runs the batch's compressions on the lane's GPU, round by round; what
  // the kernels do not take goes to `cpu`. Not kRan only when the device
  // was lost.
  RunResult Compress(Lane& lane, absl::Span<const std::shared_ptr<Work>> batch,
                     std::vector<Work*>* cpu) {
    gpu::runtime::Worker& d = *lane.worker;
    if (RunResult r = d.MakeCurrent(); !r.ran()) return r;
    std::vector<Candidate<gpu::CompressTask>> candidates;
    for (const auto& w : batch) {
      if (w->cancelled.load()) {
        w->status = absl::CancelledError("the call was cancelled");
        continue;
      }
      gpu::CompressTask t;
      t.spec = w->spec;
      t.options = w->options;
      t.first_row = w->frame_first_row;
      // What the kernels do not take fails its round's workspace query, and
      // SplitIntoRounds halves the round until it stands alone and goes to
      // the CPU: a version-2 array's own query cost ~25 us of host time, a
      // twentieth of a batch of small arrays' time on the GPU.
      t.capacity = gpu::MaxArchiveBytes(w->spec, w->options);
      candidates.push_back({w.get(), t, gpu::runtime::Worker::CompressBufferBytes(t)});
    }
    auto rounds = SplitIntoRounds(
        d, candidates,
        [](absl::Span<const gpu::CompressTask> t) { return gpu::CompressWorkspaceSize(t); },
        [&d](uint64_t buffers, const gpu::WorkspaceSize& ws, size_t tasks) {
          return d.CompressFits(buffers, ws, tasks);
        },
        cpu);
    for (auto& r : rounds) {
      std::vector<gpu::runtime::Worker::CompressJob> jobs;
      for (size_t i = 0; i < r.tasks.size(); ++i) {
        jobs.push_back({r.tasks[i], r.works[i]->input_bytes(), bool(r.works[i]->input_block)});
      }
      // An archive's size is known only once the kernels are done: it joins
      // the work's budget before host memory is taken for it (cpu_codec.h
      // does the same).
      std::vector<bool> admitted(jobs.size(), false);
      auto admit = [&r, &admitted](size_t i, uint64_t size) {
        if (absl::Status g = r.works[i]->reservation.Grow(size); !g.ok()) {
          r.works[i]->status = std::move(g);
          return false;
        }
        admitted[i] = true;
        return true;
      };
      gpu::runtime::Worker::CompressRound round = d.Compress(jobs, r.workspace, admit);
      if (round.result.device_lost()) return std::move(round.result);
      if (!round.result.ran()) {
        for (Work* w : r.works) cpu->push_back(w);
        continue;
      }
      for (size_t i = 0; i < r.works.size(); ++i) {
        if (!admitted[i]) continue;
        r.works[i]->device = lane.gpu->name;
        if (r.works[i]->frame_first_row) {
          r.works[i]->SetFrame(std::move(round.archives[i]));
        } else {
          r.works[i]->SetArchive(std::move(round.archives[i]));
        }
      }
    }
    return RunResult::Ran();
  }

  // As Compress, for decompressions; arrays come down into blocks of the
  // page-locked pool where it has them.
  RunResult Decompress(Lane& lane, absl::Span<const std::shared_ptr<Work>> batch,
                       std::vector<Work*>* cpu) {
    gpu::runtime::Worker& d = *lane.worker;
    if (RunResult r = d.MakeCurrent(); !r.ran()) return r;
    std::vector<Candidate<gpu::DecompressTask>> candidates;
    // A region's frames as an archive of their own (codec/region_plan.h),
    // by work; the tasks point into it.
    std::unordered_map<const Work*, WholeFramesPlan> plans;  // nodes stay put
    for (const auto& w : batch) {
      if (w->cancelled.load()) {
        w->status = absl::CancelledError("the call was cancelled");
        continue;
      }
      gpu::DecompressTask t;
      t.info = &*w->info;
      uint64_t archive_bytes = w->input.size();
      uint64_t region_bytes = 0;
      if (w->header_only || (w->region && w->region->NumElements() == 0)) {
        cpu->push_back(w.get());  // nothing to decode
        continue;
      }
      if (w->region) {
        absl::StatusOr<WholeFramesPlan> plan = PlanWholeFrames(*w->info, *w->region);
        if (!plan.ok()) {
          cpu->push_back(w.get());  // the CPU codec reports it
          continue;
        }
        const WholeFramesPlan& p = plans[w.get()] = *std::move(plan);
        t.info = &p.part;
        archive_bytes = p.bytes_end - p.bytes_begin;
        region_bytes = w->region->NumElements() * DTypeSize(w->dtype());
      }
      if (!gpu::DecompressWorkspaceSize({&t, 1}, DecoderKind::kAuto).ok()) {
        cpu->push_back(w.get());
        continue;
      }
      candidates.push_back({w.get(), t,
                            gpu::runtime::Worker::DecompressBufferBytes(
                                archive_bytes, t.info->spec().num_bytes(), region_bytes)});
    }
    auto rounds = SplitIntoRounds(
        d, candidates,
        [](absl::Span<const gpu::DecompressTask> t) {
          return gpu::DecompressWorkspaceSize(t, DecoderKind::kAuto);
        },
        [&d](uint64_t buffers, const gpu::WorkspaceSize& ws, size_t) {
          return d.DecompressFits(buffers, ws);
        },
        cpu);
    for (auto& r : rounds) {
      std::vector<gpu::runtime::Worker::DecompressJob> jobs;
      for (Work* w : r.works) {
        auto plan = plans.find(w);
        if (plan == plans.end()) {
          jobs.push_back({&*w->info, w->input});
          continue;
        }
        const WholeFramesPlan& p = plan->second;
        jobs.push_back({&p.part,
                        absl::MakeConstSpan(w->input).subspan(p.bytes_begin,
                                                              p.bytes_end - p.bytes_begin),
                        p.pieces, w->region->NumElements() * DTypeSize(w->dtype())});
      }
      std::vector<HostBlock> blocks(jobs.size());
      auto into_block = [this, &blocks](size_t i, uint64_t bytes) -> uint8_t* {
        if (host_pool_ == nullptr) return nullptr;
        blocks[i] = host_pool_->Take(bytes);
        if (!blocks[i]) return nullptr;
        blocks[i].SetFilled(bytes);
        return blocks[i].data();
      };
      gpu::runtime::Worker::DecompressRound round = d.Decompress(jobs, r.workspace, into_block);
      if (round.destinations_in_flight) {
        for (HostBlock& b : blocks) b.Abandon();  // the lost device may still write there
      }
      if (round.result.device_lost()) return std::move(round.result);
      if (!round.result.ran()) {
        for (Work* w : r.works) cpu->push_back(w);
        continue;
      }
      for (size_t i = 0; i < r.works.size(); ++i) {
        r.works[i]->device = lane.gpu->name;
        if (blocks[i]) {
          r.works[i]->SetArray(std::move(blocks[i]));
        } else {
          r.works[i]->SetArray(std::move(round.arrays[i]));
        }
      }
    }
    return RunResult::Ran();
  }

  GpuBackendOptions options_;
  std::shared_ptr<HostBlockPool> host_pool_;  // page-locked, for InputBlock
  absl::Mutex mu_;                            // serializes GiveUp
  std::vector<std::unique_ptr<Gpu>> gpus_;
  std::vector<std::unique_ptr<Lane>> lanes_;  // destroyed before the GPUs they work on
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> MakeGpuBackend(const GpuBackendOptions& options) {
  auto backend = std::make_unique<GpuBackend>();
  if (absl::Status s = backend->Init(options); !s.ok()) return s;
  return backend;
}

}  // namespace ebzip::server
