#include "apps/common/stage_plan.hpp"

namespace shardflow::apps {

std::vector<LayerCost> WholeModelLayerCosts(const ModelSetup& m) {
  std::vector<LayerCost> out;
  for (const LayerInfo& layer : DescribeLayers(m.model_spec, m.input_shape, m.model)) {
    out.push_back({.name = layer.name,
                   .flops = static_cast<double>(layer.flops_per_sample),
                   .parameters = layer.parameters});
  }
  return out;
}

std::vector<int> ResolveStageBoundaries(const std::vector<LayerCost>& layers, int stages,
                                        const std::vector<int>& given) {
  if (stages == 1) return {};
  if (given.empty()) return BalanceStages(layers, stages);
  CheckStageBoundaries(given, layers, stages);
  return given;
}

LayerRange StageRange(const std::vector<int>& boundaries, int stage, int layers) {
  const size_t s = static_cast<size_t>(stage);
  return {stage == 0 ? 0 : boundaries[s - 1], s == boundaries.size() ? layers : boundaries[s]};
}

int64_t RangeParameters(const std::vector<LayerCost>& layers, LayerRange range) {
  int64_t n = 0;
  for (int i = range.begin; i < range.end; ++i) n += layers[static_cast<size_t>(i)].parameters;
  return n;
}

RankPlan PlanRank(const ModelSetup& m, const GridShape& grid, const std::vector<int>& boundaries,
                  int rank) {
  RankPlan plan;
  plan.place = PlaceOf(grid, rank);
  ModelSetup way = m;
  if (grid.ways > 1) {  // describing builds the way's layers; nothing is summed
    way.model.tensor_parallel = {
        .way = plan.place.way, .ways = grid.ways, .sum_float = [](float*, int64_t) {}};
  }
  plan.layers = WholeModelLayerCosts(way);
  plan.bounds = ResolveStageBoundaries(plan.layers, grid.stages, boundaries);
  plan.range = StageRange(plan.bounds, plan.place.stage, static_cast<int>(plan.layers.size()));
  plan.parameters = RangeParameters(plan.layers, plan.range);
  if (!grid.model_parallel()) {
    plan.holder = "the whole model (a replica on every rank)";
    return plan;
  }
  plan.holder = "stage " + std::to_string(plan.place.stage) + " (layers " +
                std::to_string(plan.range.begin) + "-" + std::to_string(plan.range.end - 1) + ")";
  if (grid.ways > 1) {
    plan.holder +=
        ", tensor way " + std::to_string(plan.place.way) + " of " + std::to_string(grid.ways) + ",";
  }
  return plan;
}

}  // namespace shardflow::apps
