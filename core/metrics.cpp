#include "core/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/loss.hpp"

namespace shardflow {

template <typename T>
int64_t CountCorrect(const Tensor& logits, const Tensor& labels) {
  const int64_t b = LabelledRows(logits, labels, "accuracy"), k = logits.shape().back();
  // Counted on the host: a model on a device hands its logits over (B x K values).
  const Tensor host = logits.To(Device::kCpu), host_labels = labels.To(Device::kCpu);
  const T* z = host.data<T>();
  int64_t correct = 0;
  for (int64_t i = 0; i < b; ++i) {
    int64_t best = 0;
    for (int64_t j = 1; j < k; ++j)
      if (z[i * k + j] > z[i * k + best]) best = j;
    correct += best == LabelAt(host_labels, i) ? 1 : 0;
  }
  return correct;
}

template <typename T>
double CorrectPerSample(const Tensor& logits, const Tensor& labels) {
  const int64_t correct = CountCorrect<T>(logits, labels);
  const int64_t b = labels.rank() > 0 ? labels.dim(0) : 0;
  if (b == 0) return 0.0;
  return static_cast<double>(correct) * static_cast<double>(b) /
         static_cast<double>(labels.num_elements());
}

template <typename T>
double SumReconstructionError(const Tensor& pred, const Tensor& target) {
  if (pred.shape() != target.shape() || pred.rank() == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "reconstruction error: prediction " + ShapeToString(pred.shape()) + " and target " +
                    ShapeToString(target.shape()) + " differ in shape");
  }
  const int64_t b = pred.dim(0);
  if (b == 0) return 0.0;
  const int64_t per = pred.num_elements() / b;
  const Tensor host_pred = pred.To(Device::kCpu), host_target = target.To(Device::kCpu);
  const T* y = host_pred.data<T>();
  const T* t = host_target.data<T>();
  double total = 0.0;
  for (int64_t i = 0; i < b; ++i) {
    double s = 0.0;
    for (int64_t j = 0; j < per; ++j) {
      const double e = static_cast<double>(y[i * per + j]) - static_cast<double>(t[i * per + j]);
      s += e * e;
    }
    total += per > 0 ? s / static_cast<double>(per) : 0.0;
  }
  return total;
}

template int64_t CountCorrect<float>(const Tensor&, const Tensor&);
template int64_t CountCorrect<double>(const Tensor&, const Tensor&);
template double CorrectPerSample<float>(const Tensor&, const Tensor&);
template double CorrectPerSample<double>(const Tensor&, const Tensor&);
template double SumReconstructionError<float>(const Tensor&, const Tensor&);
template double SumReconstructionError<double>(const Tensor&, const Tensor&);

double ExactAuc(const std::vector<double>& scores, const std::vector<uint8_t>& positive) {
  const size_t n = scores.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  // Sum of the positives' ranks (1-based, ties sharing their mean rank).
  double rank_sum = 0, positives = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    double tied_positives = 0;
    while (j < n && scores[order[j]] == scores[order[i]]) tied_positives += positive[order[j++]];
    rank_sum += tied_positives * (static_cast<double>(i + 1 + j) / 2.0);
    positives += tied_positives;
    i = j;
  }
  const double negatives = static_cast<double>(n) - positives;
  if (positives == 0 || negatives == 0) return std::nan("");
  return (rank_sum - positives * (positives + 1) / 2.0) / (positives * negatives);
}

}  // namespace shardflow
