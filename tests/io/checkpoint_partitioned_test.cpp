// Partitioned checkpoints on one process: the layout plan's coverage errors (gaps and overlaps of
// layers and of a parameter's slices, each naming the parameter and the ranks), the slab
// arithmetic of slices, the whole model saved as one part equals SaveCheckpoint's file, and
// tensor-parallel and pipeline parts load their pieces of a whole-model file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/checkpoint/checkpoint.hpp"
#include "io/checkpoint/layout.hpp"
#include "tests/io/checkpoint_part_expect.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow {
namespace checkpoint_partitioned_test {

namespace cl = checkpoint_layout;
using testing::FileContents;
using ::testing::HasSubstr;

constexpr const char* kSpec = "dense:8, relu, dense:6, batchnorm, tanh, dense:4";
const Shape kInput = {5};
const TrainingState kState{.step = 3, .epoch = 1, .seed = 5, .rng = {7}, .config_text = "x"};

// A part of `ranges` with one parameter "00_dense/kernel" of full shape (4, 6), split along
// axis 1 at the given [begin, end) per rank (end < 0: held whole).
std::vector<cl::PartSummary> KernelParts(const std::vector<std::pair<int64_t, int64_t>>& slices) {
  std::vector<cl::PartSummary> parts;
  for (const auto& [b, e] : slices) {
    cl::PartSummary p{.first_layer = 0, .end_layer = 1, .spec_layers = 1, .spec = "dense:6"};
    cl::PartParam k{.name = "00_dense/kernel", .layer = 0, .shape = {4, 6}, .full_shape = {4, 6}};
    if (e >= 0) {
      k.split_axis = 1;
      k.split_begin = b;
      k.shape = {4, e - b};
    }
    p.params.push_back(k);
    parts.push_back(p);
  }
  return parts;
}

std::string PlanError(const std::vector<cl::PartSummary>& parts) {
  cl::Layout layout;
  const Status st = cl::PlanLayout(parts, &layout);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(st.message().find('\n'), std::string::npos) << st.message();
  return st.message();
}

TEST(CheckpointLayout, SlicesThatTileAParameterPlanOneWriterEach) {
  cl::Layout layout;
  ASSERT_TRUE(cl::PlanLayout(KernelParts({{3, 6}, {0, 3}}), &layout).ok());
  ASSERT_EQ(layout.params.size(), 1u);
  EXPECT_EQ(layout.params[0].writers, (std::vector<int>{1, 0}));
  EXPECT_EQ(layout.arena_size, 24);
  EXPECT_EQ(layout.model_spec, "dense:6");
  // A replicated whole parameter is written by its lowest holder.
  ASSERT_TRUE(cl::PlanLayout(KernelParts({{0, -1}, {0, -1}, {0, -1}}), &layout).ok());
  EXPECT_EQ(layout.params[0].writers, std::vector<int>{0});
}

TEST(CheckpointLayout, GapsAndOverlapsNameTheParameterElementsAndRanks) {
  EXPECT_THAT(PlanError(KernelParts({{0, 2}, {3, 6}})),
              HasSubstr("parameter 00_dense/kernel: no rank holds [2,3) along axis 1 (gap before "
                        "rank 1's slice [3,6))"));
  EXPECT_THAT(PlanError(KernelParts({{0, 4}, {3, 6}})),
              HasSubstr("parameter 00_dense/kernel: rank 1's slice [3,6) along axis 1 overlaps "
                        "rank 0's slice [0,4)"));
  EXPECT_THAT(
      PlanError(KernelParts({{0, 5}})),
      HasSubstr("parameter 00_dense/kernel: no rank holds [5,6) along axis 1 of its [4,6]"));
  EXPECT_THAT(PlanError(KernelParts({{0, -1}, {0, 3}})),
              HasSubstr("parameter 00_dense/kernel is split along axis 1 on rank 1 but -1 on "
                        "rank 0"));
}

TEST(CheckpointLayout, LayerRangesMustTileTheModel) {
  std::vector<cl::PartSummary> parts(3);
  const int ranges[3][2] = {{0, 2}, {3, 5}, {2, 3}};
  for (int r = 0; r < 3; ++r) {
    parts[r] = {.first_layer = ranges[r][0], .end_layer = ranges[r][1], .spec_layers = 6};
  }
  EXPECT_THAT(PlanError(parts), HasSubstr("no rank holds layers [5,6) of the model's 6"));
  parts[1].end_layer = 7;
  EXPECT_THAT(PlanError(parts),
              HasSubstr("rank 1's layers [3,7) are not a range of the model's 6"));
  parts[1].end_layer = 6;
  parts[2].first_layer = 1;
  EXPECT_THAT(PlanError(parts), HasSubstr("rank 2's layers [1,3) overlap rank 0's [0,2)"));
  parts[2] = parts[0];
  parts[2].spec = "relu";
  parts[1].first_layer = 2;
  EXPECT_THAT(PlanError(parts), HasSubstr("rank 2's layers [0,2) are 'relu' but rank 0's are ''"));
}

TEST(CheckpointLayout, OptimizerKindsMustAgree) {
  std::vector<cl::PartSummary> parts = KernelParts({{0, -1}, {0, -1}});
  parts[0].optimizer = "adam";
  EXPECT_THAT(PlanError(parts), HasSubstr("rank 1's optimizer is none but rank 0's is adam"));
}

TEST(CheckpointLayout, SlabsOfAColumnSliceAreStridedInTheFlatSlot) {
  // Columns [2, 5) of a (3, 6) parameter at offset 100 of the arena.
  const std::vector<ArenaSlice> runs = cl::SliceRuns({3, 6}, 1, 2, 3);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[1].offset, 8);
  EXPECT_EQ(runs[1].size, 3);
  const io::Hdf5Slab slot = cl::SlotSlab({3, 6}, 1, 2, 3, 100);
  EXPECT_EQ(slot.start, std::vector<hsize_t>{102});
  EXPECT_EQ(slot.stride, std::vector<hsize_t>{6});
  EXPECT_EQ(slot.count, std::vector<hsize_t>{3});
  EXPECT_EQ(slot.block, std::vector<hsize_t>{3});
  // Rows are one run; a conv kernel's output channels are a run per (kh, kw, c).
  EXPECT_EQ(cl::SliceRuns({3, 6}, 0, 1, 2).size(), 1u);
  EXPECT_EQ(cl::SliceRuns({3, 3, 2, 8}, 3, 4, 4).size(), 18u);
  const io::Hdf5Slab param = cl::ParamSlab({3, 6}, 1, 2, 3);
  EXPECT_EQ(param.start, (std::vector<hsize_t>{0, 2}));
  EXPECT_EQ(param.block, (std::vector<hsize_t>{3, 3}));
}

