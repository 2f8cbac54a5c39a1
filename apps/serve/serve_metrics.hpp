// The server's counters, exposed by GET /metrics in Prometheus' text format (version 0.0.4):
//   shardflow_serve_requests_total                  predict requests received
//   shardflow_serve_responses_total{code="..."}     predict responses by HTTP status
//   shardflow_serve_http_responses_total{code="..."}  every response by HTTP status: all
//                                                   routes, unknown paths (404) and the
//                                                   server's own refusals (400, 413, 503, ...)
//   shardflow_serve_qps                             predict requests per second, last 10 s
//   shardflow_serve_request_latency_seconds         histogram (receipt to answer)
//   shardflow_serve_request_latency_quantile_seconds{quantile="0.5|0.9|0.99"}
//                                                   from that histogram (bucket upper bounds)
//   shardflow_serve_batch_size                      histogram of instances per forward pass
//   shardflow_serve_queue_depth                     instances waiting (gauge)
//   shardflow_serve_model_version                   the served version (gauge)
//   shardflow_serve_reloads_total                   model switches since start
// Latency buckets grow by 2^(1/4) from 25 us (a quantile is its bucket's upper bound: within
// 19% of the true value).
// Thread-safety: every member function may be called from any thread (one mutex).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "apps/serve/batch_queue.hpp"
#include "core/thread_annotations.hpp"

namespace shardflow::serve {

class ServeMetrics {
 public:
  static constexpr int kLatencyBuckets = 80;  // 25 us .. ~27 s, then +Inf
  static constexpr int kWindowSeconds = 10;

  ServeMetrics();

  void RecordRequest() EXCLUDES(mu_);
  void RecordResponse(int code, double seconds) EXCLUDES(mu_);
  void RecordHttpResponse(int code) EXCLUDES(mu_);
  void RecordBatch(int64_t rows) EXCLUDES(mu_);
  void SetModelVersion(int64_t version, bool reloaded) EXCLUDES(mu_);
  // Quantile q in (0, 1] of the predict latency, seconds (0 before any request).
  double LatencyQuantile(double q) const EXCLUDES(mu_);
  int64_t responses(int code) const EXCLUDES(mu_);
  int64_t http_responses(int code) const EXCLUDES(mu_);

  std::string Render(int64_t queue_depth) const EXCLUDES(mu_);

  static double LatencyBound(int bucket);  // upper bound of bucket i, seconds

 private:
  double QuantileLocked(double q) const REQUIRES(mu_);
  void AdvanceWindowLocked(int64_t second) const REQUIRES(mu_);
  // The latency histogram and its quantiles, in Prometheus text.
  void RenderLatencyLocked(std::string* out) const REQUIRES(mu_);

  const Clock::time_point start_;
  mutable Mutex mu_;
  int64_t requests_ GUARDED_BY(mu_) = 0;
  std::map<int, int64_t> responses_ GUARDED_BY(mu_);
  std::map<int, int64_t> http_responses_ GUARDED_BY(mu_);
  std::array<int64_t, kLatencyBuckets + 1> latency_ GUARDED_BY(mu_){};
  double latency_sum_ GUARDED_BY(mu_) = 0;
  std::vector<int64_t> batch_sizes_ GUARDED_BY(mu_);  // [b] batches of b rows (b < 1024)
  int64_t batch_rows_sum_ GUARDED_BY(mu_) = 0;
  int64_t version_ GUARDED_BY(mu_) = 0;
  int64_t reloads_ GUARDED_BY(mu_) = 0;
  // Requests per second of the last kWindowSeconds + 1 seconds, a ring by second since start.
  mutable std::array<int64_t, kWindowSeconds + 1> window_ GUARDED_BY(mu_){};
  mutable int64_t window_second_ GUARDED_BY(mu_) = 0;
};

}  // namespace shardflow::serve
