// shardflow-predict's checks before a run, and what they leave for Run (run.hpp).
//
// Prepare is the rest of the parse phase once the command line is read: it runs on every rank
// alike, before any collective, so an error found here (a missing flag, checkpoint or input,
// no usable GPU, ranks that do not factor into the grid, a checkpoint that does not fit the
// model) ends every rank with one line and the same exit code (core/mpi_env.hpp).
// Thread-safety: the main thread, once.
#pragma once

#include <cstdint>
#include <memory>

#include "apps/common/experiment_config.hpp"
#include "apps/common/prediction/model_loader.hpp"
#include "apps/common/rank_grid.hpp"
#include "apps/common/stage_plan.hpp"
#include "apps/common/tensor_sum.hpp"
#include "apps/predict/predict_config.hpp"
#include "comm/communicator.hpp"
#include "core/mpi_env.hpp"
#include "core/tensor.hpp"

namespace shardflow::predict {

struct Prepared {
  apps::ModelSetup options;
  apps::GridShape grid;  // [dist] pipeline_stages x tensor_parallel; data replicas the rest
  apps::RankPlan plan;
  Shape output_shape;  // the whole model's, per sample (a stage's part has its own)
  apps::LoadedModel loaded;
  int64_t local_records = 0;
  std::unique_ptr<comm::Communicator> tensor;   // this stage's tensor ways (made in Run)
  std::unique_ptr<apps::TensorSum> tensor_sum;  // the layers' sums over them
};

// Rewrites config->train.data for prediction and checks the flags and the input files
// (PrepareInputSpec); chooses this rank's device (train.device) and sets the intra-op threads;
// places the rank on the grid; loads its part of the checkpoint onto its device; counts the
// records of its replica's shard. REQUIRES: the command line parsed into *config; *p outlives
// the run (the model's tensor-way sums reach p->tensor_sum).
void Prepare(MpiEnvironment& env, PredictAppConfig* config, Prepared* p);

}  // namespace shardflow::predict
