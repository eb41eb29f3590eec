#include "server/metrics.h"

#include <exception>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/collectable.h"
#include "prometheus/exposer.h"
#include "prometheus/metric_family.h"
#include "prometheus/text_serializer.h"

namespace ebzip::server {
namespace {

// Request, queue and compute times run from well under a millisecond (a
// small array in a batch) to tens of seconds (a 10 GiB array on the CPU):
// doubling buckets from 0.25 ms to 64 s cover both with 19 buckets.
prometheus::Histogram::BucketBoundaries Doubling(double first, int count) {
  prometheus::Histogram::BucketBoundaries b;
  for (int i = 0; i < count; ++i) b.push_back(first * static_cast<double>(uint64_t{1} << i));
  return b;
}
const prometheus::Histogram::BucketBoundaries& SecondsBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries(Doubling(0.00025, 19));
  return *b;
}

size_t Index(Method m) { return m == Method::kCompress ? 0 : 1; }

prometheus::ClientMetric Gauge(double value, std::vector<prometheus::ClientMetric::Label> labels) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  m.counter.value = value;
  return m;
}

prometheus::MetricFamily Family(std::string name, std::string help, prometheus::MetricType type) {
  prometheus::MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

}  // namespace

// Gauges and counters owned by other parts of the server, read at scrape time.
class Metrics::StateCollector final : public prometheus::Collectable {
 public:
  void Set(StateSources s) {
    absl::MutexLock lock(&mu_);
    sources_ = std::move(s);
  }

  std::vector<prometheus::MetricFamily> Collect() const override {
    absl::MutexLock lock(&mu_);
    std::vector<prometheus::MetricFamily> out;
    using prometheus::MetricType;
    if (sources_.held_bytes) {
      auto held = Family("ebzip_queued_bytes",
                         "Host bytes held by admitted requests (input waiting or being worked on, "
                         "output not yet sent)",
                         MetricType::Gauge);
      held.metric.push_back(Gauge(static_cast<double>(sources_.held_bytes()), {}));
      out.push_back(std::move(held));
      auto limit =
          Family("ebzip_queued_bytes_limit",
                 "Admission limit on ebzip_queued_bytes (--max_queued_bytes)", MetricType::Gauge);
      limit.metric.push_back(Gauge(static_cast<double>(sources_.held_bytes_limit), {}));
      out.push_back(std::move(limit));
    }
    if (sources_.queued_requests) {
      auto q = Family("ebzip_queued_requests", "Requests waiting for a worker", MetricType::Gauge);
      q.metric.push_back(Gauge(static_cast<double>(sources_.queued_requests()), {}));
      out.push_back(std::move(q));
    }
    if (sources_.devices) {
      auto used =
          Family("ebzip_device_memory_used_bytes",
                 "Device memory the server holds (GPU pools; 0 for the CPU)", MetricType::Gauge);
      auto total =
          Family("ebzip_device_memory_total_bytes", "Device memory installed", MetricType::Gauge);
      auto busy = Family("ebzip_device_busy_seconds_total", "Time the device spent running batches",
                         MetricType::Counter);
      auto healthy = Family("ebzip_device_healthy",
                            "1 while the device works; 0 once a GPU has failed (until restart)",
                            MetricType::Gauge);
      for (const DeviceState& d : sources_.devices()) {
        used.metric.push_back(
            Gauge(static_cast<double>(d.memory_used_bytes), {{"device", d.device}}));
        total.metric.push_back(
            Gauge(static_cast<double>(d.memory_total_bytes), {{"device", d.device}}));
        busy.metric.push_back(Gauge(d.busy_seconds, {{"device", d.device}}));
        healthy.metric.push_back(Gauge(d.healthy ? 1 : 0, {{"device", d.device}}));
      }
      out.push_back(std::move(used));
      out.push_back(std::move(total));
      out.push_back(std::move(busy));
      out.push_back(std::move(healthy));
    }
    if (std::optional<HostPoolStats> pool =
            sources_.host_pool ? sources_.host_pool() : std::nullopt) {
      auto bytes = Family("ebzip_host_pool_bytes",
                          "Page-locked host memory small arrays are received into and sent from "
                          "(--gpu_host_pool_bytes)",
                          MetricType::Gauge);
      bytes.metric.push_back(Gauge(static_cast<double>(pool->bytes), {}));
      auto used = Family("ebzip_host_pool_used_bytes",
                         "Of ebzip_host_pool_bytes, in blocks held by requests", MetricType::Gauge);
      used.metric.push_back(Gauge(static_cast<double>(pool->given), {}));
      auto misses = Family("ebzip_host_pool_misses_total",
                           "Arrays small enough for the pool that found no block free and used "
                           "ordinary memory (each costs the GPU worker a copy)",
                           MetricType::Counter);
      misses.metric.push_back(Gauge(static_cast<double>(pool->misses), {}));
      out.push_back(std::move(bytes));
      out.push_back(std::move(used));
      out.push_back(std::move(misses));
    }
    return out;
  }

