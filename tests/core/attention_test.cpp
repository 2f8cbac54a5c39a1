// The tiled attention kernel (core/cpu/attention.hpp) against the textbook computation (the
// whole T x T score matrix, softmax, then v), bidirectional and causal, on one tile and across
// ragged tiles; its results do not depend on the intra-op thread count; and the token embedding
// layer gathers its rows, accumulates repeated ids and names a bad id.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/arena.hpp"
#include "core/cpu/attention.hpp"
#include "core/cpu/gemm.hpp"
#include "core/model.hpp"
#include "core/random.hpp"

namespace shardflow {
namespace attention_test {

std::vector<double> RandomValues(int64_t n, uint64_t stream) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = RandomNormal(17, stream, i);
  return v;
}

// o and lse by the definition, in long double.
void Reference(const cpu::AttentionShape& s, const std::vector<double>& qkv, std::vector<double>* o,
               std::vector<double>* lse) {
  const int64_t dh = s.head_dim, od = s.heads * dh, t = s.time;
  o->assign(static_cast<size_t>(s.batch * t * od), 0.0);
  lse->assign(static_cast<size_t>(s.batch * s.heads * t), 0.0);
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      auto at = [&](int64_t row, int64_t part, int64_t c) {
        return static_cast<long double>(qkv[(b * t + row) * s.ld_qkv + h * 3 * dh + part * dh + c]);
      };
      const int64_t keys = s.lengths != nullptr ? s.lengths[b] : t;
      for (int64_t i = 0; i < t; ++i) {
        const int64_t seen = std::min(s.causal ? i + 1 : t, keys);
        std::vector<long double> score(static_cast<size_t>(seen));
        long double mx = -std::numeric_limits<long double>::infinity();
        for (int64_t j = 0; j < seen; ++j) {
          long double dot = 0;
          for (int64_t c = 0; c < dh; ++c) dot += at(i, 0, c) * at(j, 1, c);
          score[j] = dot / std::sqrt(static_cast<long double>(dh));
          mx = std::max(mx, score[j]);
        }
        long double sum = 0;
        for (auto& v : score) sum += (v = std::exp(v - mx));
        for (int64_t c = 0; c < dh; ++c) {
          long double acc = 0;
          for (int64_t j = 0; j < seen; ++j) acc += score[j] * at(j, 2, c);
          (*o)[(b * t + i) * od + h * dh + c] = static_cast<double>(acc / sum);
        }
        (*lse)[(b * s.heads + h) * t + i] = static_cast<double>(mx + std::log(sum));
      }
    }
  }
}

void CheckAgainstReference(int64_t batch, int64_t time, int64_t heads, int64_t dh, bool causal,
                           const std::vector<int64_t>& lengths = {}) {
  SCOPED_TRACE("B " + std::to_string(batch) + " T " + std::to_string(time) + " H " +
               std::to_string(heads) + " dh " + std::to_string(dh) + (causal ? " causal" : ""));
  const cpu::AttentionShape s{.batch = batch,
                              .time = time,
                              .heads = heads,
                              .head_dim = dh,
                              .ld_qkv = 3 * heads * dh + 2,  // a row stride wider than the row
                              .causal = causal,
                              .lengths = lengths.empty() ? nullptr : lengths.data()};
  const std::vector<double> qkv = RandomValues(batch * time * s.ld_qkv, 1);
  std::vector<double> want_o, want_lse;
  Reference(s, qkv, &want_o, &want_lse);
  std::vector<double> o(want_o.size()), lse(want_lse.size());
  cpu::AttentionForward(s, qkv.data(), o.data(), lse.data());
  for (size_t i = 0; i < o.size(); ++i) ASSERT_NEAR(o[i], want_o[i], 1e-12) << "o[" << i << "]";
  for (size_t i = 0; i < lse.size(); ++i) {
    ASSERT_NEAR(lse[i], want_lse[i], 1e-12) << "lse[" << i << "]";
  }
}

TEST(AttentionKernel, MatchesTheDefinitionInOneTile) {
  CheckAgainstReference(2, 5, 3, 4, false);
  CheckAgainstReference(2, 5, 3, 4, true);
  CheckAgainstReference(1, 1, 1, 1, true);
}

TEST(AttentionKernel, MatchesTheDefinitionAcrossRaggedTiles) {
  CheckAgainstReference(1, 64, 2, 3, true);
  CheckAgainstReference(2, 130, 2, 5, false);
  CheckAgainstReference(2, 130, 2, 5, true);
}

