// Every layer's backward pass against central finite differences, all in double precision.
//
// The objective is L = sum(y * r) for a fixed random r, so dL/dy = r. For each input element
// and each parameter the analytic gradient from Backward() is compared with
// (L(v + e) - L(v - e)) / 2e.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "core/arena.hpp"
#include "core/layers/layer.hpp"
#include "core/model.hpp"
#include "core/random.hpp"

namespace shardflow {
namespace layer_gradient_test {

void FillNormal(Tensor& t, uint64_t seed, double scale = 1.0) {
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = scale * RandomNormal(seed, 0, i);
}

struct Harness {
  Arena<double> arena;
  std::unique_ptr<Layer<double>> layer;
  Shape in, out;
  Harness(const std::string& spec, const Shape& input) : in(input) {
    layer = MakeLayerFromSpec<double>(spec, input, {});
    BuildContext<double> ctx{.arena = &arena, .layer_index = 0, .layer_name = "00_test"};
    out = layer->Build(input, ctx);
    arena.Allocate();
    layer->Initialize(3);
    // Nudge every parameter so biases, gammas and betas are not at special values.
    for (int64_t i = 0; i < arena.size(); ++i) arena.params()[i] += 0.1 * RandomNormal(9, 1, i);
  }
};

double Objective(Harness& h, const Tensor& x, const Tensor& r, const ForwardContext& ctx) {
  const Tensor y = h.layer->Forward(x, ctx);
  const double* yp = y.data<double>();
  const double* rp = r.data<double>();
  double s = 0.0;
  for (int64_t i = 0; i < y.num_elements(); ++i) s += yp[i] * rp[i];
  return s;
}

void ExpectClose(double analytic, double numeric, const std::string& what) {
  const double tol = 1e-7 + 1e-5 * std::max(std::abs(analytic), std::abs(numeric));
  EXPECT_NEAR(analytic, numeric, tol) << what;
}

// Checks d/dx and d/dparams of layer `spec` on per-sample input `in` with `batch` samples.
void CheckLayer(const std::string& spec, const Shape& in, int64_t batch, bool training = true,
                const std::vector<int64_t>* lengths = nullptr) {
  SCOPED_TRACE(spec + " on " + ShapeToString(in));
  Harness h(spec, in);
  const ForwardContext ctx{.training = training, .seed = 5, .step = 11, .lengths = lengths};
  Tensor x(DType::kFloat64, WithBatch(batch, in));
  FillNormal(x, 21);
  Tensor r(DType::kFloat64, WithBatch(batch, h.out));
  FillNormal(r, 22);
  Objective(h, x, r, ctx);
  h.arena.ZeroGrads();
  const Tensor dx = h.layer->Backward(r, true).Clone();
  std::vector<double> grads(h.arena.grads(), h.arena.grads() + h.arena.size());
  ASSERT_EQ(dx.shape(), x.shape());
  const double eps = 1e-5;
  double* xp = x.data<double>();
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const double keep = xp[i];
    xp[i] = keep + eps;
    const double up = Objective(h, x, r, ctx);
    xp[i] = keep - eps;
    const double down = Objective(h, x, r, ctx);
    xp[i] = keep;
    ExpectClose(dx.data<double>()[i], (up - down) / (2 * eps), "dx[" + std::to_string(i) + "]");
  }
  double* w = h.arena.params();
  for (int64_t i = 0; i < h.arena.size(); ++i) {
    const double keep = w[i];
    w[i] = keep + eps;
    const double up = Objective(h, x, r, ctx);
    w[i] = keep - eps;
    const double down = Objective(h, x, r, ctx);
    w[i] = keep;
    ExpectClose(grads[i], (up - down) / (2 * eps), "dparam[" + std::to_string(i) + "]");
  }
}

TEST(LayerGradient, Dense) { CheckLayer("dense:3", {4}, 3); }
TEST(LayerGradient, DenseTimeDistributed) { CheckLayer("dense:3", {2, 4}, 2); }
TEST(LayerGradient, DenseBatchOfOne) { CheckLayer("dense:2", {5}, 1); }
TEST(LayerGradient, Relu) { CheckLayer("relu", {7}, 3); }
TEST(LayerGradient, Gelu) { CheckLayer("gelu", {7}, 3); }
TEST(LayerGradient, Tanh) { CheckLayer("tanh", {7}, 3); }
TEST(LayerGradient, Sigmoid) { CheckLayer("sigmoid", {7}, 3); }
TEST(LayerGradient, Flatten) { CheckLayer("flatten", {2, 3, 2}, 2); }
TEST(LayerGradient, DropoutTraining) { CheckLayer("dropout:0.4", {20}, 3); }
TEST(LayerGradient, DropoutInference) { CheckLayer("dropout:0.4", {6}, 2, false); }
TEST(LayerGradient, ConvSame) { CheckLayer("conv:3:3x3:same", {5, 4, 2}, 2); }
TEST(LayerGradient, ConvValid) { CheckLayer("conv:2:3x2:valid", {5, 4, 3}, 2); }
TEST(LayerGradient, ConvStride2) { CheckLayer("conv:2:3x3:same:s2", {5, 6, 2}, 2); }
TEST(LayerGradient, ConvEvenKernelSame) { CheckLayer("conv:2:4x4:same", {5, 5, 1}, 1); }
TEST(LayerGradient, MaxPool) { CheckLayer("maxpool:2", {4, 6, 2}, 2); }
TEST(LayerGradient, MaxPoolOverlapping) { CheckLayer("maxpool:3:2", {5, 5, 2}, 2); }
TEST(LayerGradient, AvgPool) { CheckLayer("avgpool:2", {5, 4, 3}, 2); }
TEST(LayerGradient, GlobalAvgPool) { CheckLayer("gap", {3, 2, 4}, 2); }
TEST(LayerGradient, BatchNormTraining) { CheckLayer("batchnorm", {3, 3, 2}, 3); }
TEST(LayerGradient, BatchNormDense) { CheckLayer("batchnorm", {4}, 5); }
TEST(LayerGradient, BatchNormInference) { CheckLayer("batchnorm", {4}, 3, false); }
TEST(LayerGradient, ResidualIdentity) { CheckLayer("residual:2", {4, 4, 2}, 2); }
TEST(LayerGradient, ResidualProjection) { CheckLayer("residual:3:2", {4, 5, 2}, 2); }
TEST(LayerGradient, BottleneckIdentity) { CheckLayer("bottleneck:1", {3, 3, 4}, 2); }
TEST(LayerGradient, BottleneckProjection) { CheckLayer("bottleneck:2:2", {4, 5, 3}, 2); }
TEST(LayerGradient, ZeroPad) { CheckLayer("pad:2", {3, 2, 2}, 2); }
TEST(LayerGradient, ConvWithoutBias) { CheckLayer("conv:2:3x3:valid:s2:nobias", {5, 6, 2}, 2); }
TEST(LayerGradient, LstmLastState) { CheckLayer("lstm:3", {4, 2}, 2); }
TEST(LayerGradient, LstmSequence) { CheckLayer("lstm:3:seq", {3, 2}, 2); }
TEST(LayerGradient, LstmOneStep) { CheckLayer("lstm:2:seq", {1, 3}, 1); }
TEST(LayerGradient, RepeatVector) { CheckLayer("repeat:3", {4}, 2); }
TEST(LayerGradient, LayerNorm) { CheckLayer("layernorm", {3, 5}, 2); }
TEST(LayerGradient, LayerNormFlat) { CheckLayer("layernorm", {6}, 3); }
TEST(LayerGradient, SequencePoolMean) { CheckLayer("seqpool:mean", {3, 4}, 2); }
TEST(LayerGradient, SequencePoolFirst) { CheckLayer("seqpool:first", {3, 4}, 2); }
// Attention over one tile and over several (T > 64 crosses the 64 x 64 tiles, and T = 70
// leaves a ragged last one), bidirectional and causal.
TEST(LayerGradient, AttentionBidirectional) { CheckLayer("attention:2", {5, 4}, 2); }
TEST(LayerGradient, AttentionCausal) { CheckLayer("attention:2:causal", {5, 4}, 2); }
TEST(LayerGradient, AttentionOneHead) { CheckLayer("attention:1:causal", {3, 3}, 1); }
TEST(LayerGradient, AttentionAcrossTiles) { CheckLayer("attention:1", {70, 2}, 1); }
TEST(LayerGradient, AttentionCausalAcrossTiles) { CheckLayer("attention:1:causal", {70, 2}, 1); }
TEST(LayerGradient, TransformerBlock) { CheckLayer("block:2", {4, 4}, 2); }
// Padded sequences: 3 and 1 of 5 positions (and 66 of 70, across the tiles) before the padding.
TEST(LayerGradient, AttentionPadded) {
  const std::vector<int64_t> lengths = {3, 1};
  CheckLayer("attention:2", {5, 4}, 2, true, &lengths);
  CheckLayer("attention:2:causal", {5, 4}, 2, true, &lengths);
  CheckLayer("block:2", {5, 4}, 2, true, &lengths);
  CheckLayer("seqpool:mean", {5, 4}, 2, true, &lengths);
  const std::vector<int64_t> long_lengths = {66};
  CheckLayer("attention:1", {70, 2}, 1, true, &long_lengths);
}
TEST(LayerGradient, TransformerBlockCausal) { CheckLayer("block:2:causal", {4, 4}, 2); }
// A block's residual dropout: drops only while training, with the same masks for the same step.
TEST(TransformerBlockDropout, TrainingOnlyAndDeterministic) {
  Sequential<double> with("block:2:0.5", {6, 4});
  Sequential<double> without("block:2", {6, 4});
  for (int id = 0; id < with.arena().num_params(); ++id) {
    std::copy(with.arena().param(id), with.arena().param(id) + with.arena().spec(id).size,
              without.arena().param(id));
  }
  EXPECT_EQ(with.spec(), "block:2:0.5");
  Tensor x(DType::kFloat64, {3, 6, 4});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<double>()[i] = std::sin(0.37 * i);
  auto run = [&](Sequential<double>& m, bool training) {
    MicroBatch mb;
    const Tensor y = m.Forward(x, training, mb);
    return std::vector<double>(y.data<double>(), y.data<double>() + y.num_elements());
  };
  EXPECT_EQ(run(with, false), run(without, false));
  const std::vector<double> a = run(with, true), b = run(with, true);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, run(without, true));
}

