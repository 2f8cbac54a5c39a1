#include "apps/train/strategy.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "apps/train/data_parallel.hpp"
#include "apps/train/model_parallel.hpp"
#include "core/error.hpp"

namespace shardflow::train {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, StrategyFactory> factories;  // guarded by mu
};

// The built-in strategies are entered here rather than by static registration objects, which a
// static library's linker drops when nothing else references their object file.
Registry& TheRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry;
    r->factories["data_parallel"] = MakeDataParallel;
    r->factories["model_parallel"] = MakeModelParallel;
    return r;
  }();
  return *registry;
}

}  // namespace

void RegisterStrategy(const std::string& name, StrategyFactory factory) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.factories[name] = std::move(factory);
}

std::vector<std::string> StrategyNames() {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [name, factory] : r.factories) names.push_back(name);
  return names;
}

std::unique_ptr<Strategy> MakeStrategy(const std::string& name, const StrategyEnv& env) {
  StrategyFactory factory;
  {
    Registry& r = TheRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.factories.find(name);
    if (it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    std::string known;
    for (const std::string& n : StrategyNames()) known += (known.empty() ? "" : ", ") + n;
    throw Error(ErrorCode::kInvalidArgument, "unknown training strategy '" + name + "'",
                {.key = "dist.strategy", .hint = "known strategies: " + known});
  }
  return factory(env);
}

}  // namespace shardflow::train
