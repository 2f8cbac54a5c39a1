// Losses and metrics: values, gradients against finite differences, bad labels.
#include "core/loss.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/metrics.hpp"
#include "core/random.hpp"

namespace shardflow {
namespace loss_test {

TEST(Loss, SoftmaxCrossEntropyValueAndGradient) {
  Tensor z(DType::kFloat64, {3, 4});
  for (int64_t i = 0; i < 12; ++i) z.data<double>()[i] = 3 * RandomNormal(1, 0, i);
  Tensor y(DType::kInt64, {3});
  y.data<int64_t>()[0] = 0;
  y.data<int64_t>()[1] = 3;
  y.data<int64_t>()[2] = 2;
  Tensor d;
  const double loss = SoftmaxCrossEntropy<double>(z, y, &d);
  double ref = 0;
  for (int i = 0; i < 3; ++i) {
    double s = 0;
    for (int j = 0; j < 4; ++j) s += std::exp(z.data<double>()[i * 4 + j]);
    ref += std::log(s) - z.data<double>()[i * 4 + y.data<int64_t>()[i]];
  }
  EXPECT_NEAR(loss, ref / 3, 1e-12);
  for (int64_t i = 0; i < 12; ++i) {
    double& v = z.data<double>()[i];
    const double keep = v;
    v = keep + 1e-6;
    const double up = SoftmaxCrossEntropy<double>(z, y, nullptr);
    v = keep - 1e-6;
    const double down = SoftmaxCrossEntropy<double>(z, y, nullptr);
    v = keep;
    EXPECT_NEAR(d.data<double>()[i], (up - down) / 2e-6, 1e-7);
  }
}

// A sequence's logits (B, S, K) with labels (B, S) are B * S rows of (K) logits.
TEST(Loss, SequenceLogitsAreRowsPerPosition) {
  Tensor z(DType::kFloat64, {2, 3, 4});
  for (int64_t i = 0; i < 24; ++i) z.data<double>()[i] = RandomNormal(2, 0, i);
  Tensor y(DType::kInt64, {2, 3});
  for (int64_t i = 0; i < 6; ++i) y.data<int64_t>()[i] = (i * 3) % 4;
  const Tensor flat_z = z.Reshaped({6, 4});
  const Tensor flat_y = y.Reshaped({6});
  Tensor d, flat_d;
  EXPECT_EQ(SoftmaxCrossEntropy<double>(z, y, &d),
            SoftmaxCrossEntropy<double>(flat_z, flat_y, &flat_d));
  EXPECT_EQ(d.shape(), z.shape());
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(d.data<double>()[i], flat_d.data<double>()[i]);
  EXPECT_EQ(CountCorrect<double>(z, y), CountCorrect<double>(flat_z, flat_y));
  Tensor wrong(DType::kInt64, {2, 4});
  EXPECT_THROW(SoftmaxCrossEntropy<double>(z, wrong, nullptr), Error);
  EXPECT_THROW(CountCorrect<double>(z, wrong), Error);
}

TEST(Loss, HugeLogitsStayFinite) {
  Tensor z(DType::kFloat32, {1, 2});
  z.data<float>()[0] = 1e30f;
  z.data<float>()[1] = -1e30f;
  Tensor y(DType::kUInt8, {1});
  y.data<uint8_t>()[0] = 1;
  Tensor d;
  EXPECT_TRUE(std::isfinite(SoftmaxCrossEntropy<float>(z, y, &d)));
  EXPECT_TRUE(std::isfinite(d.data<float>()[0]));
}

TEST(Loss, LabelOutOfRangeNamesRowAndValue) {
  Tensor z(DType::kFloat32, {2, 3});
  Tensor y(DType::kInt32, {2});
  y.data<int32_t>()[1] = 3;
  try {
    SoftmaxCrossEntropy<float>(z, y, nullptr);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("label 3 of batch row 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(SoftmaxCrossEntropy<float>(z, Tensor(DType::kFloat32, {2}), nullptr), Error);
  EXPECT_THROW(SoftmaxCrossEntropy<float>(z, Tensor(DType::kInt32, {3}), nullptr), Error);
  EXPECT_EQ(SoftmaxCrossEntropy<float>(Tensor(DType::kFloat32, {0, 3}), Tensor(DType::kInt32, {0}),
                                       nullptr),
            0.0);
}

TEST(Loss, MeanSquaredError) {
  Tensor p(DType::kFloat32, {2, 2}), t(DType::kFloat32, {2, 2});
  for (int i = 0; i < 4; ++i) {
    p.data<float>()[i] = static_cast<float>(i);
    t.data<float>()[i] = 1.0f;
  }
  Tensor d;
  EXPECT_DOUBLE_EQ(MeanSquaredError<float>(p, t, &d), (1 + 0 + 1 + 4) / 4.0);
  EXPECT_FLOAT_EQ(d.data<float>()[3], 2.0f * 2.0f / 4.0f);
  EXPECT_THROW(MeanSquaredError<float>(p, Tensor(DType::kFloat32, {4}), nullptr), Error);
}

TEST(Metrics, AccuracyAndReconstructionError) {
  Tensor z(DType::kFloat32, {3, 2});
  const float logits[] = {1, 2, 5, 0, 3, 3};
  std::copy(logits, logits + 6, z.data<float>());
  Tensor y(DType::kInt32, {3});
  y.data<int32_t>()[0] = 1;
  y.data<int32_t>()[1] = 1;
  y.data<int32_t>()[2] = 0;  // tie: the first maximum wins
  EXPECT_EQ(CountCorrect<float>(z, y), 2);
  Tensor p(DType::kFloat32, {2, 2}), t(DType::kFloat32, {2, 2});
  p.data<float>()[0] = 2;  // sample 0: errors 2^2, 0 -> 2; sample 1: 0
  EXPECT_DOUBLE_EQ(SumReconstructionError<float>(p, t), 2.0);
  MeanMetric m;
  m.Add(3.0, 2);
  m.Add(1.0, 2);
  EXPECT_DOUBLE_EQ(m.Mean(), 1.0);
}

}  // namespace loss_test
}  // namespace shardflow
