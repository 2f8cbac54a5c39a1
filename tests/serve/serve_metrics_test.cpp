// ServeMetrics: latency quantiles from the histogram (a bucket's upper bound, within 19% above
// the value), responses by code (predict, and every HTTP response), batch sizes, and the
// Prometheus text.
#include "apps/serve/serve_metrics.hpp"

#include <gtest/gtest.h>

namespace shardflow::serve {
namespace serve_metrics_test {

TEST(ServeMetrics, QuantilesAreBucketBoundsJustAboveTheValues) {
  ServeMetrics m;
  EXPECT_EQ(m.LatencyQuantile(0.5), 0.0);
  for (int i = 1; i <= 100; ++i) m.RecordResponse(200, i * 1e-3);  // 1..100 ms
  const double p50 = m.LatencyQuantile(0.5);
  const double p99 = m.LatencyQuantile(0.99);
  EXPECT_GE(p50, 50e-3);
  EXPECT_LE(p50, 50e-3 * 1.19);
  EXPECT_GE(p99, 99e-3);
  EXPECT_LE(p99, 99e-3 * 1.19);
}

TEST(ServeMetrics, RendersPrometheusText) {
  ServeMetrics m;
  m.RecordRequest();
  m.RecordRequest();
  m.RecordResponse(200, 0.002);
  m.RecordResponse(400, 0.0001);
  m.RecordBatch(3);
  m.RecordBatch(32);
  m.SetModelVersion(7, true);
  const std::string text = m.Render(5);
  for (const char* line : {
           "shardflow_serve_requests_total 2\n",
           "shardflow_serve_responses_total{code=\"200\"} 1\n",
           "shardflow_serve_responses_total{code=\"400\"} 1\n",
           "shardflow_serve_batch_size_bucket{le=\"2\"} 0\n",
           "shardflow_serve_batch_size_bucket{le=\"4\"} 1\n",
           "shardflow_serve_batch_size_bucket{le=\"32\"} 2\n",
           "shardflow_serve_batch_size_sum 35\n",
           "shardflow_serve_request_latency_seconds_count 2\n",
           "shardflow_serve_request_latency_quantile_seconds{quantile=\"0.99\"}",
           "shardflow_serve_queue_depth 5\n",
           "shardflow_serve_model_version 7\n",
           "shardflow_serve_reloads_total 1\n",
           "# TYPE shardflow_serve_qps gauge\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line;
  }
  EXPECT_EQ(m.responses(200), 1);
  EXPECT_EQ(m.responses(503), 0);
}

TEST(ServeMetrics, CountsEveryHttpResponseByCode) {
  ServeMetrics m;
  m.RecordHttpResponse(404);
  m.RecordHttpResponse(404);
  m.RecordHttpResponse(200);
  const std::string text = m.Render(0);
  EXPECT_NE(text.find("shardflow_serve_http_responses_total{code=\"404\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("shardflow_serve_http_responses_total{code=\"200\"} 1\n"), std::string::npos);
  EXPECT_EQ(m.http_responses(404), 2);
  EXPECT_EQ(m.responses(404), 0);  // not a predict response
}

}  // namespace serve_metrics_test
}  // namespace shardflow::serve
