// Index kernels of the reductions: column sums, chunked sums of squares, batch normalisation and
// the losses, shared by the CUDA backend and its host twin (see kernels/elementwise.hpp for what
// an index kernel is). A reduction over a dimension is a serial loop inside one index (a column,
// a channel, a row), in the same order as the CPU backend's loop, so per-column and per-channel
// results are the CPU's sums; only the long flat sums (SumSquares, MeanSquaredError) are split
// into chunks whose partial sums the backend adds on the host. Statistics and losses accumulate
// in double, as on the CPU.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/backend/backend.hpp"
#include "core/backend/host_device.hpp"

namespace shardflow::kernels {

// The flat sums are cut into chunks of this many elements: one index per chunk.
inline constexpr int64_t kSumChunk = 4096;
SF_HOST_DEVICE inline int64_t SumChunks(int64_t n) { return (n + kSumChunk - 1) / kSumChunk; }
// Batch normalisation's per-channel sums over N rows run in blocks of this many rows: each
// block's sum from zero, rows in order, the block sums added in block order (the CPU backend
// computes the blocks in parallel, cpu/batch_norm.cpp).
inline constexpr int64_t kBatchNormRowBlock = 1024;
SF_HOST_DEVICE inline int64_t BatchNormRowBlocks(int64_t n) {
  return (n + kBatchNormRowBlock - 1) / kBatchNormRowBlock;
}

// One past the last element of chunk q of n elements.
SF_HOST_DEVICE inline int64_t ChunkEnd(int64_t q, int64_t n) {
  return (q + 1) * kSumChunk < n ? (q + 1) * kSumChunk : n;
}

// sums (cols) += column sums of x (rows, cols), rows in order. Index: column.
template <typename T>
struct AddColumnSumsK {
  int64_t rows, cols;
  const T* x;
  T* sums;
  SF_HOST_DEVICE void operator()(int64_t j) const {
    T acc = sums[j];
    for (int64_t r = 0; r < rows; ++r) acc += x[r * cols + j];
    sums[j] = acc;
  }
};

// partial[q] = sum of x[i]^2 over chunk q, in double. Index: chunk.
template <typename T>
struct SumSquaresChunkK {
  int64_t n;
  const T* x;
  double* partial;
  SF_HOST_DEVICE void operator()(int64_t q) const {
    const int64_t end = ChunkEnd(q, n);
    double s = 0.0;
    for (int64_t i = q * kSumChunk; i < end; ++i) s += static_cast<double>(x[i]) * x[i];
    partial[q] = s;
  }
};

// Mean squared error: d[i] = 2 (y - t) / n for the chunk's elements (unless d is null) and
// partial[q] = the chunk's sum of squared errors. Index: chunk.
template <typename T>
struct SquaredErrorChunkK {
  int64_t n;
  const T* y;
  const T* t;
  T* d;
  double* partial;
  SF_HOST_DEVICE void operator()(int64_t q) const {
    const int64_t end = ChunkEnd(q, n);
    double s = 0.0;
    for (int64_t i = q * kSumChunk; i < end; ++i) {
      const double e = static_cast<double>(y[i]) - static_cast<double>(t[i]);
      s += e * e;
      if (d != nullptr) d[i] = static_cast<T>(2.0 * e / static_cast<double>(n));
    }
    partial[q] = s;
  }
};

// Batch normalisation statistics of channel ch over x (N, C): in training the batch mean and
// biased variance (the moving variance takes the unbiased one, as the CPU); otherwise the moving
// statistics. Writes mean[ch] (double) and inv_std[ch]. The sums run in row blocks as the CPU's
// (kBatchNormRowBlock). Index: channel.
template <typename T>
struct BatchNormStatsK {
  BatchNormParams p;
  const T* x;
  T* moving_mean;
  T* moving_var;
  double* mean;
  double* inv_std;
  SF_HOST_DEVICE void operator()(int64_t ch) const {
    const int64_t n = p.n, c = p.c;
    double m = 0.0, var = 0.0;
    if (p.training && n > 0) {
      for (int64_t b0 = 0; b0 < n; b0 += kBatchNormRowBlock) {
        const int64_t b1 = b0 + kBatchNormRowBlock < n ? b0 + kBatchNormRowBlock : n;
        double s = 0.0;
        for (int64_t r = b0; r < b1; ++r) s += x[r * c + ch];
        m += s;
      }
      m /= static_cast<double>(n);
      for (int64_t b0 = 0; b0 < n; b0 += kBatchNormRowBlock) {
        const int64_t b1 = b0 + kBatchNormRowBlock < n ? b0 + kBatchNormRowBlock : n;
        double s = 0.0;
        for (int64_t r = b0; r < b1; ++r) {
          const double e = x[r * c + ch] - m;
          s += e * e;
        }
        var += s;
      }
      const double biased = var / static_cast<double>(n);
      const double unbiased = n > 1 ? var / static_cast<double>(n - 1) : biased;
      moving_mean[ch] = static_cast<T>(p.momentum * moving_mean[ch] + (1.0 - p.momentum) * m);
      moving_var[ch] = static_cast<T>(p.momentum * moving_var[ch] + (1.0 - p.momentum) * unbiased);
      var = biased;
    } else {
      m = moving_mean[ch];
      var = moving_var[ch];
    }
    mean[ch] = m;
    inv_std[ch] = 1.0 / std::sqrt(var + p.epsilon);
  }
};

// xhat = (x - mean) inv_std, y = gamma xhat + beta. Index: element of x (N, C).
template <typename T>
struct BatchNormApplyK {
  int64_t c;
  const T* x;
  const T* gamma;
  const T* beta;
  const double* mean;
  const double* inv_std;
  T* xhat;
  T* y;
  SF_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t ch = i % c;
    xhat[i] = static_cast<T>((x[i] - mean[ch]) * inv_std[ch]);
    y[i] = gamma[ch] * xhat[i] + beta[ch];
  }
};

