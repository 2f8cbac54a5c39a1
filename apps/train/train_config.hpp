// shardflow-train's configuration: [data] and [eval] (io/pipeline/input_pipeline.hpp), [model],
// [train], [dist], [checkpoint] and [log], each key with its default and a description
// (`shardflow-train --help` lists them all).
#pragma once

#include <string>

#include "apps/train/trainer.hpp"
#include "core/cli.hpp"
#include "core/config.hpp"
#include "io/pipeline/input_pipeline.hpp"

namespace shardflow::train {

struct TrainAppConfig {
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
  int64_t log_every = 50;
  // [dist]
  std::string strategy = "data_parallel";
  std::string allreduce = "auto";
  double bucket_mb = 4;
  bool overlap = true;
  std::string wire = "float32";
  double watchdog_seconds = 300;
  // [checkpoint]
  std::string checkpoint_dir;
  int64_t checkpoint_every_steps = 0;
  double checkpoint_every_minutes = 0;
  int keep_last = 3;
  std::string warm_start;
  // [log]
  LogOptions log;
  bool trace = false;
  // Flags.
  std::string output = "runs/latest";
  bool resume = false;
  bool no_progress = false;
};

void RegisterTrainConfig(ConfigSchema& schema, TrainAppConfig* config);

// The trainer's options for `ranks` ranks; fills the data specs' batch sizes (per rank) and
// epochs. Throws Error(kInvalidArgument) naming the key for combinations that cannot work
// (e.g. a global batch not divisible by the rank count).
TrainerOptions MakeTrainerOptions(TrainAppConfig* config, int ranks,
                                  const std::string& config_text);

}  // namespace shardflow::train
