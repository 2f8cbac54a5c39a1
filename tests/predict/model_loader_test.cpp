// The model loader (shardflow-predict's and shardflow-serve's) refuses a checkpoint holding NaN
// or Inf, given as a file or as the newest in a folder, naming the tensor (it would otherwise
// serve NaN probabilities).
#include "apps/common/prediction/model_loader.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "io/checkpoint/checkpoint.hpp"
#include "tests/io/poison_checkpoint.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::apps {
namespace model_loader_test {

TEST(ModelLoader, RefusesANonfiniteCheckpointNamingTheTensor) {
  testing::ScratchDir dir("predict_nonfinite");
  apps::ModelSetup setup;
  setup.model_spec = "dense:8, relu, dense:3";
  setup.input_shape = {5};
  Sequential<float> m(setup.model_spec, setup.input_shape, setup.model);
  const std::string path = SaveCheckpoint({.dir = dir.path().string()}, m, nullptr, {.step = 3});
  EXPECT_NO_THROW(LoadModel(setup, path));
  testing::PoisonCheckpoint(path, m.arena(), 1, 2, -std::numeric_limits<float>::infinity());
  for (const std::string& from : {path, dir.path().string()}) {
    try {
      LoadModel(setup, from);
      FAIL() << "loaded a checkpoint holding -inf from " << from;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << what;
      EXPECT_NE(what.find("non-finite value (-inf) in parameter 00_dense/bias at element 2"),
                std::string::npos)
          << what;
      EXPECT_NE(what.find(path), std::string::npos) << what;
    }
  }
}

}  // namespace model_loader_test
}  // namespace shardflow::apps
