// shardflow-train's options from an experiment config (apps/common/experiment_config.hpp).
// Thread-safety: none; called once from the main thread.
#pragma once

#include <string>

#include "apps/common/experiment_config.hpp"
#include "apps/train/trainer.hpp"

namespace shardflow::train {

// The trainer's options for `ranks` ranks; fills the data specs' batch sizes (per rank) and
// epochs. Throws Error(kInvalidArgument) naming the key for combinations that cannot work
// (e.g. a global batch not divisible by the rank count).
TrainerOptions MakeTrainerOptions(apps::ExperimentConfig* config, int ranks,
                                  const std::string& config_text);

}  // namespace shardflow::train
