// DataParallelStrategy: synchronous data parallelism, every rank a full replica.
//
// Per step each rank runs forward and backward on its own batch; the gradient reducer averages
// gradients over ranks bucket by bucket while backprop continues (comm/gradient_reducer.hpp),
// so every rank applies the same update and replicas stay identical (bit for bit). Parameters
// are broadcast from rank 0 at start (after a resume or warm start too). When all ranks share
// one node and the all-reduce is auto or shm, the gradient arena lives in a shared-memory
// window and is reduced in place; a node whose /dev/shm cannot hold it falls back, with one
// warning, to staged all-reduce.
// Its unit is "data_parallel", what dist.strategy = auto runs unless a grid splits the model.
// Thread-safety: as Strategy; the reducer runs its own communication thread on a communicator
// of its own.
#pragma once

#include <memory>
#include <string>

#include "apps/train/replica_strategy.hpp"
#include "apps/train/strategy_unit.hpp"

namespace shardflow::train {

StrategyUnit DataParallelUnit();

}  // namespace shardflow::train
