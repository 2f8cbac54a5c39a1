// ParameterServerStrategy: asynchronous (or stale-synchronous) training through server ranks.
//
// Roles: of N ranks K = dist.ps_ranks are servers (the last ones, or where dist.ps_placement
// puts them: ps_placement.hpp), the others workers; worker 0 (rank 0) is the chief (metrics,
// evaluation reduce, checkpoints, the report). The whole parameter arena is cut at parameter
// boundaries into K contiguous slices balanced by bytes; server k owns slice k and its optimizer
// state, and applies the gradients pushed to it. A worker's step: pull every slice (it asks with
// its step number), forward and backward on its own batch, push its gradient slices (non-blocking:
// they travel while the next batch is read). A server answers a pull for step t only when every
// worker's gradient up to step t - 1 - max_staleness has been applied (stale-synchronous parallel):
//   max_staleness < 0  fully asynchronous: each push is applied as it arrives (scaled by 1/W);
//   max_staleness = s  the same, but no worker runs more than s steps ahead of the slowest;
//   max_staleness = 0  synchronous: the server sums the W pushes of a step and applies their
//                      mean once, the update data-parallel training makes (to float rounding).
// Every push records how many updates the server applied between the worker's pull and the
// push (its staleness: a histogram in summary.json), and every answered pull the step gap to
// the slowest worker (never above max_staleness; counted in the tests).
// Transport (dist.ps_transport, docs/design.md decision 38): p2p, non-blocking point-to-point on a
// communicator of the job (comm/), the server an event loop over Poll (any source) that sleeps
// while idle, so a server sharing a core with a worker takes little of it; or rma, one-sided
// windows the workers read and write and the server scans (parameter_server_rma.cpp). A server that
// hears nothing for dist.watchdog_seconds while some worker is not done ends the job naming the
// silent workers. Sparse tables (dist.ps_tables = sparse, a model with embedding-bag or wide
// tables, sparse_tables.hpp) are not in the slices: each server holds a range of every table's
// rows, a pull carries the batch's distinct ids and brings their rows, a push sends their
// gradient rows, and the chief and the servers write the checkpoint together. Checkpoints: the
// chief pulls every slice with its optimizer state and writes the same file as data-parallel
// training (resumable under any strategy, readable by shardflow-predict). Asynchronous runs are not
// bit-reproducible (the order pushes arrive in varies); the synchronous mode is, up to that order's
// float rounding. Thread-safety: as Strategy.
#pragma once

#include <memory>

#include "apps/train/strategy.hpp"
#include "apps/train/strategy_unit.hpp"

namespace shardflow::train {

// The registered unit (ps_unit.cpp): dist.strategy = parameter_server.
StrategyUnit ParameterServerUnit();
std::unique_ptr<Strategy> MakeParameterServer(const StrategyEnv& env);

// Slices [offset, offset + size) of an arena whose parameters are `sizes` (in arena order),
// cut at parameter boundaries into `servers` pieces balanced by elements. Throws
// Error(kInvalidArgument), key dist.ps_ranks, when there are more servers than non-empty
// parameters.
struct ServerSlice {
  int64_t offset = 0;
  int64_t size = 0;
};
std::vector<ServerSlice> CutArena(const std::vector<int64_t>& sizes, int servers);

}  // namespace shardflow::train
