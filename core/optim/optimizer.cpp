#include "core/optim/optimizer.hpp"

#include <algorithm>
#include <cmath>

#include "core/backend/backend.hpp"

namespace shardflow {
namespace {

class Sgd final : public Optimizer {
 public:
  Sgd(const OptimizerOptions& o, int64_t n) : o_(o), velocity_(DType::kFloat32, {n}) {}
  std::string name() const override { return "sgd"; }
  void Step(Arena<float>& arena, double lr) override {
    velocity_ = velocity_.To(arena.device());  // once, for a model on a device
    Backend<float>& be = BackendFor<float>(velocity_.device());
    float* v = velocity_.device_data<float>();
    for (const ParamSpec& s : arena.specs()) {
      const SgdParams p{.lr = static_cast<float>(lr),
                        .momentum = static_cast<float>(o_.momentum),
                        .weight_decay = s.decay ? static_cast<float>(o_.weight_decay) : 0.0f,
                        .nesterov = o_.nesterov};
      be.SgdUpdate(p, s.size, arena.param_data(s), arena.grad_data(s), v + s.offset);
    }
    ++iterations_;
  }
  std::vector<NamedTensor> Slots() override { return {{"velocity", &velocity_}}; }

 private:
  OptimizerOptions o_;
  Tensor velocity_;
};

class Adam final : public Optimizer {
 public:
  Adam(const OptimizerOptions& o, int64_t n, bool decoupled)
      : o_(o), decoupled_(decoupled), m_(DType::kFloat32, {n}), v_(DType::kFloat32, {n}) {}
  std::string name() const override { return decoupled_ ? "adamw" : "adam"; }
  void Step(Arena<float>& arena, double lr) override {
    ++iterations_;
    const double t = static_cast<double>(iterations_);
    // Bias corrections folded into the step size and epsilon's scale, in double.
    const float step = static_cast<float>(lr * std::sqrt(1.0 - std::pow(o_.beta2, t)) /
                                          (1.0 - std::pow(o_.beta1, t)));
    const float eps = static_cast<float>(o_.epsilon * std::sqrt(1.0 - std::pow(o_.beta2, t)));
    const float b1 = static_cast<float>(o_.beta1), b2 = static_cast<float>(o_.beta2);
    m_ = m_.To(arena.device());  // once, for a model on a device
    v_ = v_.To(arena.device());
    Backend<float>& be = BackendFor<float>(m_.device());
    float* m = m_.device_data<float>();
    float* v = v_.device_data<float>();
    for (const ParamSpec& s : arena.specs()) {
      const float wd = s.decay ? static_cast<float>(o_.weight_decay) : 0.0f;
      const float l2 = decoupled_ ? 0.0f : wd;
      const float shrink = decoupled_ ? 1.0f - static_cast<float>(lr) * wd : 1.0f;
      be.AdamUpdate({.b1 = b1, .b2 = b2, .l2 = l2, .shrink = shrink, .step = step, .eps = eps},
                    s.size, arena.param_data(s), arena.grad_data(s), m + s.offset, v + s.offset);
    }
  }
  std::vector<NamedTensor> Slots() override { return {{"m", &m_}, {"v", &v_}}; }

 private:
  OptimizerOptions o_;
  bool decoupled_;
  Tensor m_, v_;
};

// Adagrad as tf.keras.optimizers.Adagrad: accumulators start at 0.1, a row the gradient does not
// touch keeps its weights and accumulator exactly (the property the sparse servers rely on).
class Adagrad final : public Optimizer {
 public:
  Adagrad(const OptimizerOptions& o, int64_t n) : o_(o), accum_(DType::kFloat32, {n}) {
    float* a = accum_.data<float>();
    std::fill(a, a + n, kAdagradInitialAccumulator);
  }
  std::string name() const override { return "adagrad"; }
  void Step(Arena<float>& arena, double lr) override {
    if (arena.device() != Device::kCpu) {
      throw Error(ErrorCode::kInvalidArgument,
                  "adagrad updates parameters on the CPU; the model is on a device",
                  {.key = "train.optimizer", .hint = "sgd, adam or adamw"});
    }
    ++iterations_;
    const float rate = static_cast<float>(lr), eps = static_cast<float>(o_.epsilon);
    float* acc = accum_.data<float>();
    for (const ParamSpec& s : arena.specs()) {
      const float wd = s.decay ? static_cast<float>(o_.weight_decay) : 0.0f;
      float* w = arena.param_data(s);
      const float* g = arena.grad_data(s);
      float* a = acc + s.offset;
      for (int64_t i = 0; i < s.size; ++i) AdagradUpdate(rate, wd, eps, w[i], g[i], a[i]);
    }
  }
  std::vector<NamedTensor> Slots() override { return {{"accumulator", &accum_}}; }

 private:
  OptimizerOptions o_;
  Tensor accum_;
};

void Require(bool ok, const std::string& key, const std::string& what) {
  if (!ok) throw Error(ErrorCode::kInvalidArgument, "optimizer: " + what, {.key = key});
}

}  // namespace

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerOptions& o, int64_t arena_size) {
  Require(o.weight_decay >= 0.0, "weight_decay", "weight decay must be >= 0");
  if (o.name == "sgd") {
    Require(o.momentum >= 0.0 && o.momentum < 1.0, "momentum", "momentum must be in [0, 1)");
    return std::make_unique<Sgd>(o, arena_size);
  }
  if (o.name == "adam" || o.name == "adamw") {
    Require(o.beta1 >= 0.0 && o.beta1 < 1.0, "beta1", "beta1 must be in [0, 1)");
    Require(o.beta2 >= 0.0 && o.beta2 < 1.0, "beta2", "beta2 must be in [0, 1)");
    Require(o.epsilon > 0.0, "epsilon", "epsilon must be > 0");
    return std::make_unique<Adam>(o, arena_size, o.name == "adamw");
  }
  if (o.name == "adagrad") {
    Require(o.epsilon > 0.0, "epsilon", "epsilon must be > 0");
    return std::make_unique<Adagrad>(o, arena_size);
  }
  throw Error(ErrorCode::kInvalidArgument, "unknown optimizer '" + o.name + "'",
              {.key = "optimizer", .hint = "use sgd, adam, adamw or adagrad"});
}

}  // namespace shardflow