struct Whole {
  Sequential<float> model{kSpec, kInput};
  std::unique_ptr<Optimizer> opt = MakeOptimizer({.name = "adam"}, model.arena().size());
  Whole() { testing::FillByName(model, *opt); }
};

TEST(PartitionedCheckpoint, TheWholeModelAsOnePartWritesSaveCheckpointsFile) {
  testing::ScratchDir dir("ckpt_part_whole");
  Whole w;
  const std::string a = SaveCheckpoint({.dir = dir / "a"}, w.model, w.opt.get(), kState);
  const std::string b = SavePartitionedCheckpoint({.dir = dir / "b"}, io::SelfCommunicator(),
                                                  w.model, w.opt.get(), kState);
  EXPECT_EQ(FileContents(a), FileContents(b));
  const CheckpointInfo info = ReadCheckpointInfo(b);
  EXPECT_EQ(info.step, 3);
  EXPECT_EQ(info.model_spec, w.model.spec());
  EXPECT_EQ(info.input_shape, "[5]");
  EXPECT_EQ(info.optimizer, "adam");
  ASSERT_EQ(info.params.size(), 8u);
  EXPECT_EQ(info.params[0].first, "00_dense/bias");
  EXPECT_EQ(info.params[1].second, (Shape{5, 8}));
}

TEST(PartitionedCheckpoint, TensorParallelWaysLoadTheirSlicesOfAWholeModelFile) {
  testing::ScratchDir dir("ckpt_part_tp_load");
  Whole w;
  const std::string path =
      SaveCheckpoint({.dir = dir.path().string()}, w.model, w.opt.get(), kState);
  // Megatron's pattern: the first dense column-split (kernel and bias), the second row-split
  // (bias replicated), the rest replicated; 3 ways cut 8 and 6 unevenly.
  const std::map<std::string, int> axes = {
      {"00_dense/kernel", 1}, {"00_dense/bias", 0}, {"02_dense/kernel", 0}};
  for (int way = 0; way < 3; ++way) {
    SCOPED_TRACE(way);
    auto f = testing::Fabricate(w.model, *w.opt, axes, way, 3);
    std::fill(f->arena.begin(), f->arena.end(), -7.0f);
    for (const NamedTensor& s : f->opt->Slots())
      std::fill_n(s.tensor->data<float>(), s.tensor->num_elements(), -7.0f);
    f->opt->set_iterations(0);
    const TrainingState st = LoadCheckpoint(path, f->part);
    EXPECT_EQ(st.step, 3);
    testing::ExpectHoldsValuesOf(f->part, w.model, *w.opt);
  }
}

