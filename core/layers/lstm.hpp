// LSTM over sequences, trained with full backpropagation through time.
//
// Input (B, T, F); output (B, T, H) when return_sequences, else the last hidden state (B, H).
// Parameters: kernel (F, 4H), recurrent_kernel (H, 4H), bias (4H), gate order i, f, g, o
// (input, forget, cell candidate, output); the forget-gate bias starts at 1.
//   z_t = x_t W + h_{t-1} U + b
//   i = sigmoid(z_i)  f = sigmoid(z_f)  g = tanh(z_g)  o = sigmoid(z_o)
//   c_t = f c_{t-1} + i g          h_t = o tanh(c_t)          h_0 = c_0 = 0
#pragma once

#include <memory>

#include "core/layers/layer.hpp"

namespace shardflow {

struct LstmOptions {
  int64_t units = 0;  // H, required (> 0)
  bool return_sequences = false;
};

template <typename T>
std::unique_ptr<Layer<T>> MakeLstm(const LstmOptions& options);

}  // namespace shardflow
