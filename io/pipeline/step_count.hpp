// Equal step counts across ranks (docs/design.md decision 6).
//
// Shards can differ by a few records, so ranks may have different numbers of batches per
// epoch; a rank that runs out early would leave the others waiting in a collective. The
// caller computes its local count, takes the MIN over ranks (an MPI all-reduce in comm/ — io
// never includes comm) and limits every rank to the agreed count:
//
//   int64_t local = LocalBatchCount(per_epoch_batches);
//   int64_t agreed = comm.AllReduceMin(local);
//   auto report = std::make_shared<StepLimitReport>();
//   Dataset train = LimitSteps(per_epoch_batches, agreed, report).Repeat(epochs);
//
// LimitSteps yields the first `agreed` elements (batches) of each pass, then reads and counts
// the rest of that pass (so the input ends cleanly and nothing is silently lost) and logs
// what it left out; `report` accumulates it across passes.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "io/pipeline/dataset.hpp"

namespace shardflow::pipeline {

// Batches in one pass of `one_pass`: its cardinality when known, else counted by iterating
// (REQUIRES: finite). Throws Error(kInvalidArgument) for an infinite dataset.
int64_t LocalBatchCount(const Dataset& one_pass);

struct StepLimitReport {
  std::atomic<int64_t> steps{0};              // batches handed out
  std::atomic<int64_t> batches_left_out{0};   // batches past the agreed count
  std::atomic<int64_t> elements_left_out{0};  // rows in them (first dimension)
};

// REQUIRES: agreed >= 0. report may be null.
Dataset LimitSteps(const Dataset& batches, int64_t agreed, std::shared_ptr<StepLimitReport> report);

}  // namespace shardflow::pipeline