// Residual dropout on both branches, training (fixed masks per step) and inference.
TEST(LayerGradient, TransformerBlockDropout) {
  CheckLayer("block:2:causal:0.3", {4, 4}, 2);
  CheckLayer("block:2:0.3", {4, 4}, 2, false);
}

// The whole model's parameter gradients (hooks, arena layout, inter-layer plumbing).
TEST(LayerGradient, WholeCnnModel) {
  Sequential<double> m("conv:2:3x3:same, relu, maxpool:2, flatten, dense:3", {4, 4, 1});
  Tensor x(DType::kFloat64, {2, 4, 4, 1});
  FillNormal(x, 3);
  Tensor r(DType::kFloat64, {2, 3});
  FillNormal(r, 4);
  auto objective = [&]() {
    const Tensor y = m.Forward(x, true);
    double s = 0;
    for (int64_t i = 0; i < y.num_elements(); ++i) s += y.data<double>()[i] * r.data<double>()[i];
    return s;
  };
  objective();
  m.arena().ZeroGrads();
  m.Backward(r);
  std::vector<double> g(m.arena().grads(), m.arena().grads() + m.arena().size());
  for (int64_t i = 0; i < m.arena().size(); ++i) {
    double& w = m.arena().params()[i];
    const double keep = w;
    w = keep + 1e-5;
    const double up = objective();
    w = keep - 1e-5;
    const double down = objective();
    w = keep;
    ExpectClose(g[i], (up - down) / 2e-5, "param " + std::to_string(i));
  }
}

}  // namespace layer_gradient_test
}  // namespace shardflow
