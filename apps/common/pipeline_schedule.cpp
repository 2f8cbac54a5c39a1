#include "apps/common/pipeline_schedule.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "core/error.hpp"

namespace shardflow::apps {

PipelineSchedule ParsePipelineSchedule(const std::string& name) {
  if (name == "gpipe") return PipelineSchedule::kGPipe;
  if (name == "1f1b") return PipelineSchedule::k1F1B;
  throw Error(ErrorCode::kInvalidArgument, "unknown pipeline schedule '" + name + "'",
              {.key = "dist.schedule", .hint = "gpipe or 1f1b"});
}

const char* PipelineScheduleName(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::kGPipe ? "gpipe" : "1f1b";
}

std::vector<PipelineOp> StageOps(PipelineSchedule schedule, int stages, int stage,
                                 int micro_batches) {
  std::vector<PipelineOp> ops;
  const int m = micro_batches;
  if (schedule == PipelineSchedule::kGPipe) {
    for (int i = 0; i < m; ++i) ops.push_back({true, i});
    for (int i = 0; i < m; ++i) ops.push_back({false, i});
    return ops;
  }
  const int warmup = std::min(stages - 1 - stage, m);
  for (int i = 0; i < warmup; ++i) ops.push_back({true, i});
  for (int i = 0; i + warmup < m; ++i) {
    ops.push_back({true, i + warmup});
    ops.push_back({false, i});
  }
  for (int i = m - warmup; i < m; ++i) ops.push_back({false, i});
  return ops;
}

double IdealBubbleFraction(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

std::vector<int64_t> MicroBatchRows(int64_t rows, int parts) {
  std::vector<int64_t> out(static_cast<size_t>(parts), rows / parts);
  for (int64_t i = 0; i < rows % parts; ++i) ++out[static_cast<size_t>(i)];
  return out;
}

namespace {

// Prefix sums of FLOPs and of layers with parameters.
struct Prefix {
  std::vector<double> flops;
  std::vector<int> with_params;
  explicit Prefix(const std::vector<LayerCost>& layers) : flops{0}, with_params{0} {
    for (const LayerCost& l : layers) {
      flops.push_back(flops.back() + l.flops);
      with_params.push_back(with_params.back() + (l.parameters > 0 ? 1 : 0));
    }
  }
  bool Holds(int a, int b) const { return with_params[b] - with_params[a] > 0; }
  double Cost(int a, int b) const { return flops[b] - flops[a]; }
};

}  // namespace

std::vector<int> BalanceStages(const std::vector<LayerCost>& layers, int stages) {
  const int n = static_cast<int>(layers.size());
  const Prefix p(layers);
  if (p.with_params.back() < stages) {
    throw Error(ErrorCode::kInvalidArgument,
                "the model has " + std::to_string(p.with_params.back()) +
                    " layers with parameters, too few for " + std::to_string(stages) +
                    " pipeline stages (each stage holds at least one)",
                {.key = "dist.pipeline_stages"});
  }
  // best[k][i]: the smallest possible largest stage cost of layers [0, i) in k stages.
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(n + 1, kInf));
  std::vector<std::vector<int>> cut(stages + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0;
  for (int k = 1; k <= stages; ++k) {
    for (int i = 1; i <= n; ++i) {
      for (int j = k - 1; j < i; ++j) {
        if (best[k - 1][j] == kInf || !p.Holds(j, i)) continue;
        const double worst = std::max(best[k - 1][j], p.Cost(j, i));
        if (worst < best[k][i]) {
          best[k][i] = worst;
          cut[k][i] = j;
        }
      }
    }
  }
  std::vector<int> bounds(static_cast<size_t>(stages - 1));
  int end = n;
  for (int k = stages; k > 1; --k) {
    end = cut[k][end];
    bounds[static_cast<size_t>(k - 2)] = end;
  }
  return bounds;
}

void CheckStageBoundaries(const std::vector<int>& boundaries, const std::vector<LayerCost>& layers,
                          int stages) {
  const int n = static_cast<int>(layers.size());
  auto bad = [&](const std::string& why) {
    throw Error(ErrorCode::kInvalidArgument, "stage boundaries: " + why,
                {.key = "dist.stage_boundaries",
                 .hint = "the first layer index of stages 1..S-1, increasing, within the model's " +
                         std::to_string(n) + " layers (0.." + std::to_string(n - 1) + ")"});
  };
  if (static_cast<int>(boundaries.size()) != stages - 1) {
    bad(std::to_string(boundaries.size()) + " given for " + std::to_string(stages) +
        " stages (need " + std::to_string(stages - 1) + ")");
  }
  const Prefix p(layers);
  int prev = 0;
  for (size_t i = 0; i <= boundaries.size(); ++i) {
    const int b = i < boundaries.size() ? boundaries[i] : n;
    if (i < boundaries.size() && (b <= prev || b >= n)) {
      bad(std::to_string(b) + " is out of range (after " + std::to_string(prev) + ", below " +
          std::to_string(n) + ")");
    }
    if (!p.Holds(prev, b)) {
      bad("stage " + std::to_string(i) + " (layers " + std::to_string(prev) + ".." +
          std::to_string(b - 1) + ") holds no layer with parameters");
    }
    prev = b;
  }
}

std::string DescribeStages(const std::vector<int>& boundaries,
                           const std::vector<LayerCost>& layers) {
  std::string out;
  const int n = static_cast<int>(layers.size());
  int a = 0;
  for (size_t s = 0; s <= boundaries.size(); ++s) {
    const int b = s < boundaries.size() ? boundaries[s] : n;
    double flops = 0;
    int64_t params = 0;
    for (int i = a; i < b; ++i) {
      flops += layers[static_cast<size_t>(i)].flops;
      params += layers[static_cast<size_t>(i)].parameters;
    }
    char text[256];
    std::snprintf(text, sizeof(text),
                  "%sstage %zu: layers %d-%d (%s..%s, %.3g MFLOP/sample, %lld params)",
                  out.empty() ? "" : "; ", s, a, b - 1, layers[static_cast<size_t>(a)].name.c_str(),
                  layers[static_cast<size_t>(b - 1)].name.c_str(), flops / 1e6,
                  static_cast<long long>(params));
    out += text;
    a = b;
  }
  return out;
}

}  // namespace shardflow::apps
