// Per-step arrival records for straggler attribution (core/straggler.hpp): each rank of the
// step communicator records, for every step, when it reached the gradient all-reduce (from the
// end of its previous step) and how long of that it waited for input. Eight bytes a step kept
// in memory; one gather at the end of the run (no collective per step).
// Thread-safety: one thread (the training loop's).
#pragma once

#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "core/straggler.hpp"

namespace shardflow::train {

class StragglerLog {
 public:
  void Record(double arrival_s, double input_s) {
    steps_.push_back({static_cast<float>(arrival_s), static_cast<float>(input_s)});
  }
  // Collective over `comm` (every rank must have recorded the same number of steps): rank 0
  // returns the attribution, the others an empty report. One rank: empty.
  StragglerReport Gather(comm::Communicator& comm) const;

 private:
  std::vector<StepArrival> steps_;
};

}  // namespace shardflow::train
