// The service's Prometheus metrics (docs/design.md §4), all named ebzip_*. Counters
// and histograms are updated as requests move; gauges of state (bytes held,
// device memory, busy time) are read from their owners at scrape time, so
// they cannot drift from the truth.
#ifndef EBZIP_SERVER_METRICS_H_
#define EBZIP_SERVER_METRICS_H_

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "server/backend.h"
#include "server/limits.h"
#include "server/work.h"

namespace prometheus {
class Exposer;
}

namespace ebzip::server {

// What the metrics read at scrape time.
struct StateSources {
  std::function<uint64_t()> held_bytes;
  uint64_t held_bytes_limit = 0;
  std::function<uint64_t()> queued_requests;
  std::function<std::vector<DeviceState>()> devices;
  std::function<std::optional<HostPoolStats>()> host_pool;
};

class Metrics {
 public:
  Metrics(const std::string& version, const std::string& backend);
  ~Metrics();

  // Serves /metrics on `address` (HOST:PORT; port 0 picks one).
  absl::Status Serve(const std::string& address);
  // The port /metrics is served on, once Serve succeeded.
  int port() const;
  void SetStateSources(StateSources sources);
  // The exposition text, as /metrics serves it (for tests and logs).
  std::string Render() const;

  void RequestStarted(Method m);
  void RequestFinished(Method m, absl::StatusCode code, double seconds);
  void BytesIn(Method m, uint64_t n);
  void BytesOut(Method m, uint64_t n);
  void Queued(Method m, double seconds);
  void Computed(Method m, const std::string& device, double seconds);
  void Batch(const std::string& device, size_t requests, uint64_t bytes);
  void Ratio(double ratio);
  // A request refused or ended by `limit`.
  void LimitHit(Limit limit);
  // A Decompress that sent a region of `region_bytes` of an array of
  // `array_bytes`.
  void RegionSent(uint64_t array_bytes, uint64_t region_bytes);

 private:
  class StateCollector;
  std::shared_ptr<prometheus::Registry> registry_;
  std::shared_ptr<StateCollector> state_;
  std::unique_ptr<prometheus::Exposer> exposer_;

  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Gauge>& inflight_;
  prometheus::Family<prometheus::Counter>& bytes_in_;
  prometheus::Family<prometheus::Counter>& bytes_out_;
  prometheus::Family<prometheus::Histogram>& request_seconds_;
  prometheus::Family<prometheus::Histogram>& queue_seconds_;
  prometheus::Family<prometheus::Histogram>& compute_seconds_;
  prometheus::Family<prometheus::Histogram>& batch_requests_;
  prometheus::Family<prometheus::Histogram>& batch_bytes_;
  prometheus::Histogram& ratio_;
  prometheus::Counter& region_requests_;
  prometheus::Counter& region_saved_bytes_;
  std::array<prometheus::Counter*, kAllLimits.size()> limit_hits_{};

  // The series each request updates, looked up once: a family's Add builds a
  // label map and takes the family's lock, and every gRPC and scheduler
  // thread would meet there several times a request.
  struct MethodSeries {
    prometheus::Gauge* inflight = nullptr;
    prometheus::Counter* ok = nullptr;
    prometheus::Counter* bytes_in = nullptr;
    prometheus::Counter* bytes_out = nullptr;
    prometheus::Histogram* request_seconds = nullptr;
    prometheus::Histogram* queue_seconds = nullptr;
  };
  struct DeviceSeries {
    std::array<prometheus::Histogram*, 2> compute_seconds{};  // by method
    prometheus::Histogram* batch_requests = nullptr;
    prometheus::Histogram* batch_bytes = nullptr;
  };
  const DeviceSeries& ForDevice(const std::string& device);

  std::array<MethodSeries, 2> methods_;  // by Method
  absl::Mutex devices_mu_;
  // Values never move (node map): callers keep references after the lock.
  absl::node_hash_map<std::string, DeviceSeries> devices_ ABSL_GUARDED_BY(devices_mu_);
};

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_METRICS_H_
