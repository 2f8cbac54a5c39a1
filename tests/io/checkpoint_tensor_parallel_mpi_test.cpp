// Partitioned checkpoints of real tensor-parallel models: ways (and stages of ways) of a conv/dense
// model with a replicated batch norm write the whole model's file and load it back onto other ways.
#include <gtest/gtest.h>
#include <mpi.h>

#include "io/checkpoint/checkpoint.hpp"
#include "tests/io/checkpoint_part_expect.hpp"
#include "tests/support/mpi_scratch.hpp"

namespace shardflow {
namespace {
using shardflow::testing::SharedScratch;
int Rank() { return shardflow::testing::MpiRank(); }
int Size() { return shardflow::testing::MpiSize(); }

constexpr const char* kSpec =
    "conv:4:3x3:same:col, relu, conv:6:3x3:same:row, batchnorm, flatten, dense:8:col, relu, "
    "dense:4:row, dense:3";
const Shape kInput = {6, 6, 2};

TEST(TpCheckpoint, RealTensorParallelWaysAndStagesWriteAndLoadTheWholeFile) {
  SharedScratch dir("tp_ckpt");
  const int ways = Size() >= 2 ? 2 : 1, stages = Size() / ways;
  TensorParallel tp{.way = Rank() % ways,
                    .ways = ways,
                    .sum_float = [](float*, int64_t) {},
                    .sum_double = [](double*, int64_t) {}};
  const int stage = Rank() / ways;
  const LayerRange range =
      stages == 1 ? LayerRange{0, 9} : (stage == 0 ? LayerRange{0, 5} : LayerRange{5, 9});
  Sequential<float> part(kSpec, kInput, {.tensor_parallel = tp}, range);
  auto opt = MakeOptimizer({.name = "adam"}, part.arena().size());
  for (int64_t i = 0; i < part.arena().size(); ++i) opt->Slots()[0].tensor->data<float>()[i] = 0;
  opt->set_iterations(2);
  int split = 0;
  for (const ParamSpec& s : part.arena().specs()) split += s.split_axis >= 0;
  if (ways > 1) {
    EXPECT_GT(split, 0);
  }
  const TrainingState st{.step = 9, .config_text = "c"};
  const std::string path =
      SavePartitionedCheckpoint({.dir = dir / "tp"}, MPI_COMM_WORLD, part, opt.get(), st);
  MPI_Barrier(MPI_COMM_WORLD);
  Sequential<float> whole(kSpec, kInput);
  auto whole_opt = MakeOptimizer({.name = "adam"}, whole.arena().size());
  whole_opt->set_iterations(2);
  if (Rank() == 0) {
    const std::string w = SaveCheckpoint({.dir = dir / "whole"}, whole, whole_opt.get(), st);
    EXPECT_EQ(testing::FileContents(path), testing::FileContents(w));
  }
  // The whole file (any grid's) onto a differently seeded TP part.
  Sequential<float> other(kSpec, kInput, {.seed = 7, .tensor_parallel = tp}, range);
  auto other_opt = MakeOptimizer({.name = "adam"}, other.arena().size());
  LoadCheckpoint(path, other, other_opt.get());
  testing::ExpectHoldsValuesOf(MakeCheckpointPart(other, other_opt.get()), whole, *whole_opt);
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
}  // namespace shardflow
