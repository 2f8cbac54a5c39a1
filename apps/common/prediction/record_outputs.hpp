// What a prediction gives one record from its row of the model's output, the same for batch
// prediction (predictor.hpp) and online serving (shardflow-serve), so their answers agree:
//   classify:    the argmax class (first maximum of the logits) and the softmax
//                probabilities, computed in double and stored as float32;
//   reconstruct: the mean squared error between the model's output and its input, summed in
//                double.
// Thread-safety: reentrant.
#pragma once

#include <cstdint>

namespace shardflow::apps {

// Softmax of one row of `k` logits into `probs` (double accumulation); returns the argmax
// (first maximum), or -1 when k <= 0.
int64_t SoftmaxRow(const float* logits, int64_t k, float* probs);

// The mean of (output[j] - input[j])^2 over `width` values, in double; 0 when width <= 0.
double ReconstructionError(const float* output, const float* input, int64_t width);

}  // namespace shardflow::apps
