// Losses: value and gradient with respect to the model output, averaged over the batch.
#pragma once

#include "core/tensor.hpp"

namespace shardflow {

// Softmax cross-entropy with integer labels.
//   logits (B, K) of T; labels (B) of int32 or int64 (uint8 accepted too), each in [0, K).
// Returns the mean over the batch of -log softmax(logits)[label], computed stably (max
// subtracted, in double). When dlogits is non-null it is resized to (B, K) and set to
// (softmax - onehot) / B. A label out of range throws Error(kInvalidArgument) naming the row
// and the value. B = 0 returns 0.
template <typename T>
double SoftmaxCrossEntropy(const Tensor& logits, const Tensor& labels, Tensor* dlogits);

// Mean squared error over every element: mean((pred - target)^2). pred and target have the
// same shape; dpred (if non-null) is set to 2 (pred - target) / N.
template <typename T>
double MeanSquaredError(const Tensor& pred, const Tensor& target, Tensor* dpred);

}  // namespace shardflow
