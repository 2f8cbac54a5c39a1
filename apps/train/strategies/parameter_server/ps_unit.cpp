// The parameter-server strategy as a registered unit: its keys, its roles (servers read no data
// and take no GPU; workers share the data, worker 0 is rank 0, the chief that writes the
// checkpoints), and the checks of the parse phase.
#include <memory>
#include <string>
#include <thread>

#include "apps/train/strategies/parameter_server/parameter_server.hpp"
#include "apps/train/strategies/parameter_server/ps_options.hpp"
#include "apps/train/strategies/parameter_server/ps_placement.hpp"
#include "core/error.hpp"

namespace shardflow::train {
namespace {

bool HasTables(const TrainerOptions& o) {
  for (const LayerInfo& layer : DescribeLayers(o.model_spec, o.input_shape, o.model)) {
    const std::string kind = layer.name.substr(layer.name.find('_') + 1);
    if (kind == "embedbag" || kind == "wide") return true;
  }
  return false;
}

// What sparse tables do not do (yet): each refusal names its key.
void CheckSparseTables(const apps::ExperimentConfig& c, const TrainerOptions& o) {
  auto refuse = [](const std::string& what, const std::string& key) {
    throw Error(
        ErrorCode::kInvalidArgument,
        "dist.ps_tables = sparse (the model's embedding tables split over the servers) " + what,
        {.key = key, .hint = "dist.ps_tables = dense keeps whole tables in the slices"});
  };
  if (c.ps_transport == "rma")
    refuse("travels as messages, not dist.ps_transport = rma", "dist.ps_transport");
  if (o.model.device != Device::kCpu)
    refuse("trains on the CPU: embedding bags read host memory", "train.device");
  if (o.clip_norm > 0)
    refuse("cannot clip by the global norm: the servers apply the tables' rows", "train.clip_norm");
}

void Resolve(const StrategyConfig& sc, TrainerOptions* o) {
  const apps::ExperimentConfig& c = sc.config;
  if (o->model_parallel.grid.model_parallel()) {
    throw Error(ErrorCode::kInvalidArgument,
                "dist.strategy parameter_server does not combine with pipeline stages or "
                "tensor-parallel ways",
                {.key = "dist.strategy"});
  }
  if (c.max_staleness < -1) {
    throw Error(ErrorCode::kInvalidArgument,
                "dist.max_staleness " + std::to_string(c.max_staleness) +
                    " is not a step count: -1 means unbounded, 0 synchronous, N > 0 at most N "
                    "steps ahead of the slowest worker",
                {.key = "dist.max_staleness", .hint = "-1, 0 or a positive count"});
  }
  if (o->dynamic_sharding && c.max_staleness >= 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "dist.sharding = dynamic needs asynchronous workers (dist.max_staleness = -1), "
                "not max_staleness " +
                    std::to_string(c.max_staleness) + ": workers take different step counts",
                {.key = "dist.sharding"});
  }
  auto ps = std::make_shared<PsOptions>();
  ps->sparse_tables = c.ps_tables == "sparse" && HasTables(*o);
  if (ps->sparse_tables) {
    CheckSparseTables(c, *o);
    o->model.remote_tables = true;  // every rank's replica (and its memory cap) holds no rows
  }
  ps->ranks = c.ps_ranks;
  ps->servers =
      PlaceParameterServers(sc.job.ranks, c.ps_ranks, c.ps_placement, sc.job.node_of_rank).servers;
  ps->transport = ps->sparse_tables  // row lists of varying length travel as messages
                      ? "p2p"
                      : ResolvePsTransport(c.ps_transport, sc.job.node_of_rank,
                                           static_cast<int>(std::thread::hardware_concurrency()));
  ps->max_staleness = c.max_staleness;
  o->strategy_options = std::move(ps);
}

JobPlan Plan(const TrainerOptions& o, const JobShape& job) {
  const PsOptions& ps = PsOptionsOf(o);
  const PsRoles roles = RolesOf(job.ranks, ps.ranks, ps.servers);
  JobPlan plan;
  plan.shards = static_cast<int>(roles.workers.size());
  for (int r = 0; r < job.ranks; ++r) {
    const int worker = roles.worker_index(r);
    if (worker >= 0) {
      plan.ranks.push_back({.shard = worker,
                            .writes_checkpoints = r == 0,
                            .role = "worker " + std::to_string(worker)});
    } else {
      plan.ranks.push_back({.shard = -1,
                            .takes_batches = false,
                            .takes_gpu = false,
                            .role = "server " + std::to_string(roles.server_index(r))});
    }
  }
  return plan;
}

// The servers' slices are whole parameter tensors: no more servers than tensors.
void Check(const TrainerOptions& o, int) {
  std::vector<int64_t> sizes;  // in arena order: the last layer's first
  const std::vector<LayerInfo> layers = DescribeLayers(o.model_spec, o.input_shape, o.model);
  for (auto layer = layers.rbegin(); layer != layers.rend(); ++layer) {
    for (const auto& [name, shape] : layer->params) sizes.push_back(NumElements(shape));
  }
  CutArena(sizes, PsOptionsOf(o).ranks);
}

}  // namespace

const PsOptions& PsOptionsOf(const TrainerOptions& o) {
  static const PsOptions defaults;
  const auto* ps = dynamic_cast<const PsOptions*>(o.strategy_options.get());
  return ps != nullptr ? *ps : defaults;
}

StrategyUnit ParameterServerUnit() {
  StrategyUnit unit;
  unit.name = "parameter_server";
  unit.summary =
      "dist.ps_ranks ranks hold the parameters and their optimizer state, the other ranks are "
      "workers that pull and push (asynchronous, or bounded by dist.max_staleness)";
  unit.keys = {"dist.ps_ranks", "dist.ps_placement", "dist.ps_transport", "dist.ps_tables",
               "dist.max_staleness"};
  unit.dynamic_sharding = true;
  unit.replicas = [](const StrategyConfig& sc) {
    if (sc.config.ps_ranks >= sc.job.ranks) {
      throw Error(ErrorCode::kInvalidArgument,
                  "dist.ps_ranks " + std::to_string(sc.config.ps_ranks) +
                      " leaves no worker among " + std::to_string(sc.job.ranks) + " ranks",
                  {.key = "dist.ps_ranks", .hint = "run more ranks than parameter servers"});
    }
    return sc.job.ranks - sc.config.ps_ranks;  // the workers
  };
  unit.resolve = Resolve;
  unit.plan = Plan;
  unit.check = Check;
  unit.make = MakeParameterServer;
  return unit;
}

}  // namespace shardflow::train
