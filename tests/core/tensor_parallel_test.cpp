// A T-way tensor-parallel model (core/layers/tensor_parallel.hpp) is the whole model split: run
// as T threads with a fake all-reduce, its ways start from exactly the whole model's parameter
// slices, compute the whole model's output and input gradient, and their gradient slices
// assemble into the whole model's gradients (up to the summation order); dropout on a split
// activation draws the whole model's masks. With T = 1 a marked spec is the unmarked one, bit for
// bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/model.hpp"
#include "fake_tensor_group.hpp"
#include "tests/core/random_tensor.hpp"

namespace shardflow {
namespace tensor_parallel_test {

using testing_tp::FakeTensorGroup;
using testing_tp::RunWays;

Tensor RandomTensor(const Shape& shape, uint64_t stream) {
  return testing::RandomTensor(shape, 7, stream);
}

std::vector<float> Values(const Tensor& t) {
  const float* p = t.data<float>();
  return std::vector<float>(p, p + t.num_elements());
}

// The part of a whole parameter `whole` (shape s.FullShape()) that slice spec `s` holds.
std::vector<float> SliceOf(const ParamSpec& s, const float* whole) {
  if (s.split_axis < 0) return std::vector<float>(whole, whole + s.size);
  const Shape& full = s.full_shape;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < s.split_axis; ++d) outer *= full[d];
  for (size_t d = s.split_axis + 1; d < full.size(); ++d) inner *= full[d];
  const int64_t n = full[s.split_axis], len = s.shape[s.split_axis];
  std::vector<float> out;
  for (int64_t o = 0; o < outer; ++o) {
    const float* row = whole + (o * n + s.split_begin) * inner;
    out.insert(out.end(), row, row + len * inner);
  }
  return out;
}

int ParamId(const Arena<float>& a, const std::string& name) {
  for (int id = 0; id < a.num_params(); ++id) {
    if (a.spec(id).FullName() == name) return id;
  }
  return -1;
}

// |a - b| <= 1e-5 relative to the largest magnitude of `want`.
void ExpectNear(const std::vector<float>& got, const std::vector<float>& want,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  float scale = 1e-30f;
  for (float v : want) scale = std::max(scale, std::abs(v));
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    if (std::abs(got[i] - want[i]) > 1e-5f * scale) {
      ADD_FAILURE() << what << "[" << i << "]: " << got[i] << " vs " << want[i];
      ++bad;
    }
  }
}

// What one way produced: initial parameters, output, input gradient, parameter gradients.
struct WayResult {
  std::vector<std::vector<float>> init;  // by parameter id
  std::vector<float> y, dx;
  std::vector<std::vector<float>> grads;
  std::vector<ParamSpec> specs;
  int64_t flops = 0;
};

struct Case {
  std::string spec;
  Shape input;
  int ways;
  bool training;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.spec << " on " << ShapeToString(c.input) << ", T = " << c.ways;
}

class TensorParallelModelTest : public ::testing::TestWithParam<Case> {};

