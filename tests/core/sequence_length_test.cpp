// A token-sequence model on batches shorter than its context (B, T' < T), as the input pipeline
// makes them with pad_to = batch | bucket: the same outputs and parameter gradients as the same
// batch padded to the whole context (a padded encoder with mean pooling), and the same logits
// at every position a causal language model sees on a prefix. Other models keep exact shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "core/model.hpp"

namespace shardflow {
namespace sequence_length_test {

constexpr int64_t kVocab = 40, kPad = 39, kContext = 70;  // 70: across two attention tiles

// Rows of token ids: row i has lengths[i] tokens then padding up to `width`.
Tensor Padded(const std::vector<int64_t>& lengths, int64_t width) {
  Tensor x(DType::kFloat64, {static_cast<int64_t>(lengths.size()), width});
  for (size_t i = 0; i < lengths.size(); ++i) {
    for (int64_t t = 0; t < width; ++t) {
      x.data<double>()[static_cast<int64_t>(i) * width + t] =
          t < lengths[i] ? static_cast<double>((7 * t + 3 * static_cast<int64_t>(i)) % kPad)
                         : static_cast<double>(kPad);
    }
  }
  return x;
}

struct Pass {
  std::vector<double> y, grads;
};

// Forward, then backward of sum(y * w) with w fixed per output element (the same w for the
// rows both runs share); the parameter gradients in arena order.
Pass ForwardBackward(Sequential<double>& m, const Tensor& x, int64_t out_time) {
  Arena<double>& arena = m.arena();
  arena.ZeroGrads();
  MicroBatch mb;
  const Tensor y = m.Forward(x, true, mb);
  Tensor dy(DType::kFloat64, y.shape());
  const int64_t per_row = y.num_elements() / y.dim(0);
  const int64_t width = y.rank() == 3 ? y.dim(2) : per_row;
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    const int64_t row = i / per_row, pos = (i % per_row) / width, c = i % width;
    dy.data<double>()[i] = pos < out_time ? std::sin(0.3 * row + 0.7 * pos + 0.11 * c) : 0.0;
  }
  m.Backward(dy, mb);
  Pass p;
  p.y.assign(y.data<double>(), y.data<double>() + y.num_elements());
  for (int id = 0; id < arena.num_params(); ++id) {
    p.grads.insert(p.grads.end(), arena.grad(id), arena.grad(id) + arena.spec(id).size);
  }
  return p;
}

void ExpectNear(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]) / (1.0 + std::abs(b[i])));
  }
  EXPECT_LT(worst, 1e-12) << what;
}

TEST(SequenceLength, PaddedEncoderOnItsLongestEqualsTheWholeContext) {
  const std::vector<int64_t> lengths = {5, 66, 1, 23};
  Sequential<double> m("tokens:40:8:39, block:2, layernorm, seqpool:mean, dense:3", {kContext});
  const Pass full = ForwardBackward(m, Padded(lengths, kContext), 1);
  const Pass shorter = ForwardBackward(m, Padded(lengths, 66), 1);
  ExpectNear(shorter.y, full.y, "pooled outputs");
  ExpectNear(shorter.grads, full.grads, "parameter gradients");
}

TEST(SequenceLength, CausalModelOnAPrefixSeesTheSameLogits) {
  Sequential<double> m("tokens:40:8, block:2:causal, layernorm, dense:40", {kContext});
  const std::vector<int64_t> full_rows = {kContext, kContext};
  const Tensor x = Padded(full_rows, kContext);
  const int64_t prefix = 9;
  Tensor head(DType::kFloat64, {2, prefix});
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t t = 0; t < prefix; ++t) {
      head.data<double>()[i * prefix + t] = x.data<double>()[i * kContext + t];
    }
  }
  // dy only on the prefix's positions: the gradients agree too.
  const Pass full = ForwardBackward(m, x, prefix);
  const Pass shorter = ForwardBackward(m, head, prefix);
  std::vector<double> kept;
  for (int64_t i = 0; i < 2; ++i) {
    const auto row = full.y.begin() + i * kContext * kVocab;
    kept.insert(kept.end(), row, row + prefix * kVocab);
  }
  ExpectNear(shorter.y, kept, "logits of the prefix");
  ExpectNear(shorter.grads, full.grads, "parameter gradients");
}

TEST(SequenceLength, LongerThanTheContextOrOtherModelsStayExact) {
  Sequential<double> m("tokens:40:8, block:2, layernorm, dense:40", {kContext});
  MicroBatch mb;
  EXPECT_THROW(m.Forward(Padded({3}, kContext + 1), false, mb), Error);
  Sequential<double> mlp("dense:4, relu, dense:2", {6, 5});
  MicroBatch mb2;
  EXPECT_THROW(mlp.Forward(Tensor(DType::kFloat64, {2, 3, 5}), false, mb2), Error);
}

}  // namespace sequence_length_test
}  // namespace shardflow
