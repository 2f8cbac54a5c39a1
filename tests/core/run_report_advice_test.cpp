// The verdict's advice fits the node (issue 24, item 6): no "raise train.threads" when the
// ranks already fill the cores, and autotuned knobs show the value they resolved to.
#include <gtest/gtest.h>

#include <string>

#include "core/run_report.hpp"

namespace shardflow {
namespace {

const StepTimeTotals kComputeBound{
    .wall_s = 10, .input_wait_s = 0.2, .compute_s = 9.5, .comm_s = 0.3};

TEST(RunReportAdviceTest, FullNodeIsNotToldToRaiseThreads) {
  const Verdict v =
      Diagnose(kComputeBound, {.threads = 1, .ranks = 2, .cores = 2, .local_ranks = 2});
  EXPECT_EQ(v.bound, "compute-bound");
  EXPECT_EQ(v.advice.find("train.threads"), std::string::npos) << v.advice;
  EXPECT_NE(v.advice.find("every core is busy (2 ranks x 1 threads on 2 cores)"), std::string::npos)
      << v.advice;
}

TEST(RunReportAdviceTest, IdleCoresSuggestThreadsWithTheCount) {
  const Verdict v =
      Diagnose(kComputeBound, {.threads = 1, .ranks = 2, .cores = 8, .local_ranks = 2});
  EXPECT_NE(v.advice.find("raise train.threads (now 1; 2 ranks x 1 threads use 2 of 8 cores)"),
            std::string::npos)
      << v.advice;
}

TEST(RunReportAdviceTest, AutoShowsTheResolvedValue) {
  const StepTimeTotals t{.wall_s = 10, .input_wait_s = 5, .compute_s = 5, .comm_s = 0};
  const Verdict v = Diagnose(
      t, {.parallel_calls = -1, .parallel_reads = -1, .prefetch = -1, .parallel_reads_used = 1});
  EXPECT_NE(v.advice.find("data.parallel_reads (now auto = 1)"), std::string::npos) << v.advice;
}

}  // namespace
}  // namespace shardflow
