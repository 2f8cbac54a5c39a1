#include "apps/train/trainer_options.hpp"

#include <algorithm>

namespace shardflow::train {

namespace {

// The per-rank batch, and the data specs' batch sizes and passes.
int64_t SetBatchSizes(apps::ExperimentConfig* c, int ranks) {
  int64_t per_rank = c->batch_size;
  if (c->batch_semantics == "global") {
    if (c->batch_size % ranks != 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "global batch " + std::to_string(c->batch_size) + " is not divisible by " +
                      std::to_string(ranks) + " ranks",
                  {.key = "train.batch_size"});
    }
    per_rank = c->batch_size / ranks;
  }
  c->data.data.batch_size = per_rank;
  c->data.data.epochs = 1;  // one pass; the trainer repeats after agreeing on steps
  c->eval.data.batch_size = std::max<int64_t>(per_rank, 256);
  c->eval.data.epochs = 1;
  c->eval.data.shuffle_buffer = 0;
  c->eval.data.drop_remainder = false;
  c->eval.data.augmentations.clear();
  return per_rank;
}

void SetModelAndOptimizer(const apps::ExperimentConfig& c, int ranks, TrainerOptions* o) {
  static_cast<apps::ModelSetup&>(*o) = apps::MakeModelSetup(c);
  o->optimizer = {.name = c.optimizer,
                  .momentum = c.momentum,
                  .nesterov = c.nesterov,
                  .beta1 = c.beta1,
                  .beta2 = c.beta2,
                  .weight_decay = c.weight_decay};
  const double scale = c.lr_scaling == "linear" ? ranks : 1.0;
  o->schedule = {.kind = c.schedule,
                 .base_lr = c.lr * scale,
                 .warmup_steps = c.warmup_steps,
                 .step_size = c.step_size,
                 .gamma = c.gamma,
                 .min_lr = c.min_lr};
  o->clip_norm = c.clip_norm;
  o->epochs = c.epochs;
  o->max_steps = c.max_steps;
  o->log_every_steps = c.log_every;
  o->nonfinite = {.action = ParseOnNonfinite(c.on_nonfinite),
                  .max_skipped_steps = c.max_skipped_steps};
}

void SetDistribution(const apps::ExperimentConfig& c, TrainerOptions* o) {
  const std::string algorithm = c.allreduce == "recursive_doubling" ? "rd" : c.allreduce;
  o->allreduce = {.algorithm = comm::ParseAlgorithm(algorithm),
                  .mode = comm::ReduceMode::kAverage,
                  .wire = c.wire == "bf16"   ? comm::WireFormat::kBFloat16
                          : c.wire == "fp16" ? comm::WireFormat::kFloat16
                                             : comm::WireFormat::kFloat32};
  o->strategy = c.strategy;
  o->bucket_mb = c.bucket_mb;
  o->overlap = c.overlap;
  o->watchdog_seconds = c.watchdog_seconds;
}

void SetOutputs(const apps::ExperimentConfig& c, const std::string& config_text,
                TrainerOptions* o) {
  o->output_dir = c.output;
  o->checkpoint.dir = c.checkpoint_dir.empty() ? c.output + "/checkpoints" : c.checkpoint_dir;
  o->checkpoint.keep_last = c.keep_last;
  o->checkpoint_every_steps = c.checkpoint_every_steps;
  o->checkpoint_every_epochs = c.checkpoint_every_epochs;
  o->checkpoint_every_minutes = c.checkpoint_every_minutes;
  o->resume = !c.resume.empty();
  o->resume_if_possible = c.resume == "auto";
  o->warm_start = c.warm_start;
  if (o->resume && !o->warm_start.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "--resume and a warm start exclude each other",
                {.key = "checkpoint.warm_start"});
  }
  o->config_text = config_text;
  o->progress = !c.no_progress;
  o->trace = c.trace;
}

}  // namespace

TrainerOptions MakeTrainerOptions(apps::ExperimentConfig* c, int ranks,
                                  const std::string& config_text) {
  TrainerOptions o;
  o.per_rank_batch = SetBatchSizes(c, ranks);
  SetModelAndOptimizer(*c, ranks, &o);
  SetDistribution(*c, &o);
  SetOutputs(*c, config_text, &o);
  o.tuning = {.parallel_calls = static_cast<int>(c->data.data.parallel_calls),
              .parallel_reads = static_cast<int>(c->data.data.parallel_reads),
              .prefetch = static_cast<int>(c->data.data.prefetch),
              .cache_enabled = !c->data.data.cache.empty(),
              .bucket_mb = c->bucket_mb,
              .overlap = c->overlap,
              .threads = 1,  // set by the caller, who knows the node's ranks
              .ranks = ranks,
              // BuildInputPipeline reads with one thread when parallel_reads is auto.
              .parallel_reads_used = c->data.data.parallel_reads == pipeline::kAutotune ? 1 : 0};
  return o;
}

}  // namespace shardflow::train
