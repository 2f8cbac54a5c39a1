// Index kernels of the reductions: column sums, chunked sums of squares, batch normalisation and
// the losses, shared by the CUDA backend and its host twin (see kernels/elementwise.hpp for what
// an index kernel is). Sums over the rows of a column or channel run in fixed row blocks, as the
// CPU backend's loops do: each block summed from zero with its rows in order, the block sums
// added in block order. On a device that is two passes, one index per (block, column) and then
// one per column adding its blocks, so a conv layer's bias gradient over B x OH x OW rows keeps
// thousands of threads busy instead of one per channel, and the results are still the CPU's
// bits. The long flat sums (SumSquares, MeanSquaredError) are split into chunks whose partial
// sums the backend adds on the host. Statistics and losses accumulate in double, as on the CPU.
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

// Column sums run in blocks of this many rows (cpu::AddColumnSums too).
inline constexpr int64_t kColumnSumRowBlock = 256;
SF_HOST_DEVICE inline int64_t ColumnSumRowBlocks(int64_t rows) {
  return (rows + kColumnSumRowBlock - 1) / kColumnSumRowBlock;
}
// One past the last row of block b of n rows, blocks of `block` rows.
SF_HOST_DEVICE inline int64_t BlockEnd(int64_t b, int64_t block, int64_t n) {
  return (b + 1) * block < n ? (b + 1) * block : n;
}

// partial[b * cols + j] = the sum of column j over row block b, from zero, rows in order.
// Index: b * cols + j.
template <typename T>
struct ColumnBlockSumsK {
  int64_t rows, cols;
  const T* x;
  T* partial;
  SF_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t b = i / cols, j = i % cols;
    T acc = T(0);
    const int64_t end = BlockEnd(b, kColumnSumRowBlock, rows);
    for (int64_t r = b * kColumnSumRowBlock; r < end; ++r) acc += x[r * cols + j];
    partial[i] = acc;
  }
};

// sums (cols) += column sums of x (rows, cols): sums[j] plus each row block's sum, blocks in
// order. With `partial` (ColumnBlockSumsK's) the block sums are read, else computed here (one
// pass, for a single block). Index: column.
template <typename T>
struct AddColumnSumsK {
  int64_t rows, cols;
  const T* x;
  const T* partial;
  T* sums;
  SF_HOST_DEVICE void operator()(int64_t j) const {
    T acc = sums[j];
    const int64_t blocks = ColumnSumRowBlocks(rows);
    for (int64_t b = 0; b < blocks; ++b) {
      if (partial != nullptr) {
        acc += partial[b * cols + j];
        continue;
      }
      T s = T(0);
      const int64_t end = BlockEnd(b, kColumnSumRowBlock, rows);
      for (int64_t r = b * kColumnSumRowBlock; r < end; ++r) s += x[r * cols + j];
      acc += s;
    }
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

// Batch normalisation's sums of one row block of one channel of x (N, C), in double: with
// mean null, partial[b * C + ch] = the sum of x; else the sum of (x - mean[ch])^2. Index:
// b * C + ch over BatchNormRowBlocks(N) x C.
template <typename T>
struct BatchNormBlockSumsK {
  int64_t n, c;
  const T* x;
  const double* mean;
  double* partial;
  SF_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t b = i / c, ch = i % c;
    const int64_t end = BlockEnd(b, kBatchNormRowBlock, n);
    double s = 0.0;
    for (int64_t r = b * kBatchNormRowBlock; r < end; ++r) {
      const double v =
          mean == nullptr ? static_cast<double>(x[r * c + ch]) : x[r * c + ch] - mean[ch];
      s += mean == nullptr ? v : v * v;
    }
    partial[i] = s;
  }
};

// mean[ch] = the block sums of channel ch added in block order, over N. Index: channel.
struct BatchNormMeanK {
  int64_t n, c;
  const double* partial;
  double* mean;
  SF_HOST_DEVICE void operator()(int64_t ch) const {
    double m = 0.0;
    for (int64_t b = 0; b < BatchNormRowBlocks(n); ++b) m += partial[b * c + ch];
    mean[ch] = m / static_cast<double>(n);
  }
};

// The statistics of channel ch: in training (N > 0) the biased variance from the block sums of
// squared deviations (the moving variance takes the unbiased one, as the CPU), the moving
// statistics updated from mean[ch]; otherwise mean[ch] = the moving mean and the moving
// variance. Writes inv_std[ch]. Index: channel.
template <typename T>
struct BatchNormStatsK {
  BatchNormParams p;
  const double* partial;  // BatchNormBlockSumsK's squared deviations (training only)
  T* moving_mean;
  T* moving_var;
  double* mean;
  double* inv_std;
  SF_HOST_DEVICE void operator()(int64_t ch) const {
    const int64_t n = p.n;
    double var = 0.0;
    if (p.training && n > 0) {
      for (int64_t b = 0; b < BatchNormRowBlocks(n); ++b) var += partial[b * p.c + ch];
      const double m = mean[ch];
      const double biased = var / static_cast<double>(n);
      const double unbiased = n > 1 ? var / static_cast<double>(n - 1) : biased;
      moving_mean[ch] = static_cast<T>(p.momentum * moving_mean[ch] + (1.0 - p.momentum) * m);
      moving_var[ch] = static_cast<T>(p.momentum * moving_var[ch] + (1.0 - p.momentum) * unbiased);
      var = biased;
    } else {
      mean[ch] = moving_mean[ch];
      var = moving_var[ch];
    }
    inv_std[ch] = 1.0 / std::sqrt(var + p.epsilon);
  }
};

// xhat = (x - mean) inv_std in T, the one rounding the forward and backward passes share
// (nothing of xhat is kept between them).
template <typename T>
SF_HOST_DEVICE inline T BatchNormXhat(T x, double mean, double inv_std) {
  return static_cast<T>((x - mean) * inv_std);
}

// y = gamma xhat + beta. Index: element of x (N, C).
template <typename T>
struct BatchNormApplyK {
  int64_t c;
  const T* x;
  const T* gamma;
  const T* beta;
  const double* mean;
  const double* inv_std;
  T* y;
  SF_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t ch = i % c;
    y[i] = gamma[ch] * BatchNormXhat(x[i], mean[ch], inv_std[ch]) + beta[ch];
  }
};

