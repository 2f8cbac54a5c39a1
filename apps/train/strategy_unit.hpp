// A strategy as one registered unit: everything shardflow-train knows about a way of sharing the
// work between ranks, in one value registered once (strategies/registered.cpp for the built-in
// ones; RegisterStrategyUnit from a test for a test-only one).
//
// A unit states, before anything is allocated:
//   - its name (what dist.strategy takes) and one line for --help;
//   - the [dist] keys it reads: listed in --help under its name, shown in the resolved table
//     only when the run's unit reads them, refused (one line, file and line) when set for a run
//     whose unit does not read them. The built-in keys stay declared with the experiment file
//     (apps/common/experiment_config.cpp), because shardflow-predict and shardflow-serve parse
//     the same file; a unit may add keys of its own (add_keys) that only shardflow-train knows;
//   - Resolve: validates its keys and fills its part of the options (its own options object,
//     how many data replicas the ranks form);
//   - Plan: the role of every rank (which shard it reads, whether it takes a GPU, whether it
//     takes batches or serves, whether it writes checkpoints), a pure function every rank
//     computes alike (printed by --check, used by the mains, device choice and the loop);
//   - Check: per-rank checks of the parse phase (slices, memory) before anything is allocated;
//   - the factory of its runtime Strategy (strategy.hpp).
// Nothing outside a strategy's folder, this registry and the docs names a strategy.
// Thread-safety: registration and lookup lock the registry; units are immutable once added.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "apps/common/experiment_config.hpp"
#include "apps/train/trainer.hpp"
#include "core/config.hpp"

namespace shardflow::train {

// The job a unit plans for: its rank count and which node each rank is on (any value shared by
// the ranks of a node; empty: each rank is its own node).
struct JobShape {
  int ranks = 1;
  std::vector<int> node_of_rank;
};

// Keys a unit added to the schema (add_keys); the unit's Resolve reads them back. A unit's own
// type derives from it.
class StrategyKeys {
 public:
  virtual ~StrategyKeys() = default;
};

// What Resolve is given.
struct StrategyConfig {
  const apps::ExperimentConfig& config;
  const StrategyKeys* keys = nullptr;  // what add_keys returned, or null
  JobShape job;
};

struct StrategyUnit {
  std::string name;     // what dist.strategy takes
  std::string summary;  // one line for --help
  // The shared [dist] keys (full names, "dist.ps_ranks") only this unit reads.
  std::vector<std::string> keys;
  // Takes the run when dist.strategy is auto (or names a unit that yields to claims) and this
  // holds: model parallelism claims a grid with stages or tensor ways. May be empty.
  std::function<bool(const apps::ExperimentConfig&)> claims;
  // Named explicitly, a unit that yields lets a claiming unit take the run (data parallelism:
  // a grid of split replicas is data parallelism over them).
  bool yields_to_claims = false;
  // Whether the run may claim batches as it goes (dist.sharding = dynamic): workers that step
  // independently.
  bool dynamic_sharding = false;
  // Registers keys only shardflow-train knows (for a test-only or out-of-tree unit). May be empty.
  std::function<std::unique_ptr<StrategyKeys>(ConfigSchema&)> add_keys;
  // How many data replicas `job` forms under this unit (batches and learning-rate scaling count
  // them); throws Error(kInvalidArgument) naming the key when the job cannot be planned.
  std::function<int(const StrategyConfig&)> replicas;
  // Validates the unit's keys and fills its options (o->strategy_options, ...). May be empty.
  std::function<void(const StrategyConfig&, TrainerOptions*)> resolve;
  // Every rank's role (pure; the same on every rank).
  std::function<JobPlan(const TrainerOptions&, const JobShape&)> plan;
  // Parse-phase checks for `rank` (may be empty).
  std::function<void(const TrainerOptions&, int rank)> check;
  StrategyFactory make;
};

// The registry. A unit registered under an existing name replaces it.
void RegisterStrategyUnit(StrategyUnit unit);
// The registered names, sorted.
std::vector<std::string> StrategyNames();
// The unit registered as `name` ("" and "auto": the default unit, data_parallel); throws
// Error(kInvalidArgument) naming dist.strategy and the known names (with a suggestion when one
// is close) for an unknown name.
const StrategyUnit& FindStrategyUnit(const std::string& name);
// The unit that runs `config`: a unit that claims it when dist.strategy is auto or names a unit
// that yields to claims, else the one dist.strategy names. Throws as FindStrategyUnit.
const StrategyUnit& ChooseStrategyUnit(const apps::ExperimentConfig& config);

// shardflow-train's schema, before parsing: every unit adds its own keys (add_keys), and each
// unit's keys show in the resolved table only when that unit runs (once ResolveStrategyUnit has
// chosen it).
struct StrategySchema {
  std::vector<std::pair<std::string, std::shared_ptr<StrategyKeys>>> added;  // by unit name
  std::shared_ptr<std::string> chosen = std::make_shared<std::string>();     // the unit's name
};
StrategySchema DescribeStrategies(ConfigSchema& schema);
// For --help: one paragraph, a line per unit: its name, summary and the keys it reads.
std::string StrategiesHelp();

// After parsing: the unit that runs (ChooseStrategyUnit), after refusing another unit's keys
// given explicitly (Error(kInvalidArgument): the key, where it was set, the unit that reads it).
// Records the choice in `described` (for the resolved table).
const StrategyUnit& ResolveStrategyUnit(const ConfigSchema& schema, const StrategySchema& described,
                                        const apps::ExperimentConfig& config);

// The running unit's own parse-phase checks for `rank` (StrategyUnit::check), when it has any.
void CheckStrategy(const TrainerOptions& o, int rank);

// Each rank's index among the ranks of its node that take a GPU (their GPU when a node's GPUs
// are visible to all its ranks), -1 for ranks that take none: fills plan->ranks[r].compute_index.
void AssignComputeIndices(const std::vector<int>& node_of_rank, JobPlan* plan);

// The plan `o` runs with: o.plan when resolved, else the registered unit's plan for o.strategy
// over `ranks` ranks (tests that build TrainerOptions by hand), else one replica per rank.
JobPlan PlanOf(const TrainerOptions& o, int ranks);

}  // namespace shardflow::train
