#include "apps/serve/serve_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>

namespace shardflow::serve {
namespace {

constexpr int64_t kBatchBounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};

void Line(std::string* out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void Line(std::string* out, const char* fmt, ...) {
  char buf[256];
  va_list args;
  va_start(args, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  out->append(buf, static_cast<size_t>(std::clamp(n, 0, static_cast<int>(sizeof buf) - 1)));
  out->push_back('\n');
}

}  // namespace

ServeMetrics::ServeMetrics() : start_(Clock::now()) { batch_sizes_.assign(1024, 0); }

double ServeMetrics::LatencyBound(int bucket) { return 25e-6 * std::pow(2.0, bucket / 4.0); }

void ServeMetrics::AdvanceWindowLocked(int64_t second) const {
  // Clears the seconds passed since the last call (all of them after a long pause).
  const int64_t ring = kWindowSeconds + 1;
  for (int64_t s = window_second_ + 1; s <= second && s <= window_second_ + ring; ++s) {
    window_[static_cast<size_t>(s % ring)] = 0;
  }
  window_second_ = std::max(window_second_, second);
}

void ServeMetrics::RecordRequest() {
  const int64_t second =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - start_).count();
  MutexLock lock(mu_);
  ++requests_;
  AdvanceWindowLocked(second);
  ++window_[static_cast<size_t>(second % (kWindowSeconds + 1))];
}

void ServeMetrics::RecordResponse(int code, double seconds) {
  MutexLock lock(mu_);
  ++responses_[code];
  int bucket = 0;
  while (bucket < kLatencyBuckets && seconds > LatencyBound(bucket)) ++bucket;
  ++latency_[static_cast<size_t>(bucket)];
  latency_sum_ += seconds;
}

void ServeMetrics::RecordHttpResponse(int code) {
  MutexLock lock(mu_);
  ++http_responses_[code];
}

void ServeMetrics::RecordBatch(int64_t rows) {
  MutexLock lock(mu_);
  ++batch_sizes_[static_cast<size_t>(std::clamp<int64_t>(rows, 0, 1023))];
  batch_rows_sum_ += rows;
}

void ServeMetrics::SetModelVersion(int64_t version, bool reloaded) {
  MutexLock lock(mu_);
  version_ = version;
  if (reloaded) ++reloads_;
}

int64_t ServeMetrics::responses(int code) const {
  MutexLock lock(mu_);
  const auto it = responses_.find(code);
  return it == responses_.end() ? 0 : it->second;
}

int64_t ServeMetrics::http_responses(int code) const {
  MutexLock lock(mu_);
  const auto it = http_responses_.find(code);
  return it == http_responses_.end() ? 0 : it->second;
}

double ServeMetrics::QuantileLocked(double q) const {
  int64_t total = 0;
  for (int64_t n : latency_) total += n;
  if (total == 0) return 0;
  const auto rank = static_cast<int64_t>(std::ceil(q * static_cast<double>(total)));
  int64_t seen = 0;
  for (int b = 0; b <= kLatencyBuckets; ++b) {
    seen += latency_[static_cast<size_t>(b)];
    if (seen >= rank) return b < kLatencyBuckets ? LatencyBound(b) : INFINITY;
  }
  return INFINITY;
}

double ServeMetrics::LatencyQuantile(double q) const {
  MutexLock lock(mu_);
  return QuantileLocked(q);
}

void ServeMetrics::RenderLatencyLocked(std::string* out) const {
  Line(out, "# HELP shardflow_serve_request_latency_seconds Predict latency, receipt to answer.");
  Line(out, "# TYPE shardflow_serve_request_latency_seconds histogram");
  int64_t cumulative = 0;
  for (int b = 0; b < kLatencyBuckets; ++b) {
    cumulative += latency_[static_cast<size_t>(b)];
    Line(out, "shardflow_serve_request_latency_seconds_bucket{le=\"%.6g\"} %lld", LatencyBound(b),
         static_cast<long long>(cumulative));
  }
  cumulative += latency_[kLatencyBuckets];
  Line(out, "shardflow_serve_request_latency_seconds_bucket{le=\"+Inf\"} %lld",
       static_cast<long long>(cumulative));
  Line(out, "shardflow_serve_request_latency_seconds_sum %.6f", latency_sum_);
  Line(out, "shardflow_serve_request_latency_seconds_count %lld",
       static_cast<long long>(cumulative));
  Line(out,
       "# HELP shardflow_serve_request_latency_quantile_seconds Latency quantiles "
       "(upper bound of the histogram bucket).");
  Line(out, "# TYPE shardflow_serve_request_latency_quantile_seconds gauge");
  for (const double q : {0.5, 0.9, 0.99}) {
    Line(out, "shardflow_serve_request_latency_quantile_seconds{quantile=\"%g\"} %.6g", q,
         QuantileLocked(q));
  }
}

std::string ServeMetrics::Render(int64_t queue_depth) const {
  const int64_t second =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - start_).count();
  std::string out;
  MutexLock lock(mu_);
  AdvanceWindowLocked(second);
  int64_t recent = 0;  // the last kWindowSeconds whole seconds (not the current one)
  for (int64_t s = second - kWindowSeconds; s < second; ++s) {
    if (s >= 0) recent += window_[static_cast<size_t>(s % (kWindowSeconds + 1))];
  }
  const double span = static_cast<double>(std::clamp<int64_t>(second, 1, kWindowSeconds));
  Line(&out, "# HELP shardflow_serve_requests_total Predict requests received.");
  Line(&out, "# TYPE shardflow_serve_requests_total counter");
  Line(&out, "shardflow_serve_requests_total %lld", static_cast<long long>(requests_));
  Line(&out, "# HELP shardflow_serve_responses_total Predict responses by HTTP status code.");
  Line(&out, "# TYPE shardflow_serve_responses_total counter");
  for (const auto& [code, n] : responses_) {
    Line(&out, "shardflow_serve_responses_total{code=\"%d\"} %lld", code,
         static_cast<long long>(n));
  }
  Line(&out,
       "# HELP shardflow_serve_http_responses_total Responses of every route by HTTP status "
       "code.");
  Line(&out, "# TYPE shardflow_serve_http_responses_total counter");
  for (const auto& [code, n] : http_responses_) {
    Line(&out, "shardflow_serve_http_responses_total{code=\"%d\"} %lld", code,
         static_cast<long long>(n));
  }
  Line(&out, "# HELP shardflow_serve_qps Predict requests per second over the last %d s.",
       kWindowSeconds);
  Line(&out, "# TYPE shardflow_serve_qps gauge");
  Line(&out, "shardflow_serve_qps %.3f", static_cast<double>(recent) / span);
  RenderLatencyLocked(&out);
  Line(&out, "# HELP shardflow_serve_batch_size Instances per forward pass.");
  Line(&out, "# TYPE shardflow_serve_batch_size histogram");
  int64_t batches = 0;
  size_t next = 0;
  for (const int64_t bound : kBatchBounds) {
    for (; next <= static_cast<size_t>(bound); ++next) batches += batch_sizes_[next];
    Line(&out, "shardflow_serve_batch_size_bucket{le=\"%lld\"} %lld", static_cast<long long>(bound),
         static_cast<long long>(batches));
  }
  for (; next < batch_sizes_.size(); ++next) batches += batch_sizes_[next];
  Line(&out, "shardflow_serve_batch_size_bucket{le=\"+Inf\"} %lld",
       static_cast<long long>(batches));
  Line(&out, "shardflow_serve_batch_size_sum %lld", static_cast<long long>(batch_rows_sum_));
  Line(&out, "shardflow_serve_batch_size_count %lld", static_cast<long long>(batches));
  Line(&out, "# HELP shardflow_serve_queue_depth Instances waiting for a replica.");
  Line(&out, "# TYPE shardflow_serve_queue_depth gauge");
  Line(&out, "shardflow_serve_queue_depth %lld", static_cast<long long>(queue_depth));
  Line(&out, "# HELP shardflow_serve_model_version The served model version.");
  Line(&out, "# TYPE shardflow_serve_model_version gauge");
  Line(&out, "shardflow_serve_model_version %lld", static_cast<long long>(version_));
  Line(&out, "# HELP shardflow_serve_reloads_total Model switches since start.");
  Line(&out, "# TYPE shardflow_serve_reloads_total counter");
  Line(&out, "shardflow_serve_reloads_total %lld", static_cast<long long>(reloads_));
  return out;
}

}  // namespace shardflow::serve
