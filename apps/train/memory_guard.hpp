// train.max_memory_mb: a per-rank cap on the model state a rank holds, checked before anything
// is allocated, so a model that does not fit fails at once with one line saying what it needs
// and how to split it, instead of being killed by the out-of-memory killer mid-run.
// The state counted is this rank's parameters, their gradients and the optimizer's slots
// (float32); activations, input buffers and the runtime come on top and are measured instead
// (summary.json peak_rss_mib, per rank).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "apps/train/trainer.hpp"

namespace shardflow::train {

// Bytes of parameters + gradients + optimizer slots for `parameters` floats.
int64_t ModelStateBytes(int64_t parameters, const OptimizerOptions& optimizer);

// Throws Error(kInvalidArgument), key train.max_memory_mb, when o.max_memory_mb > 0 and the
// state of `parameters` floats exceeds it; `holder` says whose state it is ("the whole model",
// "stage 2 (layers 4-5)").
void CheckMemoryCap(const TrainerOptions& o, int64_t parameters, const std::string& holder);

// MemAvailable of /proc/meminfo in bytes; -1 where it cannot be read.
int64_t AvailableMemoryBytes();

// Without train.max_memory_mb: throws Error(kInvalidArgument), key train.max_memory_mb, when the
// state of `parameters` floats on each of `ranks_here` ranks of this node exceeds the memory the
// node has available (/proc/meminfo MemAvailable; no check where it cannot be read), naming
// both, so a table too large for a worker fails at once instead of under the OOM killer.
void CheckMemoryFits(const TrainerOptions& o, int64_t parameters, int ranks_here,
                     const std::string& holder);

// The checks of a run's model plan that every rank finds alike, for the parse phase (one line
// says what is wrong, exit 2): the stage boundaries of a grid (given or balanced) and, with
// train.max_memory_mb, this rank's share of the model state (its stage, or the whole model).
// A strategy's own checks (StrategyUnit::check) come on top.
void CheckModelPlan(const TrainerOptions& o, int rank);

}  // namespace shardflow::train
