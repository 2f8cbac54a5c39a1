// The arithmetic of model parallelism, without MPI: the rank grid, the pipeline schedules (every
// micro-batch forward then backward once, dependencies between stages never cyclic, 1F1B's
// bound on micro-batches in flight), micro-batch sizes, FLOPs-balanced stage splits and the
// errors for grids and boundaries that cannot work.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "apps/common/pipeline_schedule.hpp"
#include "apps/common/rank_grid.hpp"
#include "core/error.hpp"

namespace shardflow::apps {
namespace model_parallel_logic_test {

template <typename F>
std::string ErrorOf(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RankGrid, FactorsRanksAndPlacesEveryRankOnce) {
  for (int n : {1, 2, 3, 4, 6, 8, 12}) {
    for (int s = 1; s <= n; ++s) {
      for (int t = 1; s * t <= n; ++t) {
        if (n % (s * t) != 0) continue;
        const GridShape g = MakeGridShape(n, s, t);
        EXPECT_EQ(g.ranks(), n);
        std::map<std::tuple<int, int, int>, int> seen;
        for (int r = 0; r < n; ++r) {
          const GridPlace p = PlaceOf(g, r);
          EXPECT_EQ(RankAt(g, p), r);
          ++seen[{p.replica, p.stage, p.way}];
        }
        EXPECT_EQ(seen.size(), static_cast<size_t>(n));
      }
    }
  }
  // Tensor ways are neighbours, then the replicas of a stage, then stages.
  const GridShape g = MakeGridShape(8, 2, 2);
  EXPECT_EQ(RankAt(g, {.replica = 0, .stage = 0, .way = 1}), 1);
  EXPECT_EQ(RankAt(g, {.replica = 1, .stage = 0, .way = 0}), 2);
  EXPECT_EQ(RankAt(g, {.replica = 0, .stage = 1, .way = 0}), 4);
  EXPECT_EQ(g.ToString(), "2 replicas x 2 stages x 2 tensor ways");
}

TEST(RankGrid, ARankCountThatDoesNotFactorNamesTheThreeNumbers) {
  const std::string e = ErrorOf([] { MakeGridShape(6, 4, 1); });
  EXPECT_NE(e.find("6 ranks do not factor into data replicas x pipeline_stages 4 x "
                   "tensor_parallel 1"),
            std::string::npos)
      << e;
  EXPECT_NE(ErrorOf([] { MakeGridShape(4, 2, 0); }), "");
  EXPECT_NE(ErrorOf([] { MakeGridShape(2, 2, 2); }), "");
}

// Runs the stages' op lists as a message-passing simulation: an op may run once its input
// (the previous stage's forward, the next stage's backward) ran. Every op must run: no cycle.
void ExpectSchedulable(PipelineSchedule schedule, int stages, int m, int* max_in_flight) {
  std::vector<std::vector<PipelineOp>> ops;
  for (int s = 0; s < stages; ++s) ops.push_back(StageOps(schedule, stages, s, m));
  std::vector<size_t> next(stages, 0);
  std::vector<std::vector<bool>> fwd(stages, std::vector<bool>(m)), bwd = fwd;
  std::vector<int> in_flight(stages, 0);
  *max_in_flight = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < stages; ++s) {
      if (next[s] == ops[s].size()) continue;
      const PipelineOp op = ops[s][next[s]];
      const bool ready =
          op.forward ? (s == 0 || fwd[s - 1][op.micro_batch])
                     : (fwd[s][op.micro_batch] && (s == stages - 1 || bwd[s + 1][op.micro_batch]));
      if (!ready) continue;
      (op.forward ? fwd : bwd)[s][op.micro_batch] = true;
      in_flight[s] += op.forward ? 1 : -1;
      *max_in_flight = std::max(*max_in_flight, in_flight[s]);
      ++next[s];
      progress = true;
    }
  }
  for (int s = 0; s < stages; ++s) {
    ASSERT_EQ(next[s], ops[s].size()) << "stage " << s << " stuck, S=" << stages << " M=" << m;
    for (int i = 0; i < m; ++i) EXPECT_TRUE(fwd[s][i] && bwd[s][i]);
  }
}

