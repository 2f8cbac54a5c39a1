// One line per strategy: a new strategy is its folder (with a CMakeLists.txt that adds its
// sources to shardflow_train_lib) and its line here. A list rather than static registration
// objects, which a static library's linker drops when nothing references their object file.
#include "apps/train/strategies/registered.hpp"

#include "apps/train/strategies/data_parallel/data_parallel.hpp"
#include "apps/train/strategies/model_parallel/model_parallel.hpp"
#include "apps/train/strategies/parameter_server/parameter_server.hpp"

namespace shardflow::train {

std::vector<StrategyUnit> BuiltInStrategyUnits() {
  std::vector<StrategyUnit> units;
  units.push_back(DataParallelUnit());
  units.push_back(ModelParallelUnit());
  units.push_back(ParameterServerUnit());
  return units;
}

}  // namespace shardflow::train