TEST(PartitionedCheckpoint, AStageLoadsItsLayersAndAMismatchNamesBothFullShapes) {
  testing::ScratchDir dir("ckpt_part_stage_load");
  Whole w;
  const std::string path =
      SaveCheckpoint({.dir = dir.path().string()}, w.model, w.opt.get(), kState);
  Sequential<float> stage(kSpec, kInput, {.seed = 99}, LayerRange{2, 5});
  auto opt = MakeOptimizer({.name = "adam"}, stage.arena().size());
  LoadCheckpoint(path, stage, opt.get());
  testing::ExpectHoldsValuesOf(MakeCheckpointPart(stage, opt.get()), w.model, *w.opt);
  EXPECT_EQ(stage.Buffers().size(), 2u);
  // A slice whose full shape is not the file's.
  std::map<std::string, int> axes = {{"02_dense/kernel", 1}};
  auto f = testing::Fabricate(w.model, *w.opt, axes, 0, 2);
  for (ParamSpec& s : f->part.specs)
    if (s.FullName() == "02_dense/kernel") s.full_shape = {8, 7};
  try {
    LoadCheckpoint(path, f->part);
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("parameter /params/02_dense/kernel has shape [8,6] in the "
                                    "checkpoint but [8,7] in the model"));
  }
}

TEST(PartitionedCheckpoint, AVersionOneFileOfThePreviousWriterLoadsOntoAnyPart) {
  const std::string path =
      (testing::SourceDir() / "tests/io/fixtures/checkpoint-v1-adam.h5").string();
  Whole w;  // the values the file was written with
  Sequential<float> whole(kSpec, kInput, {.seed = 99});
  auto whole_opt = MakeOptimizer({.name = "adam"}, whole.arena().size());
  EXPECT_EQ(LoadCheckpoint(path, whole, whole_opt.get()).step, 4);
  testing::ExpectHoldsValuesOf(MakeCheckpointPart(whole, whole_opt.get()), w.model, *w.opt);
  Sequential<float> stage(kSpec, kInput, {.seed = 99}, LayerRange{3, 6});
  auto stage_opt = MakeOptimizer({.name = "adam"}, stage.arena().size());
  LoadCheckpoint(path, stage, stage_opt.get());
  testing::ExpectHoldsValuesOf(MakeCheckpointPart(stage, stage_opt.get()), w.model, *w.opt);
  Whole other;
  std::fill_n(other.model.arena().params(), other.model.arena().size(), 0.25f);
  for (const NamedTensor& t : other.opt->Slots())
    std::fill_n(t.tensor->data<float>(), t.tensor->num_elements(), 0.25f);
  other.opt->set_iterations(0);
  const std::map<std::string, int> axes = {{"05_dense/kernel", 1}, {"02_dense/kernel", 0}};
  auto way = testing::Fabricate(other.model, *other.opt, axes, 1, 2);
  LoadCheckpoint(path, way->part);
  testing::ExpectHoldsValuesOf(way->part, w.model, *w.opt);
}

TEST(PartitionedCheckpoint, StagesOfAResidualModelLoadTheirNestedParametersAndOptimizerRanges) {
  testing::ScratchDir dir("ckpt_part_residual");
  constexpr const char* spec =
      "conv:4:3x3:same, batchnorm, relu, residual:4, residual:8:2, gap, dense:3";
  Sequential<float> whole(spec, {8, 8, 1});
  auto opt = MakeOptimizer({.name = "adamw"}, whole.arena().size());
  testing::FillByName(whole, *opt);
  const std::string path = SaveCheckpoint({.dir = dir.path().string()}, whole, opt.get(), kState);
  for (const LayerRange range : {LayerRange{0, 4}, LayerRange{4, 5}, LayerRange{3, 7}}) {
    SCOPED_TRACE(range.begin);
    Sequential<float> stage(spec, {8, 8, 1}, {.seed = 5}, range);
    auto stage_opt = MakeOptimizer({.name = "adamw"}, stage.arena().size());
    LoadCheckpoint(path, stage, stage_opt.get());
    testing::ExpectHoldsValuesOf(MakeCheckpointPart(stage, stage_opt.get()), whole, *opt);
  }
}

