// Builds the model of a training config's [model] section and loads a checkpoint into it.
//
// `checkpoint` is a checkpoint file, or a directory of checkpoint files (ckpt-<step>.h5, as
// shardflow-train writes them) of which the newest intact one is loaded (damaged ones are
// skipped with a warning). Errors (one line each):
//   Error(kNotFound) naming the path when it does not exist or the directory holds none;
//   Error(kInvalidArgument) naming the parameter and both shapes when the checkpoint does not
//     fit the model spec (LoadWeights);
//   Error(kDataLoss) for a damaged file;
//   Error(kDataLoss) naming the tensor for a checkpoint holding NaN or Inf (in a folder it is
//     refused, not skipped for an earlier one: io/checkpoint/checkpoint.hpp).
// Thread-safety: none.
#pragma once

#include <memory>
#include <string>

#include "apps/common/experiment_config.hpp"
#include "core/model.hpp"

namespace shardflow::apps {

struct LoadedModel {
  std::unique_ptr<Sequential<float>> model;
  std::string checkpoint;  // the file loaded
};

// `range`: the layers this rank holds (a pipeline stage); options.model.tensor_parallel: its
// tensor way. The checkpoint is the whole model's file whatever grid wrote it; a part loads its
// own parameters (io/checkpoint/checkpoint.hpp).
LoadedModel LoadModel(const ModelSetup& options, const std::string& checkpoint,
                      LayerRange range = {});

}  // namespace shardflow::apps
