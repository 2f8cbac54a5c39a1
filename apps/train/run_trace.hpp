// The Chrome trace of a training run (`[log] trace`): tracing on from the start, each rank's
// clock measured against rank 0's at the start and at the end (comm/clock_sync.hpp), every
// rank's OUTPUT/trace.rankN.json written with those samples, and rank 0 merging them into
// OUTPUT/trace.json on rank 0's clock (core/trace.hpp MergeTraceFiles; shardflow-trace merge
// does the same offline). TraceInputQueues adds the input pipeline's queue depths to it.
// Thread-safety: collective over `ctl`; one thread of each rank.
#pragma once

#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/trace.hpp"

namespace shardflow::pipeline {
class PipelineStats;
}

namespace shardflow::train {

class RunTrace {
 public:
  // Starts tracing and takes the first clock sample when `on`. Collective.
  RunTrace(comm::Communicator& ctl, bool on, std::string output_dir);
  // Stops tracing, takes the second sample, writes this rank's file and (rank 0, after every
  // rank wrote) the merged one. Collective; nothing when off or without an output folder.
  void Finish();

 private:
  void Sample();

  comm::Communicator& ctl_;
  const bool on_;
  const std::string output_dir_;
  std::vector<TraceClockSample> clock_;
};

// When tracing is on, one counter per input pipeline stage, "queue <stage>": the elements it
// holds ready for its consumer now (the training loop calls it at each batch). While tracing
// is off: one relaxed load and a branch.
void TraceInputQueues(const pipeline::PipelineStats& stats);

}  // namespace shardflow::train
