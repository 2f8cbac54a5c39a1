// Partitioned checkpoints under mpiexec (1, 2, 4 ranks): the ranks of one replica hold a model
// in parts — pipeline stages (a 6-layer model's layers spread over the ranks), tensor-parallel
// ways (column- and row-split dense layers, replicated parameters and buffers), or both — and
// write the unsplit model's file: every dataset and attribute equal to SaveCheckpoint's of the
// whole model. A file from any grid loads onto any other (Adam state included); slices that
// leave a gap or overlap, and ranks with different optimizers, are one line on every rank and
// leave no file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <filesystem>

#include "io/checkpoint/checkpoint.hpp"
#include "tests/io/checkpoint_part_expect.hpp"
#include "tests/support/mpi_scratch.hpp"

namespace shardflow {
namespace {

using shardflow::testing::SharedScratch;
using ::testing::HasSubstr;
int Rank() { return shardflow::testing::MpiRank(); }
int Size() { return shardflow::testing::MpiSize(); }

// Six layers: 00_dense (5,8) 01_relu 02_dense (8,6) 03_batchnorm 04_tanh 05_dense (6,4).
constexpr const char* kSpec = "dense:8, relu, dense:6, batchnorm, tanh, dense:4";
const Shape kInput = {5};
constexpr int kLayers = 6;

TrainingState State() {
  return {
      .step = 4, .epoch = 1, .seed = 3, .rng = {5, 6}, .iterator_state = {1}, .config_text = "c"};
}

// The whole model with every value set by name (the reference every part is compared with).
struct Whole {
  Sequential<float> model{kSpec, kInput};
  std::unique_ptr<Optimizer> opt = MakeOptimizer({.name = "adam"}, model.arena().size());
  Whole() { testing::FillByName(model, *opt); }
};

// Layers [begin, end) of the whole model, as a stage, with its values set by name (so equal to
// the whole model's) or left at a different seed's initial values and zero slots.
struct Stage {
  Sequential<float> model;
  std::unique_ptr<Optimizer> opt;
  Stage(int begin, int end, bool fill)
      : model(kSpec, kInput, {.seed = fill ? 42u : 1234u}, LayerRange{begin, end}),
        opt(MakeOptimizer({.name = "adam"}, model.arena().size())) {
    if (fill) testing::FillByName(model, *opt);
  }
};

// Rank r's layers when the ranks are `stages` pipeline stages (uneven when 6 % stages != 0).
std::pair<int, int> StageLayers(int stage, int stages) {
  return {kLayers * stage / stages, kLayers * (stage + 1) / stages};
}

// Megatron's pairing, by layer: 00_dense column-split (kernel and bias), 02_dense row-split
// (its bias replicated), 05_dense column-split; batch norm and the rest replicated.
const std::map<std::string, int> kAxes = {{"00_dense/kernel", 1},
                                          {"00_dense/bias", 0},
                                          {"02_dense/kernel", 0},
                                          {"05_dense/kernel", 1},
                                          {"05_dense/bias", 0}};

std::string SaveWhole(const SharedScratch& dir, const std::string& sub) {
  std::string path;
  if (Rank() == 0) {
    Whole w;
    path = SaveCheckpoint({.dir = dir / sub}, w.model, w.opt.get(), State());
  }
  int n = static_cast<int>(path.size());
  MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
  path.resize(static_cast<size_t>(n));
  MPI_Bcast(path.data(), n, MPI_CHAR, 0, MPI_COMM_WORLD);
  return path;
}

// The file at `path` holds exactly what the whole model's SaveCheckpoint wrote at `whole`.
void ExpectSameFileOnRankZero(const std::string& path, const std::string& whole) {
  MPI_Barrier(MPI_COMM_WORLD);
  if (Rank() != 0) return;
  EXPECT_EQ(testing::FileContents(path), testing::FileContents(whole));
  std::vector<std::string> names;
  for (const auto& e :
       std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    names.push_back(e.path().filename());
  EXPECT_EQ(names, std::vector<std::string>{"ckpt-000000004.h5"});  // no temporary left
}

TEST(PartitionedCheckpoint, PipelineStagesWriteTheWholeModelsFile) {
  SharedScratch dir("ckpt_part_stages");
  const std::string whole = SaveWhole(dir, "whole");
  const auto [begin, end] = StageLayers(Rank(), Size());
  Stage stage(begin, end, true);
  TrainingState st = State();
  if (Rank() != 0) st.config_text = "ignored: rank 0's state is written";
  const std::string path = SavePartitionedCheckpoint({.dir = dir / "parts"}, MPI_COMM_WORLD,
                                                     stage.model, stage.opt.get(), st);
  ExpectSameFileOnRankZero(path, whole);
}

TEST(PartitionedCheckpoint, TensorParallelWaysWriteTheWholeModelsFile) {
  SharedScratch dir("ckpt_part_tp");
  const std::string whole = SaveWhole(dir, "whole");
  Whole w;
  auto way = testing::Fabricate(w.model, *w.opt, kAxes, Rank(), Size());
  const std::string path =
      SavePartitionedCheckpoint({.dir = dir / "parts"}, MPI_COMM_WORLD, way->part, State());
  ExpectSameFileOnRankZero(path, whole);
}

// Two ways per stage when there are several ranks: 2 ranks are 1 stage x 2 ways, 4 ranks are
// 2 stages x 2 ways.
struct HybridPart {
  std::unique_ptr<Stage> stage;
  std::unique_ptr<testing::FabricatedPart> way;
  HybridPart() {
    const int ways = Size() >= 2 ? 2 : 1;
    const auto [begin, end] = StageLayers(Rank() / ways, Size() / ways);
    stage = std::make_unique<Stage>(begin, end, true);
    way = testing::Fabricate(stage->model, *stage->opt, kAxes, Rank() % ways, ways);
  }
};

TEST(PartitionedCheckpoint, StagesOfTensorParallelWaysWriteTheWholeModelsFile) {
  SharedScratch dir("ckpt_part_hybrid");
  const std::string whole = SaveWhole(dir, "whole");
  HybridPart h;
  const std::string path =
      SavePartitionedCheckpoint({.dir = dir / "parts"}, MPI_COMM_WORLD, h.way->part, State());
  ExpectSameFileOnRankZero(path, whole);
}

TEST(PartitionedCheckpoint, AFileFromAnyGridLoadsOntoAnyOtherWithAdamState) {
  SharedScratch dir("ckpt_part_regrid");
  Whole w;
  // Written by tensor-parallel ways; loaded onto stages (and the latest of the directory).
  auto way = testing::Fabricate(w.model, *w.opt, kAxes, Rank(), Size());
  const std::string tp =
      SavePartitionedCheckpoint({.dir = dir / "tp"}, MPI_COMM_WORLD, way->part, State());
  const auto [begin, end] = StageLayers(Rank(), Size());
  Stage stage(begin, end, false);
  TrainingState st;
  EXPECT_EQ(LoadLatestCheckpoint({.dir = dir / "tp"}, stage.model, stage.opt.get(), &st), tp);
  EXPECT_EQ(st.rng, State().rng);
  testing::ExpectHoldsValuesOf(MakeCheckpointPart(stage.model, stage.opt.get()), w.model, *w.opt);
  // Written by stages; loaded onto stages of tensor-parallel ways (weights only: slots untouched).
  const std::string staged = SavePartitionedCheckpoint({.dir = dir / "stages"}, MPI_COMM_WORLD,
                                                       stage.model, stage.opt.get(), State());
  HybridPart h;
  std::fill(h.way->arena.begin(), h.way->arena.end(), 0.5f);
  LoadWeights(staged, h.way->part);
  auto expected = testing::Fabricate(w.model, *w.opt, kAxes, Rank() % (Size() >= 2 ? 2 : 1),
                                     Size() >= 2 ? 2 : 1);
  for (const ParamSpec& s : h.way->part.specs) {
    for (const ParamSpec& e : expected->part.specs) {
      if (e.FullName() != s.FullName()) continue;
      EXPECT_EQ(std::vector<float>(h.way->arena.begin() + s.offset,
                                   h.way->arena.begin() + s.offset + s.size),
                std::vector<float>(expected->arena.begin() + e.offset,
                                   expected->arena.begin() + e.offset + e.size))
          << s.FullName();
    }
  }
  // And the full resume state onto the hybrid grid.
  h.way->opt->set_iterations(0);
  LoadCheckpoint(staged, h.way->part);
  testing::ExpectHoldsValuesOf(h.way->part, w.model, *w.opt);
}

// Runs a partitioned save of `part` that must fail; returns this rank's error.
std::string ExpectFailsEverywhere(const std::string& dir, const CheckpointPart& part,
                                  ErrorCode code = ErrorCode::kInvalidArgument) {
  std::string what;
  try {
    SavePartitionedCheckpoint({.dir = dir}, MPI_COMM_WORLD, part, State());
    ADD_FAILURE() << "rank " << Rank() << ": the save succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    what = e.what();
  }
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_TRUE(ListCheckpoints({.dir = dir}).empty());
  return what;
}

ParamSpec& SpecOf(CheckpointPart& part, const std::string& name) {
  for (ParamSpec& s : part.specs)
    if (s.FullName() == name) return s;
  throw Error(ErrorCode::kInternal, "no parameter " + name);
}

TEST(PartitionedCheckpoint, AGapInASliceIsOneLineOnEveryRankNamingTheParameter) {
  SharedScratch dir("ckpt_part_gap");
  Whole w;
  auto way = testing::Fabricate(w.model, *w.opt, kAxes, Rank(), Size());
  if (Rank() == Size() - 1) {  // the last way drops its last column
    ParamSpec& k = SpecOf(way->part, "00_dense/kernel");
    k.shape[1] -= 1;
    k.size = NumElements(k.shape);
  }
  EXPECT_THAT(ExpectFailsEverywhere(dir / "c", way->part),
              HasSubstr("parameter 00_dense/kernel: no rank holds [7,8) along axis 1 of its "
                        "[5,8]"));
}

TEST(PartitionedCheckpoint, AnOverlapIsOneLineOnEveryRankNamingBothRanks) {
  if (Size() == 1) GTEST_SKIP() << "needs two ranks";
  SharedScratch dir("ckpt_part_overlap");
  Whole w;
  auto way = testing::Fabricate(w.model, *w.opt, kAxes, Rank(), Size());
  ParamSpec& k = SpecOf(way->part, "02_dense/kernel");  // rows, 8 / Size() each
  if (Rank() == 1) k.split_begin -= 1;                  // rank 1 starts one row early
  const int64_t rows = 8 / Size();
  EXPECT_THAT(ExpectFailsEverywhere(dir / "c", way->part),
              HasSubstr("parameter 02_dense/kernel: rank 1's slice [" + std::to_string(rows - 1) +
                        "," + std::to_string(2 * rows - 1) +
                        ") along axis 0 overlaps rank 0's "
                        "slice [0," +
                        std::to_string(rows) + ")"));
}

TEST(PartitionedCheckpoint, DifferentOptimizersAndANaNOnOneRankFailEveryRank) {
  SharedScratch dir("ckpt_part_opt");
  const auto [begin, end] = StageLayers(Rank(), Size());
  Stage stage(begin, end, true);
  auto sgd = MakeOptimizer({.name = "sgd"}, stage.model.arena().size());
  CheckpointPart part = MakeCheckpointPart(stage.model, stage.opt.get());
  if (Size() > 1) {
    if (Rank() == Size() - 1) part.optimizer = sgd.get();
    EXPECT_THAT(ExpectFailsEverywhere(dir / "a", part),
                HasSubstr("rank " + std::to_string(Size() - 1) +
                          "'s optimizer is sgd but rank 0's is adam"));
    part.optimizer = stage.opt.get();
  }
  if (Rank() == Size() - 1) part.params[0] = std::nanf("");
  const std::string what = ExpectFailsEverywhere(dir / "b", part, ErrorCode::kDataLoss);
  EXPECT_THAT(what, HasSubstr("non-finite value"));
  if (Rank() != Size() - 1) {
    EXPECT_THAT(what, HasSubstr("rank " + std::to_string(Size() - 1) + " failed"));
  }
}

}  // namespace
}  // namespace shardflow
