// TensorBoard event files of a training run (`[log] tensorboard`, on by default), written by
// rank 0 under OUTPUT/tb/ with io::EventWriter: tb/train and tb/validation, TensorBoard's usual
// pair, so `tensorboard --logdir OUTPUT/tb` overlays the train and evaluation curves.
//   tb/train, at every step: step/loss, step/learning_rate, step/samples_per_s,
//     step/input_wait_fraction, step/compute_fraction, step/comm_fraction: rank 0's own figures
//     of that step (its batch's loss, its clock; no collective), buffered and flushed with the
//     next metrics line;
//   tb/train, at each metrics.jsonl line (step = steps done, values equal to the line's): loss,
//     accuracy (classify), learning_rate, samples_per_s, time/input_wait_fraction,
//     time/compute_fraction, time/comm_fraction; at each epoch end: epoch_loss, epoch_accuracy
//     (the epoch's mean); every `log.histogram_every` steps the histograms of each parameter
//     ("weights/<layer>/<param>") and of its last reduced gradient ("gradients/...").
//   tb/validation, at each evaluation: epoch_loss, epoch_accuracy, a binary classifier's
//     epoch_auc (metrics.jsonl's eval_loss, eval_accuracy, eval_auc).
// --resume at step S first drops every event past S from the earlier files (the resumed run
// redoes those steps), then opens new files: each step appears once.
// Thread-safety: one thread (the training loop's).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "core/model.hpp"

namespace shardflow::io {
class EventWriter;
}

namespace shardflow::train {

struct StepOutput;

class TensorBoardLog {
 public:
  // `dir` is OUTPUT/tb. resumed_step > 0: drops the events past it first. Throws Error(kIo).
  TensorBoardLog(const std::string& dir, int64_t resumed_step);
  ~TensorBoardLog();

  // The step/* scalars of step `steps_done` from rank 0's own figures: its step's output, the
  // learning rate, the samples over the job (its rows times the data-parallel ranks), the
  // seconds since the previous step ended and the input wait in them. Written to the buffer,
  // flushed at the next Interval, Evaluation or Histograms (or the end).
  void Step(int64_t steps_done, const StepOutput& out, double learning_rate, double samples,
            double seconds, double input_wait_s);
  // A metrics.jsonl line of the training loop (keys as written there); at an epoch end
  // (`epoch_sums` not null: the epoch's loss sum, correct and rows over the ranks, the training
  // loop's, which a resumed run restores from the checkpoint) also the epoch's mean loss (and
  // accuracy when `classify`).
  void Interval(const nlohmann::json& line, const double* epoch_sums, bool classify);
  // An evaluation after `steps_done` steps (accuracy < 0, auc < 0 or NaN: none).
  void Evaluation(int64_t steps_done, double loss, double accuracy, double auc = -1.0);
  // The histograms of `model`'s parameters and gradients when `steps_done` is a multiple of
  // `every` (> 0) and there is a model (a strategy without a whole replica has none).
  void Histograms(int64_t steps_done, Sequential<float>* model, int64_t every);

 private:
  std::string dir_;
  std::unique_ptr<io::EventWriter> train_, validation_;  // validation: opened at first use
};

}  // namespace shardflow::train
