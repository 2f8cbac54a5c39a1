// An LSTM's weights in a library's per-gate layout (cuDNN's RNN weight space; core/cuda/
// cudnn_rnn.hpp) and back, as index kernels: the same code on a GPU and in the host twin, so the
// mapping is tested on every machine (tests/core/lstm_weights_test.cpp).
//
// Ours (core/layers/lstm.hpp): kernel W (F, 4H), recurrent U (H, 4H), bias (4H), gates [i f g o]
// side by side in the columns: z = x W + h U + b.
// The library's: per gate q, an input matrix W_q (H, F) and a recurrent matrix R_q (H, H), both
// row-major, and an input bias b_q (H): z_q = W_q x + R_q h + b_q. So W_q[j][f] = W[f][q H + j],
// R_q[j][k] = U[k][q H + j], b_q[j] = b[q H + j]. Where each lies in the space is the library's
// to say (LstmWeightLayout, element offsets); a recurrent bias, if the library has one, is held
// at zero.
#pragma once

#include <cstdint>

#include "core/backend/host_device.hpp"

namespace shardflow::kernels {

// Element offsets of each gate's matrices and biases in a weight space (-1: no such bias).
struct LstmWeightLayout {
  int64_t w[4] = {0, 0, 0, 0};       // W_q (H, F)
  int64_t r[4] = {0, 0, 0, 0};       // R_q (H, H)
  int64_t b[4] = {0, 0, 0, 0};       // b_q (H)
  int64_t rb[4] = {-1, -1, -1, -1};  // a recurrent bias (H), zeroed, or -1
};

// Writes the library's matrices from ours. Index: element of W (F * 4H), then of U (H * 4H),
// then of the bias (4H), then of the recurrent biases (4H; only where rb >= 0).
template <typename T>
struct PackLstmWeightsK {
  LstmWeightLayout l;
  int64_t f, h;
  const T* w;     // (F, 4H)
  const T* u;     // (H, 4H)
  const T* bias;  // (4H)
  T* space;
  SF_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t g4 = 4 * h, nw = f * g4, nu = h * g4;
    if (i < nw) {  // W[r][c] -> W_q[j][r], c = q H + j
      const int64_t r = i / g4, c = i % g4, q = c / h, j = c % h;
      space[l.w[q] + j * f + r] = w[i];
    } else if (i < nw + nu) {
      const int64_t k = i - nw, r = k / g4, c = k % g4, q = c / h, j = c % h;
      space[l.r[q] + j * h + r] = u[k];
    } else if (i < nw + nu + g4) {
      const int64_t c = i - nw - nu, q = c / h, j = c % h;
      space[l.b[q] + j] = bias[c];
    } else {
      const int64_t c = i - nw - nu - g4, q = c / h, j = c % h;
      if (l.rb[q] >= 0) space[l.rb[q] + j] = T(0);
    }
  }
  static int64_t Size(int64_t f, int64_t h) { return (f + h + 2) * 4 * h; }
};

// The adjoint of the packing: adds a gradient in the library's layout into ours (dW, dU,
// dbias +=). A recurrent bias is held at zero by the packing, so its gradient is dropped.
// Index: element of dW (F * 4H), then of dU (H * 4H), then of dbias (4H).
template <typename T>
struct UnpackLstmGradsK {
  LstmWeightLayout l;
  int64_t f, h;
  const T* dspace;
  T* dw;
  T* du;
  T* dbias;
  SF_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t g4 = 4 * h, nw = f * g4, nu = h * g4;
    if (i < nw) {
      const int64_t r = i / g4, c = i % g4, q = c / h, j = c % h;
      dw[i] += dspace[l.w[q] + j * f + r];
    } else if (i < nw + nu) {
      const int64_t k = i - nw, r = k / g4, c = k % g4, q = c / h, j = c % h;
      du[k] += dspace[l.r[q] + j * h + r];
    } else {
      const int64_t c = i - nw - nu, q = c / h, j = c % h;
      dbias[c] += dspace[l.b[q] + j];
    }
  }
  static int64_t Size(int64_t f, int64_t h) { return (f + h + 1) * 4 * h; }
};

}  // namespace shardflow::kernels
