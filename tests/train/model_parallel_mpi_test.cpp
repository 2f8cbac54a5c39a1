// Model parallelism is the same training as on one rank: after K steps, every grid the job's
// ranks factor into (data replicas x pipeline stages x tensor ways: at 4 ranks each 2 x 2
// pairing), with the GPipe and 1F1B schedules and 1, 4 or 8 micro-batches, ends with the parameters
// of the unsplit model trained on one rank with the same global batch, for the MLP, CNN and LSTM
// presets and a two-block transformer. Micro-batch gradients are summed in another order than one
// batch's, so the match is to a float tolerance, not bit for bit. Runs under mpiexec at 1, 2, 3 and
// 4 ranks (each grid that fits the rank count).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "apps/train/trainer.hpp"
#include "core/backend/host_twin.hpp"
#include "core/cpu/onednn_conv.hpp"
#include "core/error.hpp"
#include "tests/support/mpi_scratch.hpp"
#include "tests/train/train_on_tensors.hpp"

namespace shardflow::train {
namespace {

constexpr int64_t kGlobalBatch = 12;
constexpr int64_t kSteps = 4;

struct Model {
  const char* spec;
  Shape input;
  bool classify;
  int layers_with_params;
  int64_t split;          // tensor ways must divide it (the split layers' sizes); 0: nothing splits
  bool cpu_only = false;  // layers that read host memory (the transformer's)
};

// The transformer: pipeline stages cut between blocks, tensor ways split each block's heads and
// MLP (2 heads: 1 or 2 ways).
const Model kModels[] = {
    {"mlp", {4, 4, 1}, true, 3, 256},
    {"cnn", {8, 8, 1}, true, 4, 32},
    {"lstm_autoencoder", {5, 3}, false, 3, 0},
    {"block:2:causal, block:2, layernorm, seqpool:mean, dense:10", {5, 8}, true, 4, 2, true}};

struct Data {
  Tensor x, y;
};

// kSteps global batches; `part` of `parts` takes its slice of every batch.
Data MakeData(const Model& m, int part, int parts) {
  std::mt19937 gen(5);
  std::normal_distribution<float> normal;
  const int64_t features = NumElements(m.input), rows = kSteps * kGlobalBatch;
  std::vector<float> all(static_cast<size_t>(rows * features));
  for (float& v : all) v = normal(gen);
  const int64_t per_part = kGlobalBatch / parts;
  Shape shape = m.input;
  shape.insert(shape.begin(), kSteps * per_part);
  Data d{Tensor(DType::kFloat32, shape), Tensor(DType::kInt64, {kSteps * per_part})};
  int64_t out = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if ((r % kGlobalBatch) / per_part != part) continue;
    const float* row = all.data() + r * features;
    std::copy_n(row, features, d.x.data<float>() + out * features);
    d.y.data<int64_t>()[out++] = static_cast<int64_t>(std::fabs(row[0] * 7 + row[1] * 3)) % 10;
  }
  return d;
}

TrainerOptions Options(const Model& m) {
  TrainerOptions o;
  o.model_spec = m.spec;
  o.input_shape = m.input;
  o.task = m.classify ? Task::kClassify : Task::kReconstruct;
  o.input_feature = std::string("x");
  o.label_feature = m.classify ? std::string("y") : std::string();
  o.optimizer = {.name = "sgd", .momentum = 0.9, .weight_decay = 1e-4};
  o.schedule.base_lr = 0.05;
  o.epochs = 1;
  o.progress = false;
  o.watchdog_seconds = 60;
  return o;
}

TrainResult Train(const comm::Communicator& job, const Data& d, const TrainerOptions& o) {
  return testing::TrainOnTensors(job, d.x, d.y, o, 5);
}

// The unsplit model on this rank alone, the whole global batch per step.
TrainResult Reference(const Model& m) {
  TrainerOptions o = Options(m);
  o.per_rank_batch = kGlobalBatch;
  const comm::Communicator self(comm::Group::kSelf);
  return Train(self, MakeData(m, 0, 1), o);
}

using testing::MaxDiff;

// Every (stages, tensor ways) of n ranks but plain data parallelism: 2 ranks give 2x1 and 1x2,
// 4 ranks 2x1 (2 replicas), 4x1, 1x2 (2 replicas), 2x2, 1x4.
std::vector<std::pair<int, int>> Grids(int n) {
  std::vector<std::pair<int, int>> out;
  for (int s = 1; s <= n; ++s) {
    for (int t = 1; s * t <= n; ++t) {
      if (n % (s * t) == 0 && s * t > 1) out.emplace_back(s, t);
    }
  }
  return out;
}

struct PipelineRun {
  int stages;
  PipelineSchedule schedule;
  int micro_batches;
};

// Every grid and schedule of n ranks against the unsplit model on the CPU; the grids' models on
// `device` (the simulated CUDA device: activations and gradients staged through host memory
// between stages, the tensor ways' sums too).
void ExpectEveryGridEndsWithTheUnsplitModelsParameters(Device device) {
  // Direct convolutions only: this test holds the strategies to the unsplit model's losses
  // within 1e-5 (about an ulp of the CNN's first losses, ~72). Under the automatic choice a
  // micro-batch of fewer than 4 images runs oneDNN where the whole batch runs Winograd, and a
  // tensor way sums half the channels through Winograd's transforms, whose rounding is larger
  // (tests/core/winograd_test.cpp bounds it on its own).
  struct DirectConvolutions {
    const cpu::ConvKernel before = cpu::CurrentConvKernel();
    DirectConvolutions() { cpu::SetConvKernel(cpu::ConvKernel::kOneDnn); }
    ~DirectConvolutions() { cpu::SetConvKernel(before); }
  } direct;
  const comm::Communicator world(comm::Group::kWorld);
  const int n = world.size();
  int runs = 0;
  for (const Model& m : kModels) {
    if (m.cpu_only && device != Device::kCpu) continue;
    const TrainResult ref = Reference(m);
    ASSERT_EQ(ref.summary.steps, kSteps);
    for (const auto& [stages, ways] : Grids(n)) {
      if (stages > m.layers_with_params || (m.split > 0 && m.split % ways != 0)) continue;
      const apps::GridShape grid = apps::MakeGridShape(n, stages, ways);
      std::vector<PipelineRun> plan = {{stages, PipelineSchedule::kGPipe, 1}};
      if (stages > 1) {
        plan.push_back({stages, PipelineSchedule::kGPipe, 4});
        plan.push_back({stages, PipelineSchedule::k1F1B, 4});
        plan.push_back({stages, PipelineSchedule::k1F1B, 8});
      }
      for (const PipelineRun& r : plan) {
        TrainerOptions o = Options(m);
        o.strategy = "model_parallel";
        o.model_parallel = {.grid = grid, .micro_batches = r.micro_batches, .schedule = r.schedule};
        o.per_rank_batch = kGlobalBatch / grid.replicas;
        o.model.device = device;
        const int replica = apps::PlaceOf(grid, world.rank()).replica;
        const TrainResult got = Train(world, MakeData(m, replica, grid.replicas), o);
        const std::string what = std::string(m.spec) + " on " + grid.ToString() + " on " +
                                 DeviceName(device) + ", " + PipelineScheduleName(r.schedule) +
                                 " M=" + std::to_string(r.micro_batches);
        ASSERT_EQ(got.params.size(), ref.params.size()) << what;
        EXPECT_LT(MaxDiff(got.params, ref.params), 2e-5) << what;
        EXPECT_EQ(got.summary.steps, kSteps) << what;
        EXPECT_EQ(got.summary.samples, kSteps * kGlobalBatch) << what;
        if (grid.replicas == 1) {  // the step losses are the replica's, here the global batch's
          ASSERT_EQ(got.step_losses.size(), ref.step_losses.size());
          for (size_t i = 0; i < ref.step_losses.size(); ++i) {
            // Float round-off of a sum in another order: relative to the loss (a CNN's first
            // losses reach 72, where 1e-5 is about one ulp of float; AVX2-only CPUs round
            // otherwise).
            const double tol = std::max(1e-5, 1e-6 * std::abs(ref.step_losses[i]));
            EXPECT_NEAR(got.step_losses[i], ref.step_losses[i], tol) << what << " step " << i;
          }
        }
        if (m.classify) {
          EXPECT_NEAR(*got.summary.test_accuracy, *ref.summary.test_accuracy, 1e-9) << what;
        }
        EXPECT_NEAR(*got.summary.test_loss, *ref.summary.test_loss, 1e-4) << what;
        ++runs;
      }
    }
  }
  EXPECT_EQ(runs > 0, n > 1);
}

TEST(ModelParallel, EveryGridEndsWithTheUnsplitModelsParameters) {
  ExpectEveryGridEndsWithTheUnsplitModelsParameters(Device::kCpu);
}

TEST(ModelParallel, EveryGridOnADeviceEndsWithTheUnsplitModelsParameters) {
  SimulatedCudaDevice cuda;
  ExpectEveryGridEndsWithTheUnsplitModelsParameters(Device::kCuda);
}

// GPipe keeps every micro-batch's activations until the backward passes; 1F1B at most S of
// them (stage s: S - s), and its buffers stay within a few micro-batches of that.
TEST(ModelParallel, OneFOneBKeepsFewerMicroBatchesInFlight) {
  const comm::Communicator world(comm::Group::kWorld);
  const int n = world.size();
  if (n < 2 || n % 2 != 0) GTEST_SKIP() << "needs an even rank count";
  const Model& m = kModels[0];
  auto figures = [&](PipelineSchedule schedule) {
    TrainerOptions o = Options(m);
    o.strategy = "model_parallel";
    o.model_parallel = {
        .grid = apps::MakeGridShape(n, 2, 1), .micro_batches = 8, .schedule = schedule};
    o.per_rank_batch = kGlobalBatch * 2 / n;
    const int replica = apps::PlaceOf(o.model_parallel.grid, world.rank()).replica;
    const TrainResult r = Train(world, MakeData(m, replica, n / 2), o);
    std::map<std::string, double> f(r.summary.strategy_figures.begin(),
                                    r.summary.strategy_figures.end());
    return std::make_pair(f.at("max_micro_batches_in_flight"), f.at("max_micro_batch_slots"));
  };
  const auto gpipe = figures(PipelineSchedule::kGPipe);
  const auto one_f_one_b = figures(PipelineSchedule::k1F1B);
  const int per_replica = static_cast<int>(kGlobalBatch * 2 / n);
  EXPECT_EQ(gpipe.first, std::min(8, per_replica));
  EXPECT_EQ(one_f_one_b.first, std::min(2, per_replica));
  EXPECT_LE(one_f_one_b.second, one_f_one_b.first + 4);
}

}  // namespace
}  // namespace shardflow::train
