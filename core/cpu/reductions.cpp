// Reduction CPU kernels: column sums (bias gradients), sums of squares (gradient norms), batch
// normalisation (per-channel statistics) and the losses. Statistics and losses accumulate in
// double.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cpu/kernels.hpp"

namespace shardflow::cpu {
// sums (cols) += column sums of x (rows, cols), row by row.
template <typename T>
void AddColumnSums(int64_t rows, int64_t cols, const T* x, T* sums) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) sums[j] += x[r * cols + j];
}

template <typename T>
double SumSquares(int64_t n, const T* x) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

// x (N, C). Training: batch mean and biased variance (the moving variance takes the unbiased
// one); inference: the moving statistics. xhat = (x - mean) inv_std, y = gamma xhat + beta.
template <typename T>
void BatchNorm(const BatchNormParams& p, const T* x, const T* gamma, const T* beta, T* moving_mean,
               T* moving_var, double* inv_std, T* xhat, T* y) {
  const int64_t n = p.n, c = p.c;
  std::vector<double> mean(static_cast<size_t>(c), 0.0), var(static_cast<size_t>(c), 0.0);
  if (p.training && n > 0) {
    for (int64_t r = 0; r < n; ++r)
      for (int64_t ch = 0; ch < c; ++ch) mean[ch] += x[r * c + ch];
    for (auto& m : mean) m /= static_cast<double>(n);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t ch = 0; ch < c; ++ch) {
        const double e = x[r * c + ch] - mean[ch];
        var[ch] += e * e;
      }
    for (int64_t ch = 0; ch < c; ++ch) {
      const double biased = var[ch] / static_cast<double>(n);
      const double unbiased = n > 1 ? var[ch] / static_cast<double>(n - 1) : biased;
      moving_mean[ch] =
          static_cast<T>(p.momentum * moving_mean[ch] + (1.0 - p.momentum) * mean[ch]);
      moving_var[ch] = static_cast<T>(p.momentum * moving_var[ch] + (1.0 - p.momentum) * unbiased);
      var[ch] = biased;
    }
  } else {
    for (int64_t ch = 0; ch < c; ++ch) {
      mean[ch] = moving_mean[ch];
      var[ch] = moving_var[ch];
    }
  }
  for (int64_t ch = 0; ch < c; ++ch) inv_std[ch] = 1.0 / std::sqrt(var[ch] + p.epsilon);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t ch = 0; ch < c; ++ch) {
      const int64_t i = r * c + ch;
      xhat[i] = static_cast<T>((x[i] - mean[ch]) * inv_std[ch]);
      y[i] = gamma[ch] * xhat[i] + beta[ch];
    }
}

// Training: dx = inv_std / N * (N dxhat - sum(dxhat) - xhat sum(dxhat xhat)), dxhat = dy gamma.
// Inference: the statistics are constants, dx = dy gamma inv_std.
template <typename T>
void BatchNormGrad(const BatchNormParams& p, const T* d, const T* hp, const T* g,
                   const double* inv_std, T* dg, T* db, T* o) {
  const int64_t n = p.n, c = p.c;
  std::vector<double> sum_d(static_cast<size_t>(c), 0.0), sum_dh(static_cast<size_t>(c), 0.0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t ch = 0; ch < c; ++ch) {
      sum_d[ch] += d[r * c + ch];
      sum_dh[ch] += d[r * c + ch] * hp[r * c + ch];
    }
  for (int64_t ch = 0; ch < c; ++ch) {
    dg[ch] += static_cast<T>(sum_dh[ch]);
    db[ch] += static_cast<T>(sum_d[ch]);
  }
  if (o == nullptr) return;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t ch = 0; ch < c; ++ch) {
      const int64_t i = r * c + ch;
      if (p.training) {
        // sums of dxhat = gamma * sums of dy
        o[i] = static_cast<T>(g[ch] * inv_std[ch] / static_cast<double>(n) *
                              (static_cast<double>(n) * d[i] - sum_d[ch] - hp[i] * sum_dh[ch]));
      } else {
        o[i] = static_cast<T>(d[i] * g[ch] * inv_std[ch]);
      }
    }
}

// z (B, K) logits; per row the log-sum-exp shifted by the row maximum; d = (softmax - onehot) / B.
template <typename T>
double SoftmaxCrossEntropy(int64_t b, int64_t k, const T* z, const Tensor& labels, T* d) {
  double total = 0.0;
  std::vector<double> p(static_cast<size_t>(k));
  for (int64_t i = 0; i < b; ++i) {
    const int64_t label = LabelAt(labels, i);
    if (label < 0 || label >= k) ThrowLabelOutOfRange(label, i, k);
    const T* row = z + i * k;
    const double mx = *std::max_element(row, row + k);
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j) {
      p[j] = std::exp(static_cast<double>(row[j]) - mx);
      sum += p[j];
    }
    total += std::log(sum) - (static_cast<double>(row[label]) - mx);
    if (d != nullptr) {
      for (int64_t j = 0; j < k; ++j) {
        d[i * k + j] = static_cast<T>((p[j] / sum - (j == label ? 1.0 : 0.0)) / b);
      }
    }
  }
  return b == 0 ? 0.0 : total / static_cast<double>(b);
}

// y, target, d (n) flat; d = 2 (y - target) / n.
template <typename T>
double MeanSquaredError(int64_t n, const T* y, const T* t, T* d) {
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double e = static_cast<double>(y[i]) - static_cast<double>(t[i]);
    total += e * e;
    if (d != nullptr) d[i] = static_cast<T>(2.0 * e / static_cast<double>(n));
  }
  return n == 0 ? 0.0 : total / static_cast<double>(n);
}

#define SF_INSTANTIATE(T)                                                                  \
  template void AddColumnSums<T>(int64_t, int64_t, const T*, T*);                          \
  template double SumSquares<T>(int64_t, const T*);                                        \
  template void BatchNorm<T>(const BatchNormParams&, const T*, const T*, const T*, T*, T*, \
                             double*, T*, T*);                                             \
  template void BatchNormGrad<T>(const BatchNormParams&, const T*, const T*, const T*,     \
                                 const double*, T*, T*, T*);                               \
  template double SoftmaxCrossEntropy<T>(int64_t, int64_t, const T*, const Tensor&, T*);   \
  template double MeanSquaredError<T>(int64_t, const T*, const T*, T*);
SF_INSTANTIATE(float)
SF_INSTANTIATE(double)
#undef SF_INSTANTIATE

}  // namespace shardflow::cpu
