#include "core/optim/lr_schedule.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace shardflow {

void ValidateLrSchedule(const LrScheduleOptions& o) {
  auto fail = [](const std::string& key, const std::string& what) {
    throw Error(ErrorCode::kInvalidArgument, "learning-rate schedule: " + what, {.key = key});
  };
  if (!(o.base_lr > 0.0)) fail("lr", "the learning rate must be > 0");
  if (o.warmup_steps < 0) fail("warmup_steps", "warmup_steps must be >= 0");
  if (o.kind == "constant") return;
  if (o.kind == "step") {
    if (o.step_size <= 0) fail("step_size", "step_size must be > 0");
    if (!(o.gamma > 0.0)) fail("gamma", "gamma must be > 0");
    return;
  }
  if (o.kind == "cosine") {
    if (o.total_steps <= o.warmup_steps)
      fail("total_steps", "total_steps must exceed warmup_steps");
    if (o.min_lr < 0.0 || o.min_lr > o.base_lr) fail("min_lr", "min_lr must be in [0, lr]");
    return;
  }
  fail("schedule", "unknown schedule '" + o.kind + "' (use constant, step or cosine)");
}

double LearningRate(const LrScheduleOptions& o, int64_t step) {
  if (step < o.warmup_steps) {
    return o.base_lr * static_cast<double>(step + 1) / static_cast<double>(o.warmup_steps);
  }
  const int64_t s = step - o.warmup_steps;
  if (o.kind == "step") {
    return o.base_lr * std::pow(o.gamma, static_cast<double>(s / o.step_size));
  }
  if (o.kind == "cosine") {
    const double span = static_cast<double>(o.total_steps - o.warmup_steps);
    const double p = std::min(1.0, static_cast<double>(s) / span);
    return o.min_lr + (o.base_lr - o.min_lr) * 0.5 * (1.0 + std::cos(3.141592653589793 * p));
  }
  return o.base_lr;
}

}  // namespace shardflow
