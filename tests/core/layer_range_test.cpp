// A model built from a range of a spec's layers (one pipeline stage) is exactly that part of the
// whole model: the same initial parameters, names and layer indices; chained stages compute the
// whole model's output, and their backward passes (each sending its input gradient to the stage
// before) accumulate the whole model's gradients, bit for bit, dropout included.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/model.hpp"
#include "tests/core/random_tensor.hpp"

namespace shardflow {
namespace layer_range_test {

Tensor RandomTensor(const Shape& shape, uint64_t stream) {
  return testing::RandomTensor(shape, 5, stream);
}

std::vector<float> Values(const Tensor& t) {
  const float* p = t.data<float>();
  return std::vector<float>(p, p + t.num_elements());
}

// Every parameter (values and gradients) by full name.
using ByName = std::map<std::string, std::pair<std::vector<float>, std::vector<float>>>;
void Collect(Sequential<float>& m, ByName* out) {
  Arena<float>& a = m.arena();
  for (int id = 0; id < a.num_params(); ++id) {
    const ParamSpec& s = a.spec(id);
    (*out)[s.FullName()] = {std::vector<float>(a.param(id), a.param(id) + s.size),
                            std::vector<float>(a.grad(id), a.grad(id) + s.size)};
  }
}

struct Case {
  std::string spec;
  Shape input;
  std::vector<int> cuts;  // stage boundaries
};

class LayerRangeTest : public ::testing::TestWithParam<Case> {};

TEST_P(LayerRangeTest, StagesChainToTheWholeModel) {
  const Case& c = GetParam();
  const ModelOptions options{.seed = 11};
  Sequential<float> whole(c.spec, c.input, options);
  std::vector<int> bounds = {0};
  bounds.insert(bounds.end(), c.cuts.begin(), c.cuts.end());
  bounds.push_back(whole.num_layers());
  std::vector<std::unique_ptr<Sequential<float>>> stages;
  for (size_t s = 0; s + 1 < bounds.size(); ++s) {
    stages.push_back(std::make_unique<Sequential<float>>(c.spec, c.input, options,
                                                         LayerRange{bounds[s], bounds[s + 1]}));
    EXPECT_EQ(stages.back()->first_layer(), bounds[s]);
    EXPECT_EQ(stages.back()->num_layers(), bounds[s + 1] - bounds[s]);
    EXPECT_EQ(stages.back()->layer_name(0), whole.layer_name(bounds[s]));
  }
  whole.set_step(4);
  whole.arena().ZeroGrads();
  const Tensor x = RandomTensor(WithBatch(3, c.input), 1);
  MicroBatch mb(2);
  const Tensor y = whole.Forward(x, true, mb).Clone();
  const Tensor dy = RandomTensor(WithBatch(3, whole.output_shape()), 2);
  whole.Backward(dy, mb);

  std::vector<MicroBatch> mbs;
  for (size_t s = 0; s < stages.size(); ++s) mbs.emplace_back(2);
  Tensor h = x;
  for (size_t s = 0; s < stages.size(); ++s) {
    stages[s]->set_step(4);
    stages[s]->arena().ZeroGrads();
    h = stages[s]->Forward(h, true, mbs[s]);
  }
  EXPECT_EQ(Values(h), Values(y));
  Tensor g = dy;
  for (size_t s = stages.size(); s-- > 0;) {
    g = stages[s]->BackwardWithInputGrad(g, mbs[s]);
    EXPECT_EQ(g.shape(), WithBatch(3, stages[s]->input_shape()));
  }
  ByName expect, got;
  Collect(whole, &expect);
  for (auto& s : stages) Collect(*s, &got);
  ASSERT_EQ(got.size(), expect.size());
  for (const auto& [name, values] : expect) {
    ASSERT_TRUE(got.count(name)) << name;
    EXPECT_EQ(got[name].first, values.first) << name << " initial values";
    EXPECT_EQ(got[name].second, values.second) << name << " gradients";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Specs, LayerRangeTest,
    ::testing::Values(
        Case{"mlp", {28, 28, 1}, {2}}, Case{"mlp", {28, 28, 1}, {1, 3, 5}},
        Case{"flatten, dense:16, dropout:0.3, relu, dense:8, dropout:0.5, dense:4", {5, 2}, {3, 5}},
        Case{"cnn", {12, 12, 1}, {3, 7}}, Case{"resnet", {8, 8, 1}, {4}},
        Case{"lstm_autoencoder", {6, 3}, {2}}));

TEST(LayerRangeTest, GradsReadyHookNamesTheWholeModelsLayer) {
  Sequential<float> stage("mlp", {28, 28, 1}, {}, LayerRange{3, 6});
  std::vector<int> done;
  stage.SetGradsReadyHook([&](int layer) { done.push_back(layer); });
  MicroBatch mb;
  const Tensor x = RandomTensor(WithBatch(2, stage.input_shape()), 3);
  stage.Forward(x, true, mb);
  stage.Backward(RandomTensor({2, 10}, 4), mb);
  EXPECT_EQ(done, (std::vector<int>{5, 3}));
  for (const ParamSpec& s : stage.arena().specs()) EXPECT_GE(s.layer, 3);
}

TEST(LayerRangeTest, RangeOutsideTheModelIsRefused) {
  for (LayerRange r : {LayerRange{-1, 2}, LayerRange{3, 3}, LayerRange{2, 9}, LayerRange{6, -1}}) {
    try {
      Sequential<float> m("mlp", {28, 28, 1}, {}, r);
      ADD_FAILURE() << "range " << r.begin << ", " << r.end << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("model with 6 layers"), std::string::npos) << e.what();
    }
  }
}

}  // namespace layer_range_test
}  // namespace shardflow
