// Batch normalisation over the last (channel) dimension: for NHWC images the statistics are
// taken over batch, height and width; for (B, F) over the batch.
//
// Training mode normalises with the batch mean and (biased) variance and updates the running
// statistics: running = momentum * running + (1 - momentum) * batch (the variance update uses
// the unbiased batch variance). Inference mode normalises with the running statistics.
// Parameters gamma (C, starts at 1) and beta (C, starts at 0); buffers moving_mean and
// moving_variance (C) are saved in checkpoints but not trained.
#pragma once

#include <memory>

#include "core/layers/layer.hpp"

namespace shardflow {

struct BatchNormOptions {
  double momentum = 0.99;  // weight of the old running statistics (Keras convention)
  double epsilon = 1e-3;
};

template <typename T>
std::unique_ptr<Layer<T>> MakeBatchNorm(const BatchNormOptions& options);

}  // namespace shardflow
