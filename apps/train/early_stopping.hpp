// Early stopping on an evaluation metric, as Keras' EarlyStopping(monitor, patience) and
// ModelCheckpoint(save_best_only) do together: train.early_stopping = METRIC:PATIENCE, METRIC
// eval_loss (lower is better), eval_accuracy or a binary classifier's eval_auc (higher is better).
// After each epoch's evaluation the loop reports the metric; the run stops once PATIENCE
// evaluations in a row have not improved on the best (strictly), and the best evaluation's
// checkpoint is kept as OUTPUT/best.h5. Every rank sees the same evaluation (it is reduced over the
// ranks), so every rank decides alike without a message. Limits: the count of evaluations without
// improvement is not in the checkpoint, so a run stopped by a signal and resumed counts afresh from
// its resume. Thread-safety: none; the training loop's thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace shardflow::train {

struct EarlyStoppingOptions {
  std::string metric;    // "eval_loss" | "eval_accuracy" | "eval_auc"; "" : off
  int64_t patience = 0;  // evaluations without improvement before the run stops
  bool on() const { return patience > 0; }
};

// Parses METRIC:PATIENCE ("" : off). Throws Error(kInvalidArgument), key train.early_stopping,
// for another metric, a patience that is not a count >= 1, eval_accuracy or eval_auc when the
// task has no labels (`classify` false), or any value without an evaluation set (`has_eval` false).
EarlyStoppingOptions ParseEarlyStopping(const std::string& text, bool classify, bool has_eval);

class EarlyStopping {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options) : o_(std::move(options)) {}

  enum class Verdict { kImproved, kWaiting, kStop };
  // The evaluation after `steps_done` steps: its loss, accuracy and AUC (EvalResult::auc).
  // Throws Error(kInvalidArgument) when the metric is eval_auc and there is no AUC.
  Verdict Observe(int64_t steps_done, double loss, double accuracy,
                  std::optional<double> auc = std::nullopt);

  double best() const { return best_; }
  int64_t best_step() const { return best_step_; }
  int64_t waited() const { return waited_; }
  const EarlyStoppingOptions& options() const { return o_; }

 private:
  EarlyStoppingOptions o_;
  bool seen_ = false;
  double best_ = 0;
  int64_t best_step_ = 0;
  int64_t waited_ = 0;
};

}  // namespace shardflow::train