TEST(AttentionKernel, MatchesTheDefinitionWithPadding) {
  CheckAgainstReference(3, 5, 2, 3, false, {5, 2, 1});
  CheckAgainstReference(3, 5, 2, 3, true, {5, 2, 1});
  CheckAgainstReference(2, 130, 1, 4, false, {70, 129});
  CheckAgainstReference(2, 130, 1, 4, true, {64, 65});
}

// tokens:V:D:PAD: what follows a sample's first pad id changes neither the model's output nor
// any gradient, bit for bit (attention never sees it, seqpool:mean leaves it out).
TEST(Padding, WhatFollowsThePadIsInvisible) {
  const std::string spec = "tokens:11:8:0, block:2, block:2:causal, seqpool:mean, dense:3";
  const int64_t t = 70;
  auto run = [&](uint64_t tail_seed, std::vector<double>* grads,
                 const std::string& model =
                     "tokens:11:8:0, block:2, block:2:causal, "
                     "seqpool:mean, dense:3") {
    Sequential<double> m(model, {t}, {.seed = 3});
    Tensor x(DType::kFloat64, {2, t});
    for (int64_t i = 0; i < 2 * t; ++i) {
      const int64_t pos = i % t, start = i < t ? 67 : 5;  // padding from 67 and from 5
      x.data<double>()[i] =
          pos < start ? 1 + (i * 7) % 10
          : pos == start
              ? 0
              : static_cast<double>(static_cast<int>(RandomUniform(tail_seed, 0, i) * 11));
    }
    Tensor dy(DType::kFloat64, {2, 3});
    for (int i = 0; i < 6; ++i) dy.data<double>()[i] = 0.5 - i;
    m.arena().ZeroGrads();
    MicroBatch mb;
    const Tensor y = m.Forward(x, true, mb);
    m.Backward(dy, mb);
    grads->assign(m.arena().grads(), m.arena().grads() + m.arena().size());
    return std::vector<double>(y.data<double>(), y.data<double>() + 6);
  };
  std::vector<double> g1, g2;
  const std::vector<double> y1 = run(1, &g1), y2 = run(2, &g2);
  EXPECT_EQ(y1, y2);
  EXPECT_EQ(g1, g2);
  // Without the pad id the two inputs do give different outputs: the tails differ.
  const std::string unpadded = "tokens:11:8, block:2, block:2:causal, seqpool:mean, dense:3";
  EXPECT_NE(run(1, &g1, unpadded), run(2, &g2, unpadded));
  // A later pipeline stage would not know the padding: refused.
  EXPECT_THROW(Sequential<double>(spec, {t}, {}, LayerRange{.begin = 1, .end = 3}), Error);
}

// A causal output at position t is the same whatever follows t.
TEST(AttentionKernel, CausalIgnoresTheFuture) {
  const cpu::AttentionShape s{
      .batch = 1, .time = 90, .heads = 2, .head_dim = 4, .ld_qkv = 24, .causal = true};
  std::vector<double> qkv = RandomValues(s.time * s.ld_qkv, 2);
  std::vector<double> o1(static_cast<size_t>(s.time * 8)), o2(o1.size()), lse(180);
  cpu::AttentionForward(s, qkv.data(), o1.data(), lse.data());
  for (int64_t i = 70 * s.ld_qkv; i < s.time * s.ld_qkv; ++i) qkv[i] += 3.0;
  cpu::AttentionForward(s, qkv.data(), o2.data(), lse.data());
  for (int64_t i = 0; i < 70 * 8; ++i) ASSERT_EQ(o1[i], o2[i]) << i;
  bool later_changed = false;
  for (int64_t i = 70 * 8; i < s.time * 8; ++i) later_changed |= o1[i] != o2[i];
  EXPECT_TRUE(later_changed);
}

