#include "apps/train/train_config.hpp"

#include <cstdlib>
#include <thread>

#include "core/cpu/gemm.hpp"
#include "core/logging.hpp"

namespace shardflow::train {

namespace {

void RegisterModelSection(ConfigSchema& s, TrainAppConfig* c) {
  s.DescribeSection("model", "the network");
  s.Add("model", "spec", &c->model,
        "a preset (linear, mlp, cnn, resnet, lstm_autoencoder) or a layer list such as "
        "'conv:32:5x5:same, relu, maxpool:2, flatten, dense:10'")
      .NonEmpty();
  s.Add("model", "input_shape", &c->input_shape, "shape of one input sample, e.g. 28,28,1")
      .NonEmpty();
  s.AddChoice("model", "task", &c->task, {"classify", "reconstruct"},
              "classify: softmax cross-entropy on integer labels; reconstruct: MSE to the input");
  s.Add("model", "input_feature", &c->input_feature, "batch feature fed to the model").NonEmpty();
  s.Add("model", "label_feature", &c->label_feature, "batch feature holding integer labels");
  s.Add("model", "input_scale", &c->input_scale, "uint8 inputs are multiplied by this");
  s.Add("model", "seed", &c->seed, "initial weights and dropout masks (same on every rank)");
  s.AddChoice("model", "init", &c->init, {"he", "glorot"},
              "initialisation of dense and conv kernels");
}

void RegisterTrainSection(ConfigSchema& s, TrainAppConfig* c) {
  s.DescribeSection("train", "optimisation");
  s.Add("train", "epochs", &c->epochs, "passes over the training data").Positive();
  s.Add("train", "batch_size", &c->batch_size, "samples per step (see batch_semantics)").Positive();
  s.AddChoice("train", "batch_semantics", &c->batch_semantics, {"per_rank", "global"},
              "per_rank: every rank takes batch_size samples a step; global: batch_size is split "
              "over the ranks");
  s.AddChoice("train", "optimizer", &c->optimizer, {"sgd", "adam", "adamw"}, "update rule");
  s.Add("train", "lr", &c->lr, "base learning rate").Positive();
  s.Add("train", "momentum", &c->momentum, "sgd momentum (0: none)").InRange(0.0, 0.9999);
  s.Add("train", "nesterov", &c->nesterov, "sgd: Nesterov momentum");
  s.Add("train", "beta1", &c->beta1, "adam/adamw first-moment decay").InRange(0.0, 0.9999);
  s.Add("train", "beta2", &c->beta2, "adam/adamw second-moment decay").InRange(0.0, 0.99999);
  s.Add("train", "weight_decay", &c->weight_decay, "L2 (sgd, adam) or decoupled (adamw) decay")
      .NonNegative();
  s.AddChoice("train", "schedule", &c->schedule, {"constant", "step", "cosine"},
              "learning-rate schedule over steps");
  s.Add("train", "warmup_steps", &c->warmup_steps, "linear warm-up steps").NonNegative();
  s.Add("train", "step_size", &c->step_size, "step schedule: decay every N steps").Positive();
  s.Add("train", "gamma", &c->gamma, "step schedule: decay factor").Positive();
  s.Add("train", "min_lr", &c->min_lr, "cosine schedule: final learning rate").NonNegative();
  s.AddChoice("train", "lr_scaling", &c->lr_scaling, {"none", "linear"},
              "linear: multiply lr by the rank count (large global batches; use warmup_steps)");
  s.Add("train", "clip_norm", &c->clip_norm, "clip gradients to this global norm (0: off)")
      .NonNegative();
  s.Add("train", "threads", &c->threads,
        "intra-op threads per rank (0: SHARDFLOW_THREADS, else the cores the launcher bound "
        "this rank to, or the machine's cores / ranks on the node when unbound)")
      .NonNegative();
  s.Add("train", "max_steps", &c->max_steps,
        "stop after this many steps in all (0: no limit); the learning-rate schedule still "
        "spans train.epochs, so a stopped run resumes exactly")
      .NonNegative();
  s.Add("train", "log_every", &c->log_every, "steps between metrics.jsonl lines").Positive();
}

void RegisterDistAndCheckpointSections(ConfigSchema& s, TrainAppConfig* c) {
  s.DescribeSection("dist", "distribution over ranks");
  s.AddChoice("dist", "strategy", &c->strategy, {"data_parallel"},
              "data_parallel: synchronous, gradients averaged every step");
  s.AddChoice("dist", "allreduce", &c->allreduce,
              {"auto", "ring", "recursive_doubling", "hierarchical", "mpi", "shm"},
              "all-reduce algorithm (auto picks by message size and topology; on one node "
              "that is shm, through shared memory)");
  s.Add("dist", "bucket_mb", &c->bucket_mb, "gradient bucket size in MiB").Positive();
  s.Add("dist", "overlap", &c->overlap, "reduce buckets while backprop runs");
  s.AddChoice("dist", "wire", &c->wire, {"float32", "bf16", "fp16"},
              "all-reduce wire format (16-bit halves the bytes; sums stay float32; used by "
              "ring and hierarchical, while shm, rd and mpi always move float32)");
  s.Add("dist", "watchdog_seconds", &c->watchdog_seconds,
        "a collective not done within this ends the job, naming the ranks that did not join")
      .Positive();

  s.DescribeSection("checkpoint", "checkpoints (HDF5, written by rank 0)");
  s.Add("checkpoint", "dir", &c->checkpoint_dir, "folder ('' : OUTPUT/checkpoints)");
  s.Add("checkpoint", "every_steps", &c->checkpoint_every_steps, "0: only at the end")
      .NonNegative();
  s.Add("checkpoint", "every_minutes", &c->checkpoint_every_minutes, "0: off").NonNegative();
  s.Add("checkpoint", "keep_last", &c->keep_last, "checkpoints kept (0: all)").NonNegative();
  s.Add("checkpoint", "warm_start", &c->warm_start, "take the weights of this checkpoint first");
}

}  // namespace

void RegisterTrainConfig(ConfigSchema& s, TrainAppConfig* c) {
  pipeline::RegisterDataOptions(s, "data", &c->data);
  pipeline::RegisterDataOptions(s, "eval", &c->eval);
  s.DescribeSection("eval", "evaluation input (every record once per evaluation); no files: none");
  RegisterModelSection(s, c);
  RegisterTrainSection(s, c);
  RegisterDistAndCheckpointSections(s, c);
  RegisterLogOptions(s, &c->log);
  s.Add("log", "trace", &c->trace, "write a Chrome trace per rank to OUTPUT/trace.rankN.json");
}

namespace {

// The per-rank batch, and the data specs' batch sizes and passes.
int64_t SetBatchSizes(TrainAppConfig* c, int ranks) {
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

void SetModelAndOptimizer(const TrainAppConfig& c, int ranks, TrainerOptions* o) {
  o->model_spec = c.model;
  o->input_shape = Shape(c.input_shape.begin(), c.input_shape.end());
  o->model.seed = c.seed;
  o->model.init = ParseInitKind(c.init);
  o->task = c.task == "classify" ? Task::kClassify : Task::kReconstruct;
  o->input_feature = c.input_feature;
  o->label_feature = c.label_feature;
  o->input_scale = c.input_scale;
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
}

void SetDistribution(const TrainAppConfig& c, TrainerOptions* o) {
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

void SetOutputs(const TrainAppConfig& c, const std::string& config_text, TrainerOptions* o) {
  o->output_dir = c.output;
  o->checkpoint.dir = c.checkpoint_dir.empty() ? c.output + "/checkpoints" : c.checkpoint_dir;
  o->checkpoint.keep_last = c.keep_last;
  o->checkpoint_every_steps = c.checkpoint_every_steps;
  o->checkpoint_every_minutes = c.checkpoint_every_minutes;
  o->resume = c.resume;
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

TrainerOptions MakeTrainerOptions(TrainAppConfig* c, int ranks, const std::string& config_text) {
  TrainerOptions o;
  o.per_rank_batch = SetBatchSizes(c, ranks);
  SetModelAndOptimizer(*c, ranks, &o);
  SetDistribution(*c, &o);
  SetOutputs(*c, config_text, &o);
  int threads = c->threads;
  if (threads == 0) {
    if (const char* env = std::getenv("SHARDFLOW_THREADS"); env != nullptr && *env != '\0') {
      threads = std::max(1, std::atoi(env));
    } else {
      threads = 1;  // resolved per node by the caller when it knows the local rank count
    }
  }
  o.tuning = {.parallel_calls = static_cast<int>(c->data.data.parallel_calls),
              .parallel_reads = static_cast<int>(c->data.data.parallel_reads),
              .prefetch = static_cast<int>(c->data.data.prefetch),
              .cache_enabled = !c->data.data.cache.empty(),
              .bucket_mb = c->bucket_mb,
              .overlap = c->overlap,
              .threads = threads,
              .ranks = ranks};
  return o;
}

}  // namespace shardflow::train