TEST_P(TensorParallelModelTest, WaysAssembleTheWholeModel) {
  const Case& c = GetParam();
  const int64_t batch = 3;
  Tensor x = RandomTensor(WithBatch(batch, c.input), 1);
  if (c.spec.rfind("tokens:", 0) == 0) {  // a token model reads ids in [0, V)
    const int64_t v = std::stoll(c.spec.substr(7));
    float* p = x.data<float>();
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      p[i] = static_cast<float>(static_cast<int64_t>(std::abs(p[i]) * 97.0f) % v);
    }
  }
  Sequential<float> whole(c.spec, c.input, {.seed = 5});
  const Tensor dy = RandomTensor(WithBatch(batch, whole.output_shape()), 2);
  whole.set_step(4);
  const std::vector<float> y_whole = Values(whole.Forward(x, c.training));
  whole.arena().ZeroGrads();
  MicroBatch mb_whole;
  whole.Forward(x, c.training, mb_whole);
  const std::vector<float> dx_whole = Values(whole.BackwardWithInputGrad(dy, mb_whole));

  FakeTensorGroup group(c.ways);
  std::vector<WayResult> results(c.ways);
  RunWays(c.ways, [&](int way) {
    ModelOptions o{.seed = 5};
    o.tensor_parallel = group.Way(way);
    Sequential<float> m(c.spec, c.input, o);
    WayResult& r = results[way];
    r.specs = m.arena().specs();
    for (int id = 0; id < m.arena().num_params(); ++id) {
      r.init.emplace_back(m.arena().param(id), m.arena().param(id) + r.specs[id].size);
    }
    m.set_step(4);
    r.y = Values(m.Forward(x, c.training));
    m.arena().ZeroGrads();
    MicroBatch mb;
    m.Forward(x, c.training, mb);
    r.dx = Values(m.BackwardWithInputGrad(dy, mb));
    for (int id = 0; id < m.arena().num_params(); ++id) {
      r.grads.emplace_back(m.arena().grad(id), m.arena().grad(id) + r.specs[id].size);
    }
    r.flops = m.FlopsPerSample();
  });

  const Arena<float>& a = whole.arena();
  for (int way = 0; way < c.ways; ++way) {
    SCOPED_TRACE("way " + std::to_string(way) + " of " + std::to_string(c.ways));
    const WayResult& r = results[way];
    ASSERT_EQ(static_cast<int>(r.specs.size()), a.num_params());
    int split_params = 0;
    for (size_t id = 0; id < r.specs.size(); ++id) {
      const ParamSpec& s = r.specs[id];
      const int wid = ParamId(a, s.FullName());
      ASSERT_GE(wid, 0) << s.FullName();
      EXPECT_EQ(s.FullShape(), a.spec(wid).shape) << s.FullName();
      if (s.split_axis >= 0) {
        ++split_params;
        EXPECT_EQ(s.split_begin, way * s.shape[s.split_axis]) << s.FullName();
      }
      EXPECT_EQ(r.init[id], SliceOf(s, a.param(wid))) << "initial " << s.FullName();
      std::vector<float> g_whole = SliceOf(s, whole.arena().grad(wid));
      ExpectNear(r.grads[id], g_whole, "gradient of " + s.FullName());
    }
    EXPECT_GT(split_params, 0);
    ExpectNear(r.y, y_whole, "output");
    ExpectNear(r.dx, dx_whole, "input gradient");
    EXPECT_LT(r.flops, whole.FlopsPerSample());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Specs, TensorParallelModelTest,
    ::testing::Values(Case{"mlp", {8, 8, 1}, 2, true}, Case{"mlp", {8, 8, 1}, 4, true},
                      Case{"cnn", {12, 12, 1}, 2, true}, Case{"cnn", {12, 12, 1}, 4, true},
                      // dropout on split dense and conv activations, glorot-free spec with gelu
                      Case{"flatten, dense:24:col, relu, dropout:0.5, dense:12:row, dropout:0.3, "
                           "dense:4",
                           {3, 4},
                           2,
                           true},
                      Case{"flatten, dense:24:col, relu, dropout:0.5, dense:12:row, dropout:0.3, "
                           "dense:4",
                           {3, 4},
                           4,
                           true},
                      Case{"conv:8:3x3:same:col, gelu, dropout:0.4, maxpool:2, "
                           "conv:4:3x3:valid:row, flatten, dense:8:col, tanh, dense:3:row",
                           {8, 8, 2},
                           4,
                           true},
                      Case{"conv:8:3x3:same:col, relu, dropout:0.4, avgpool:2, "
                           "conv:4:3x3:valid:s2:row, gap, dense:3",
                           {8, 8, 2},
                           2,
                           false},
                      // transformers: heads and MLP units split inside each block
                      Case{"block:4:causal, block:4:causal, layernorm, dense:5", {6, 8}, 2, true},
                      Case{"block:4, layernorm, seqpool:first, dense:3", {5, 8}, 4, true},
                      Case{"attention:2, seqpool:mean, dense:3", {70, 4}, 2, true},
                      // a GPT: tokens, a block with residual dropout, the head tied to the table
                      Case{"tokens:20:8, block:4:causal:0.2, layernorm, lmhead", {6}, 2, true}));

// Per way, a split layer does 1/T of its work; replicated layers all of theirs.
TEST(TensorParallel, FlopsPerSamplePerWay) {
  FakeTensorGroup group(4);
  std::vector<int64_t> flops(4);
  RunWays(4, [&](int way) {
    ModelOptions o;
    o.tensor_parallel = group.Way(way);
    flops[way] = Sequential<float>("mlp", {8, 8, 1}, o).FlopsPerSample();
  });
  const int64_t split = 2 * 64 * 512 + 2 * 512 * 256, replicated = 2 * 256 * 10;
  EXPECT_EQ(Sequential<float>("mlp", {8, 8, 1}).FlopsPerSample(), split + replicated);
  for (int64_t f : flops) EXPECT_EQ(f, split / 4 + replicated);
}

// Every parameter (values, gradients) of a model by full name.
using ByName = std::map<std::string, std::pair<std::vector<float>, std::vector<float>>>;
void Collect(Sequential<float>& m, ByName* out) {
  Arena<float>& a = m.arena();
  for (int id = 0; id < a.num_params(); ++id) {
    const ParamSpec& s = a.spec(id);
    (*out)[s.FullName()] = {std::vector<float>(a.param(id), a.param(id) + s.size),
                            std::vector<float>(a.grad(id), a.grad(id) + s.size)};
  }
}

