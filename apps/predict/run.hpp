// shardflow-predict's run: every rank predicts its replica's shard of the input through the
// model Prepare loaded (prepare.hpp), the rows are checked against the records the input holds,
// gathered to rank 0 sorted by id and written (prediction_output.hpp); rank 0 reports
// records/s, and the accuracy or the mean reconstruction error.
// Thread-safety: the main thread; collective over the world.
#pragma once

#include "apps/predict/predict_config.hpp"
#include "apps/predict/prepare.hpp"
#include "core/mpi_env.hpp"

namespace shardflow::predict {

// Returns the exit code (0); throws Error for RunMain's run-phase policy (one line from the
// rank that hit it, the job ended): rows that differ from the input's record count (unless
// data.on_corrupt = skip), duplicate ids, an output that cannot be written.
int Run(MpiEnvironment& env, const PredictAppConfig& config, Prepared& p);

}  // namespace shardflow::predict
