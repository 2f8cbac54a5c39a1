// Optimizers that update the flat parameter arena from the flat gradient arena.
//
// Each optimizer keeps its state (momentum, first and second moments) as flat float arrays the
// size of the arena, so checkpoints save them as whole slots and a data-parallel job updates
// identical replicas identically. Weight decay is skipped for parameters declared with
// decay = false (biases, batch-norm scales and shifts).
//
//   sgd    v = mu v + g';  w -= lr (nesterov ? g' + mu v : v),   g' = g + wd w
//          (momentum 0: plain SGD)
//   adam   m = b1 m + (1-b1) g';  v = b2 v + (1-b2) g'^2;
//          w -= lr m/(1-b1^t) / (sqrt(v/(1-b2^t)) + eps),        g' = g + wd w (L2)
//   adamw  as adam with g' = g, then w -= lr wd w (decoupled decay, Loshchilov & Hutter)
//   adagrad a += g'^2;  w -= lr g' / (sqrt(a) + eps),  a from 0.1 (Keras' Adagrad), g' = g + wd w;
//          CPU models only (the sparse models it is for live on the CPU)
// Thread-safety: one thread at a time.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/arena.hpp"
#include "core/layers/layer.hpp"

namespace shardflow {

struct OptimizerOptions {
  std::string name = "sgd";   // sgd | adam | adamw | adagrad
  double momentum = 0.9;      // sgd; 0 disables the velocity
  bool nesterov = false;      // sgd
  double beta1 = 0.9;         // adam, adamw
  double beta2 = 0.999;       // adam, adamw
  double epsilon = 1e-7;      // adam, adamw, adagrad (Keras' default)
  double weight_decay = 0.0;  // L2 for sgd/adam, decoupled for adamw
};

// Adagrad's starting accumulator (tf.keras.optimizers.Adagrad's initial_accumulator_value).
inline constexpr float kAdagradInitialAccumulator = 0.1f;

// One Adagrad update of one weight: the one rule the dense optimizer and the sparse servers
// share, so both give the same bits.
inline void AdagradUpdate(float lr, float weight_decay, float eps, float& w, float g, float& a) {
  const float gd = g + weight_decay * w;
  a += gd * gd;
  w -= lr * gd / (std::sqrt(a) + eps);
}

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string name() const = 0;
  // One update with learning rate lr. REQUIRES: the arena this optimizer was made for.
  virtual void Step(Arena<float>& arena, double lr) = 0;
  // Its state, flat, one tensor per slot ("velocity", "m", "v"), for checkpoints.
  virtual std::vector<NamedTensor> Slots() = 0;
  // Updates applied so far (Adam's t); saved in checkpoints.
  int64_t iterations() const { return iterations_; }
  void set_iterations(int64_t t) { iterations_ = t; }

 protected:
  int64_t iterations_ = 0;
};

// Throws Error(kInvalidArgument) naming the option for an unknown name or a value out of range.
std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerOptions& options, int64_t arena_size);

}  // namespace shardflow