// Pipeline stages of a tensor-split model (LayerRange; the first cut is where the activation is
// a way's slice) are that part of the way's model: chained, they give the way's output,
// parameters and gradients, bit for bit.
TEST(TensorParallel, StagesOfAWayChainToTheWay) {
  const int ways = 2;
  const Shape input{12, 12, 1};
  const Tensor x = RandomTensor(WithBatch(2, input), 1);
  const Tensor dy = RandomTensor({2, 10}, 2);
  FakeTensorGroup group(ways);
  std::vector<std::vector<float>> y_way(ways), y_stages(ways);
  std::vector<ByName> p_way(ways), p_stages(ways);
  std::vector<Shape> cut_shape(ways);
  RunWays(ways, [&](int way) {
    ModelOptions o{.seed = 3};
    o.tensor_parallel = group.Way(way);
    Sequential<float> m("cnn", input, o);
    y_way[way] = Values(m.Forward(x, true));
    m.arena().ZeroGrads();
    m.Backward(dy);
    Collect(m, &p_way[way]);
    std::vector<std::unique_ptr<Sequential<float>>> st;
    for (LayerRange r : {LayerRange{0, 2}, LayerRange{2, 7}, LayerRange{7, 10}}) {
      st.push_back(std::make_unique<Sequential<float>>("cnn", input, o, r));
    }
    cut_shape[way] = st[1]->input_shape();
    std::vector<MicroBatch> mb(3);
    Tensor h = x;
    for (int i = 0; i < 3; ++i) h = st[i]->Forward(h, true, mb[i]);
    y_stages[way] = Values(h);
    Tensor g = dy;
    for (int i = 2; i >= 1; --i) {
      st[i]->arena().ZeroGrads();
      g = st[i]->BackwardWithInputGrad(g, mb[i]);
    }
    st[0]->arena().ZeroGrads();
    st[0]->Backward(g, mb[0]);
    for (auto& s : st) Collect(*s, &p_stages[way]);
  });
  for (int way = 0; way < ways; ++way) {
    EXPECT_EQ(cut_shape[way], (Shape{12, 12, 16}));
    EXPECT_EQ(y_stages[way], y_way[way]);
    EXPECT_EQ(p_stages[way], p_way[way]);
  }
}

std::vector<uint8_t> Bytes(const float* p, int64_t n) {
  std::vector<uint8_t> out(static_cast<size_t>(n) * sizeof(float));
  std::memcpy(out.data(), p, out.size());
  return out;
}

// T = 1: the presets' markers change nothing, bit for bit; spec() carries no marker.
TEST(TensorParallel, OneWayIsTheUnmarkedModelBitForBit) {
  struct Pair {
    std::string marked, plain;
    Shape input;
  };
  const std::vector<Pair> pairs = {
      {"mlp", "flatten, dense:512, relu, dense:256, relu, dense:10", {8, 8, 1}},
      {"cnn",
       "conv:32:5x5:same, relu, maxpool:2, conv:64:5x5:same, relu, maxpool:2, flatten, "
       "dense:1024, relu, dense:10",
       {12, 12, 1}},
      {"flatten, dense:24:col, relu, dropout:0.5, dense:12:row",
       "flatten, dense:24, relu, "
       "dropout:0.5, dense:12",
       {3, 4}}};
  for (const Pair& p : pairs) {
    SCOPED_TRACE(p.marked);
    Sequential<float> a(p.marked, p.input, {.seed = 9, .init = InitKind::kGlorotUniform});
    Sequential<float> b(p.plain, p.input, {.seed = 9, .init = InitKind::kGlorotUniform});
    EXPECT_EQ(a.spec(), b.spec());
    EXPECT_EQ(a.spec().find("col"), std::string::npos);
    ASSERT_EQ(a.arena().size(), b.arena().size());
    for (const ParamSpec& s : a.arena().specs()) EXPECT_LT(s.split_axis, 0) << s.FullName();
    EXPECT_EQ(Bytes(a.arena().params(), a.arena().size()),
              Bytes(b.arena().params(), b.arena().size()));
    const Tensor x = RandomTensor(WithBatch(2, p.input), 3);
    const Tensor ya = a.Forward(x, true), yb = b.Forward(x, true);
    EXPECT_EQ(Bytes(ya.data<float>(), ya.num_elements()),
              Bytes(yb.data<float>(), yb.num_elements()));
    const Tensor dy = RandomTensor(ya.shape(), 4);
    a.arena().ZeroGrads();
    b.arena().ZeroGrads();
    a.Backward(dy);
    b.Backward(dy);
    EXPECT_EQ(Bytes(a.arena().grads(), a.arena().size()),
              Bytes(b.arena().grads(), b.arena().size()));
  }
}

}  // namespace tensor_parallel_test
}  // namespace shardflow
