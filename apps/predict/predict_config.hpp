// shardflow-predict's configuration: the training config's sections (so the file that trained
// a model also predicts with it: [data] for the input format and features, [model] for the
// network) plus [predict] and the command-line flags.
//
// The input spec is rewritten for prediction (PrepareInputSpec): --input replaces data.files,
// files are read in listed order, no shuffle, one pass, drop_remainder off, the augmentations'
// deterministic counterpart (pipeline::EvaluationAugmentations: random_resized_crop becomes
// center_crop, other random ones are dropped, resize/scale/normalize are kept), and the
// pipeline yields single records (batch_size 1) so every record keeps its own element id; the
// predictor stacks them into model batches of predict.batch_size.
// Thread-safety: none; call from the main thread during the parse phase.
#pragma once

#include <cstdint>
#include <string>

#include "apps/common/experiment_config.hpp"
#include "core/cli.hpp"
#include "core/config.hpp"

namespace shardflow::predict {

struct PredictAppConfig {
  apps::ExperimentConfig train;  // [data] [eval] [model] [train] ... of the training config
  // [predict]
  int64_t batch_size = 256;       // records per forward pass
  std::string id_feature = "id";  // "" : always the pipeline element's id
  // Flags.
  std::string checkpoint;  // a checkpoint file or a directory of checkpoints
  std::string input;       // comma-separated globs replacing data.files ("" : keep data.files)
  std::string output;      // *.h5: HDF5; anything else: CSV
  std::string generate;    // a prompt: sample text from a language model instead (generate.hpp)
  // [predict] sampling of --generate
  int64_t generate_tokens = 200;
  double temperature = 1.0;
  int64_t top_k = 0;
  int64_t seed = 1;
};

// Registers the training sections and [predict]. REQUIRES: *config outlives the schema.
void RegisterPredictConfig(ConfigSchema& schema, PredictAppConfig* config);

// Adds --checkpoint, --input and --output to `app`.
void AddPredictFlags(AppSpec& app, PredictAppConfig* config);

// Checks the flags (Error(kInvalidArgument) naming the flag) and rewrites config->train.data for
// prediction as described at the top. For TFRecord inputs whose feature list lacks the id
// feature, appends "<id_feature>:int64:int64:scalar:-1" (records without it decode to -1,
// which the predictor replaces by the element id).
void PrepareInputSpec(PredictAppConfig* config);

// True when `output` names an HDF5 file (ends in .h5 or .hdf5).
bool IsHdf5Output(const std::string& output);

}  // namespace shardflow::predict
