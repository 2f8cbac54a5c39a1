// Losses: value and gradient with respect to the model output, averaged over the batch.
#pragma once

#include "core/tensor.hpp"

namespace shardflow {

// Softmax cross-entropy with integer labels.
//   logits (B, K) of T; labels (B) of int32 or int64 (uint8 accepted too), each in [0, K).
//   A sequence model's logits (B, S..., K) take labels (B, S...): one per position (a language
//   model's next tokens), N = B * S... rows in all.
// Returns the mean over the N rows of -log softmax(logits)[label], computed stably (max
// subtracted, in double). When dlogits is non-null it is resized to the logits' shape and set to
// (softmax - onehot) / N. A label out of range throws Error(kInvalidArgument) naming the row
// and the value. N = 0 returns 0.
// The number of labelled rows of logits (B, S..., K) and labels (B, S...): B * S...; throws
// Error(kInvalidArgument) naming `what` and both shapes when they do not fit together.
int64_t LabelledRows(const Tensor& logits, const Tensor& labels, const char* what);

template <typename T>
double SoftmaxCrossEntropy(const Tensor& logits, const Tensor& labels, Tensor* dlogits);

// Mean squared error over every element: mean((pred - target)^2). pred and target have the
// same shape; dpred (if non-null) is set to 2 (pred - target) / N.
template <typename T>
double MeanSquaredError(const Tensor& pred, const Tensor& target, Tensor* dpred);

}  // namespace shardflow
