// Dropout (inverted): in training, each element is kept with probability 1 - rate and scaled by
// 1 / (1 - rate); in inference it is the identity.
//
// The keep/drop decision for element i of the batch at step s is RandomUniform(seed,
// stream(s, layer), i) >= rate: a pure function of (seed, step, layer, element), so masks do
// not depend on thread counts and a resumed run draws the same masks.
#pragma once

#include <memory>

#include "core/layers/layer.hpp"

namespace shardflow {

// REQUIRES: 0 <= rate < 1 (checked).
template <typename T>
std::unique_ptr<Layer<T>> MakeDropout(double rate);

}  // namespace shardflow
