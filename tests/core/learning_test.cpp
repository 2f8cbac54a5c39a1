// End-to-end learning: small models must actually learn.
//  - two interleaved spirals (not linearly separable) with an MLP and Adam: >= 95% accuracy;
//  - an LSTM autoencoder on short sine waves: reconstruction error falls 5x;
//  - a slice of Fashion-MNIST with the CNN preset's shape family: the loss falls.
// The Fashion-MNIST IDX gz files are read here with zlib (core cannot use io/).
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>

#include "core/loss.hpp"
#include "core/metrics.hpp"
#include "core/model.hpp"
#include "core/optim/optimizer.hpp"
#include "core/random.hpp"

namespace shardflow {
namespace learning_test {

TEST(Learning, MlpSeparatesTwoSpirals) {
  const int64_t n = 400;
  Tensor x(DType::kFloat32, {n, 2}), y(DType::kInt32, {n});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t cls = i % 2;
    const double t = 0.25 + 3.0 * static_cast<double>(i / 2) / (n / 2);  // radius and angle
    const double a = t * 3.0 + cls * 3.141592653589793;
    x.data<float>()[2 * i] = static_cast<float>(t * std::cos(a) + 0.02 * RandomNormal(5, 0, i));
    x.data<float>()[2 * i + 1] = static_cast<float>(t * std::sin(a) + 0.02 * RandomNormal(5, 1, i));
    y.data<int32_t>()[i] = static_cast<int32_t>(cls);
  }
  Sequential<float> m("dense:64, tanh, dense:64, tanh, dense:2", {2},
                      {.seed = 1, .init = InitKind::kGlorotUniform});
  auto opt = MakeOptimizer({.name = "adam"}, m.arena().size());
  Tensor d;
  double first_loss = 0, loss = 0;
  for (int step = 0; step < 1500; ++step) {
    m.arena().ZeroGrads();
    loss = SoftmaxCrossEntropy<float>(m.Forward(x, true), y, &d);
    if (step == 0) first_loss = loss;
    m.Backward(d);
    opt->Step(m.arena(), 0.01);
  }
  const int64_t correct = CountCorrect<float>(m.Forward(x, false), y);
  EXPECT_GE(correct, n * 95 / 100) << "loss " << first_loss << " -> " << loss;
}

TEST(Learning, LstmAutoencoderReconstructsSineWaves) {
  const int64_t n = 32, t = 8;
  Tensor x(DType::kFloat32, {n, t, 1});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t s = 0; s < t; ++s)
      x.data<float>()[i * t + s] =
          static_cast<float>(0.8 * std::sin(0.6 * s + 6.283185 * RandomUniform(3, 0, i)));
  Sequential<float> m("lstm:16, repeat, lstm:16:seq, dense:1", {t, 1}, {.seed = 2});
  auto opt = MakeOptimizer({.name = "adam"}, m.arena().size());
  Tensor d;
  const double first = SumReconstructionError<float>(m.Forward(x, false), x) / n;
  for (int step = 0; step < 300; ++step) {
    m.arena().ZeroGrads();
    MeanSquaredError<float>(m.Forward(x, true), x, &d);
    m.Backward(d);
    opt->Step(m.arena(), 0.01);
  }
  const double last = SumReconstructionError<float>(m.Forward(x, false), x) / n;
  EXPECT_LT(last, first / 5) << first << " -> " << last;
}

// Reads an IDX gz file: big-endian magic (0x0000 type ndims), dims, then bytes.
std::vector<uint8_t> ReadIdxGz(const std::string& path, std::vector<int64_t>* dims) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return {};
  unsigned char head[4];
  std::vector<uint8_t> out;
  if (gzread(f, head, 4) == 4 && head[2] == 0x08) {
    for (int i = 0; i < head[3]; ++i) {
      unsigned char b[4];
      if (gzread(f, b, 4) != 4) break;
      dims->push_back((int64_t{b[0]} << 24) | (b[1] << 16) | (b[2] << 8) | b[3]);
    }
    int64_t n = 1;
    for (int64_t d : *dims) n *= d;
    out.resize(static_cast<size_t>(n));
    if (gzread(f, out.data(), static_cast<unsigned>(n)) != n) out.clear();
  }
  gzclose(f);
  return out;
}

TEST(Learning, LossFallsOnFashionMnistSlice) {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  if (!std::filesystem::exists(dir + "train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST not installed at " << dir;
  }
  std::vector<int64_t> idims, ldims;
  const auto images = ReadIdxGz(dir + "train-images-idx3-ubyte.gz", &idims);
  const auto labels = ReadIdxGz(dir + "train-labels-idx1-ubyte.gz", &ldims);
  ASSERT_EQ(idims, (std::vector<int64_t>{60000, 28, 28}));
  ASSERT_EQ(ldims, (std::vector<int64_t>{60000}));
  const int64_t batch = 64, steps = 40;
  Sequential<float> m("conv:8:5x5:same, relu, maxpool:2, flatten, dense:64, relu, dense:10",
                      {28, 28, 1});
  auto opt = MakeOptimizer({.name = "sgd", .momentum = 0.9}, m.arena().size());
  Tensor x(DType::kFloat32, {batch, 28, 28, 1}), y(DType::kInt32, {batch}), d;
  double first = 0, last = 0;
  for (int64_t s = 0; s < steps; ++s) {
    for (int64_t i = 0; i < batch; ++i) {
      const int64_t k = (s * batch + i) % 60000;
      for (int64_t p = 0; p < 784; ++p) x.data<float>()[i * 784 + p] = images[k * 784 + p] / 255.0f;
      y.data<int32_t>()[i] = labels[k];
    }
    m.set_step(s);
    m.arena().ZeroGrads();
    const double loss = SoftmaxCrossEntropy<float>(m.Forward(x, true), y, &d);
    m.Backward(d);
    opt->Step(m.arena(), 0.02);
    if (s < 5) first += loss / 5;
    if (s >= steps - 5) last += loss / 5;
  }
  EXPECT_LT(last, first * 0.7) << first << " -> " << last;
}

}  // namespace learning_test
}  // namespace shardflow
