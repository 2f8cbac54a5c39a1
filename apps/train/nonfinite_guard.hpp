// NonfiniteGuard: a training step whose loss or gradients hold NaN or Inf never updates the
// model silently (train.on_nonfinite).
//
// The check runs once per step on the gradients the optimizer is about to apply, after the
// strategy finished them (for data parallelism: after the all-reduce). A reduced gradient is the
// same on every rank, and a NaN or Inf on any rank reaches every rank through the sum, so each
// rank's local verdict is the job's verdict without another collective. A non-finite loss on one
// rank is folded into that path: PoisonIfNonfinite() puts a NaN into the rank's loss gradient
// before backward, so the reduced gradients carry it to every rank
// (tests/train/nonfinite_mpi_test.cpp injects a NaN on one rank only and checks that the ranks
// agree).
//
// Cost: one read of the gradient arena. Without clipping it is an integer max over the bit
// patterns (|bits| >= the exponent mask <=> NaN or Inf), which the compiler vectorises; with
// train.clip_norm the global norm that clipping computes anyway is the check (a sum of squares
// in double is finite exactly when every float is), so there is no second pass.
//
//   kFail      Error(kDataLoss) naming the step, epoch, the quantity (the loss, or the first
//              parameter in backprop order whose gradient is non-finite), the learning rate
//              and a hint; exit code 3, as for data errors.
//   kSkipStep  the update is dropped (every rank alike); skips are counted; more than
//              max_skipped_steps in a row is the kFail error.
// Thread-safety: one thread (the training loop's) uses a guard.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "core/arena.hpp"
#include "core/tensor.hpp"

namespace shardflow::train {

enum class OnNonfinite { kFail, kSkipStep };

// "fail" | "skip_step"; Error(kInvalidArgument) naming train.on_nonfinite otherwise.
OnNonfinite ParseOnNonfinite(const std::string& text);

struct NonfiniteOptions {
  OnNonfinite action = OnNonfinite::kFail;
  int64_t max_skipped_steps = 10;  // consecutive skips tolerated under kSkipStep
};

// True when every g[i] is finite (n == 0: true). One vectorisable pass.
bool AllFinite(const float* g, int64_t n);

// Where a step stands, for the error message.
struct StepPlace {
  int64_t step = 0;
  int64_t epoch = 0;
  double learning_rate = 0;
  double loss = 0;  // this rank's
};

class NonfiniteGuard {
 public:
  explicit NonfiniteGuard(NonfiniteOptions options) : options_(options) {}

  // Before backward: a non-finite loss on this rank makes dout[0] NaN, so the gradients (and,
  // once reduced, every rank's) are non-finite too.
  static void PoisonIfNonfinite(double loss, Tensor* dout);

  // After the gradients are final: clips them to clip_norm (> 0; 0: no clipping) and checks
  // them in the same pass. Returns true when the optimizer should apply them, false when the
  // step is skipped (counted). Throws Error(kDataLoss) under kFail, or when the skips in a row
  // exceed max_skipped_steps.
  // A device arena's gradients are checked (and clipped) in a host copy, written back when
  // clipping changed them.
  bool CheckGradients(const StepPlace& at, Arena<float>& arena, double clip_norm);
  // As CheckGradients without clipping, for a caller that knows the gradients' global norm: a
  // finite norm means finite gradients, so they are not read again (a device's not copied).
  bool CheckGradientsWithNorm(const StepPlace& at, Arena<float>& arena, double norm) {
    if (!std::isfinite(norm)) return CheckGradients(at, arena, 0);
    in_a_row_ = 0;
    return true;
  }

  int64_t skipped_steps() const { return skipped_; }

 private:
  // grads: the arena's gradients in host memory (the arena's own, or a copy of a device's).
  [[noreturn]] void Fail(const StepPlace& at, const Arena<float>& arena, const float* grads,
                         const std::string& why) const;

  NonfiniteOptions options_;
  int64_t skipped_ = 0;
  int64_t in_a_row_ = 0;
};

}  // namespace shardflow::train
