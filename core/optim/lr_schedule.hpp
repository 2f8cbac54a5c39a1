// Learning-rate schedules, a pure function of the step (so a resumed run continues exactly).
//
//   constant  lr
//   step      lr * gamma^floor(s / step_size)
//   cosine    min_lr + (lr - min_lr) (1 + cos(pi p)) / 2, p = progress through total_steps
// Any of them with warmup_steps > 0 ramps linearly from lr/warmup to the schedule's value over
// the first warmup_steps steps (steps count from 0). Schedules other than constant measure
// their progress from the end of the warm-up.
#pragma once

#include <cstdint>
#include <string>

namespace shardflow {

struct LrScheduleOptions {
  std::string kind = "constant";  // constant | step | cosine
  double base_lr = 0.01;
  int64_t warmup_steps = 0;
  int64_t step_size = 1000;  // step: decay every step_size steps
  double gamma = 0.1;        // step: decay factor
  int64_t total_steps = 0;   // cosine: the step where lr reaches min_lr (required > warmup)
  double min_lr = 0.0;       // cosine
};

// Throws Error(kInvalidArgument) naming the field of an invalid schedule.
void ValidateLrSchedule(const LrScheduleOptions& options);
double LearningRate(const LrScheduleOptions& options, int64_t step);

}  // namespace shardflow