// Forward and backward give the same bits on 1 and 2 intra-op threads.
TEST(AttentionKernel, ThreadCountDoesNotChangeTheBits) {
  const cpu::AttentionShape s{
      .batch = 3, .time = 100, .heads = 2, .head_dim = 8, .ld_qkv = 48, .causal = true};
  std::vector<float> qkv(static_cast<size_t>(s.batch * s.time * s.ld_qkv));
  std::vector<float> dout(static_cast<size_t>(s.batch * s.time * 16));
  for (size_t i = 0; i < qkv.size(); ++i) qkv[i] = static_cast<float>(RandomNormal(3, 0, i));
  for (size_t i = 0; i < dout.size(); ++i) dout[i] = static_cast<float>(RandomNormal(3, 1, i));
  std::vector<std::vector<float>> results;
  const int before = cpu::IntraOpThreads();
  for (int threads : {1, 2}) {
    cpu::SetIntraOpThreads(threads);
    std::vector<float> o(dout.size()), lse(static_cast<size_t>(s.batch * 2 * s.time));
    std::vector<float> dqkv(qkv.size());
    cpu::AttentionForward(s, qkv.data(), o.data(), lse.data());
    cpu::AttentionBackward(s, qkv.data(), o.data(), lse.data(), dout.data(), dqkv.data());
    o.insert(o.end(), dqkv.begin(), dqkv.end());
    results.push_back(o);
  }
  cpu::SetIntraOpThreads(before);
  EXPECT_EQ(results[0], results[1]);
}

// tokens:V:D gathers table rows plus position rows; a repeated id gathers its gradient twice.
TEST(TokenEmbedding, GathersRowsAndAccumulatesRepeatedIds) {
  Arena<double> arena;
  auto layer = MakeLayerFromSpec<double>("tokens:5:2", {3}, {});
  BuildContext<double> ctx{.arena = &arena, .layer_index = 0, .layer_name = "00_tokens"};
  ASSERT_EQ(layer->Build({3}, ctx), (Shape{3, 2}));
  arena.Allocate();
  for (int64_t i = 0; i < arena.size(); ++i) arena.params()[i] = static_cast<double>(i);
  Tensor x(DType::kFloat64, {1, 3});
  x.data<double>()[0] = 4;
  x.data<double>()[1] = 0;
  x.data<double>()[2] = 4;
  const Tensor y = layer->Forward(x, {});
  // table rows (5, 2) are 0..9, position rows (3, 2) are 10..15.
  const std::vector<double> want = {8 + 10, 9 + 11, 0 + 12, 1 + 13, 8 + 14, 9 + 15};
  ASSERT_EQ(std::vector<double>(y.data<double>(), y.data<double>() + 6), want);
  arena.ZeroGrads();
  Tensor dy(DType::kFloat64, {1, 3, 2});
  for (int i = 0; i < 6; ++i) dy.data<double>()[i] = i + 1;
  layer->Backward(dy, false);
  const double* g = arena.grads();
  EXPECT_EQ(g[8], 1.0 + 5.0);  // id 4 at positions 0 and 2
  EXPECT_EQ(g[9], 2.0 + 6.0);
  EXPECT_EQ(g[0], 3.0);   // id 0 at position 1
  EXPECT_EQ(g[10], 1.0);  // position 0
  EXPECT_EQ(g[15], 6.0);  // position 2
}

TEST(TokenEmbedding, ABadIdNamesSamplePositionAndValue) {
  Sequential<float> m("tokens:5:2, dense:2", {3});
  Tensor x(DType::kFloat32, {2, 3});
  for (int i = 0; i < 6; ++i) x.data<float>()[i] = 1;
  x.data<float>()[4] = 5;
  try {
    m.Forward(x, false);
    FAIL() << "id 5 of 5 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("sample 1 position 1 holds 5"), std::string::npos)
        << e.what();
  }
  x.data<float>()[4] = 1.5f;
  EXPECT_THROW(m.Forward(x, false), Error);
}

TEST(TransformerSpecs, BadTokensAreRefused) {
  EXPECT_THROW(Sequential<float>("attention:3", {4, 8}), Error);       // 8 % 3
  EXPECT_THROW(Sequential<float>("attention:2:caus", {4, 8}), Error);  // marker
  EXPECT_THROW(Sequential<float>("block:2", {8}), Error);              // not a sequence
  EXPECT_THROW(Sequential<float>("seqpool:max", {4, 8}), Error);
  EXPECT_THROW(Sequential<float>("tokens:0:4", {8}), Error);
  EXPECT_THROW(Sequential<float>("tokens:10:4", {8, 2}), Error);
  ModelOptions o;
  o.tensor_parallel.ways = 4;
  o.tensor_parallel.sum_float = [](float*, int64_t) {};
  try {
    Sequential<float> m("block:2, dense:2", {4, 8}, o);
    FAIL() << "2 heads split 4 ways";
  } catch (const Error& e) {
    EXPECT_EQ(e.context().key, "dist.tensor_parallel");
    EXPECT_NE(std::string(e.what()).find("2 heads cannot be divided among 4"), std::string::npos)
        << e.what();
  }
}

}  // namespace attention_test
}  // namespace shardflow
