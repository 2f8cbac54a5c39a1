// Per-step arrival records for straggler attribution (core/straggler.hpp): each rank of the
// step communicator records, for every step, when it reached the gradient all-reduce (from the
// end of its previous step) and how long of that it waited for input. Eight bytes a step kept
// in memory; one gather at the end of the run (no collective per step). When rank 0 finds a
// clear input-bound straggler, every rank then sizes its shard (ShardSizeOf) for the "why".
// Thread-safety: one thread (the training loop's).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "comm/communicator.hpp"
#include "core/straggler.hpp"

namespace shardflow::pipeline {
struct InputSpec;
}

namespace shardflow::train {

class StragglerLog {
 public:
  void Record(double arrival_s, double input_s) {
    steps_.push_back({static_cast<float>(arrival_s), static_cast<float>(input_s)});
  }
  // Collective over `comm` (every rank must have recorded the same number of steps): rank 0
  // returns the attribution, the others an empty report. One rank: empty. `shard_size` (may be
  // empty: no "why") gives this rank's shard; called on every rank, only when rank 0's
  // attribution NeedsShards().
  StragglerReport Gather(comm::Communicator& comm,
                         const std::function<ShardSize()>& shard_size = {}) const;

 private:
  std::vector<StepArrival> steps_;
};

// The training files rank `rank` of `world` reads in an epoch under `spec`: the bytes of its
// part of each file (file sizes and the shard plan) and its records (pipeline::CountLocalRecords,
// which reads the files' record index). TFRecord only; unknown (-1) for other formats and where
// either cannot be had.
ShardSize ShardSizeOf(const pipeline::InputSpec& spec, int rank, int world);

}  // namespace shardflow::train
