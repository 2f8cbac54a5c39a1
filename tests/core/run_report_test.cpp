#include "core/run_report.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace shardflow {
namespace run_report_test {

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

// The advice fits the run: cores before buckets, buckets only where there are several, the
// strategy's own words and knob where it has no buckets.
TEST(RunReportTest, CommunicationAdviceFitsTheStrategyAndTheCores) {
  StepTimeTotals t{.wall_s = 10, .input_wait_s = 0.5, .compute_s = 6, .comm_s = 3.5};
  TuningContext over{.bucket_mb = 4, .threads = 1, .cores = 2, .local_ranks = 4};
  std::string a = Diagnose(t, over).advice;
  EXPECT_NE(a.find("4 ranks x 1 threads oversubscribe the node's 2 cores"), std::string::npos) << a;
  EXPECT_EQ(a.find("bucket_mb"), std::string::npos) << a;

  TuningContext one{.bucket_mb = 4, .cores = 2, .local_ranks = 2};
  one.comm.buckets = 1;
  one.comm.largest_bucket_mb = 0.25;
  a = Diagnose(t, one).advice;
  EXPECT_EQ(a.find("raise dist.bucket_mb"), std::string::npos) << a;
  EXPECT_NE(a.find("already travel as one bucket (0.25 MiB)"), std::string::npos) << a;

  TuningContext many = one;
  many.comm.buckets = 5;
  many.comm.largest_bucket_mb = 12.3;
  a = Diagnose(t, many).advice;
  EXPECT_NE(a.find("raise dist.bucket_mb (now 4) to send its 5 gradient buckets (the largest "
                   "12.3 MiB)"),
            std::string::npos)
      << a;

  TuningContext ps{.cores = 2, .local_ranks = 2};
  ps.comm = {.waits_for = "",
             .blocked_on = "pulls from and pushes to the parameter servers",
             .buckets = 0,
             .knob = "spread the parameters over more servers (dist.ps_ranks, now 1)"};
  a = Diagnose(t, ps).advice;
  EXPECT_NE(a.find("35% of step time blocked on pulls from and pushes to the parameter servers; "
                   "spread the parameters over more servers (dist.ps_ranks, now 1), or raise "
                   "train.batch_size"),
            std::string::npos)
      << a;
  EXPECT_EQ(a.find("bucket"), std::string::npos) << a;
}

TEST(RunReportTest, StepTimeSharesAddUpToTheWholeRun) {
  RunSummary s;
  s.times = {.wall_s = 10, .input_wait_s = 0.31, .compute_s = 0.14, .comm_s = 4.91};
  EXPECT_NEAR(s.times.OtherFraction(), 0.464, 1e-12);
  const std::string report = FormatReport(s);
  EXPECT_NE(report.find("input wait   3.1% | compute   1.4% | communication  49.1% | other  46.4%"),
            std::string::npos)
      << report;
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

// The precision and the model's arithmetic rate: in the report and summary.json when known,
// absent when not (a model split over ranks; fp32's kernels are shardflow's own).
TEST(RunReportTest, PrecisionAndModelRateWhenKnown) {
  RunSummary s;
  s.samples_per_s = 1000;
  s.times.wall_s = 2;
  nlohmann::json j = SummaryToJson(s);
  EXPECT_EQ(j["precision"], "fp32");
  EXPECT_FALSE(j.contains("precision_kernels"));
  EXPECT_FALSE(j.contains("model_gflops_per_s"));
  EXPECT_EQ(FormatReport(s).find("precision "), std::string::npos);
  s.precision = "bf16";
  s.precision_kernels = "oneDNN brg:avx512_core_amx_bf16";
  s.model_gflops_per_s = 12.25;
  j = SummaryToJson(s);
  EXPECT_EQ(j["precision_kernels"], "oneDNN brg:avx512_core_amx_bf16");
  EXPECT_DOUBLE_EQ(j["model_gflops_per_s"].get<double>(), 12.25);
  const std::string report = FormatReport(s);
  EXPECT_NE(report.find("precision       bf16 (oneDNN brg:avx512_core_amx_bf16)\n"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("throughput      1000 samples/s (2.0 s of training), 12.2 GFLOP/s of "
                        "model arithmetic\n"),
            std::string::npos)
      << report;
  EXPECT_FALSE(j.contains("fraction_of_peak"));
  s.peak_gflops_per_s = 49;
  j = SummaryToJson(s);
  EXPECT_DOUBLE_EQ(j["peak_gflops_per_s"].get<double>(), 49);
  EXPECT_DOUBLE_EQ(j["fraction_of_peak"].get<double>(), 0.25);
  EXPECT_NE(FormatReport(s).find("12.2 GFLOP/s of model arithmetic = 0.25 of the 49 GFLOP/s its "
                                 "bf16 GEMM reaches here\n"),
            std::string::npos)
      << FormatReport(s);
  EXPECT_EQ(FormatReport(s).find("Winograd"), std::string::npos);
  s.peak_gflops_per_s = 10;
  EXPECT_NE(FormatReport(s).find("= 1.23 of the 10 GFLOP/s its bf16 GEMM reaches here (Winograd "
                                 "does fewer products)\n"),
            std::string::npos)
      << FormatReport(s);
}

}  // namespace run_report_test
}  // namespace shardflow
