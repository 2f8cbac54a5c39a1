// Shape-only layers.
//   Flatten:      (B, d1, d2, ...) -> (B, d1*d2*...)      (shares storage; no copy)
//   RepeatVector: (B, H) -> (B, T, H), each sample's vector repeated T times; the decoder half
//                 of an LSTM autoencoder uses it to turn a latent vector back into a sequence.
#pragma once

#include <memory>

#include "core/layers/layer.hpp"

namespace shardflow {

template <typename T>
std::unique_ptr<Layer<T>> MakeFlatten();

// REQUIRES: times > 0.
template <typename T>
std::unique_ptr<Layer<T>> MakeRepeatVector(int64_t times);

}  // namespace shardflow
