// Sequential models: spec parsing, presets, shapes, parameter counts, summary, determinism.
#include "core/model.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/random.hpp"

namespace shardflow {
namespace model_test {

TEST(Model, MlpPresetShapesAndParameterCount) {
  Sequential<float> m("mlp", {28, 28, 1});
  EXPECT_EQ(m.output_shape(), (Shape{10}));
  EXPECT_EQ(m.arena().size(), 784 * 512 + 512 + 512 * 256 + 256 + 256 * 10 + 10);
  EXPECT_EQ(m.layer_name(1), "01_dense");
  EXPECT_EQ(m.FlopsPerSample(), 2 * (784 * 512 + 512 * 256 + 256 * 10));
}

TEST(Model, CnnPresetShapesAndParameterCount) {
  Sequential<float> m("cnn", {28, 28, 1});
  EXPECT_EQ(m.layer_output_shape(0), (Shape{28, 28, 32}));
  EXPECT_EQ(m.layer_output_shape(2), (Shape{14, 14, 32}));
  EXPECT_EQ(m.layer_output_shape(5), (Shape{7, 7, 64}));
  EXPECT_EQ(m.output_shape(), (Shape{10}));
  EXPECT_EQ(m.arena().size(), 832 + 51264 + 3136 * 1024 + 1024 + 10250);
}

TEST(Model, ResnetAndLinearPresets) {
  Sequential<float> r("resnet", {28, 28, 1});
  EXPECT_EQ(r.output_shape(), (Shape{10}));
  EXPECT_EQ(r.layer_output_shape(5), (Shape{7, 7, 64}));
  EXPECT_EQ(r.Buffers().size(), 2u * (1 + 2 + 2 + 2));
  Tensor x(DType::kFloat32, {2, 28, 28, 1});
  EXPECT_EQ(r.Forward(x, true).shape(), (Shape{2, 10}));
  Sequential<float> l("linear", {28, 28, 1});
  EXPECT_EQ(l.arena().size(), 7850);
}

// torchvision's resnet50(): 25,557,032 parameters; the stem and stage shapes at 224x224.
TEST(Model, ResNet50PresetMatchesTorchvision) {
  Sequential<float> m("resnet50", {224, 224, 3});
  EXPECT_EQ(m.arena().size(), 25557032);
  EXPECT_EQ(m.layer_output_shape(1), (Shape{112, 112, 64}));  // conv 7x7/2
  EXPECT_EQ(m.layer_output_shape(5), (Shape{56, 56, 64}));    // max pool 3x3/2
  EXPECT_EQ(m.layer_output_shape(6), (Shape{56, 56, 256}));   // first bottleneck
  EXPECT_EQ(m.layer_output_shape(9), (Shape{28, 28, 512}));
  EXPECT_EQ(m.layer_output_shape(13), (Shape{14, 14, 1024}));
  EXPECT_EQ(m.layer_output_shape(19), (Shape{7, 7, 2048}));
  EXPECT_EQ(m.output_shape(), (Shape{1000}));
  // Moving mean and variance of 53 batchnorms (1 stem + 16 blocks x 3 + 4 projections).
  EXPECT_EQ(m.Buffers().size(), 2u * 53);
  // ~4.1 GMACs a 224x224 image, as torchvision reports (4.09).
  EXPECT_NEAR(static_cast<double>(m.FlopsPerSample()) / 2e9, 4.1, 0.1);
  // The spec round-trips (checkpoints store it): the no-bias marker too.
  EXPECT_EQ(Sequential<float>(m.spec(), {224, 224, 3}).arena().size(), 25557032);
  // A forward pass on small images.
  Sequential<float> small("resnet50", {32, 32, 3});
  Tensor x(DType::kFloat32, {2, 32, 32, 3});
  EXPECT_EQ(small.Forward(x, true).shape(), (Shape{2, 1000}));
}

TEST(Model, LstmAutoencoderReconstructsSequenceShape) {
  Sequential<float> m("lstm_autoencoder", {12, 3});
  EXPECT_EQ(m.output_shape(), (Shape{12, 3}));
  EXPECT_EQ(m.spec(), "lstm:64, repeat:12, lstm:64:seq, dense:3");
  Tensor x(DType::kFloat32, {4, 12, 3});
  EXPECT_EQ(m.Forward(x, true).shape(), (Shape{4, 12, 3}));
  EXPECT_THROW(Sequential<float>("lstm_autoencoder", {28, 28, 1}), Error);
}

TEST(Model, SpecRoundTripsThroughDescribe) {
  const std::string spec =
      "conv:8:3x3:valid:s2, gelu, avgpool:2, batchnorm, dropout:0.25, flatten, dense:4, sigmoid";
  Sequential<float> m(spec, {17, 17, 2});
  EXPECT_EQ(m.spec(), spec);
}

void ExpectBadSpec(const std::string& spec, const std::string& fragment,
                   const Shape& in = {8, 8, 1}) {
  try {
    Sequential<float> m(spec, in);
    FAIL() << "accepted " << spec;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Model, BadSpecsAreRefusedWithTheToken) {
  ExpectBadSpec("conv:32:5y5, flatten", "conv:32:5y5");
  ExpectBadSpec("dense:0", "units must be a positive integer");
  ExpectBadSpec("flatten, dense:ten", "dense:ten");
  ExpectBadSpec("relu,, dense:2", "empty layer #1");
  ExpectBadSpec("softmaxx", "unknown layer kind 'softmaxx'");
  ExpectBadSpec("dropout:1.5", "dropout:1.5");
  ExpectBadSpec("conv:4:9x9:valid", "does not fit");
  ExpectBadSpec("lstm:4", "lstm expects sequences");
  ExpectBadSpec("maxpool:9", "larger than its input");
  ExpectBadSpec("flatten, dense:2", "must be positive", {0, 3});
}

TEST(Model, WrongInputShapeIsRefused) {
  Sequential<float> m("flatten, dense:2", {4, 4, 1});
  Tensor x(DType::kFloat32, {2, 4, 5, 1});
  EXPECT_THROW(m.Forward(x, false), Error);
}

TEST(Model, SummaryListsLayersShapesAndParameters) {
  Sequential<float> m("mlp", {28, 28, 1});
  const std::string s = m.Summary();
  EXPECT_NE(s.find("01_dense"), std::string::npos) << s;
  EXPECT_NE(s.find("[512]"), std::string::npos) << s;
  EXPECT_NE(s.find("401920"), std::string::npos) << s;
  EXPECT_NE(s.find("total parameters: 535818"), std::string::npos) << s;
}

TEST(Model, InitialisationIsDeterministicAndSeeded) {
  Sequential<float> a("cnn", {28, 28, 1}, {.seed = 3});
  Sequential<float> b("cnn", {28, 28, 1}, {.seed = 3});
  Sequential<float> c("cnn", {28, 28, 1}, {.seed = 4});
  const size_t bytes = static_cast<size_t>(a.arena().size()) * sizeof(float);
  EXPECT_EQ(std::memcmp(a.arena().params(), b.arena().params(), bytes), 0);
  EXPECT_NE(std::memcmp(a.arena().params(), c.arena().params(), bytes), 0);
}

TEST(Model, BatchOfZeroAndOne) {
  Sequential<float> m("conv:2:3x3:same, relu, maxpool:2, flatten, dense:3", {4, 4, 1});
  for (int64_t b : {0, 1}) {
    Tensor x(DType::kFloat32, {b, 4, 4, 1});
    const Tensor y = m.Forward(x, true);
    EXPECT_EQ(y.shape(), (Shape{b, 3}));
    m.Backward(Tensor(DType::kFloat32, {b, 3}));
  }
}

// A ReLU before max pooling runs inside the pooling (ModelOptions::fuse): outputs, input
// gradients and every parameter gradient are the bits of the unfused layers, at an odd batch,
// over two micro-batches in flight, with windows that are all negative (the first image's
// inputs: the second spec's ReLU and pooling see them directly) and with a ReLU before average
// pooling, which must stay a layer of its own.
TEST(Model, ReluFusedIntoMaxPoolingGivesTheUnfusedBits) {
  unsetenv("SHARDFLOW_FUSION");  // the default, whatever the environment says
  const std::vector<std::pair<std::string, int>> specs = {
      {"conv:4:3x3:same, relu, maxpool:2, conv:3:3x3:same, relu, avgpool:2, flatten, dense:5", 1},
      {"relu, maxpool:2, flatten, dense:5", 1},
      {"conv:4:3x3:same, relu, maxpool:2:1, relu, maxpool:3, flatten, dense:5", 2}};
  auto bits_equal = [](const Tensor& a, const Tensor& b) {
    return a.num_elements() == b.num_elements() &&
           std::memcmp(a.data<float>(), b.data<float>(), a.byte_size()) == 0;
  };
  for (const auto& [spec, pairs] : specs) {
    Sequential<float> fused(spec, {8, 8, 2}, {.seed = 7});
    Sequential<float> plain(spec, {8, 8, 2}, {.seed = 7, .fuse = false});
    EXPECT_EQ(fused.fused_relus(), pairs) << spec;
    EXPECT_EQ(plain.fused_relus(), 0) << spec;
    fused.arena().ZeroGrads();
    plain.arena().ZeroGrads();
    const int64_t b = 3;
    MicroBatch f0(0), f1(1), p0(0), p1(1);
    Tensor x[2], dy[2];
    for (int mb = 0; mb < 2; ++mb) {
      x[mb] = Tensor(DType::kFloat32, {b, 8, 8, 2});
      for (int64_t i = 0; i < x[mb].num_elements(); ++i) {
        const float v = static_cast<float>(RandomNormal(8, mb, static_cast<uint64_t>(i)));
        x[mb].data<float>()[i] = i < 8 * 8 * 2 ? -std::fabs(v) - 0.1f : v;
      }
    }
    // Both micro-batches forward, then both backward: each layer keeps a state per micro-batch.
    const Tensor yf[2] = {fused.Forward(x[0], true, f0), fused.Forward(x[1], true, f1)};
    const Tensor yp[2] = {plain.Forward(x[0], true, p0), plain.Forward(x[1], true, p1)};
    for (int mb = 0; mb < 2; ++mb) {
      EXPECT_TRUE(bits_equal(yf[mb], yp[mb])) << spec << ", micro-batch " << mb;
      dy[mb] = Tensor(DType::kFloat32, yf[mb].shape());
      for (int64_t i = 0; i < dy[mb].num_elements(); ++i) {
        dy[mb].data<float>()[i] = static_cast<float>(RandomNormal(9, mb, static_cast<uint64_t>(i)));
      }
    }
    const Tensor dxf[2] = {fused.BackwardWithInputGrad(dy[1], f1),
                           fused.BackwardWithInputGrad(dy[0], f0)};
    const Tensor dxp[2] = {plain.BackwardWithInputGrad(dy[1], p1),
                           plain.BackwardWithInputGrad(dy[0], p0)};
    for (int mb = 0; mb < 2; ++mb) {
      EXPECT_TRUE(bits_equal(dxf[mb], dxp[mb])) << spec << ", input gradient " << mb;
    }
    // The all-negative first image gets no input gradient through a ReLU that is its first layer.
    if (spec.rfind("relu", 0) == 0) {
      for (int64_t i = 0; i < 8 * 8 * 2; ++i) ASSERT_EQ(dxf[1].data<float>()[i], 0.0f) << i;
    }
    const size_t bytes = static_cast<size_t>(fused.arena().size()) * sizeof(float);
    EXPECT_EQ(std::memcmp(fused.arena().grads(), plain.arena().grads(), bytes), 0) << spec;
    double norm = 0;
    for (int64_t i = 0; i < fused.arena().size(); ++i) norm += std::fabs(fused.arena().grads()[i]);
    EXPECT_GT(norm, 0.0) << spec;  // gradients flowed through the fused layers
  }
}

}  // namespace model_test
}  // namespace shardflow
