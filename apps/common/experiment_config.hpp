// An experiment's configuration, shared by the apps that train and run models: [data] and
// [eval] (io/pipeline/input_pipeline.hpp), [model], [train], [dist], [checkpoint] and [log],
// each key with its default and a description (`shardflow-train --help` lists them all). The
// file that trained a model also predicts with it, so shardflow-predict registers the same
// sections. ModelSetup is what every app needs to build the model and feed it.
// Thread-safety: none; used from the main thread while the command line is parsed.
#pragma once

#include <string>

#include "apps/common/model_batch.hpp"
#include "core/cli.hpp"
#include "core/config.hpp"
#include "core/model.hpp"
#include "io/pipeline/input_pipeline.hpp"

namespace shardflow::apps {

struct ExperimentConfig {
  pipeline::InputSpec data;
  pipeline::InputSpec eval;
  // [model]
  std::string model = "mlp";
  std::vector<int64_t> input_shape = {28, 28, 1};
  std::string task = "classify";
  std::string input_feature = "image_raw";
  std::string label_feature = "label";
  double input_scale = 1.0 / 255.0;
  uint64_t seed = 42;
  std::string init = "he";
  // [train]
  int64_t epochs = 1;
  int64_t batch_size = 64;
  std::string batch_semantics = "per_rank";
  std::string optimizer = "sgd";
  double lr = 0.01;
  double momentum = 0.9;
  bool nesterov = false;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double weight_decay = 0;
  std::string schedule = "constant";
  int64_t warmup_steps = 0;
  int64_t step_size = 1000;
  double gamma = 0.1;
  double min_lr = 0;
  std::string lr_scaling = "none";
  double clip_norm = 0;
  int threads = 0;
  int64_t max_steps = 0;
  double max_memory_mb = 0;
  int64_t log_every = 50;
  std::string on_nonfinite = "fail";
  int64_t max_skipped_steps = 10;
  std::string early_stopping;       // METRIC:PATIENCE (apps/train/early_stopping.hpp); "" : off
  std::string device = "cpu";       // cpu | cuda | auto (apps/common/device_choice.hpp)
  bool tf32 = false;                // TF32 tensor cores for float GEMMs and convolutions on a GPU
  std::string precision = "fp32";   // fp32 | bf16 | auto (core/precision/precision.hpp)
  std::string peak_probe = "auto";  // auto | on | off (core/precision/peak_rate.hpp)
  bool device_prefetch = true;      // stage the next batch on the device during the current step
  // [dist]
  std::string strategy = "auto";  // a strategy shardflow-train registered, or auto
  std::string allreduce = "auto";
  double bucket_mb = 4;
  bool overlap = true;
  std::string device_allreduce = "auto";  // auto | nccl | host (comm/device_allreduce.hpp)
  std::string wire = "float32";
  double watchdog_seconds = 300;
  int pipeline_stages = 1;                 // S
  int tensor_parallel = 1;                 // T
  std::vector<int64_t> stage_boundaries;   // first layer of stages 1..S-1; empty: balanced
  int64_t micro_batches = 0;               // M per step; 0: 2 x S
  std::string pipeline_schedule = "1f1b";  // [dist] schedule: gpipe | 1f1b
  int ps_ranks = 1;
  std::string ps_placement = "last";
  std::string ps_transport = "auto";
  std::string ps_tables = "sparse";
  int64_t max_staleness = -1;
  std::string sharding = "static";
  // [checkpoint]
  std::string checkpoint_dir;
  int64_t checkpoint_every_steps = 0;
  int64_t checkpoint_every_epochs = 1;
  double checkpoint_every_minutes = 0;
  double checkpoint_every_seconds = 0;
  int keep_last = 3;
  std::string warm_start;
  // [log]
  LogOptions log;
  bool trace = false;
  bool tensorboard = true;
  int64_t histogram_every = 100;
  double stall_factor = 10;
  double stall_min_seconds = 1;
  // Flags.
  std::string output = "runs/latest";
  std::string resume;  // "" (start fresh), "latest" (--resume) or "auto" (--resume=auto)
  bool no_progress = false;
  bool overwrite = false;  // train: clear a previous run's checkpoints and metrics in OUTPUT
};

void RegisterExperimentConfig(ConfigSchema& schema, ExperimentConfig* config);

// The model and how a batch feeds it.
struct ModelSetup {
  std::string model_spec = "mlp";   // a preset or a layer spec (core/model.hpp)
  Shape input_shape = {28, 28, 1};  // per sample
  ModelOptions model;
  Task task = Task::kClassify;
  // Which features of a batch are the input and the label (classify) and how the input is
  // converted: uint8 inputs are cast to float32 and multiplied by input_scale (float32 inputs
  // are never scaled).
  std::string input_feature = "image";
  std::string label_feature = "label";
  double input_scale = 1.0;
  // Batches of token sequences may be shorter than the model's context ([data] pad_to = batch
  // or bucket): BatchSpec::shorter_sequences.
  bool shorter_sequences = false;

  // The batch conversion for this model (label_feature "" when the task has no labels).
  BatchSpec batch_spec() const {
    return {input_feature, task == Task::kClassify ? label_feature : "", input_shape, input_scale,
            shorter_sequences};
  }
};

ModelSetup MakeModelSetup(const ExperimentConfig& config);

// Intra-op threads per rank: train.threads when set, else SHARDFLOW_THREADS, else the cores
// the launcher bound this rank to (cpu::DefaultThreadsPerRank over the node's `local_ranks`).
int ResolveThreads(const ExperimentConfig& config, int local_ranks);
// One line warning that `threads` intra-op threads will time-slice on the `bound_cores` CPUs
// the launcher bound this process to (mpirun binds each of 2 or fewer ranks to one core), with
// the flags that give it more; empty when they fit or the binding is unknown (0). `key`: the
// config key that set the threads ("train.threads").
std::string ThreadsOverBindingWarning(int threads, int bound_cores, const std::string& key);

}  // namespace shardflow::apps
