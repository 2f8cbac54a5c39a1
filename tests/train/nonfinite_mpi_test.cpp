// train.on_nonfinite under mpiexec: a NaN in one rank's batch only reaches every rank through
// the gradient all-reduce, so the ranks agree on every verdict without an extra collective:
// under skip_step they skip the same steps (counted in the report and metrics.jsonl) and end
// with identical, finite replicas; under fail every rank ends with the same step, epoch and
// learning rate in its message. A poisoned checkpoint is refused by resume and warm start.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "apps/train/trainer.hpp"
#include "core/error.hpp"
#include "tests/io/poison_checkpoint.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::train {
namespace {

constexpr int64_t kRows = 32;  // per rank
constexpr int64_t kBatch = 4;  // per rank: 8 steps an epoch
constexpr int64_t kFeatures = 12;
constexpr const char* kModel = "dense:16, tanh, dense:3";

int Rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int Ranks() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// This rank's rows; on the last rank, one feature of one row in each of `nan_batches` is NaN
// (the other ranks' data is finite).
std::pair<Tensor, Tensor> MakeData(const std::set<int64_t>& nan_batches) {
  Tensor x(DType::kFloat32, {kRows, kFeatures});
  Tensor y(DType::kInt64, {kRows});
  std::mt19937 gen(7 + static_cast<unsigned>(Rank()));
  std::normal_distribution<float> normal;
  float* xs = x.data<float>();
  for (int64_t i = 0; i < kRows * kFeatures; ++i) xs[i] = normal(gen);
  for (int64_t r = 0; r < kRows; ++r) y.data<int64_t>()[r] = xs[r * kFeatures] > 0 ? 1 : 0;
  if (Rank() == Ranks() - 1) {
    for (int64_t b : nan_batches) {
      xs[(b * kBatch + b % kBatch) * kFeatures + 3] = std::numeric_limits<float>::quiet_NaN();
    }
  }
  return {x, y};
}

TrainerOptions Options(OnNonfinite action, int64_t max_skipped = 10, double clip_norm = 0) {
  TrainerOptions o;
  o.model_spec = kModel;
  o.input_shape = {kFeatures};
  o.input_feature = std::string("x");
  o.label_feature = std::string("y");
  o.optimizer = {.name = "sgd", .momentum = 0.9};
  o.schedule.base_lr = 0.1;
  o.clip_norm = clip_norm;
  o.nonfinite = {.action = action, .max_skipped_steps = max_skipped};
  o.epochs = 2;
  o.per_rank_batch = kBatch;
  o.progress = false;
  o.watchdog_seconds = 60;
  o.log_every_steps = 4;
  return o;
}

TrainResult Train(const TrainerOptions& o, const Tensor& x, const Tensor& y) {
  TrainerInputs inputs;
  inputs.train = [&] {
    return pipeline::Dataset::FromTensors({{"x", x}, {"y", y}}).Batch(o.per_rank_batch);
  };
  const comm::Communicator job(comm::Group::kWorld);
  return RunTraining(job, o, inputs);
}

// The same on every rank, bit for bit.
void ExpectSameOnEveryRank(std::vector<float> v) {
  std::vector<float> first = v;
  MPI_Bcast(first.data(), static_cast<int>(first.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
  EXPECT_EQ(first, v);
}

// Runs training, which must throw; returns the error's text (every rank).
std::string TrainExpectingError(const TrainerOptions& o, const Tensor& x, const Tensor& y) {
  try {
    Train(o, x, y);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "training went on past a non-finite step";
  return "";
}

class SkipStep : public ::testing::TestWithParam<double> {};  // clip_norm

TEST_P(SkipStep, RanksSkipTheSameStepsAndEndFiniteAndIdentical) {
  testing::ScratchDir out("nonfinite_skip");
  auto [x, y] = MakeData({2, 5});
  TrainerOptions o = Options(OnNonfinite::kSkipStep, 10, GetParam());
  o.output_dir = out.path().string();
  const TrainResult r = Train(o, x, y);
  EXPECT_EQ(r.summary.steps, 16);
  EXPECT_EQ(r.summary.skipped_steps, 4) << "batches 2 and 5 of both epochs";
  for (float p : r.params) ASSERT_TRUE(std::isfinite(p));
  EXPECT_TRUE(std::isfinite(r.final_train_loss));
  ExpectSameOnEveryRank(r.params);
  if (Rank() == 0) {
    std::ifstream in(out.path() / "metrics.jsonl");
    std::string line, last;
    while (std::getline(in, line)) last = line;
    const nlohmann::json j = nlohmann::json::parse(last);
    EXPECT_EQ(j.at("skipped_steps").get<int64_t>(), 4) << last;
    EXPECT_TRUE(std::isfinite(j.at("loss").get<double>())) << last;
  }
}

INSTANTIATE_TEST_SUITE_P(Clip, SkipStep, ::testing::Values(0.0, 0.5),
                         [](const auto& info) { return info.param > 0 ? "clipped" : "unclipped"; });

TEST(Fail, EveryRankNamesTheStepEpochAndLearningRate) {
  auto [x, y] = MakeData({2});
  for (double clip : {0.0, 0.5}) {
    SCOPED_TRACE(clip);
    const std::string what = TrainExpectingError(Options(OnNonfinite::kFail, 10, clip), x, y);
    EXPECT_NE(what.find("at step 2 (epoch 0, learning rate 0.1)"), std::string::npos) << what;
    EXPECT_NE(what.find("hint: lower train.lr"), std::string::npos) << what;
    // The poisoned rank saw a NaN loss; the others only the reduced gradients (the last
    // layer's kernel is first in backprop order).
    const bool poisoned = Rank() == Ranks() - 1;
    EXPECT_NE(what.find(poisoned ? "non-finite loss" : "non-finite gradient of 02_dense/kernel"),
              std::string::npos)
        << what;
  }
}

TEST(Fail, AfterMaxSkippedStepsInARow) {
  auto [x, y] = MakeData({0, 1, 2, 3, 4, 5, 6, 7});
  const std::string what = TrainExpectingError(Options(OnNonfinite::kSkipStep, 3), x, y);
  EXPECT_NE(what.find("at step 3 (epoch 0"), std::string::npos) << what;
  EXPECT_NE(what.find("4 steps in a row skipped (train.max_skipped_steps = 3)"), std::string::npos)
      << what;
}

TEST(PoisonedCheckpoint, ResumeAndWarmStartRefuseIt) {
  // One folder for every rank: rank 0 names it.
  std::unique_ptr<testing::ScratchDir> scratch;
  if (Rank() == 0) scratch = std::make_unique<testing::ScratchDir>("nonfinite_ckpt");
  std::string dir = scratch ? scratch->path().string() : std::string();
  int length = static_cast<int>(dir.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  dir.resize(static_cast<size_t>(length));
  MPI_Bcast(dir.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
  const std::string path = dir + "/ckpt-000000004.h5";
  if (Rank() == 0) {
    Sequential<float> m(kModel, {kFeatures});
    auto opt = MakeOptimizer({.name = "sgd", .momentum = 0.9}, m.arena().size());
    SaveCheckpoint({.dir = dir}, m, opt.get(), {.step = 4});
    testing::PoisonCheckpoint(path, m.arena(), 0, 5, std::numeric_limits<float>::quiet_NaN());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  auto [x, y] = MakeData({});
  TrainerOptions resume = Options(OnNonfinite::kFail);
  resume.checkpoint.dir = dir;
  resume.resume = true;
  TrainerOptions warm = Options(OnNonfinite::kFail);
  warm.warm_start = path;
  for (const TrainerOptions* o : {&resume, &warm}) {
    const std::string what = TrainExpectingError(*o, x, y);
    EXPECT_NE(what.find("non-finite value (nan) in parameter 00_dense/kernel at element 5"),
              std::string::npos)
        << what;
  }
  MPI_Barrier(MPI_COMM_WORLD);  // every rank is done with the folder before rank 0 removes it
}

}  // namespace
}  // namespace shardflow::train
