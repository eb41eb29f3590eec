// The cost of a request's metric updates (server/metrics.h), from several
// threads at once as gRPC's and the scheduler's threads make them: start,
// bytes in and out, queue and compute time, finish, and a batch every fourth
// request. One iteration is one request.
#include "benchmark/benchmark.h"
#include "server/metrics.h"

namespace ebzip::server {
namespace {

Metrics& Shared() {
  static auto* metrics = new Metrics("bench", "gpu");
  return *metrics;
}

void BM_RequestUpdates(benchmark::State& state) {
  Metrics& m = Shared();
  const std::string device = "gpu:0";
  uint64_t i = 0;
  for (auto _ : state) {
    const Method method = i % 2 == 0 ? Method::kCompress : Method::kDecompress;
    m.RequestStarted(method);
    m.BytesIn(method, 262144);
    m.Queued(method, 0.0003);
    m.Computed(method, device, 0.0005);
    m.BytesOut(method, 34600);
    m.RequestFinished(method, absl::StatusCode::kOk, 0.002);
    if (i % 4 == 0) m.Batch(device, 4, 1 << 20);
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RequestUpdates)->ThreadRange(1, 16)->UseRealTime();

}  // namespace
}  // namespace ebzip::server

BENCHMARK_MAIN();
