// Metrics: accuracy, mean loss, reconstruction error, accumulated over batches; the exact AUC.
//
// Sums are kept as (sum, count) pairs so ranks can all-reduce them and get exact global means.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.hpp"

namespace shardflow {

// Rows of logits (B, K) whose argmax (first maximum) equals the label (int labels, (B)); of a
// sequence model's logits (B, S..., K) and labels (B, S...), the positions (out of B * S...).
template <typename T>
int64_t CountCorrect(const Tensor& logits, const Tensor& labels);

// Over the B samples, the sum of each sample's fraction of correct positions: CountCorrect for
// logits (B, K); for a sequence model's (B, S..., K), CountCorrect / S..., so that this sum over
// the samples seen, divided by their number, is the per-position accuracy (next-token accuracy).
template <typename T>
double CorrectPerSample(const Tensor& logits, const Tensor& labels);

// Per-sample mean squared error of pred vs target, summed over the batch (divide by B for the
// mean reconstruction error).
template <typename T>
double SumReconstructionError(const Tensor& pred, const Tensor& target);

// The area under the ROC curve of scores for binary labels, exactly: the probability that a
// positive scores above a negative, ties counting one half (Mann-Whitney U over the sorted
// scores, O(n log n)); what tf.keras.metrics.AUC approaches with many thresholds. `positive[i]`
// is sample i's label (0 or 1). Returns NaN when either class is absent.
double ExactAuc(const std::vector<double>& scores, const std::vector<uint8_t>& positive);

// A running mean over batches (loss weighted by batch size, accuracy as correct / seen).
struct MeanMetric {
  double sum = 0.0;
  double count = 0.0;
  void Add(double value_sum, double n) {
    sum += value_sum;
    count += n;
  }
  double Mean() const { return count > 0 ? sum / count : 0.0; }
  void Reset() { sum = count = 0.0; }
};

}  // namespace shardflow
