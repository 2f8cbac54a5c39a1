#include "core/run_report.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace shardflow {
namespace {

TEST(RunReportTest, InputBoundNamesTheKnob) {
  StepTimeTotals t{.wall_s = 10, .input_wait_s = 4, .compute_s = 5, .comm_s = 1};
  TuningContext ctx{.parallel_calls = 1, .threads = 2};
  const Verdict v = Diagnose(t, ctx);
  EXPECT_EQ(v.bound, "input-bound");
  EXPECT_NE(v.advice.find("40%"), std::string::npos) << v.advice;
  EXPECT_NE(v.advice.find("data.parallel_calls (now 1)"), std::string::npos) << v.advice;
  EXPECT_NE(v.advice.find("data.cache"), std::string::npos) << v.advice;
}

TEST(RunReportTest, AutotunedKnobsReadAuto) {
  StepTimeTotals t{.wall_s = 10, .input_wait_s = 5, .compute_s = 5, .comm_s = 0};
  const Verdict v = Diagnose(t, {.parallel_calls = -1, .parallel_reads = -1, .prefetch = -1});
  EXPECT_NE(v.advice.find("data.parallel_reads (now auto)"), std::string::npos) << v.advice;
  EXPECT_EQ(v.advice.find("-1"), std::string::npos) << v.advice;
}

TEST(RunReportTest, CommunicationBoundSuggestsOverlapThenBuckets) {
  StepTimeTotals t{.wall_s = 10, .input_wait_s = 0.5, .compute_s = 6, .comm_s = 3.5};
  EXPECT_EQ(Diagnose(t, {.overlap = false}).bound, "communication-bound");
  EXPECT_NE(Diagnose(t, {.overlap = false}).advice.find("dist.overlap = true"), std::string::npos);
  EXPECT_NE(Diagnose(t, {.bucket_mb = 4, .overlap = true}).advice.find("dist.bucket_mb (now 4)"),
            std::string::npos);
}

TEST(RunReportTest, ComputeBoundWhenNothingElseDominates) {
  StepTimeTotals t{.wall_s = 10, .input_wait_s = 0.2, .compute_s = 9.5, .comm_s = 0.3};
  const Verdict v = Diagnose(t, {.threads = 2});
  EXPECT_EQ(v.bound, "compute-bound");
  EXPECT_NE(v.advice.find("train.threads (now 2)"), std::string::npos);
}

TEST(RunReportTest, ZeroWallTimeIsNotADivisionByZero) {
  StepTimeTotals t;
  EXPECT_EQ(t.InputFraction(), 0.0);
  EXPECT_EQ(Diagnose(t, {}).bound, "compute-bound");
}

TEST(RunReportTest, SummaryJsonHasTheDocumentedFields) {
  RunSummary s;
  s.ranks = 2;
  s.per_rank_batch = 64;
  s.global_batch = 128;
  s.epochs = 3;
  s.samples_per_s = 12345;
  s.test_accuracy = 0.9;
  s.times = {.wall_s = 10, .input_wait_s = 1, .compute_s = 8, .comm_s = 1};
  s.verdict = Diagnose(s.times, {});
  const auto j = SummaryToJson(s);
  for (const char* key : {"ranks", "global_batch", "epochs", "samples_per_s", "test_accuracy",
                          "input_wait_fraction", "compute_fraction", "comm_fraction", "verdict"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_FALSE(j.contains("test_loss"));
  EXPECT_DOUBLE_EQ(j["compute_fraction"].get<double>(), 0.8);
  const std::string report = FormatReport(s);
  EXPECT_NE(report.find("test accuracy   0.9000"), std::string::npos) << report;
  EXPECT_NE(report.find("compute  80.0%"), std::string::npos) << report;
}

}  // namespace
}  // namespace shardflow
