// ModelParallelStrategy: data replicas x pipeline stages (x tensor ways) of one model.
//
// The job's ranks form the grid of apps/common/rank_grid.hpp. Each rank builds only its
// stage's layers (Sequential with a LayerRange: the whole model's names, initial values and
// dropout keys), split at dist.stage_boundaries or balanced by FLOPs. A step splits the
// replica's batch into micro-batches and runs the stage's schedule (GPipe or 1F1B,
// pipeline_stage.hpp); gradients accumulate over the micro-batches, each micro-batch's loss
// gradient scaled by its share of the batch, so the step's gradient is the gradient of the
// batch's mean loss, as on one rank. Then each stage's gradients are averaged over the
// replicas of that stage (the all-reduce of dist.allreduce, shm on a node), the ranks of a
// replica agree in one small all-reduce on the loss, the metrics and the global gradient norm
// (clipping and the non-finite check see the whole model), and every stage steps its own
// optimizer.
// Communicators, all split from the job's (so the watchdog, tracing and error policy cover
// them): pipe (one replica's stages of one way, rank = stage: point-to-point), model (all ranks
// of one replica), replicas (one stage and way across replicas: the gradient all-reduce).
// Every rank of a replica reads the replica's shard of the data: the first stage feeds the
// inputs in, the last takes labels (classification) or inputs (reconstruction) as targets,
// with no extra message; the middle stages read and drop their batches.
// Its unit is "model_parallel", which claims every run whose grid has more than one stage or
// tensor way.
// Thread-safety: as Strategy.
#pragma once

#include <memory>

#include "apps/train/strategy.hpp"
#include "apps/train/strategy_unit.hpp"

namespace shardflow::train {

StrategyUnit ModelParallelUnit();

}  // namespace shardflow::train
