// Which layers each pipeline stage holds, for the apps that run a model split into stages
// (shardflow-train's model_parallel strategy, shardflow-predict): the whole model's per-layer
// costs (nothing allocated: the whole model may not fit a rank), the stage boundaries (given by
// dist.stage_boundaries and checked, or balanced by FLOPs) and a stage's layer range.
// Thread-safety: pure functions.
#pragma once

#include <vector>

#include "apps/common/experiment_config.hpp"
#include "apps/common/pipeline_schedule.hpp"
#include "core/model.hpp"

namespace shardflow::apps {

// Per-layer FLOPs and parameter counts of the whole model.
std::vector<LayerCost> WholeModelLayerCosts(const ModelSetup& m);

// The first layer of stages 1..stages-1: `given` checked (CheckStageBoundaries) or, when empty,
// balanced (BalanceStages). Empty for one stage.
std::vector<int> ResolveStageBoundaries(const std::vector<LayerCost>& layers, int stages,
                                        const std::vector<int>& given);

// The layers stage `stage` holds, of a model of `layers` layers.
LayerRange StageRange(const std::vector<int>& boundaries, int stage, int layers);

// Parameters of the layers in `range`.
int64_t RangeParameters(const std::vector<LayerCost>& layers, LayerRange range);

}  // namespace shardflow::apps