 private:
  mutable absl::Mutex mu_;
  StateSources sources_ ABSL_GUARDED_BY(mu_);
};

Metrics::Metrics(const std::string& version, const std::string& backend)
    : registry_(std::make_shared<prometheus::Registry>()),
      state_(std::make_shared<StateCollector>()),
      requests_(prometheus::BuildCounter()
                    .Name("ebzip_requests_total")
                    .Help("Finished requests by method and gRPC status code")
                    .Register(*registry_)),
      inflight_(prometheus::BuildGauge()
                    .Name("ebzip_inflight_requests")
                    .Help("Requests between their first message and their status")
                    .Register(*registry_)),
      bytes_in_(prometheus::BuildCounter()
                    .Name("ebzip_received_bytes_total")
                    .Help("Payload bytes received: arrays to compress, archives to decompress")
                    .Register(*registry_)),
      bytes_out_(prometheus::BuildCounter()
                     .Name("ebzip_sent_bytes_total")
                     .Help("Payload bytes sent: archives, decompressed arrays")
                     .Register(*registry_)),
      request_seconds_(prometheus::BuildHistogram()
                           .Name("ebzip_request_duration_seconds")
                           .Help("From a call's start to its status, by method")
                           .Register(*registry_)),
      queue_seconds_(prometheus::BuildHistogram()
                         .Name("ebzip_queue_duration_seconds")
                         .Help("From admission (input complete) until a worker takes the request")
                         .Register(*registry_)),
      compute_seconds_(prometheus::BuildHistogram()
                           .Name("ebzip_compute_duration_seconds")
                           .Help("Time in the codec, transfers included, by method and device "
                                 "(a batch's time is charged to each of its requests)")
                           .Register(*registry_)),
      batch_requests_(prometheus::BuildHistogram()
                          .Name("ebzip_batch_requests")
                          .Help("Requests per batch a worker ran")
                          .Register(*registry_)),
      batch_bytes_(prometheus::BuildHistogram()
                       .Name("ebzip_batch_bytes")
                       .Help("Array bytes per batch a worker ran")
                       .Register(*registry_)),
      ratio_(prometheus::BuildHistogram()
                 .Name("ebzip_compression_ratio")
                 .Help("Input bytes over archive bytes of successful compressions")
                 .Register(*registry_)
                 .Add({}, prometheus::Histogram::BucketBoundaries{1, 1.5, 2, 3, 4, 5, 7, 10, 15, 20,
                                                                  30, 50, 100, 1000})),
      region_requests_(prometheus::BuildCounter()
                           .Name("ebzip_region_requests_total")
                           .Help("Decompress calls that sent a region of the array")
                           .Register(*registry_)
                           .Add({})),
      region_saved_bytes_(prometheus::BuildCounter()
                              .Name("ebzip_region_saved_bytes_total")
                              .Help("Array bytes region requests did not send: each whole "
                                    "array's bytes minus its region's")
                              .Register(*registry_)
                              .Add({})) {
  prometheus::BuildGauge()
      .Name("ebzip_build_info")
      .Help("Constant 1, labelled with the server's version and backend")
      .Register(*registry_)
      .Add({{"version", version}, {"backend", backend}})
      .Set(1);
  // Series that exist from the start, so rates and alerts see zeros rather
  // than nothing before the first request.
  for (Method m : {Method::kCompress, Method::kDecompress}) {
    const std::string method = MethodName(m);
    methods_[Index(m)] = MethodSeries{
        .inflight = &inflight_.Add({{"method", method}}),
        .ok = &requests_.Add({{"method", method}, {"code", "OK"}}),
        .bytes_in = &bytes_in_.Add({{"method", method}}),
        .bytes_out = &bytes_out_.Add({{"method", method}}),
        .request_seconds = &request_seconds_.Add({{"method", method}}, SecondsBuckets()),
        .queue_seconds = &queue_seconds_.Add({{"method", method}}, SecondsBuckets()),
    };
  }
  auto& hits = prometheus::BuildCounter()
                   .Name("ebzip_limit_hits_total")
                   .Help(
                       "Requests refused or ended by a limit (docs/operations.md, \"Limits and "
                       "abuse\"), by limit")
                   .Register(*registry_);
  for (Limit l : kAllLimits) {
    limit_hits_[static_cast<size_t>(l)] = &hits.Add({{"limit", LimitName(l)}});
  }
}

