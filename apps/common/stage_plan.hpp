// Which layers each pipeline stage holds, for the apps that run a model split into stages
// (shardflow-train's model_parallel strategy, shardflow-predict): the whole model's per-layer
// costs (nothing allocated: the whole model may not fit a rank), the stage boundaries (given by
// dist.stage_boundaries and checked, or balanced by FLOPs) and a stage's layer range.
// Thread-safety: pure functions.
#pragma once

#include <vector>

#include "apps/common/experiment_config.hpp"
#include "apps/common/pipeline_schedule.hpp"
#include "apps/common/rank_grid.hpp"
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

// One rank's share of a model on a grid: its stage's layers and its tensor way's parameters.
struct RankPlan {
  GridPlace place;
  std::vector<LayerCost> layers;  // the whole model's layers, one tensor way's share of each
  std::vector<int> bounds;        // first layer of stages 1..S-1
  LayerRange range;               // this rank's stage
  int64_t parameters = 0;         // this rank's
  std::string holder;             // "stage 1 (layers 2-5), tensor way 0 of 2,"
};

// Throws the errors of ResolveStageBoundaries and, for a layer that cannot split grid.ways
// ways, Error(kInvalidArgument, key dist.tensor_parallel) naming it.
RankPlan PlanRank(const ModelSetup& m, const GridShape& grid, const std::vector<int>& boundaries,
                  int rank);

}  // namespace shardflow::apps
