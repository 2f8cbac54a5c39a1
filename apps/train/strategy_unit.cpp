#include "apps/train/strategy_unit.hpp"

#include <algorithm>
#include <map>
#include <memory>

#include "apps/train/strategies/registered.hpp"
#include "core/edit_distance.hpp"
#include "core/error.hpp"
#include "core/thread_annotations.hpp"

namespace shardflow::train {
namespace {

struct Registry {
  Mutex mu;
  // Units on the heap: FindStrategyUnit hands out references, which stay valid until a unit of
  // the same name replaces it (registration comes before any run).
  std::map<std::string, std::unique_ptr<const StrategyUnit>> units GUARDED_BY(mu);
};

// The built-in units are added by one call (strategies/registered.cpp) rather than by static
// registration objects, which a static library's linker drops when nothing references their
// object file.
Registry& TheRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry;
    for (StrategyUnit& unit : BuiltInStrategyUnits()) {
      std::string name = unit.name;
      MutexLock lock(r->mu);
      r->units[name] = std::make_unique<const StrategyUnit>(std::move(unit));
    }
    return r;
  }();
  return *registry;
}

// The unit that runs when dist.strategy is auto (or TrainerOptions::strategy empty) and no unit
// claims the config.
constexpr const char* kDefaultStrategy = "data_parallel";

// The unit that reads `key` among the registered ones, or null when it is everyone's.
const StrategyUnit* OwnerOf(const std::string& key) {
  for (const std::string& name : StrategyNames()) {
    const StrategyUnit& unit = FindStrategyUnit(name);
    if (std::find(unit.keys.begin(), unit.keys.end(), key) != unit.keys.end()) return &unit;
  }
  return nullptr;
}

}  // namespace

void RegisterStrategyUnit(StrategyUnit unit) {
  if (unit.name.empty() || !unit.make || !unit.plan || !unit.replicas) {
    throw Error(ErrorCode::kInternal,
                "a strategy unit needs a name, a factory, a plan and a replica count ('" +
                    unit.name + "')");
  }
  Registry& r = TheRegistry();
  std::string name = unit.name;
  MutexLock lock(r.mu);
  r.units[name] = std::make_unique<const StrategyUnit>(std::move(unit));
}

std::vector<std::string> StrategyNames() {
  Registry& r = TheRegistry();
  MutexLock lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [name, unit] : r.units) names.push_back(name);
  return names;
}

const StrategyUnit& FindStrategyUnit(const std::string& name) {
  {
    Registry& r = TheRegistry();
    MutexLock lock(r.mu);
    const auto it = r.units.find(name.empty() || name == "auto" ? kDefaultStrategy : name);
    if (it != r.units.end()) return *it->second;
  }
  std::string known, closest;
  size_t best = 3;  // suggest only names within two edits
  for (const std::string& n : StrategyNames()) {
    known += (known.empty() ? "" : ", ") + n;
    const size_t d = EditDistance(name, n);
    if (d < best) best = d, closest = n;
  }
  throw Error(ErrorCode::kInvalidArgument, "unknown training strategy '" + name + "'",
              {.key = "dist.strategy",
               .hint = (closest.empty() ? "" : "did you mean " + closest + "? ") +
                       "known strategies: " + known});
}

const StrategyUnit& ChooseStrategyUnit(const apps::ExperimentConfig& config) {
  const StrategyUnit& named = FindStrategyUnit(config.strategy);
  if (config.strategy == "auto" || named.yields_to_claims) {
    for (const std::string& name : StrategyNames()) {
      const StrategyUnit& unit = FindStrategyUnit(name);
      if (unit.claims && unit.claims(config)) return unit;
    }
  }
  return named;
}

StrategySchema DescribeStrategies(ConfigSchema& schema) {
  StrategySchema described;
  for (const std::string& name : StrategyNames()) {
    const StrategyUnit& unit = FindStrategyUnit(name);
    if (unit.add_keys) described.added.emplace_back(name, unit.add_keys(schema));
    for (const std::string& key : unit.keys) {
      schema.ActsWhen(key, [chosen = described.chosen, name] { return *chosen == name; });
    }
  }
  return described;
}

std::string StrategiesHelp() {
  std::string text = std::string(
                         "strategies (dist.strategy; auto: the one that claims the run, "
                         "else ") +
                     kDefaultStrategy + "):\n";
  for (const std::string& name : StrategyNames()) {
    const StrategyUnit& unit = FindStrategyUnit(name);
    text += "  " + name + ": " + unit.summary;
    if (!unit.keys.empty()) {
      std::string keys;
      for (const std::string& k : unit.keys) keys += (keys.empty() ? "" : ", ") + k;
      text += " [keys: " + keys + "]";
    }
    text += "\n";
  }
  text.pop_back();  // the help adds the line's end
  return text;
}

const StrategyUnit& ResolveStrategyUnit(const ConfigSchema& schema, const StrategySchema& described,
                                        const apps::ExperimentConfig& config) {
  const StrategyUnit& unit = ChooseStrategyUnit(config);
  for (const std::string& key : schema.Keys()) {
    const StrategyUnit* owner = OwnerOf(key);
    if (owner == nullptr || owner == &unit) continue;
    const ConfigSource source = schema.SourceOf(key);
    if (source.kind == ConfigSource::Kind::kDefault) continue;
    throw Error(ErrorCode::kInvalidArgument,
                key + " (" + source.ToString() + ") has no effect: it is read by dist.strategy = " +
                    owner->name + ", and this run is " + unit.name,
                {.key = key, .hint = "remove it, or set dist.strategy = " + owner->name});
  }
  *described.chosen = unit.name;
  return unit;
}

void CheckStrategy(const TrainerOptions& o, int rank) {
  const StrategyUnit& unit = FindStrategyUnit(o.strategy);
  if (unit.check) unit.check(o, rank);
}

void AssignComputeIndices(const std::vector<int>& node_of_rank, JobPlan* plan) {
  std::map<int, int> taken;  // per node: GPUs handed out so far
  for (size_t r = 0; r < plan->ranks.size(); ++r) {
    RankRole& role = plan->ranks[r];
    if (!role.takes_gpu) {
      role.compute_index = -1;
      continue;
    }
    // Each rank its own node when the map is unknown.
    const int node = r < node_of_rank.size() ? node_of_rank[r] : -1 - static_cast<int>(r);
    role.compute_index = taken[node]++;
  }
}

JobPlan PlanOf(const TrainerOptions& o, int ranks) {
  if (!o.plan.ranks.empty()) return o.plan;
  const StrategyUnit* unit = nullptr;
  {
    Registry& r = TheRegistry();
    MutexLock lock(r.mu);
    const auto it = r.units.find(o.strategy);
    if (it != r.units.end()) unit = it->second.get();
  }
  JobPlan plan;
  if (unit != nullptr) {
    plan = unit->plan(o, {.ranks = ranks});
  } else {  // a strategy handed in as a factory: one replica per rank
    plan.shards = ranks;
    for (int r = 0; r < ranks; ++r)
      plan.ranks.push_back({.shard = r, .writes_checkpoints = r == 0});
  }
  AssignComputeIndices({}, &plan);
  return plan;
}

}  // namespace shardflow::train
