// Optimizers, learning-rate schedules, gradient clipping and initialisers against values
// computed by hand.
#include "core/optim/optimizer.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/init.hpp"
#include "core/optim/clip.hpp"
#include "core/optim/lr_schedule.hpp"

namespace shardflow {
namespace optimizer_test {

// One kernel (decayed) and one bias (not decayed), two elements each.
struct Fixture {
  Arena<float> arena;
  Fixture() {
    arena.Declare(0, "00_dense", "kernel", {2}, true);
    arena.Declare(0, "00_dense", "bias", {2}, false);
    arena.Allocate();
    float* w = arena.params();
    float* g = arena.grads();
    for (int i = 0; i < 4; ++i) {
      w[i] = 1.0f + static_cast<float>(i);
      g[i] = 0.5f - 0.25f * static_cast<float>(i);
    }
  }
};

TEST(Optimizer, SgdMomentumAndWeightDecay) {
  Fixture f;
  auto opt = MakeOptimizer({.name = "sgd", .momentum = 0.9, .weight_decay = 0.1}, 4);
  // Reference, per element: g' = g + wd w (kernel only); v = 0.9 v + g'; w -= lr v.
  std::vector<double> w{1, 2, 3, 4}, g{0.5, 0.25, 0, -0.25}, v(4, 0.0);
  for (int step = 0; step < 3; ++step) {
    opt->Step(f.arena, 0.1);
    for (int i = 0; i < 4; ++i) {
      const double gi = g[i] + (i < 2 ? 0.1 * w[i] : 0.0);
      v[i] = 0.9 * v[i] + gi;
      w[i] -= 0.1 * v[i];
    }
  }
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(f.arena.params()[i], w[i], 1e-6);
  EXPECT_EQ(opt->iterations(), 3);
}

TEST(Optimizer, SgdNesterov) {
  Fixture f;
  auto opt = MakeOptimizer({.name = "sgd", .momentum = 0.5, .nesterov = true}, 4);
  std::vector<double> w{1, 2, 3, 4}, g{0.5, 0.25, 0, -0.25}, v(4, 0.0);
  for (int step = 0; step < 2; ++step) {
    opt->Step(f.arena, 0.2);
    for (int i = 0; i < 4; ++i) {
      v[i] = 0.5 * v[i] + g[i];
      w[i] -= 0.2 * (g[i] + 0.5 * v[i]);
    }
  }
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(f.arena.params()[i], w[i], 1e-6);
}

TEST(Optimizer, PlainSgdWithoutMomentum) {
  Fixture f;
  auto opt = MakeOptimizer({.name = "sgd", .momentum = 0.0}, 4);
  opt->Step(f.arena, 1.0);
  EXPECT_FLOAT_EQ(f.arena.params()[0], 0.5f);
  EXPECT_FLOAT_EQ(f.arena.params()[3], 4.25f);
}

void CheckAdam(bool decoupled) {
  Fixture f;
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-7, wd = 0.05;
  auto opt = MakeOptimizer({.name = decoupled ? "adamw" : "adam", .weight_decay = wd}, 4);
  std::vector<double> w{1, 2, 3, 4}, g{0.5, 0.25, 0, -0.25}, m(4, 0.0), v(4, 0.0);
  for (int t = 1; t <= 3; ++t) {
    opt->Step(f.arena, lr);
    for (int i = 0; i < 4; ++i) {
      const double d = i < 2 ? wd : 0.0;
      const double gi = g[i] + (decoupled ? 0.0 : d * w[i]);
      m[i] = b1 * m[i] + (1 - b1) * gi;
      v[i] = b2 * v[i] + (1 - b2) * gi * gi;
      const double mh = m[i] / (1 - std::pow(b1, t)), vh = v[i] / (1 - std::pow(b2, t));
      if (decoupled) w[i] -= lr * d * w[i];
      w[i] -= lr * mh / (std::sqrt(vh) + eps);
    }
  }
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(f.arena.params()[i], w[i], 2e-6) << i;
}

TEST(Optimizer, Adam) { CheckAdam(false); }
TEST(Optimizer, AdamW) { CheckAdam(true); }

TEST(Optimizer, AdagradAndUntouchedWeightsStayExactly) {
  Fixture f;
  f.arena.grads()[3] = 0.0f;  // a bias element without gradient: no decay, so no change at all
  auto opt = MakeOptimizer({.name = "adagrad", .epsilon = 1e-7, .weight_decay = 0.1}, 4);
  EXPECT_EQ(opt->name(), "adagrad");
  // Reference, per element: g' = g + wd w (kernel only); a += g'^2 (from 0.1);
  // w -= lr g' / (sqrt(a) + eps).
  std::vector<double> w{1, 2, 3, 4}, g{0.5, 0.25, 0, 0}, a(4, 0.1);
  for (int step = 0; step < 3; ++step) {
    opt->Step(f.arena, 0.1);
    for (int i = 0; i < 4; ++i) {
      const double gi = g[i] + (i < 2 ? 0.1 * w[i] : 0.0);
      a[i] += gi * gi;
      w[i] -= 0.1 * gi / (std::sqrt(a[i]) + 1e-7);
      EXPECT_NEAR(f.arena.params()[i], w[i], 1e-5) << "step " << step << " element " << i;
    }
  }
  EXPECT_EQ(f.arena.params()[3], 4.0f);
  EXPECT_EQ(opt->Slots()[0].tensor->data<float>()[3], 0.1f);
  EXPECT_EQ(opt->iterations(), 3);
}

TEST(Optimizer, BadOptionsAreRefused) {
  EXPECT_THROW(MakeOptimizer({.name = "lbfgs"}, 1), Error);
  EXPECT_THROW(MakeOptimizer({.name = "sgd", .momentum = 1.0}, 1), Error);
  EXPECT_THROW(MakeOptimizer({.name = "adam", .beta2 = 1.0}, 1), Error);
  EXPECT_THROW(MakeOptimizer({.name = "adam", .weight_decay = -1}, 1), Error);
}

TEST(LrSchedule, ConstantStepCosineAndWarmup) {
  LrScheduleOptions c{.kind = "constant", .base_lr = 0.1};
  EXPECT_DOUBLE_EQ(LearningRate(c, 1000), 0.1);
  LrScheduleOptions s{.kind = "step", .base_lr = 1.0, .step_size = 10, .gamma = 0.5};
  EXPECT_DOUBLE_EQ(LearningRate(s, 9), 1.0);
  EXPECT_DOUBLE_EQ(LearningRate(s, 10), 0.5);
  EXPECT_DOUBLE_EQ(LearningRate(s, 25), 0.25);
  LrScheduleOptions cos{
      .kind = "cosine", .base_lr = 1.0, .warmup_steps = 4, .total_steps = 14, .min_lr = 0.1};
  EXPECT_DOUBLE_EQ(LearningRate(cos, 0), 0.25);  // warm-up: (s + 1) / 4
  EXPECT_DOUBLE_EQ(LearningRate(cos, 3), 1.0);
  EXPECT_DOUBLE_EQ(LearningRate(cos, 4), 1.0);
  EXPECT_NEAR(LearningRate(cos, 9), 0.55, 1e-12);  // halfway
  EXPECT_NEAR(LearningRate(cos, 14), 0.1, 1e-12);
  EXPECT_NEAR(LearningRate(cos, 100), 0.1, 1e-12);
  ValidateLrSchedule(cos);
  EXPECT_THROW(ValidateLrSchedule({.kind = "cosine", .total_steps = 0}), Error);
  EXPECT_THROW(ValidateLrSchedule({.kind = "exp"}), Error);
  EXPECT_THROW(ValidateLrSchedule({.base_lr = 0}), Error);
}

TEST(Clip, ByGlobalNorm) {
  std::vector<float> g{3, 4};
  EXPECT_DOUBLE_EQ(ClipByGlobalNorm(g.data(), 2, 10.0), 5.0);
  EXPECT_FLOAT_EQ(g[0], 3.0f);  // below the limit: unchanged
  EXPECT_DOUBLE_EQ(ClipByGlobalNorm(g.data(), 2, 1.0), 5.0);
  EXPECT_NEAR(g[0], 0.6f, 1e-6);
  EXPECT_NEAR(g[1], 0.8f, 1e-6);
  EXPECT_NEAR(GlobalNorm(g.data(), 2), 1.0, 1e-6);
  EXPECT_DOUBLE_EQ(ClipByGlobalNorm(g.data(), 0, 1.0), 0.0);
}

TEST(Init, HeAndGlorotStatistics) {
  const int64_t n = 200000;
  std::vector<float> w(n);
  InitKernel(InitKind::kHeNormal, w.data(), n, 50, 10, 1, 0);
  double s = 0, s2 = 0;
  for (float v : w) {
    s += v;
    s2 += static_cast<double>(v) * v;
  }
  EXPECT_NEAR(s / n, 0.0, 0.01);
  EXPECT_NEAR(s2 / n, 2.0 / 50, 0.002);
  InitKernel(InitKind::kGlorotUniform, w.data(), n, 50, 10, 1, 0);
  const double limit = std::sqrt(6.0 / 60);
  double mx = 0;
  s2 = 0;
  for (float v : w) {
    mx = std::max(mx, std::abs(static_cast<double>(v)));
    s2 += static_cast<double>(v) * v;
  }
  EXPECT_LE(mx, limit);
  EXPECT_NEAR(s2 / n, limit * limit / 3, 0.002);
  EXPECT_EQ(ParseInitKind("glorot"), InitKind::kGlorotUniform);
  EXPECT_THROW(ParseInitKind("xavier2"), Error);
}

}  // namespace optimizer_test
}  // namespace shardflow
