// Data parallelism changes nothing but speed: P ranks with per-rank batch B over an interleaved
// split of the data end with the same parameters as 1 rank with batch P*B over the same order.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <random>

#include "apps/train/trainer.hpp"
#include "apps/train/trainer_options.hpp"
#include "core/error.hpp"

namespace shardflow::train {
namespace {

constexpr int64_t kRows = 6 * 8 * 4;  // divisible by every tested global batch
constexpr int64_t kFeatures = 12;

// A learnable toy problem: 3 classes from a random linear map of the features.
std::pair<Tensor, Tensor> MakeData(int64_t rows = kRows) {
  Tensor x(DType::kFloat32, {rows, kFeatures});
  Tensor y(DType::kInt64, {rows});
  std::mt19937 gen(7);
  std::normal_distribution<float> normal;
  float* xs = x.data<float>();
  for (int64_t i = 0; i < rows * kFeatures; ++i) xs[i] = normal(gen);
  for (int64_t r = 0; r < rows; ++r) {
    const float s = xs[r * kFeatures] + 0.5f * xs[r * kFeatures + 1] - xs[r * kFeatures + 2];
    y.data<int64_t>()[r] = s < -0.5f ? 0 : (s < 0.5f ? 1 : 2);
  }
  return {x, y};
}

// Rows of global batch k (size P*B) that belong to `rank`: [k*P*B + rank*B, ... + B).
std::pair<Tensor, Tensor> RankRows(const Tensor& x, const Tensor& y, int rank, int ranks,
                                   int64_t b) {
  const int64_t per_rank = kRows / ranks;
  Tensor rx(DType::kFloat32, {per_rank, kFeatures});
  Tensor ry(DType::kInt64, {per_rank});
  int64_t out = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    if ((r / b) % ranks != rank) continue;
    std::copy_n(x.data<float>() + r * kFeatures, kFeatures, rx.data<float>() + out * kFeatures);
    ry.data<int64_t>()[out++] = y.data<int64_t>()[r];
  }
  return {rx, ry};
}

TrainerOptions Options(int64_t batch, bool overlap, comm::AllreduceAlgorithm algorithm) {
  TrainerOptions o;
  o.model_spec = "dense:16, tanh, dense:3";
  o.input_shape = {kFeatures};
  o.input_feature = std::string("x");
  o.label_feature = std::string("y");
  o.optimizer = {.name = "sgd", .momentum = 0.9};
  o.schedule.base_lr = 0.1;
  o.epochs = 2;
  o.per_rank_batch = batch;
  o.bucket_mb = 0.0005;  // several buckets for this tiny model
  o.overlap = overlap;
  o.allreduce.algorithm = algorithm;
  o.progress = false;
  o.watchdog_seconds = 60;
  return o;
}

TrainResult Train(comm::Group group, const Tensor& x, const Tensor& y, const TrainerOptions& o) {
  TrainerInputs inputs;
  inputs.train = [&] {
    return pipeline::Dataset::FromTensors({{"x", x}, {"y", y}}).Batch(o.per_rank_batch);
  };
  inputs.eval = [&] { return pipeline::Dataset::FromTensors({{"x", x}, {"y", y}}).Batch(50); };
  const comm::Communicator job(group);
  return RunTraining(job, o, inputs);
}

struct Case {
  bool overlap;
  comm::AllreduceAlgorithm algorithm;
};

class EquivalenceTest : public ::testing::TestWithParam<Case> {};

TEST_P(EquivalenceTest, RanksWithBatchBMatchOneRankWithBatchPB) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const int64_t b = 8;
  auto [x, y] = MakeData();
  // The reference: this process alone, the whole data, batch P*B.
  const TrainResult single =
      Train(comm::Group::kSelf, x, y, Options(b * ranks, GetParam().overlap, GetParam().algorithm));
  auto [rx, ry] = RankRows(x, y, rank, ranks, b);
  const TrainResult multi =
      Train(comm::Group::kWorld, rx, ry, Options(b, GetParam().overlap, GetParam().algorithm));
  ASSERT_EQ(single.params.size(), multi.params.size());
  double max_diff = 0;
  for (size_t i = 0; i < single.params.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(double(single.params[i]) - multi.params[i]));
  }
  EXPECT_LT(max_diff, 2e-5) << "parameters differ after " << multi.summary.steps << " steps";
  EXPECT_EQ(multi.summary.steps, 2 * kRows / (b * ranks));
  EXPECT_EQ(multi.summary.samples, 2 * kRows);
  // Evaluation covers every record once, whatever the rank count.
  ASSERT_TRUE(multi.summary.test_accuracy.has_value());
  EXPECT_NEAR(*multi.summary.test_accuracy, *single.summary.test_accuracy, 1e-9);
  EXPECT_GT(*multi.summary.test_accuracy, 0.6) << "the toy problem was not learned";
  // Replicas are identical across ranks (bitwise).
  std::vector<float> first = multi.params;
  MPI_Bcast(first.data(), static_cast<int>(first.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
  EXPECT_EQ(first, multi.params);
}

INSTANTIATE_TEST_SUITE_P(Modes, EquivalenceTest,
                         ::testing::Values(Case{true, comm::AllreduceAlgorithm::kAuto},
                                           Case{false, comm::AllreduceAlgorithm::kRing},
                                           Case{true,
                                                comm::AllreduceAlgorithm::kRecursiveDoubling}),
                         [](const auto& info) {
                           std::string name = info.param.overlap ? "overlap_" : "no_overlap_";
                           name += comm::AlgorithmName(info.param.algorithm);
                           return name;
                         });

// A global batch that does not divide over the ranks (train.batch_semantics = global, e.g. 24
// on 5 ranks after an elastic resume): the first G mod P ranks take one row more, and every
// step weighs the ranks' gradients by their rows, so the step is the global batch's mean:
// the same parameters as one rank with batch G.
TEST(UnevenBatchesTest, RanksWithUnevenBatchesMatchOneRankWithTheGlobalBatch) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const int64_t global = 4 * ranks + 1;  // never divisible by ranks > 1
  const int64_t rows = 12 * global;
  auto [x, y] = MakeData(rows);
  const TrainResult single =
      Train(comm::Group::kSelf, x, y, Options(global, true, comm::AllreduceAlgorithm::kAuto));
  const std::vector<int64_t> batches = SplitGlobalBatch(global, ranks);
  // This rank's rows of every global batch: after the batches of the ranks before it.
  int64_t before = 0;
  for (int r = 0; r < rank; ++r) before += batches[r];
  const int64_t b = batches[rank];
  Tensor rx(DType::kFloat32, {rows / global * b, kFeatures});
  Tensor ry(DType::kInt64, {rows / global * b});
  int64_t out = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (r % global < before || r % global >= before + b) continue;
    std::copy_n(x.data<float>() + r * kFeatures, kFeatures, rx.data<float>() + out * kFeatures);
    ry.data<int64_t>()[out++] = y.data<int64_t>()[r];
  }
  TrainerOptions o = Options(b, true, comm::AllreduceAlgorithm::kAuto);
  if (ranks > 1) o.replica_batches = batches;
  const TrainResult multi = Train(comm::Group::kWorld, rx, ry, o);
  ASSERT_EQ(single.params.size(), multi.params.size());
  double max_diff = 0;
  for (size_t i = 0; i < single.params.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(double(single.params[i]) - multi.params[i]));
  }
  EXPECT_LT(max_diff, 2e-5) << "parameters differ after " << multi.summary.steps << " steps";
  EXPECT_EQ(multi.summary.steps, 2 * 12);
  EXPECT_EQ(multi.summary.global_batch, global);
  EXPECT_NEAR(*multi.summary.test_accuracy, *single.summary.test_accuracy, 1e-9);
  // Weighting by rows matters: the unweighted mean of the ranks' means is another step.
  if (ranks > 1) {
    TrainerOptions unweighted = o;
    unweighted.replica_batches.clear();
    const TrainResult plain = Train(comm::Group::kWorld, rx, ry, unweighted);
    double plain_diff = 0;
    for (size_t i = 0; i < single.params.size(); ++i) {
      plain_diff = std::max(plain_diff, std::fabs(double(single.params[i]) - plain.params[i]));
    }
    EXPECT_GT(plain_diff, 1e-4) << "the test cannot tell weighted from unweighted steps";
  }
}

TEST(UnevenShardsTest, RanksAgreeOnStepsAndNothingHangs) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  // Rank r holds 10 + 3r rows: shards of different lengths, a partial last batch.
  const int64_t rows = 10 + 3 * rank;
  Tensor x(DType::kFloat32, {rows, kFeatures});
  Tensor y(DType::kInt64, {rows});
  TrainerOptions o = Options(4, true, comm::AllreduceAlgorithm::kAuto);
  const TrainResult r = Train(comm::Group::kWorld, x, y, o);
  EXPECT_EQ(r.summary.steps, 2 * 3);  // ceil(10 / 4) = 3 batches on the shortest shard
}

}  // namespace
}  // namespace shardflow::train
