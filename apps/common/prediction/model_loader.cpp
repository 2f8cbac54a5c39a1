#include "apps/common/prediction/model_loader.hpp"

#include <filesystem>

#include "core/error.hpp"
#include "io/checkpoint/checkpoint.hpp"

namespace shardflow::apps {

LoadedModel LoadModel(const ModelSetup& options, const std::string& checkpoint, LayerRange range) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(checkpoint, ec)) {
    throw Error(ErrorCode::kNotFound, "checkpoint not found", {.file = checkpoint});
  }
  LoadedModel out;
  out.model = std::make_unique<Sequential<float>>(options.model_spec, options.input_shape,
                                                  options.model, range);
  if (fs::is_directory(checkpoint, ec)) {
    CheckpointOptions dir{.dir = checkpoint};
    TrainingState state;
    out.checkpoint = LoadLatestCheckpoint(dir, *out.model, nullptr, &state);
    if (out.checkpoint.empty()) {
      throw Error(ErrorCode::kNotFound, "no intact checkpoint (ckpt-*.h5) in the directory",
                  {.file = checkpoint});
    }
  } else {
    LoadWeights(checkpoint, *out.model);
    out.checkpoint = checkpoint;
  }
  return out;
}

}  // namespace shardflow::apps
