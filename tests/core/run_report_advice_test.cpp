// The verdict's advice fits the node (issue 24, item 6): no "raise train.threads" when the
// ranks already fill the cores, and autotuned knobs show the value they resolved to.
#include <gtest/gtest.h>

#include <string>

#include "core/run_report.hpp"

namespace shardflow {
namespace run_report_advice_test {

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

// mpirun binds each of 2 or fewer ranks to one core: train.threads = 2 then time-slices on it
// (1 rank x 2 threads trained at half the speed of 2 ranks x 1 thread), and the advice says so.
TEST(RunReportAdviceTest, ThreadsOverTheBoundCoresSayHowToUnbind) {
  const Verdict v = Diagnose(
      kComputeBound, {.threads = 2, .ranks = 1, .cores = 2, .local_ranks = 1, .bound_cores = 1});
  EXPECT_EQ(v.bound, "compute-bound");
  EXPECT_NE(v.advice.find("the 2 threads of each rank share the 1 core the launcher bound it "
                          "to: to use 2, give mpirun --map-by slot:PE=2 or --bind-to none"),
            std::string::npos)
      << v.advice;
  EXPECT_EQ(v.advice.find("every core is busy"), std::string::npos) << v.advice;
  // Bound to enough cores, or the binding unknown: the advice is as before.
  for (const int bound : {2, 0}) {
    const Verdict fits =
        Diagnose(kComputeBound,
                 {.threads = 2, .ranks = 1, .cores = 2, .local_ranks = 1, .bound_cores = bound});
    EXPECT_NE(fits.advice.find("every core is busy"), std::string::npos) << fits.advice;
  }
}

TEST(RunReportAdviceTest, AutoShowsTheResolvedValue) {
  const StepTimeTotals t{.wall_s = 10, .input_wait_s = 5, .compute_s = 5, .comm_s = 0};
  const Verdict v = Diagnose(
      t, {.parallel_calls = -1, .parallel_reads = -1, .prefetch = -1, .parallel_reads_used = 1});
  EXPECT_NE(v.advice.find("data.parallel_reads (now auto = 1)"), std::string::npos) << v.advice;
}

}  // namespace run_report_advice_test
}  // namespace shardflow
