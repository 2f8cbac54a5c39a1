// Several micro-batches in flight: for every layer kind, interleaved forward and backward passes
// of two micro-batches (F1 F2 B1 B2, F1 F2 B2 B1) accumulate exactly the gradients of the same
// backward passes run one micro-batch at a time (F1 B1 F2 B2, F2 B2 F1 B1), bit for bit. The
// sequential order compared with is the one with the same backward order, because gradients are
// accumulated (+=) in the order backward passes run and float addition is not associative.
// Also: the dropout keying, and the errors of misused micro-batches.
#include <gtest/gtest.h>

#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "core/model.hpp"
#include "tests/core/random_tensor.hpp"

namespace shardflow {
namespace micro_batch_test {

enum class Order { kF1B1F2B2, kF2B2F1B1, kF1F2B1B2, kF1F2B2B1 };

Tensor RandomTensor(const Shape& shape, uint64_t stream) {
  return testing::RandomTensor(shape, 99, stream);
}

struct Outcome {
  std::vector<float> grads;
  Tensor y1, y2;  // the forward outputs of micro-batches 1 and 2 (copies)
};

Outcome RunOrder(const std::string& spec, const Shape& in, Order order) {
  Sequential<float> m(spec, in, {.seed = 7});
  m.set_step(3);
  m.arena().ZeroGrads();
  const Tensor x1 = RandomTensor(WithBatch(3, in), 1), x2 = RandomTensor(WithBatch(2, in), 2);
  const Tensor d1 = RandomTensor(WithBatch(3, m.output_shape()), 3);
  const Tensor d2 = RandomTensor(WithBatch(2, m.output_shape()), 4);
  MicroBatch a(0), b(1);
  Outcome out;
  auto f1 = [&] { out.y1 = m.Forward(x1, true, a).Clone(); };
  auto f2 = [&] { out.y2 = m.Forward(x2, true, b).Clone(); };
  auto b1 = [&] { m.Backward(d1, a); };
  auto b2 = [&] { m.Backward(d2, b); };
  switch (order) {
    case Order::kF1B1F2B2:
      f1(), b1(), f2(), b2();
      break;
    case Order::kF2B2F1B1:
      f2(), b2(), f1(), b1();
      break;
    case Order::kF1F2B1B2:
      f1(), f2(), b1(), b2();
      break;
    case Order::kF1F2B2B1:
      f1(), f2(), b2(), b1();
      break;
  }
  out.grads.assign(m.arena().grads(), m.arena().grads() + m.arena().size());
  return out;
}

void ExpectBitIdentical(const std::vector<float>& a, const std::vector<float>& b,
                        const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << what;
}

void ExpectSameTensor(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  EXPECT_EQ(std::memcmp(a.data<float>(), b.data<float>(), a.byte_size()), 0) << what;
}

struct Case {
  std::string spec;
  Shape input;
};
void PrintTo(const Case& c, std::ostream* os) { *os << "'" << c.spec << "'"; }

class Interleaving : public ::testing::TestWithParam<Case> {};

TEST_P(Interleaving, GradientsMatchSequentialMicroBatches) {
  const Case& c = GetParam();
  const Outcome s12 = RunOrder(c.spec, c.input, Order::kF1B1F2B2);
  const Outcome s21 = RunOrder(c.spec, c.input, Order::kF2B2F1B1);
  const Outcome i1212 = RunOrder(c.spec, c.input, Order::kF1F2B1B2);
  const Outcome i1221 = RunOrder(c.spec, c.input, Order::kF1F2B2B1);
  double norm = 0;
  for (float g : s12.grads) norm += static_cast<double>(g) * g;
  ASSERT_GT(norm, 0.0) << "no gradient reached the arena";
  ExpectBitIdentical(i1212.grads, s12.grads, "F1 F2 B1 B2 vs F1 B1 F2 B2");
  ExpectBitIdentical(i1221.grads, s21.grads, "F1 F2 B2 B1 vs F2 B2 F1 B1");
  ExpectSameTensor(i1212.y1, s12.y1, "output of micro-batch 1");
  ExpectSameTensor(i1212.y2, s12.y2, "output of micro-batch 2");
  ExpectSameTensor(i1221.y2, s21.y2, "output of micro-batch 2 run first");
}

// Every layer kind: dense, conv, max and average pools, gap, the four activations, flatten,
// dropout, batchnorm, residual (projection and identity shortcuts), lstm (last step and
// sequence), repeat.
INSTANTIATE_TEST_SUITE_P(
    LayerKinds, Interleaving,
    ::testing::Values(
        Case{"dense:6, relu, dense:3", {5}},
        Case{"conv:4:3x3:same, relu, maxpool:2, conv:3:3x3:valid, avgpool:2, flatten, dense:3",
             {9, 9, 2}},
        Case{"conv:4:3x3:same, gap, dense:3", {6, 6, 2}},
        Case{"flatten, dense:8, gelu, dropout:0.5, dense:4, tanh, dense:3, sigmoid", {3, 4}},
        Case{"conv:4:3x3:same, batchnorm, relu, flatten, dense:3", {6, 6, 2}},
        Case{"residual:4:2, residual:4, gap, dense:3", {8, 8, 2}},
        Case{"lstm:5, repeat:4, lstm:5:seq, dense:2", {4, 3}}));

TEST(MicroBatch, IndexZeroKeepsTheSingleBatchDropoutMasks) {
  const std::string spec = "dense:16, dropout:0.5";
  const Tensor x = RandomTensor({4, 8}, 5);
  Sequential<float> m(spec, {8}, {.seed = 11});
  m.set_step(9);
  const Tensor plain = m.Forward(x, true).Clone();
  MicroBatch zero(0), one(1);
  ExpectSameTensor(m.Forward(x, true, zero), plain, "micro-batch 0");
  const Tensor other = m.Forward(x, true, one);
  EXPECT_NE(std::memcmp(other.data<float>(), plain.data<float>(), plain.byte_size()), 0)
      << "micro-batch 1 drew the same dropout mask as micro-batch 0";
  // The mask of a micro-batch depends on its index, not on what ran before it.
  MicroBatch one_again(1);
  ExpectSameTensor(m.Forward(x, true, one_again), other.Clone(), "micro-batch 1 again");
}

TEST(MicroBatch, ContextBuffersAreReusedAcrossSteps) {
  Sequential<float> m("dense:4, relu", {3});
  MicroBatch mb(0);
  const Tensor x = RandomTensor({2, 3}, 6);
  const void* first = m.Forward(x, true, mb).raw_data();
  EXPECT_EQ(m.Forward(x, true, mb).raw_data(), first);
}

TEST(MicroBatch, MisuseIsAnError) {
  Sequential<float> m("dense:4", {3}), other("dense:4", {3});
  MicroBatch mb(2);
  const Tensor x = RandomTensor({2, 3}, 7), dy = RandomTensor({2, 4}, 8);
  try {
    m.Backward(dy, mb);
    FAIL() << "backward before forward accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("micro-batch 2 before its forward pass"),
              std::string::npos)
        << e.what();
  }
  m.Forward(x, true, mb);
  EXPECT_THROW(other.Forward(x, true, mb), Error);
  EXPECT_THROW(other.Backward(dy, mb), Error);
}

}  // namespace micro_batch_test
}  // namespace shardflow
