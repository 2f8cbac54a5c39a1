// The strategy seam, shown with a toy strategy that lives only in this test: local SGD. Each
// rank steps its own replica on its own batches with no gradient communication, and every k
// steps the ranks average their parameters. With SGD (momentum and weight decay included, all
// linear in the gradient) and k = 1 the averaged parameters follow exactly the data-parallel
// update, so the toy must match data_parallel to rounding; with k > 1 it must differ, yet end
// with identical replicas and learn the problem. The training loop is not edited for it: the
// strategy is handed in as a factory, or registered as a unit (apps/train/strategy_unit.hpp) with
// a key of its own and chosen by a config file, as a built-in strategy is.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <random>

#include "apps/train/replica_strategy.hpp"
#include "apps/train/strategy_unit.hpp"
#include "apps/train/trainer.hpp"
#include "tests/support/mpi_scratch.hpp"
#include "tests/train/options_from_config.hpp"
#include "tests/train/train_on_tensors.hpp"

namespace shardflow::train {
namespace {

class LocalSgdStrategy final : public ReplicaStrategy {
 public:
  LocalSgdStrategy(const StrategyEnv& env, int64_t k) : ReplicaStrategy(env), k_(k) {}
  std::string name() const override { return "local_sgd"; }
  std::vector<float> FinalParams() override {
    SyncReplicas();
    return ReplicaStrategy::FinalParams();
  }

 protected:
  double FinishGradients() override { return 0; }  // each replica applies its own gradient
  void AfterUpdate(int64_t step) override {
    if ((step + 1) % k_ == 0) AverageParams();
  }
  void SyncReplicas() override {
    AverageParams();
    AverageBuffers();
  }

