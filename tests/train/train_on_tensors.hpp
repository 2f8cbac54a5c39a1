// Helpers of the training MPI tests: train on in-memory tensors, compare parameter vectors.
// Thread-safety: as RunTraining (collective over `job`).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "apps/train/trainer.hpp"

namespace shardflow::train::testing {

// RunTraining over `job` on features "x" and "y" of (x, y), batched by o.per_rank_batch, and
// evaluated on the same rows in batches of `eval_batch` (this rank's rows, as given).
inline TrainResult TrainOnTensors(const comm::Communicator& job, const Tensor& x, const Tensor& y,
                                  const TrainerOptions& o, int64_t eval_batch,
                                  const StrategyFactory& factory = {}) {
  TrainerInputs inputs;
  inputs.train = [&] {
    return pipeline::Dataset::FromTensors({{"x", x}, {"y", y}}).Batch(o.per_rank_batch);
  };
  inputs.eval = [&, eval_batch] {
    return pipeline::Dataset::FromTensors({{"x", x}, {"y", y}}).Batch(eval_batch);
  };
  return RunTraining(job, o, inputs, factory);
}

// The largest absolute difference of two equally long vectors.
inline double MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double most = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    most = std::max(most, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  return most;
}

}  // namespace shardflow::train::testing
