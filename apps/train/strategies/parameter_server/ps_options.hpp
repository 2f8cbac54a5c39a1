// The parameter-server strategy's own options ([dist] ps_ranks, ps_placement, ps_transport,
// max_staleness), resolved by its unit (ps_unit.cpp) and read only in this folder and its tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/train/trainer.hpp"

namespace shardflow::train {

struct PsOptions final : StrategyOptions {
  int ranks = 1;                  // how many ranks serve
  std::vector<int> servers;       // which (ps_placement.hpp); empty: the last `ranks`
  std::string transport = "p2p";  // p2p or rma (ps_placement.hpp ResolvePsTransport)
  int64_t max_staleness = -1;     // steps ahead of the slowest worker; -1: unbounded
  // The model's embedding-bag and wide tables are sharded row by row over the servers
  // (dist.ps_tables = sparse and the model has such tables: sparse_tables.hpp).
  bool sparse_tables = false;
};

// o.strategy_options as PsOptions; the defaults when it holds none (options built by hand).
const PsOptions& PsOptionsOf(const TrainerOptions& o);

}  // namespace shardflow::train
