#include "server/cpu_backend.h"

#include <atomic>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "codec/parallel.h"
#include "server/cpu_codec.h"

namespace ebzip::server {

namespace {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int workers) : workers_(workers < 1 ? 1 : workers) {}

  std::string name() const override { return "cpu"; }
  std::vector<std::string> devices() const override {
    return {absl::StrCat("cpu: ", DefaultThreadCount(), " threads")};
  }
  int workers() const override { return workers_; }
  bool Compatible(const Work&, const Work&) const override { return true; }

  std::vector<std::shared_ptr<Work>> Run(int,
                                         absl::Span<const std::shared_ptr<Work>> batch) override {
    const auto start = std::chrono::steady_clock::now();
    ParallelFor(batch.size(), [&](uint64_t i) {
      Work& w = *batch[i];
      w.device = "cpu";
      RunOnCpu(w);
    });
    busy_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    return {};
  }

  std::vector<DeviceState> DeviceStates() const override {
    DeviceState s;
    s.device = "cpu";
    s.busy_seconds = static_cast<double>(busy_ns_.load()) * 1e-9;
    return {s};
  }

 private:
  const int workers_;
  std::atomic<int64_t> busy_ns_{0};
};

}  // namespace

std::unique_ptr<Backend> MakeCpuBackend(int workers) {
  return std::make_unique<CpuBackend>(workers);
}

}  // namespace ebzip::server
