// Shape-only layers.
//   Flatten:      (B, d1, d2, ...) -> (B, d1*d2*...)      (shares storage; no copy)
//   RepeatVector: (B, H) -> (B, T, H), each sample's vector repeated T times; the decoder half
//                 of an LSTM autoencoder uses it to turn a latent vector back into a sequence.
//   ZeroPad:      (B, H, W, C) -> (B, H + 2P, W + 2P, C), zeros around each image (Keras'
//                 ZeroPadding2D; ResNet-50's stem pads before its 7x7 convolution and its 3x3
//                 max pooling). Computed as the im2col of a 1x1 window with padding P.
#pragma once

#include <memory>

#include "core/layers/layer.hpp"

namespace shardflow {

template <typename T>
std::unique_ptr<Layer<T>> MakeFlatten();

// REQUIRES: pad > 0.
template <typename T>
std::unique_ptr<Layer<T>> MakeZeroPad(int64_t pad);

// REQUIRES: times > 0.
template <typename T>
std::unique_ptr<Layer<T>> MakeRepeatVector(int64_t times);

}  // namespace shardflow
