// The strategy units (apps/train/strategy_unit.hpp) as shardflow-train resolves them from a
// config: which unit runs, each rank's role in its plan (shards, GPUs, servers, checkpoint
// writers), and the one-line refusals of keys and combinations a unit does not take.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "apps/common/rank_grid.hpp"
#include "apps/train/strategy_unit.hpp"
#include "apps/train/trainer_options.hpp"
#include "core/error.hpp"
#include "tests/train/options_from_config.hpp"

namespace shardflow::train {
namespace strategy_units_test {

using Ints = std::vector<int>;

// The options shardflow-train makes from `ini` for `job`; `table` gets the resolved table.
TrainerOptions Resolve(const std::string& ini, const JobShape& job, std::string* table = nullptr) {
  return testing::OptionsFromConfig(ini, job, "test.ini", table);
}

// The error `ini` is refused with (empty when it is not).
std::string Refusal(const std::string& ini, const JobShape& job) {
  try {
    Resolve(ini, job);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Ints Field(const JobPlan& plan, int RankRole::*field) {
  Ints out;
  for (const RankRole& r : plan.ranks) out.push_back(r.*field);
  return out;
}

Ints Flags(const JobPlan& plan, bool RankRole::*field) {
  Ints out;
  for (const RankRole& r : plan.ranks) out.push_back(r.*field ? 1 : 0);
  return out;
}

TEST(StrategyUnits, DataParallelIsTheDefault) {
  const TrainerOptions o = Resolve("", {.ranks = 3, .node_of_rank = {0, 0, 7}});
  EXPECT_EQ(o.strategy, "data_parallel");
  EXPECT_EQ(o.plan.shards, 3);
  EXPECT_EQ(Field(o.plan, &RankRole::shard), (Ints{0, 1, 2}));
  EXPECT_EQ(Field(o.plan, &RankRole::compute_index), (Ints{0, 1, 0}));  // per node
  EXPECT_EQ(Flags(o.plan, &RankRole::writes_checkpoints), (Ints{1, 0, 0}));
  EXPECT_EQ(Flags(o.plan, &RankRole::takes_batches), (Ints{1, 1, 1}));
}

TEST(StrategyUnits, AGridIsClaimedByTheModelParallelUnit) {
  for (const std::string named : {"", "[dist]\nstrategy = data_parallel\n"}) {
    const TrainerOptions o =
        Resolve(named + "[dist]\npipeline_stages = 2\n", {.ranks = 4, .node_of_rank = {}});
    EXPECT_EQ(o.strategy, "model_parallel");
    ASSERT_EQ(o.plan.ranks.size(), 4u);
    EXPECT_EQ(o.plan.shards, 2);
    for (int r = 0; r < 4; ++r) {
      const apps::GridPlace at = apps::PlaceOf(o.model_parallel.grid, r);
      const RankRole& role = o.plan.ranks[static_cast<size_t>(r)];
      EXPECT_EQ(role.shard, at.replica) << "rank " << r;
      EXPECT_EQ(role.writes_checkpoints, at.replica == 0) << "rank " << r;
      EXPECT_NE(role.role.find("stage " + std::to_string(at.stage)), std::string::npos);
    }
  }
  EXPECT_EQ(Resolve("[dist]\npipeline_stages = 2\n", {.ranks = 4}).per_rank_batch, 64)
      << "a replica's batch is the batch per rank of plain data parallelism";
}

// A node's GPUs go to the ranks that take one, in rank order; servers take none and read no data.
TEST(StrategyUnits, ParameterServerRolesAndGpus) {
  const std::vector<int> nodes = {0, 0, 0, 0, 0, 5, 5, 5, 5, 5};
  const std::string ps = "[dist]\nstrategy = parameter_server\nps_ranks = 2\n";
  TrainerOptions o = Resolve(ps + "ps_placement = per_node\n", {10, nodes});  // ranks 4 and 9
  EXPECT_EQ(Field(o.plan, &RankRole::compute_index), (Ints{0, 1, 2, 3, -1, 0, 1, 2, 3, -1}));
  EXPECT_EQ(Field(o.plan, &RankRole::shard), (Ints{0, 1, 2, 3, -1, 4, 5, 6, 7, -1}));
  EXPECT_EQ(Flags(o.plan, &RankRole::takes_batches), (Ints{1, 1, 1, 1, 0, 1, 1, 1, 1, 0}));
  EXPECT_EQ(Flags(o.plan, &RankRole::writes_checkpoints), (Ints{1, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(o.plan.shards, 8);
  EXPECT_EQ(o.plan.ranks[4].role, "server 0");
  // The last ranks serve (both on node 1), or rank 1 does (node 0).
  o = Resolve(ps, {10, nodes});
  EXPECT_EQ(Field(o.plan, &RankRole::compute_index), (Ints{0, 1, 2, 3, 4, 0, 1, 2, -1, -1}));
  o = Resolve("[dist]\nstrategy = parameter_server\nps_placement = 1\n", {10, nodes});
  EXPECT_EQ(Field(o.plan, &RankRole::compute_index), (Ints{0, -1, 1, 2, 3, 0, 1, 2, 3, 4}));
  // No node table: each rank its own node.
  o = Resolve("[dist]\nstrategy = parameter_server\n", {.ranks = 3});
  EXPECT_EQ(Field(o.plan, &RankRole::compute_index), (Ints{0, 0, -1}));
  EXPECT_EQ(o.per_rank_batch, 64);
}

TEST(StrategyUnits, AnotherStrategysKeyIsRefusedNamingItsOwner) {
  const std::string why = Refusal("[dist]\nps_ranks = 2\n", {.ranks = 4});
  EXPECT_NE(why.find("dist.ps_ranks (test.ini:"), std::string::npos) << why;
  EXPECT_NE(why.find("parameter_server"), std::string::npos) << why;
  EXPECT_NE(why.find("data_parallel"), std::string::npos) << why;
  EXPECT_EQ(Refusal("[dist]\nstrategy = parameter_server\nps_ranks = 2\n", {.ranks = 4}), "");
}

TEST(StrategyUnits, ResolvedTableShowsOnlyTheRunningStrategysKeys) {
  std::string table;
  Resolve("", {.ranks = 2}, &table);
  EXPECT_EQ(table.find("ps_ranks"), std::string::npos) << table;
  Resolve("[dist]\nstrategy = parameter_server\n", {.ranks = 2}, &table);
  EXPECT_NE(table.find("ps_ranks"), std::string::npos) << table;
}

TEST(StrategyUnits, RefusalsNameTheKey) {
  EXPECT_NE(Refusal("[dist]\nstrategy = parameter_sever\n", {.ranks = 2})
                .find("did you mean parameter_server"),
            std::string::npos);
  EXPECT_NE(Refusal("[dist]\nstrategy = parameter_server\npipeline_stages = 2\n", {.ranks = 4})
                .find("dist.strategy"),
            std::string::npos);
  EXPECT_NE(Refusal("[dist]\nstrategy = parameter_server\nmax_staleness = -5\n", {.ranks = 3})
                .find("dist.max_staleness -5 is not a step count"),
            std::string::npos);
  EXPECT_EQ(Refusal("[dist]\nstrategy = parameter_server\nmax_staleness = -1\n", {.ranks = 3}), "");
  const std::string dynamic = Refusal("[dist]\nsharding = dynamic\n", {.ranks = 2});
  EXPECT_NE(dynamic.find("dist.sharding = dynamic is for dist.strategy = parameter_server, not "
                         "data_parallel"),
            std::string::npos)
      << dynamic;
  EXPECT_NE(Refusal("[dist]\nstrategy = parameter_server\nps_ranks = 2\n", {.ranks = 2})
                .find("leaves no worker"),
            std::string::npos);
}

TEST(StrategyUnits, HelpListsEveryUnitWithItsKeys) {
  const std::string help = StrategiesHelp();
  for (const std::string& name : StrategyNames()) {
    EXPECT_NE(help.find("  " + name + ": "), std::string::npos) << help;
  }
  EXPECT_NE(help.find("[keys: dist.ps_ranks, dist.ps_placement"), std::string::npos) << help;
}

}  // namespace strategy_units_test
}  // namespace shardflow::train