Metrics::~Metrics() = default;

absl::Status Metrics::Serve(const std::string& address) {
  // civetweb reports a port it cannot bind by throwing; keep exceptions on
  // this side of the module boundary.
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(address, /*num_threads=*/2);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", address, ": ", e.what()));
  }
  exposer_->RegisterCollectable(registry_);
  exposer_->RegisterCollectable(state_);
  return absl::OkStatus();
}

int Metrics::port() const {
  if (exposer_ == nullptr) return 0;
  auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : ports[0];
}

void Metrics::SetStateSources(StateSources sources) { state_->Set(std::move(sources)); }

std::string Metrics::Render() const {
  auto families = registry_->Collect();
  auto more = state_->Collect();
  families.insert(families.end(), more.begin(), more.end());
  return prometheus::TextSerializer().Serialize(families);
}

void Metrics::RequestStarted(Method m) { methods_[Index(m)].inflight->Increment(); }

void Metrics::RequestFinished(Method m, absl::StatusCode code, double seconds) {
  const MethodSeries& series = methods_[Index(m)];
  series.inflight->Decrement();
  if (code == absl::StatusCode::kOk) {
    series.ok->Increment();
  } else {  // rare enough for the family's lookup
    requests_.Add({{"method", MethodName(m)}, {"code", absl::StatusCodeToString(code)}})
        .Increment();
  }
  series.request_seconds->Observe(seconds);
}

void Metrics::BytesIn(Method m, uint64_t n) {
  methods_[Index(m)].bytes_in->Increment(static_cast<double>(n));
}
void Metrics::BytesOut(Method m, uint64_t n) {
  methods_[Index(m)].bytes_out->Increment(static_cast<double>(n));
}
void Metrics::Queued(Method m, double seconds) {
  methods_[Index(m)].queue_seconds->Observe(seconds);
}
void Metrics::Computed(Method m, const std::string& device, double seconds) {
  ForDevice(device).compute_seconds[Index(m)]->Observe(seconds);
}
void Metrics::Batch(const std::string& device, size_t requests, uint64_t bytes) {
  const DeviceSeries& series = ForDevice(device);
  series.batch_requests->Observe(static_cast<double>(requests));
  series.batch_bytes->Observe(static_cast<double>(bytes));
}

const Metrics::DeviceSeries& Metrics::ForDevice(const std::string& device) {
  {
    absl::ReaderMutexLock lock(&devices_mu_);
    if (auto it = devices_.find(device); it != devices_.end()) return it->second;
  }
  // Resolved before it is published, so that no reader meets a half-made
  // entry (nor one that Add left half-made by throwing).
  DeviceSeries series;
  for (Method m : {Method::kCompress, Method::kDecompress}) {
    series.compute_seconds[Index(m)] =
        &compute_seconds_.Add({{"method", MethodName(m)}, {"device", device}}, SecondsBuckets());
  }
  series.batch_requests = &batch_requests_.Add(
      {{"device", device}},
      prometheus::Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024});
  series.batch_bytes = &batch_bytes_.Add({{"device", device}}, Doubling(65536, 16));
  absl::MutexLock lock(&devices_mu_);
  auto it = devices_.try_emplace(device, series).first;  // or the one a racer added
  return it->second;
}
void Metrics::Ratio(double ratio) { ratio_.Observe(ratio); }
void Metrics::LimitHit(Limit limit) { limit_hits_[static_cast<size_t>(limit)]->Increment(); }
void Metrics::RegionSent(uint64_t array_bytes, uint64_t region_bytes) {
  region_requests_.Increment();
  region_saved_bytes_.Increment(static_cast<double>(array_bytes - region_bytes));
}

}  // namespace ebzip::server
