// shardflow-sim step: replays the data-parallel training step's gradient all-reduce schedule
// (comm/gradient_reducer.hpp) on the simulated platform, with the step's computation injected
// as simulated compute time.
//
//   shardflow-sim step --buckets 2097152,1048576 [--input-s 0] [--forward-s 0.001]
//       [--backward-s 0.002] [--steps 5] [--algorithm auto] [--no-overlap]
//
// --buckets: the gradient buckets' sizes in bytes, in the order backprop finishes them (the
// reducer's buckets: sim/model_buckets.cpp prints them for a model preset). One step is
//   input + forward compute; then backward compute, during which bucket i becomes ready when
//   the fraction (bytes of buckets 0..i) / (all bytes) of the backward time has passed and is
//   all-reduced at once, one bucket after another, as the reducer's communication thread does
//   (with --no-overlap every bucket waits for the end of backward); the step ends when both
//   backward and the last all-reduce are done.
// The all-reduces run for real through comm::Allreduce on SMPI_SHARED_MALLOC buffers; compute
// only advances the simulated clock (the reducer's thread and the compute thread are modelled
// by issuing each all-reduce no earlier than its bucket is ready and charging any compute left
// before it). Prints on rank 0 one CSV line:
//   ranks,nodes,algorithm,buckets,grad_bytes,compute_s,step_s,comm_s,exposed_comm_s
// step_s: the median over --steps of the slowest rank's step; comm_s: its time inside
// all-reduces; exposed_comm_s = step_s - compute_s (communication not hidden by backward).
#include <smpi/smpi.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "sim/driver/sim_driver.hpp"

namespace shardflow::sim {
namespace {

struct StepArgs {
  std::vector<size_t> buckets;
  double input_s = 0;
  double forward_s = 0;
  double backward_s = 0;
  int steps = 5;
  std::string algorithm = "auto";
  bool overlap = true;
};

constexpr const char* kUsage =
    "shardflow-sim step --buckets B1,B2,... [--input-s S] [--forward-s S] [--backward-s S] "
    "[--steps N] [--algorithm auto] [--no-overlap]";

double ParseSeconds(const std::string& text, const std::string& flag) {
  size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(value >= 0)) {
    throw Error(ErrorCode::kInvalidArgument, "bad seconds '" + text + "'",
                {.key = flag, .hint = "a number >= 0"});
  }
  return value;
}

StepArgs ParseStepArgs(const std::vector<std::string>& args) {
  StepArgs a;
  FlagReader flags(args);
  while (flags.Next()) {
    const std::string& f = flags.flag();
    if (f == "--buckets") {
      for (const std::string& s : SplitList(flags.Value())) a.buckets.push_back(ParseBytes(s, f));
    } else if (f == "--input-s") {
      a.input_s = ParseSeconds(flags.Value(), f);
    } else if (f == "--forward-s") {
      a.forward_s = ParseSeconds(flags.Value(), f);
    } else if (f == "--backward-s") {
      a.backward_s = ParseSeconds(flags.Value(), f);
    } else if (f == "--steps") {
      a.steps = static_cast<int>(ParseBytes(flags.Value(), f));
    } else if (f == "--algorithm") {
      a.algorithm = flags.Value();
    } else if (f == "--no-overlap") {
      a.overlap = false;
    } else {
      flags.Unknown(kUsage);
    }
  }
  if (a.buckets.empty() || a.steps < 1) {
    throw Error(ErrorCode::kInvalidArgument, "step needs --buckets and --steps >= 1",
                {.hint = kUsage});
  }
  ParseSimAlgorithm(a.algorithm);  // fails early on a bad name
  return a;
}

struct StepTimes {
  double step_s = 0;
  double comm_s = 0;
};

// One simulated step; `grads` holds every bucket back to back.
StepTimes RunOneStep(comm::Communicator& comm, const StepArgs& a, float* grads,
                     const comm::AllreduceOptions& options) {
  size_t total = 0;
  for (size_t b : a.buckets) total += b;
  const double start = SimClock();
  SimCompute(a.input_s + a.forward_s);
  const double backward_start = SimClock();
  StepTimes t;
  size_t done_bytes = 0;
  for (size_t b : a.buckets) {
    done_bytes += b;
    const double ready =
        a.overlap ? backward_start + a.backward_s * static_cast<double>(done_bytes) / total
                  : backward_start + a.backward_s;
    SimCompute(ready - SimClock());
    const double c0 = SimClock();
    comm::Allreduce(comm, grads, b / sizeof(float), options);
    t.comm_s += SimClock() - c0;
    grads += b / sizeof(float);
  }
  SimCompute(backward_start + a.backward_s - SimClock());
  t.step_s = SimClock() - start;
  return t;
}

}  // namespace

int RunStep(comm::Communicator& comm, const std::vector<std::string>& args) {
  const StepArgs a = ParseStepArgs(args);
  size_t total = 0;
  for (size_t b : a.buckets) total += b;
  comm::AllreduceOptions options;
  options.algorithm = ParseSimAlgorithm(a.algorithm);
  options.mode = comm::ReduceMode::kAverage;
  auto* grads = static_cast<float*>(SMPI_SHARED_MALLOC(total));
  std::vector<double> steps;
  std::vector<double> comms;
  for (int s = 0; s < a.steps; ++s) {
    AlignedStart(comm);  // steps start together (the previous step's update is local)
    const StepTimes t = RunOneStep(comm, a, grads, options);
    steps.push_back(MaxOverRanks(comm, t.step_s));
    comms.push_back(MaxOverRanks(comm, t.comm_s));
  }
  SMPI_SHARED_FREE(grads);
  std::sort(steps.begin(), steps.end());
  std::sort(comms.begin(), comms.end());
  const double step_s = steps[steps.size() / 2];
  const double compute_s = a.input_s + a.forward_s + a.backward_s;
  if (comm.rank() == 0) {
    std::printf(
        "ranks,nodes,algorithm,buckets,grad_bytes,compute_s,step_s,comm_s,exposed_comm_s\n");
    std::printf("%d,%d,%s,%zu,%zu,%.9g,%.9g,%.9g,%.9g\n", comm.size(), comm.num_nodes(),
                a.algorithm.c_str(), a.buckets.size(), total, compute_s, step_s,
                comms[comms.size() / 2], std::max(0.0, step_s - compute_s));
  }
  return 0;
}

}  // namespace shardflow::sim
