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

}  // namespace shardflow::apps
