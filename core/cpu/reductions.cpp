// Reduction CPU kernels: column sums (bias gradients), sums of squares (gradient norms) and the
// losses. Losses accumulate in double. (Batch normalisation: cpu/batch_norm.cpp.)
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/backend/kernels/reductions.hpp"
#include "core/cpu/kernels.hpp"

namespace shardflow::cpu {
// sums (cols) += column sums of x (rows, cols), in row blocks.
// Columns in tiles of 64 kept in a local array (sums may alias nothing the compiler can prove,
// so summing into it directly stored and reloaded every element); each column's sum is still
// sums[j] plus each block of kColumnSumRowBlock rows summed from zero, blocks in order, as the
// kernel backend's AddColumnSumsK (whose blocks a device sums in parallel).
template <typename T>
void AddColumnSums(int64_t rows, int64_t cols, const T* x, T* sums) {
  constexpr int64_t kTile = 64;
  constexpr int64_t kBlock = kernels::kColumnSumRowBlock;
  for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
    const int64_t w = std::min(kTile, cols - j0);
    T total[kTile], acc[kTile];
    for (int64_t j = 0; j < w; ++j) total[j] = sums[j0 + j];
    for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
      const int64_t r1 = std::min(rows, r0 + kBlock);
      std::fill_n(acc, kTile, T(0));
      if (w == kTile) {
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t j = 0; j < kTile; ++j) acc[j] += x[r * cols + j0 + j];
      } else {
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t j = 0; j < w; ++j) acc[j] += x[r * cols + j0 + j];
      }
      for (int64_t j = 0; j < w; ++j) total[j] += acc[j];
    }
    for (int64_t j = 0; j < w; ++j) sums[j0 + j] = total[j];
  }
}

template <typename T>
double SumSquares(int64_t n, const T* x) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
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

#define SF_INSTANTIATE(T)                                                                \
  template void AddColumnSums<T>(int64_t, int64_t, const T*, T*);                        \
  template double SumSquares<T>(int64_t, const T*);                                      \
  template double SoftmaxCrossEntropy<T>(int64_t, int64_t, const T*, const Tensor&, T*); \
  template double MeanSquaredError<T>(int64_t, const T*, const T*, T*);
SF_INSTANTIATE(float)
SF_INSTANTIATE(double)
#undef SF_INSTANTIATE

}  // namespace shardflow::cpu
