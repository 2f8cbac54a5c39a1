// shardflow's pre-LN transformer block against PyTorch: tests/fixtures/torch/block_reference.json
// holds, per case, an input, every parameter (in shardflow's names and layout), PyTorch's output,
// and for an output gradient PyTorch's input and parameter gradients, all float64 (written by
// bench/peers/torch_block_reference.py; see tests/fixtures/README.md). The block is built in
// double precision with those parameters and must agree to round-off: a causal and a
// bidirectional block, and a one-head block over 70 positions (across the attention tiles).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/model.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow {
namespace transformer_reference_test {

nlohmann::json LoadCases() {
  const auto path = testing::FixturesDir() / "torch" / "block_reference.json";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return nlohmann::json::parse(in)["cases"];
}

Tensor FromJson(const nlohmann::json& values, const Shape& shape) {
  Tensor t(DType::kFloat64, shape);
  const std::vector<double> v = values.get<std::vector<double>>();
  EXPECT_EQ(static_cast<int64_t>(v.size()), t.num_elements());
  std::copy(v.begin(), v.end(), t.data<double>());
  return t;
}

void ExpectClose(const double* got, const nlohmann::json& want, const std::string& what) {
  const std::vector<double> w = want.get<std::vector<double>>();
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const double err = std::abs(got[i] - w[i]) / (1.0 + std::abs(w[i]));
    if (err > worst) worst = err, at = i;
  }
  EXPECT_LT(worst, 1e-10) << what << ": element " << at << " is " << got[at] << ", PyTorch "
                          << w[at];
}

TEST(TransformerReference, BlockEqualsPyTorch) {
  const nlohmann::json cases = LoadCases();
  ASSERT_EQ(cases.size(), 3u);
  for (const nlohmann::json& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const int64_t b = c["batch"], t = c["time"], d = c["features"], heads = c["heads"];
    const std::string spec =
        "block:" + std::to_string(heads) + (c["causal"].get<bool>() ? ":causal" : "");
    Sequential<double> m(spec, {t, d});
    Arena<double>& arena = m.arena();
    int loaded = 0;
    for (int id = 0; id < arena.num_params(); ++id) {
      const ParamSpec& s = arena.spec(id);
      ASSERT_TRUE(c["params"].contains(s.name)) << s.name;
      const std::vector<double> v = c["params"][s.name].get<std::vector<double>>();
      ASSERT_EQ(static_cast<int64_t>(v.size()), s.size) << s.name;
      std::copy(v.begin(), v.end(), arena.param(id));
      ++loaded;
    }
    EXPECT_EQ(loaded, static_cast<int>(c["params"].size()));
    const Tensor x = FromJson(c["x"], {b, t, d});
    const Tensor dy = FromJson(c["dy"], {b, t, d});
    arena.ZeroGrads();
    MicroBatch mb;
    const Tensor y = m.Forward(x, true, mb);
    ExpectClose(y.data<double>(), c["y"], "y");
    const Tensor dx = m.BackwardWithInputGrad(dy, mb);
    ExpectClose(dx.data<double>(), c["dx"], "dx");
    for (int id = 0; id < arena.num_params(); ++id) {
      const ParamSpec& s = arena.spec(id);
      ExpectClose(arena.grad(id), c["grads"][s.name], "gradient of " + s.name);
    }
  }
}

}  // namespace transformer_reference_test
}  // namespace shardflow
