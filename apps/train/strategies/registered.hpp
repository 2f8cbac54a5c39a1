// The strategies shardflow-train is built with, for the registry (strategy_unit.hpp).
#pragma once

#include <vector>

#include "apps/train/strategy_unit.hpp"

namespace shardflow::train {

std::vector<StrategyUnit> BuiltInStrategyUnits();

}  // namespace shardflow::train
