// Checkpoints and non-finite values: a model holding NaN or Inf is never written over a good
// checkpoint, and a file holding one (written by an older build) is refused by every load path
// (LoadCheckpoint for resume, LoadWeights for warm start and predict, LoadLatestCheckpoint),
// naming the tensor, with the model left as it was. (LeakSanitizer suppressions for HDF5: see
// checkpoint_test.cpp, same binary.)
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "io/checkpoint/checkpoint.hpp"
#include "tests/io/poison_checkpoint.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow {
namespace checkpoint_nonfinite_test {

constexpr const char* kSpec = "dense:6, relu, batchnorm, dense:3";
const Shape kInput = {4};
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The id of the parameter named layer/name.
int ParamId(const Arena<float>& arena, const std::string& full_name) {
  for (int i = 0; i < arena.num_params(); ++i) {
    if (arena.spec(i).FullName() == full_name) return i;
  }
  throw std::runtime_error("no parameter " + full_name);
}

void ExpectRefused(const std::function<void()>& load, const std::string& tensor) {
  try {
    load();
    FAIL() << "a checkpoint holding a non-finite value was loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.what();
    EXPECT_NE(std::string(e.what()).find("non-finite"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(tensor), std::string::npos) << e.what();
  }
}

TEST(CheckpointNonfinite, SaveRefusesAndKeepsThePreviousFile) {
  testing::ScratchDir dir("ckpt_nonfinite_save");
  const CheckpointOptions co{.dir = dir.path().string(), .keep_last = 1};
  Sequential<float> m(kSpec, kInput);
  auto opt = MakeOptimizer({.name = "adam"}, m.arena().size());
  const std::string good = SaveCheckpoint(co, m, opt.get(), {.step = 1});
  const std::string good_bytes = ReadBytes(good);
  for (const float bad : {kNaN, kInf, -kInf}) {
    SCOPED_TRACE(bad);
    const int id = ParamId(m.arena(), "03_dense/kernel");
    float& v = m.arena().params()[m.arena().spec(id).offset + 2];
    const float kept = v;
    v = bad;
    try {
      SaveCheckpoint(co, m, opt.get(), {.step = 2});
      FAIL() << "a model holding a non-finite value was saved";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.what();
      const std::string what = e.what();
      EXPECT_NE(what.find("parameter 03_dense/kernel at element 2"), std::string::npos) << what;
      EXPECT_NE(what.find("ckpt-000000002.h5"), std::string::npos) << what;
    }
    v = kept;
    // Nothing else in the folder (no new file, no temporary), the good one byte for byte.
    EXPECT_EQ(ListCheckpoints(co), std::vector<std::string>{good});
    int files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
      (void)entry;
      ++files;
    }
    EXPECT_EQ(files, 1);
    EXPECT_EQ(ReadBytes(good), good_bytes);
  }
  // An optimizer slot is checked too.
  opt->Slots()[0].tensor->data<float>()[0] = kNaN;
  ExpectRefused([&] { SaveCheckpoint(co, m, opt.get(), {.step = 3}); },
                "optimizer slot " + opt->Slots()[0].name);
  // The good checkpoint still loads.
  Sequential<float> r(kSpec, kInput, {.seed = 9});
  LoadWeights(good, r);
  EXPECT_EQ(std::memcmp(r.arena().params(), m.arena().params(),
                        static_cast<size_t>(m.arena().size()) * sizeof(float)),
            0);
}

TEST(CheckpointNonfinite, EveryLoadPathRefusesAPoisonedFile) {
  testing::ScratchDir dir("ckpt_nonfinite_load");
  const CheckpointOptions co{.dir = dir.path().string()};
  Sequential<float> m(kSpec, kInput);
  auto opt = MakeOptimizer({}, m.arena().size());
  const std::string earlier = SaveCheckpoint(co, m, opt.get(), {.step = 1});
  const std::string path = SaveCheckpoint(co, m, opt.get(), {.step = 2});
  const int id = ParamId(m.arena(), "00_dense/bias");
  testing::PoisonCheckpoint(path, m.arena(), id, 1, kNaN);

  Sequential<float> r(kSpec, kInput, {.seed = 3});
  const std::vector<float> before(r.arena().params(), r.arena().params() + r.arena().size());
  auto ropt = MakeOptimizer({}, r.arena().size());
  const std::string tensor = "parameter 00_dense/bias at element 1";
  ExpectRefused([&] { LoadCheckpoint(path, r, ropt.get()); }, tensor);  // resume
  ExpectRefused([&] { LoadWeights(path, r); }, tensor);                 // warm start, predict
  // Resume from the folder: refused, not skipped for the earlier file (which would hide it).
  ExpectRefused([&] { LoadLatestCheckpoint(co, r, ropt.get(), nullptr); }, tensor);
  EXPECT_EQ(std::memcmp(before.data(), r.arena().params(), before.size() * sizeof(float)), 0)
      << "a refused load changed the model";
  // An Inf is refused as well; the earlier file still loads.
  testing::PoisonCheckpoint(path, m.arena(), id, 0, kInf);
  ExpectRefused([&] { LoadWeights(path, r); }, "parameter 00_dense/bias at element 0");
  EXPECT_NO_THROW(LoadCheckpoint(earlier, r, ropt.get()));
}

}  // namespace checkpoint_nonfinite_test
}  // namespace shardflow
