#include "apps/common/prediction/record_outputs.hpp"

#include <cmath>

namespace shardflow::apps {

int64_t SoftmaxRow(const float* logits, int64_t k, float* probs) {
  if (k <= 0) return -1;
  int64_t best = 0;
  for (int64_t j = 1; j < k; ++j) {
    if (logits[j] > logits[best]) best = j;
  }
  const double max = logits[best];
  double sum = 0;
  for (int64_t j = 0; j < k; ++j) sum += std::exp(static_cast<double>(logits[j]) - max);
  for (int64_t j = 0; j < k; ++j) {
    probs[j] = static_cast<float>(std::exp(static_cast<double>(logits[j]) - max) / sum);
  }
  return best;
}

double ReconstructionError(const float* output, const float* input, int64_t width) {
  double sum = 0;
  for (int64_t j = 0; j < width; ++j) {
    const double d = static_cast<double>(output[j]) - input[j];
    sum += d * d;
  }
  return width > 0 ? sum / static_cast<double>(width) : 0.0;
}

}  // namespace shardflow::apps