// A part relies on the Fletcher-32 checksum of each chunk it reads (it cannot check the whole
// arena's CRC): a flipped byte in a parameter it reads is refused as data loss, and no flip
// anywhere loads different values silently.
TEST(PartitionedCheckpoint, APartRefusesAFlippedByteOfWhatItReads) {
  testing::ScratchDir dir("ckpt_part_flip");
  Whole w;
  const std::string path =
      SaveCheckpoint({.dir = dir.path().string()}, w.model, w.opt.get(), kState);
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const ParamSpec& kernel = w.model.arena().spec(2);  // 02_dense/kernel
  ASSERT_EQ(kernel.FullName(), "02_dense/kernel");
  const std::string stored(reinterpret_cast<const char*>(w.model.arena().param(2)), 64);
  const size_t at = bytes.find(stored);
  ASSERT_NE(at, std::string::npos);
  auto load_flipped = [&](size_t pos, const CheckpointPart& part) {
    std::string bad = bytes;
    bad[pos] = static_cast<char>(bad[pos] ^ 0x5a);
    const std::string p = (dir / ("flip" + std::to_string(pos) + ".h5")).string();
    std::ofstream(p, std::ios::binary) << bad;
    LoadCheckpoint(p, part);
  };
  Sequential<float> stage(kSpec, kInput, {.seed = 99}, LayerRange{2, 5});
  auto stage_opt = MakeOptimizer({.name = "adam"}, stage.arena().size());
  auto way = testing::Fabricate(w.model, *w.opt, {{"02_dense/kernel", 1}}, 1, 2);
  for (const CheckpointPart& part : {MakeCheckpointPart(stage, stage_opt.get()), way->part}) {
    try {
      load_flipped(at + 5, part);
      ADD_FAILURE() << "a flipped byte of 02_dense/kernel loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.what();
    }
    int refused = 0;
    for (size_t pos = 0; pos < bytes.size(); pos += bytes.size() / 40 + 1) {
      try {
        load_flipped(pos, part);
        testing::ExpectHoldsValuesOf(part, w.model, *w.opt);  // the flip hit unused space
      } catch (const Error& e) {
        ++refused;
        EXPECT_TRUE(e.code() == ErrorCode::kDataLoss || e.code() == ErrorCode::kInvalidArgument)
            << e.what();
      }
    }
    EXPECT_GT(refused, 0);
  }
}

// Each parameter's crc32 attribute is the CRC of its bytes; a part reading the parameter whole
// refuses a file whose bytes do not match it, naming the parameter.
TEST(PartitionedCheckpoint, AParameterReadWholeIsCheckedAgainstItsCrc) {
  testing::ScratchDir dir("ckpt_part_crc");
  Whole w;
  const std::string path =
      SaveCheckpoint({.dir = dir.path().string()}, w.model, w.opt.get(), kState);
  const ParamSpec& kernel = w.model.arena().spec(2);
  ASSERT_EQ(kernel.FullName(), "02_dense/kernel");
  {
    io::Hdf5File file = io::Hdf5File::Open(path, io::SelfCommunicator());
    EXPECT_EQ(io::ReadIntAttribute(file, "/params/02_dense/kernel", "crc32"),
              static_cast<int64_t>(
                  Crc32(w.model.arena().param(2), static_cast<size_t>(kernel.size) * 4)));
  }
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  const hid_t d = H5Dopen2(file, "/params/02_dense/kernel", H5P_DEFAULT);
  const hid_t a = H5Aopen(d, "crc32", H5P_DEFAULT);
  const int64_t wrong = 12345;
  EXPECT_GE(H5Awrite(a, H5T_NATIVE_INT64, &wrong), 0);
  H5Aclose(a);
  H5Dclose(d);
  H5Fclose(file);
  Sequential<float> stage(kSpec, kInput, {.seed = 99}, LayerRange{2, 3});
  const std::vector<float> before(stage.arena().params(),
                                  stage.arena().params() + stage.arena().size());
  try {
    LoadWeights(path, stage);
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
    EXPECT_THAT(e.what(), HasSubstr("parameter 02_dense/kernel checksum mismatch"));
  }
  EXPECT_EQ(before, std::vector<float>(stage.arena().params(),
                                       stage.arena().params() + stage.arena().size()));
  // A slice of it cannot be checked against the whole parameter's CRC (Fletcher-32 covers it).
  auto way = testing::Fabricate(w.model, *w.opt, {{"02_dense/kernel", 1}}, 0, 2);
  LoadWeights(path, way->part);
}

}  // namespace checkpoint_partitioned_test
}  // namespace shardflow
