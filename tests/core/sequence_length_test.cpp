// A token-sequence model on batches shorter than its context (B, T' < T), as the input pipeline
// makes them with pad_to = batch | bucket: the same outputs and parameter gradients as the same
// batch padded to the whole context (a padded encoder with mean pooling), and the same logits
// at every position a causal language model sees on a prefix. Other models keep exact shapes.
// The tied language-model head (lmhead) by finite differences.
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

// The tied head: finite differences of sum(y * r) through both uses of the table (embedding
// and head) and the position table; and it holds no parameters of its own.
TEST(LmHead, TiedGradientsByFiniteDifferences) {
  Sequential<double> m("tokens:7:4, layernorm, lmhead", {5});
  Sequential<double> untied("tokens:7:4, layernorm, dense:7", {5});
  EXPECT_EQ(untied.arena().size() - m.arena().size(), 4 * 7 + 7);
  Arena<double>& arena = m.arena();
  for (int64_t i = 0; i < arena.size(); ++i) arena.params()[i] += 0.05 * std::sin(1.7 * i);
  Tensor x(DType::kFloat64, {2, 5});
  for (int64_t i = 0; i < 10; ++i) x.data<double>()[i] = static_cast<double>((3 * i + 1) % 7);
  Tensor r(DType::kFloat64, {2, 5, 7});
  for (int64_t i = 0; i < r.num_elements(); ++i) r.data<double>()[i] = std::cos(0.9 * i);
  auto objective = [&] {
    MicroBatch mb;
    const Tensor y = m.Forward(x, false, mb);
    double s = 0;
    for (int64_t i = 0; i < y.num_elements(); ++i) s += y.data<double>()[i] * r.data<double>()[i];
    return s;
  };
  arena.ZeroGrads();
  MicroBatch mb;
  m.Forward(x, true, mb);
  m.Backward(r, mb);
  const std::vector<double> grads(arena.grads(), arena.grads() + arena.size());
  const double eps = 1e-6;
  for (int64_t i = 0; i < arena.size(); ++i) {
    double* w = arena.params() + i;
    const double keep = *w;
    *w = keep + eps;
    const double up = objective();
    *w = keep - eps;
    const double down = objective();
    *w = keep;
    const double numeric = (up - down) / (2 * eps);
    EXPECT_NEAR(grads[static_cast<size_t>(i)], numeric, 1e-6 + 1e-5 * std::abs(numeric))
        << "parameter " << i;
  }
}

TEST(LmHead, NeedsTheTokensLayerInItsPart) {
  EXPECT_THROW(Sequential<double>("dense:4, lmhead", {5, 4}), Error);
  // A pipeline stage holding the head but not the embedding.
  EXPECT_THROW(Sequential<double>("tokens:7:4, layernorm, lmhead", {5}, {}, {.begin = 1, .end = 3}),
               Error);
  EXPECT_NO_THROW(
      Sequential<double>("tokens:7:4, layernorm, lmhead", {5}, {}, {.begin = 0, .end = 3}));
}

}  // namespace sequence_length_test
}  // namespace shardflow