// Per channel: sum_d = sum of dy, sum_dh = sum of dy xhat (double, in row blocks as above); dgamma
// += sum_dh, dbeta += sum_d. Index: channel.
template <typename T>
struct BatchNormGradSumsK {
  int64_t n, c;
  const T* dy;
  const T* xhat;
  double* sum_d;
  double* sum_dh;
  T* dgamma;
  T* dbeta;
  SF_HOST_DEVICE void operator()(int64_t ch) const {
    double sd = 0.0, sdh = 0.0;
    for (int64_t b0 = 0; b0 < n; b0 += kBatchNormRowBlock) {
      const int64_t b1 = b0 + kBatchNormRowBlock < n ? b0 + kBatchNormRowBlock : n;
      double bd = 0.0, bdh = 0.0;
      for (int64_t r = b0; r < b1; ++r) {
        bd += dy[r * c + ch];
        bdh += dy[r * c + ch] * xhat[r * c + ch];
      }
      sd += bd;
      sdh += bdh;
    }
    sum_d[ch] = sd;
    sum_dh[ch] = sdh;
    dgamma[ch] += static_cast<T>(sdh);
    dbeta[ch] += static_cast<T>(sd);
  }
};

// dx: training, inv_std / N (N dy gamma - gamma sum_d - xhat gamma sum_dh); inference,
// dy gamma inv_std. Index: element of dx (N, C).
template <typename T>
struct BatchNormGradApplyK {
  BatchNormParams p;
  const T* dy;
  const T* xhat;
  const T* gamma;
  const double* inv_std;
  const double* sum_d;
  const double* sum_dh;
  T* dx;
  SF_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t ch = i % p.c;
    const double n = static_cast<double>(p.n);
    if (p.training) {
      dx[i] = static_cast<T>(gamma[ch] * inv_std[ch] / n *
                             (n * dy[i] - sum_d[ch] - xhat[i] * sum_dh[ch]));
    } else {
      dx[i] = static_cast<T>(dy[i] * gamma[ch] * inv_std[ch]);
    }
  }
};

// Softmax cross-entropy of row i of the logits z (B, K) with an integer label of type L:
// loss[i] = log sum exp(z - max) - (z[label] - max), and the row of d = (softmax - onehot) / B
// unless d is null. label_seen[i] gets the label; a label outside [0, K) writes loss 0 and
// leaves its row of d alone (the backend reports the first such row). Index: row.
template <typename T, typename L>
struct SoftmaxCrossEntropyRowK {
  int64_t b, k;
  const T* z;
  const L* labels;
  T* d;
  double* loss;
  int64_t* label_seen;
  SF_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t label = static_cast<int64_t>(labels[i]);
    label_seen[i] = label;
    if (label < 0 || label >= k) {
      loss[i] = 0.0;
      return;
    }
    const T* row = z + i * k;
    T mx_t = row[0];
    for (int64_t j = 1; j < k; ++j) mx_t = row[j] > mx_t ? row[j] : mx_t;
    const double mx = mx_t;
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j) sum += std::exp(static_cast<double>(row[j]) - mx);
    loss[i] = std::log(sum) - (static_cast<double>(row[label]) - mx);
    if (d == nullptr) return;
    for (int64_t j = 0; j < k; ++j) {
      const double p = std::exp(static_cast<double>(row[j]) - mx);
      d[i * k + j] = static_cast<T>((p / sum - (j == label ? 1.0 : 0.0)) / static_cast<double>(b));
    }
  }
};

}  // namespace shardflow::kernels