// One row block of one channel: partial_d[b * C + ch] = the sum of dy, partial_dh[...] = the
// sum of dy xhat (double, rows in order; xhat from x, mean and inv_std). Index: b * C + ch.
template <typename T>
struct BatchNormGradBlockSumsK {
  int64_t n, c;
  const T* dy;
  const T* x;
  const double* mean;
  const double* inv_std;
  double* partial_d;
  double* partial_dh;
  SF_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t b = i / c, ch = i % c;
    const int64_t end = BlockEnd(b, kBatchNormRowBlock, n);
    double bd = 0.0, bdh = 0.0;
    for (int64_t r = b * kBatchNormRowBlock; r < end; ++r) {
      bd += dy[r * c + ch];
      bdh += dy[r * c + ch] * BatchNormXhat(x[r * c + ch], mean[ch], inv_std[ch]);
    }
    partial_d[i] = bd;
    partial_dh[i] = bdh;
  }
};

// Per channel: sum_d and sum_dh, the block sums added in block order; dgamma += sum_dh, dbeta
// += sum_d. Index: channel.
template <typename T>
struct BatchNormGradSumsK {
  int64_t n, c;
  const double* partial_d;
  const double* partial_dh;
  double* sum_d;
  double* sum_dh;
  T* dgamma;
  T* dbeta;
  SF_HOST_DEVICE void operator()(int64_t ch) const {
    double sd = 0.0, sdh = 0.0;
    for (int64_t b = 0; b < BatchNormRowBlocks(n); ++b) {
      sd += partial_d[b * c + ch];
      sdh += partial_dh[b * c + ch];
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
  const T* x;
  const T* gamma;
  const double* mean;
  const double* inv_std;
  const double* sum_d;
  const double* sum_dh;
  T* dx;
  SF_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t ch = i % p.c;
    const double n = static_cast<double>(p.n);
    if (p.training) {
      const T xhat = BatchNormXhat(x[i], mean[ch], inv_std[ch]);
      dx[i] =
          static_cast<T>(gamma[ch] * inv_std[ch] / n * (n * dy[i] - sum_d[ch] - xhat * sum_dh[ch]));
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
