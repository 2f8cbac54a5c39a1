// The Chrome trace of a training run (`[log] trace`): tracing on from the start, each rank's
// clock measured against rank 0's at the start and at the end (comm/clock_sync.hpp), every
// rank's OUTPUT/trace.rankN.json written with those samples, and rank 0 merging them into
// OUTPUT/trace.json on rank 0's clock (core/trace.hpp MergeTraceFiles; shardflow-trace merge
// does the same offline).
// Thread-safety: collective over `ctl`; one thread of each rank.
#pragma once

#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "core/trace.hpp"

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

}  // namespace shardflow::train