TEST(PipelineSchedule, EveryScheduleRunsEveryMicroBatchOnceWithoutDeadlock) {
  for (int stages = 1; stages <= 5; ++stages) {
    for (int m = 1; m <= 16; ++m) {
      int gpipe = 0, one_f_one_b = 0;
      ExpectSchedulable(PipelineSchedule::kGPipe, stages, m, &gpipe);
      EXPECT_EQ(gpipe, m);
      if (m < stages) continue;
      ExpectSchedulable(PipelineSchedule::k1F1B, stages, m, &one_f_one_b);
      EXPECT_EQ(one_f_one_b, std::min(stages, m)) << "S=" << stages << " M=" << m;
      for (int s = 0; s < stages; ++s) {  // backward passes in micro-batch order
        int expect = 0;
        for (const PipelineOp& op : StageOps(PipelineSchedule::k1F1B, stages, s, m)) {
          if (!op.forward) {
            EXPECT_EQ(op.micro_batch, expect++);
          }
        }
      }
    }
  }
  EXPECT_EQ(StageOps(PipelineSchedule::k1F1B, 3, 0, 4), (std::vector<PipelineOp>{{true, 0},
                                                                                 {true, 1},
                                                                                 {true, 2},
                                                                                 {false, 0},
                                                                                 {true, 3},
                                                                                 {false, 1},
                                                                                 {false, 2},
                                                                                 {false, 3}}));
  EXPECT_DOUBLE_EQ(IdealBubbleFraction(4, 8), 3.0 / 11.0);
}

TEST(PipelineSchedule, MicroBatchRowsCoverTheBatch) {
  EXPECT_EQ(MicroBatchRows(10, 4), (std::vector<int64_t>{3, 3, 2, 2}));
  EXPECT_EQ(MicroBatchRows(2, 4), (std::vector<int64_t>{1, 1, 0, 0}));
  EXPECT_EQ(MicroBatchRows(0, 3), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(MicroBatchRows(7, 1), (std::vector<int64_t>{7}));
}

std::vector<LayerCost> Layers(const std::vector<std::pair<double, int64_t>>& costs) {
  std::vector<LayerCost> out;
  for (size_t i = 0; i < costs.size(); ++i) {
    std::string name = std::to_string(i);
    name.append("_x");
    out.push_back({.name = name, .flops = costs[i].first, .parameters = costs[i].second});
  }
  return out;
}

TEST(StageSplit, BalancesFlopsAndGivesEveryStageParameters) {
  // flatten, dense, relu, dense, relu, dense (the mlp preset's shape).
  const auto mlp = Layers({{0, 0}, {800, 1}, {1, 0}, {260, 1}, {1, 0}, {5, 1}});
  EXPECT_EQ(BalanceStages(mlp, 2), (std::vector<int>{2}));
  EXPECT_EQ(BalanceStages(mlp, 3), (std::vector<int>{2, 4}));
  const auto even = Layers({{10, 1}, {10, 1}, {10, 1}, {10, 1}});
  EXPECT_EQ(BalanceStages(even, 2), (std::vector<int>{2}));
  EXPECT_EQ(BalanceStages(even, 4), (std::vector<int>{1, 2, 3}));
  const std::string e = ErrorOf([&] { BalanceStages(mlp, 4); });
  EXPECT_NE(e.find("3 layers with parameters, too few for 4 pipeline stages"), std::string::npos)
      << e;
  EXPECT_NE(e.find("dist.pipeline_stages"), std::string::npos) << e;
}

TEST(StageSplit, BadBoundariesAreOneClearLine) {
  const auto mlp = Layers({{0, 0}, {800, 1}, {1, 0}, {260, 1}, {1, 0}, {5, 1}});
  EXPECT_EQ(ErrorOf([&] { CheckStageBoundaries({2, 4}, mlp, 3); }), "");
  const std::vector<std::pair<std::vector<int>, std::string>> bad = {
      {{2}, "1 given for 3 stages (need 2)"},
      {{2, 9}, "9 is out of range"},
      {{4, 2}, "2 is out of range"},
      {{0, 3}, "0 is out of range"},
      {{1, 2}, "stage 0 (layers 0..0) holds no layer with parameters"},
      {{2, 3}, "stage 1 (layers 2..2) holds no layer with parameters"}};
  for (const auto& [bounds, why] : bad) {
    const std::string e = ErrorOf([&] { CheckStageBoundaries(bounds, mlp, 3); });
    EXPECT_NE(e.find(why), std::string::npos) << e;
    EXPECT_NE(e.find("dist.stage_boundaries"), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  EXPECT_NE(DescribeStages({2}, mlp).find("stage 1: layers 2-5"), std::string::npos);
}

}  // namespace model_parallel_logic_test
}  // namespace shardflow::apps
