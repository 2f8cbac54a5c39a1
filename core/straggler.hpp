// Straggler attribution: which rank the others waited for at each step's gradient all-reduce,
// by how much, and whether its extra time was input wait or compute.
//
// Each rank records, per step, when it reached the all-reduce, measured from the end of its
// previous step (every rank leaves a step together, when the all-reduce completes), split into
// the time it waited for its batch and the rest (forward, backward, host work between steps).
// The training loop gathers the records once, at the end of the run, and calls
// AttributeStragglers on rank 0:
//   per step: the last rank to arrive, its margin (its arrival minus the median of the other
//   ranks' arrivals: what a typical rank waited for it), and the part of that margin that was
//   input wait (its wait minus the others' median wait); the rest is compute.
//   over the run: the rank last in the most steps, the fraction of steps it was last in, the
//   median of its margins in those steps, and its cause: input-bound when input wait makes at
//   least half of its summed margins, compute-bound otherwise.
// Why, for an input-bound straggler: the ranks' shards (the bytes and records of the training
// files each reads in an epoch) are compared, and when the straggler's is at least 1.25 times
// the median of the others' (bytes, or else records) the report says so (ExplainByShard).
// Thread-safety: pure functions and plain structs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardflow {

// One rank's step: seconds from the end of its previous step to reaching the all-reduce, and
// the part of them it waited for input.
struct StepArrival {
  float arrival_s = 0;
  float input_s = 0;
};

// The training data a rank reads in one epoch: bytes of its files (its part of each) and
// records; -1: unknown.
struct ShardSize {
  int64_t bytes = -1;
  int64_t records = -1;
};

struct StragglerReport {
  int64_t steps = 0;                  // steps compared
  int rank = -1;                      // the rank last to the all-reduce in the most steps
  double last_fraction = 0;           // the fraction of steps it was last in
  double margin_s = 0;                // median margin in those steps (see above)
  double input_share = 0;             // of its summed margins, the share that was input wait
  std::string cause;                  // "input" | "compute"
  std::vector<double> last_per_rank;  // per rank: the fraction of steps it was last in
  double gather_s = 0;  // what gathering the records and attributing them cost (rank 0's time)
  std::vector<ShardSize> shards;  // per rank, when looked up (NeedsShards())
  std::string why;  // "its shard's files are 2.0x larger (...)" when its shard explains it
  std::string waited_at = "the all-reduce";  // what the ranks arrive at (CommProfile::waits_for)

  // One rank is last in at least 1.5 times its even share of the steps.
  bool Clear() const {
    return rank >= 0 && last_fraction * static_cast<double>(last_per_rank.size()) >= 1.5;
  }
  // A clear input-bound straggler: its shard may explain it (the ranks' shards are looked up).
  bool NeedsShards() const { return Clear() && cause == "input"; }
};

// Sets s->why from s->shards (one per rank, all known) when s->NeedsShards() and the
// straggler's shard has at least 1.25 times the median bytes of the other ranks' shards ("its
// shard's files are 2.0x larger (12.3 MB, 800 records; the other ranks' median 6.1 MB, 400
// records)"), or else 1.25 times their records ("its shard has 2.0x the records ...").
void ExplainByShard(StragglerReport* s);

// `per_rank[r][t]`: rank r's record of step t (every rank the same number of steps). No ranks,
// one rank or no steps: steps = 0 and rank = -1.
StragglerReport AttributeStragglers(const std::vector<std::vector<StepArrival>>& per_rank);

// "rank 1 was last to the all-reduce in 71% of 500 steps, +4.2 ms (median), input-bound (input
// wait 80% of its extra time)", then ": " and `why` when set; when no rank is last in 1.5 times its
// share of the steps (Clear()), "no clear straggler (ranks take turns being last; ...)"; "" when
// the report is empty.
std::string FormatStraggler(const StragglerReport& s);

}  // namespace shardflow