 private:
  int64_t k_;
};

// The toy's unit: a key only shardflow-train knows (dist.local_sgd_every, the steps between
// averages), one replica per rank, and its factory.
struct LocalSgdKeys final : StrategyKeys {
  int64_t every = 4;
};
struct LocalSgdOptions final : StrategyOptions {
  int64_t every = 4;
};

StrategyUnit LocalSgdUnit() {
  StrategyUnit unit;
  unit.name = "local_sgd";
  unit.summary = "test only: replicas average their parameters every dist.local_sgd_every steps";
  unit.keys = {"dist.local_sgd_every"};
  unit.add_keys = [](ConfigSchema& schema) -> std::unique_ptr<StrategyKeys> {
    auto keys = std::make_unique<LocalSgdKeys>();
    schema.Add("dist", "local_sgd_every", &keys->every, "local_sgd: steps between averages")
        .Positive();
    return keys;
  };
  unit.replicas = [](const StrategyConfig& sc) { return sc.job.ranks; };
  unit.resolve = [](const StrategyConfig& sc, TrainerOptions* o) {
    auto options = std::make_shared<LocalSgdOptions>();
    options->every = dynamic_cast<const LocalSgdKeys&>(*sc.keys).every;
    o->strategy_options = options;
  };
  unit.plan = [](const TrainerOptions&, const JobShape& job) {
    JobPlan plan;
    plan.shards = job.ranks;
    for (int r = 0; r < job.ranks; ++r) plan.ranks.push_back({.shard = r});
    return plan;
  };
  unit.make = [](const StrategyEnv& env) -> std::unique_ptr<Strategy> {
    const auto& options = dynamic_cast<const LocalSgdOptions&>(*env.options->strategy_options);
    return std::make_unique<LocalSgdStrategy>(env, options.every);
  };
  return unit;
}

// The strategy's part of the options shardflow-train makes from `ini` on every rank.
TrainerOptions FromConfig(const std::string& ini, int ranks) {
  return testing::OptionsFromConfig(ini, {.ranks = ranks}, "local_sgd.ini");
}

constexpr int64_t kRows = 6 * 8 * 4;
constexpr int64_t kFeatures = 12;

struct Data {
  Tensor x, y;
};

// 3 classes from a random linear map of the features; rank r holds every P-th batch of 8.
Data MakeRankData(int rank, int ranks) {
  std::mt19937 gen(11);
  std::normal_distribution<float> normal;
  std::vector<float> all(kRows * kFeatures);
  for (float& v : all) v = normal(gen);
  const int64_t per_rank = kRows / ranks;
  Data d{Tensor(DType::kFloat32, {per_rank, kFeatures}), Tensor(DType::kInt64, {per_rank})};
  int64_t out = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    if ((r / 8) % ranks != rank) continue;
    const float* row = all.data() + r * kFeatures;
    std::copy_n(row, kFeatures, d.x.data<float>() + out * kFeatures);
    const float s = row[0] + 0.5f * row[1] - row[2];
    d.y.data<int64_t>()[out++] = s < -0.5f ? 0 : (s < 0.5f ? 1 : 2);
  }
  return d;
}

TrainerOptions Options() {
  TrainerOptions o;
  o.model_spec = "dense:16, tanh, dense:3";
  o.input_shape = {kFeatures};
  o.input_feature = std::string("x");
  o.label_feature = std::string("y");
  o.optimizer = {.name = "sgd", .momentum = 0.9, .weight_decay = 1e-4};
  o.schedule.base_lr = 0.1;
  o.epochs = 3;
  o.per_rank_batch = 8;
  o.progress = false;
  o.watchdog_seconds = 60;
  return o;
}

TrainResult Train(const Data& d, const TrainerOptions& o, const StrategyFactory& factory = {}) {
  const comm::Communicator job(comm::Group::kWorld);
  return testing::TrainOnTensors(job, d.x, d.y, o, 16, factory);
}

using testing::MaxDiff;

int Rank() { return shardflow::testing::MpiRank(); }
int Ranks() { return shardflow::testing::MpiSize(); }

TEST(LocalSgdStrategyTest, KEqualsOneMatchesDataParallel) {
  const Data d = MakeRankData(Rank(), Ranks());
  const TrainResult dp = Train(d, Options());
  const TrainResult local = Train(d, Options(), [](const StrategyEnv& env) {
    return std::make_unique<LocalSgdStrategy>(env, 1);
  });
  ASSERT_EQ(dp.params.size(), local.params.size());
  EXPECT_LT(MaxDiff(dp.params, local.params), 2e-5);
  EXPECT_EQ(local.summary.strategy, "local_sgd");
  EXPECT_EQ(dp.summary.strategy, "data_parallel");
  EXPECT_EQ(local.summary.steps, dp.summary.steps);
  EXPECT_EQ(local.summary.samples, 3 * kRows);
  ASSERT_TRUE(local.summary.test_accuracy.has_value());
  EXPECT_NEAR(*local.summary.test_accuracy, *dp.summary.test_accuracy, 0.02);
  for (size_t i = 0; i < dp.step_losses.size(); ++i) {
    ASSERT_NEAR(dp.step_losses[i], local.step_losses[i], 1e-4) << "step " << i;
  }
}

TEST(LocalSgdStrategyTest, RegisteredUnitChosenByAConfigFileWithItsOwnKey) {
  RegisterStrategyUnit(LocalSgdUnit());
  const TrainerOptions from =
      FromConfig("[dist]\nstrategy = local_sgd\nlocal_sgd_every = 4\n", Ranks());
  EXPECT_EQ(from.strategy, "local_sgd");
  EXPECT_EQ(from.plan.shards, Ranks());
  EXPECT_EQ(dynamic_cast<const LocalSgdOptions&>(*from.strategy_options).every, 4);
  // Its key is validated by the schema and refused for another strategy, like a built-in one's.
  EXPECT_THROW(FromConfig("[dist]\nstrategy = local_sgd\nlocal_sgd_every = 0\n", Ranks()), Error);
  try {
    FromConfig("[dist]\nlocal_sgd_every = 2\n", Ranks());
    ADD_FAILURE() << "a local_sgd key under data_parallel was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("read by dist.strategy = local_sgd"), std::string::npos)
        << e.what();
  }
  const Data d = MakeRankData(Rank(), Ranks());
  TrainerOptions o = Options();
  o.strategy = from.strategy;
  o.strategy_options = from.strategy_options;
  o.plan = from.plan;
  const TrainResult local = Train(d, o);
  EXPECT_EQ(local.summary.strategy, "local_sgd");
  ASSERT_TRUE(local.summary.test_accuracy.has_value());
  EXPECT_GT(*local.summary.test_accuracy, 0.6) << "the toy problem was not learned";
  // Replicas end identical (bitwise): the final parameters are averaged.
  std::vector<float> first = local.params;
  MPI_Bcast(first.data(), static_cast<int>(first.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
  EXPECT_EQ(first, local.params);
  // With several ranks, averaging every 4 steps is not data parallelism.
  if (Ranks() > 1) {
    const TrainResult dp = Train(d, Options());
    EXPECT_GT(MaxDiff(dp.params, local.params), 1e-4);
  }
}

TEST(LocalSgdStrategyTest, UnknownStrategyIsAnErrorNamingTheKey) {
  TrainerOptions o = Options();
  o.strategy = "no_such_strategy";
  const Data d = MakeRankData(Rank(), Ranks());
  try {
    Train(d, o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dist.strategy"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("data_parallel"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shardflow::train
