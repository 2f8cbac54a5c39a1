// shardflow-train's run once the command line is parsed and checked (main.cpp): the training
// itself with its outputs and report (Run), or the dry run of --check (DryRun).
// Thread-safety: the main thread.
#pragma once

#include <cstdint>

#include "apps/common/experiment_config.hpp"
#include "apps/train/trainer.hpp"
#include "core/mpi_env.hpp"
#include "core/tensor.hpp"

namespace shardflow::train {

// The shard of the training data a rank reads (its role in the strategy's plan).
struct DataShard {
  int index = 0;
  int count = 1;
};
DataShard ShardOf(const TrainerOptions& o, int rank);

// Trains on this rank's shard (`local_batches` per pass), writes summary.json and prints the
// report (rank 0); returns the exit status (kExitPreempted when stopped by a signal).
int Run(MpiEnvironment& env, const apps::ExperimentConfig& config, const TrainerOptions& options,
        int64_t local_batches, Device device);

// --check: what a run would do, from every rank's counts, printed by rank 0; nothing trained or
// written.
int DryRun(MpiEnvironment& env, const apps::ExperimentConfig& config, const TrainerOptions& o);

}  // namespace shardflow::train
