// Parameter-server training (the last ranks serve, the others work, or the servers are placed
// right after rank 0): synchronous mode (max_staleness 0) ends with the parameters of one rank
// trained on the workers' global batch, with 1 or 2 servers, wherever they are placed, over
// either transport (point-to-point or one-sided), with the workers on the CPU or a (simulated)
// device; bounded
// staleness never lets a worker run more than s steps ahead (every answered pull counted); fully
// asynchronous training learns; the arena is cut at parameter boundaries balanced by bytes;
// embedding tables split row by row over the servers (dist.ps_tables = sparse) end bit for bit
// where whole tables do (SGD, Adagrad) and train asynchronously with lazy Adam. Runs under
// mpiexec at 1, 2 and 4 ranks (PS needs 2).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "apps/train/strategies/parameter_server/parameter_server.hpp"
#include "apps/train/strategies/parameter_server/ps_options.hpp"
#include "apps/train/strategies/parameter_server/ps_placement.hpp"
#include "apps/train/trainer.hpp"
#include "core/backend/host_twin.hpp"
#include "core/error.hpp"
#include "tests/train/train_on_tensors.hpp"

namespace shardflow::train {
namespace {

constexpr int64_t kSteps = 6;
constexpr int64_t kFeatures = 12;

struct Data {
  Tensor x, y;
};

// kSteps global batches of `global` rows; `part` of `parts` takes its slice of each.
Data MakeData(int64_t global, int part, int parts, int64_t steps = kSteps) {
  std::mt19937 gen(3);
  std::normal_distribution<float> normal;
  const int64_t rows = steps * global, per_part = global / parts;
  std::vector<float> all(static_cast<size_t>(rows * kFeatures));
  for (float& v : all) v = normal(gen);
  Data d{Tensor(DType::kFloat32, {steps * per_part, kFeatures}),
         Tensor(DType::kInt64, {steps * per_part})};
  int64_t out = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if ((r % global) / per_part != part) continue;
    const float* row = all.data() + r * kFeatures;
    std::copy_n(row, kFeatures, d.x.data<float>() + out * kFeatures);
    const float s = row[0] + 0.5f * row[1] - row[2];
    d.y.data<int64_t>()[out++] = s < -0.5f ? 0 : (s < 0.5f ? 1 : 2);
  }
  return d;
}

TrainerOptions Options() {
  TrainerOptions o;
  o.model_spec = "dense:16, tanh, dense:8, tanh, dense:3";
  o.input_shape = {kFeatures};
  o.input_feature = std::string("x");
  o.label_feature = std::string("y");
  o.optimizer = {.name = "sgd", .momentum = 0.9, .weight_decay = 1e-4};
  o.schedule.base_lr = 0.1;
  o.epochs = 1;
  o.progress = false;
  o.watchdog_seconds = 60;
  return o;
}

TrainResult Train(const comm::Communicator& job, const Data& d, const TrainerOptions& o) {
  return testing::TrainOnTensors(job, d.x, d.y, o, 7);
}

using testing::MaxDiff;

// Runs parameter-server training on the world with `servers` servers: the last ranks, or
// `placed` (job ranks).
TrainResult TrainPs(int servers, int64_t staleness, int64_t per_worker, int64_t steps = kSteps,
                    const std::vector<int>& placed = {}, const std::string& transport = "p2p",
                    Device device = Device::kCpu) {
  const comm::Communicator world(comm::Group::kWorld);
  const int workers = world.size() - servers;
  TrainerOptions o = Options();
  o.strategy = "parameter_server";
  auto ps = std::make_shared<PsOptions>();
  ps->ranks = servers;
  ps->servers = placed;
  ps->transport = transport;
  ps->max_staleness = staleness;
  o.strategy_options = ps;
  o.per_rank_batch = per_worker;
  o.model.device = device;  // the workers' (the servers keep theirs on the CPU)
  const int part = std::max(0, RolesOf(world.size(), servers, placed).worker_index(world.rank()));
  return Train(world, MakeData(per_worker * workers, part, workers, steps), o);
}

// The workers' models on `device`: the simulated CUDA device pulls into and pushes from host
// copies of its parameters and gradients.
void ExpectSynchronousModeIsDataParallelTraining(Device device) {
  const comm::Communicator world(comm::Group::kWorld);
  for (int servers = 1; servers < world.size() && servers <= 2; ++servers) {
    const int workers = world.size() - servers;
    const int64_t per_worker = 12 / workers;
    TrainerOptions ref_options = Options();
    ref_options.per_rank_batch = per_worker * workers;
    const comm::Communicator self(comm::Group::kSelf);
    const TrainResult ref = Train(self, MakeData(per_worker * workers, 0, 1), ref_options);
    std::vector<int> after_chief;  // ranks 1..servers serve, the workers around them
    for (int k = 1; k <= servers; ++k) after_chief.push_back(k);
    for (const auto& [placed, transport] : std::vector<std::pair<std::vector<int>, std::string>>{
             {{}, "p2p"}, {after_chief, "p2p"}, {{}, "rma"}, {after_chief, "rma"}}) {
      const TrainResult got = TrainPs(servers, 0, per_worker, kSteps, placed, transport, device);
      const std::string where = std::to_string(servers) + " server(s) at " +
                                (placed.empty() ? std::string("the end") : RankList(placed)) +
                                " over " + transport + ", workers on " + DeviceName(device);
      ASSERT_EQ(got.params.size(), ref.params.size());
      EXPECT_LT(MaxDiff(got.params, ref.params), 2e-5) << where;
      EXPECT_EQ(got.summary.steps, kSteps);
      EXPECT_EQ(got.summary.samples, kSteps * per_worker * workers);
      const bool worker = RolesOf(world.size(), servers, placed).worker_index(world.rank()) >= 0;
      if (worker) {  // the workers evaluate (the servers hold no model to)
        EXPECT_NEAR(*got.summary.test_accuracy, *ref.summary.test_accuracy, 1e-9) << where;
      }
      std::map<std::string, double> f(got.summary.strategy_figures.begin(),
                                      got.summary.strategy_figures.end());
      EXPECT_EQ(f.at("max_step_gap"), 0);
    }
  }
}

TEST(ParameterServer, SynchronousModeIsDataParallelTraining) {
  if (comm::Communicator(comm::Group::kWorld).size() < 2) GTEST_SKIP() << "needs a server";
  ExpectSynchronousModeIsDataParallelTraining(Device::kCpu);
}

// A transformer through parameter servers (issue 50): token ids made from the features, a
// padded-free encoder; synchronous mode equals one process training on the global batch.
TEST(ParameterServer, SynchronousModeTrainsATransformerAsDataParallel) {
  const comm::Communicator world(comm::Group::kWorld);
  if (world.size() < 2) GTEST_SKIP() << "needs a server";
  const int workers = world.size() - 1;
  const int64_t per_worker = 12 / workers;
  auto tokens = [](Data d) {
    for (int64_t i = 0; i < d.x.num_elements(); ++i) {
      float& v = d.x.data<float>()[i];
      v = std::clamp(std::floor((v + 2.0f) * 4.0f), 0.0f, 15.0f);
    }
    return d;
  };
  TrainerOptions o = Options();
  o.model_spec = "tokens:16:8, block:2, layernorm, seqpool:mean, dense:3";
  TrainerOptions ref_options = o;
  ref_options.per_rank_batch = per_worker * workers;
  const comm::Communicator self(comm::Group::kSelf);
  const TrainResult ref = Train(self, tokens(MakeData(per_worker * workers, 0, 1)), ref_options);
  o.strategy = "parameter_server";
  auto ps = std::make_shared<PsOptions>();
  ps->ranks = 1;
  ps->max_staleness = 0;
  o.strategy_options = ps;
  o.per_rank_batch = per_worker;
  const int part = std::max(0, RolesOf(world.size(), 1, {}).worker_index(world.rank()));
  const TrainResult got = Train(world, tokens(MakeData(per_worker * workers, part, workers)), o);
  ASSERT_EQ(got.params.size(), ref.params.size());
  EXPECT_LT(MaxDiff(got.params, ref.params), 2e-5);
  EXPECT_EQ(got.summary.steps, kSteps);
}

TEST(ParameterServer, SynchronousModeOnADeviceIsDataParallelTraining) {
  if (comm::Communicator(comm::Group::kWorld).size() < 2) GTEST_SKIP() << "needs a server";
  SimulatedCudaDevice cuda;
  ExpectSynchronousModeIsDataParallelTraining(Device::kCuda);
}

TEST(ParameterServer, NoWorkerRunsMoreThanMaxStalenessAhead) {
  const comm::Communicator world(comm::Group::kWorld);
  if (world.size() < 3) GTEST_SKIP() << "needs two workers";
  for (const std::string transport : {"p2p", "rma"}) {
    for (int64_t s : {1, 2}) {
      const TrainResult r = TrainPs(1, s, 4, 12, {}, transport);
      std::map<std::string, double> f(r.summary.strategy_figures.begin(),
                                      r.summary.strategy_figures.end());
      EXPECT_LE(f.at("max_step_gap"), static_cast<double>(s)) << transport;
      double pushes = 0;
      for (const auto& [name, series] : r.summary.strategy_series) {
        if (name == "staleness_histogram") {
          for (double c : series) pushes += c;
        }
      }
      EXPECT_EQ(pushes, 12.0 * (world.size() - 1)) << "every push counted once, " << transport;
    }
  }
}

TEST(ParameterServer, AsynchronousTrainingLearns) {
  const comm::Communicator world(comm::Group::kWorld);
  if (world.size() < 2) GTEST_SKIP() << "needs a worker and a server";
  for (const std::string transport : {"p2p", "rma"}) {
    const TrainResult r = TrainPs(1, -1, 8, 40, {}, transport);
    if (world.rank() == world.size() - 1) continue;  // the server takes no steps, evaluates none
    ASSERT_TRUE(r.summary.test_accuracy.has_value());
    EXPECT_GT(*r.summary.test_accuracy, 0.5) << transport;  // chance 1/3; arrival order varies
    ASSERT_EQ(r.step_losses.size(), 40u);
    EXPECT_LT(r.step_losses.back(), r.step_losses.front()) << transport;
  }
}

// Sparse tables (issue 51): a wide-and-deep model over id columns. Columns 0-4 of the
// features become ids of a 50-row id space (column 4 missing in every third row, -1); the label
// still follows the original numbers, which the ids quantise.
constexpr const char* kWideDeep =
    "embedbag:50:4:0:3+1x2:mean, dense:16, tanh, dense:3, wide:50:3:0:5";

Data WithIds(Data d) {
  float* x = d.x.data<float>();
  for (int64_t r = 0; r < d.x.shape()[0]; ++r) {
    for (int64_t c = 0; c < 5; ++c) {
      float& v = x[r * kFeatures + c];
      v = std::clamp(std::floor((v + 3.0f) * 8.0f), 0.0f, 49.0f);
    }
    if (r % 3 == 0) x[r * kFeatures + 4] = -1.0f;
  }
  return d;
}

TrainResult TrainTables(int servers, int64_t staleness, bool sparse, const OptimizerOptions& opt,
                        int64_t steps = kSteps, int64_t per_worker = 6, double lr = 0.1) {
  const comm::Communicator world(comm::Group::kWorld);
  const int workers = world.size() - servers;
  TrainerOptions o = Options();
  o.model_spec = kWideDeep;
  o.optimizer = opt;
  o.schedule.base_lr = lr;
  o.strategy = "parameter_server";
  auto ps = std::make_shared<PsOptions>();
  ps->ranks = servers;
  ps->max_staleness = staleness;
  ps->sparse_tables = sparse;
  o.strategy_options = ps;
  o.per_rank_batch = per_worker;
  const int part = std::max(0, RolesOf(world.size(), servers, {}).worker_index(world.rank()));
  return Train(world, WithIds(MakeData(per_worker * workers, part, workers, steps)), o);
}

std::map<std::string, double> Figures(const TrainResult& r) {
  return {r.summary.strategy_figures.begin(), r.summary.strategy_figures.end()};
}

// A sparse push applies exactly the rows a dense computation would: with plain SGD and Adagrad
// a row no batch names keeps its weights (and accumulator) exactly, so the tables split over
// the servers end bit for bit where whole tables in the dense slices do. One or two workers
// (the synchronous sum is then the same in every arrival order), one or two servers.
TEST(ParameterServer, SparseTablesApplyExactlyTheDenseRows) {
  const comm::Communicator world(comm::Group::kWorld);
  if (world.size() < 2) GTEST_SKIP() << "needs a server";
  const int servers = world.size() == 2 ? 1 : world.size() - 2;
  for (const OptimizerOptions& opt :
       {OptimizerOptions{.name = "sgd", .momentum = 0.0, .weight_decay = 1e-4},
        OptimizerOptions{.name = "adagrad", .weight_decay = 1e-4}}) {
    const TrainResult dense = TrainTables(servers, 0, false, opt);
    const TrainResult sparse = TrainTables(servers, 0, true, opt);
    ASSERT_EQ(sparse.params.size(), dense.params.size()) << opt.name;
    size_t differ = 0;
    for (size_t i = 0; i < dense.params.size(); ++i) differ += sparse.params[i] != dense.params[i];
    EXPECT_EQ(differ, 0u) << opt.name << ": parameters not bit-identical, max difference "
                          << MaxDiff(sparse.params, dense.params);
    EXPECT_EQ(sparse.step_losses, dense.step_losses) << opt.name;
    const std::map<std::string, double> fs = Figures(sparse), fd = Figures(dense);
    // Each worker step moves its batch's rows (at most 6 x 5 ids of two tables), not the
    // tables' 50 x (4 + 3) floats twice over.
    EXPECT_GT(fs.at("sparse_rows_per_step"), 0.0);
    EXPECT_LE(fs.at("sparse_rows_per_step"), 2 * 6 * 5);
    EXPECT_LT(fs.at("wire_mib_per_step"), fd.at("wire_mib_per_step")) << opt.name;
    EXPECT_EQ(fd.count("sparse_rows_per_step"), 0u);
  }
}

// Asynchronous workers with lazy Adam on the sparse rows learn.
TEST(ParameterServer, SparseTablesTrainAsynchronouslyWithLazyAdam) {
  const comm::Communicator world(comm::Group::kWorld);
  if (world.size() < 2) GTEST_SKIP() << "needs a worker and a server";
  const OptimizerOptions adam{.name = "adam"};
  const TrainResult r = TrainTables(1, -1, true, adam, 40, 8, 0.01);
  if (world.rank() == world.size() - 1) return;  // the server evaluates nothing
  ASSERT_EQ(r.step_losses.size(), 40u);
  const auto mean = [&](size_t from) {  // of 8 steps' losses
    double sum = 0;
    for (size_t i = from; i < from + 8; ++i) sum += r.step_losses[i];
    return sum / 8;
  };
  EXPECT_LT(mean(32), mean(0));
  ASSERT_TRUE(r.summary.test_accuracy.has_value());
  EXPECT_GT(*r.summary.test_accuracy, 0.5);  // chance 1/3
  for (float v : r.params) ASSERT_TRUE(std::isfinite(v));
}

TEST(ParameterServer, ArenaCutAtParameterBoundariesBalancedByBytes) {
  const std::vector<int64_t> sizes = {30, 10, 40, 20};
  auto cut = CutArena(sizes, 2);
  ASSERT_EQ(cut.size(), 2u);
  EXPECT_EQ(cut[0].offset, 0);
  EXPECT_EQ(cut[0].size, 40);  // 30 + 10: the nearest boundary to half of 100
  EXPECT_EQ(cut[1].size, 60);
  cut = CutArena(sizes, 4);
  for (const ServerSlice& s : cut) EXPECT_GT(s.size, 0);
  int64_t covered = 0;
  for (const ServerSlice& s : cut) {
    EXPECT_EQ(s.offset, covered);
    covered += s.size;
  }
  EXPECT_EQ(covered, 100);
  EXPECT_EQ(CutArena({5, 0, 5}, 2)[1].size, 5);
  try {
    CutArena(sizes, 5);
    ADD_FAILURE() << "5 servers for 4 tensors accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("5 parameter servers for a model of 4 parameter tensors"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace shardflow::train
