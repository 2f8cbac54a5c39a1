#include "core/loss.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace shardflow {

int64_t LabelAt(const Tensor& labels, int64_t i) {
  switch (labels.dtype()) {
    case DType::kInt32:
      return labels.data<int32_t>()[i];
    case DType::kInt64:
      return labels.data<int64_t>()[i];
    case DType::kUInt8:
      return labels.data<uint8_t>()[i];
    default:
      throw Error(
          ErrorCode::kInvalidArgument,
          std::string("labels must be an integer tensor, got ") + DTypeName(labels.dtype()));
  }
}

template <typename T>
double SoftmaxCrossEntropy(const Tensor& logits, const Tensor& labels, Tensor* dlogits) {
  if (logits.rank() != 2 || labels.rank() != 1 || labels.dim(0) != logits.dim(0)) {
    throw Error(ErrorCode::kInvalidArgument,
                "cross-entropy expects logits (batch, classes) and labels (batch), got " +
                    ShapeToString(logits.shape()) + " and " + ShapeToString(labels.shape()));
  }
  const int64_t b = logits.dim(0), k = logits.dim(1);
  const T* z = logits.data<T>();
  T* d = nullptr;
  if (dlogits != nullptr) {
    if (dlogits->shape() != logits.shape() || dlogits->dtype() != logits.dtype() ||
        !dlogits->owns_storage()) {
      *dlogits = Tensor(logits.dtype(), logits.shape());
    }
    d = dlogits->data<T>();
  }
  double total = 0.0;
  std::vector<double> p(static_cast<size_t>(k));
  for (int64_t i = 0; i < b; ++i) {
    const int64_t label = LabelAt(labels, i);
    if (label < 0 || label >= k) {
      throw Error(ErrorCode::kInvalidArgument,
                  "label " + std::to_string(label) + " of batch row " + std::to_string(i) +
                      " is outside [0, " + std::to_string(k) + ")",
                  {.record = i, .hint = "check the number of classes of the model's last layer"});
    }
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

template <typename T>
double MeanSquaredError(const Tensor& pred, const Tensor& target, Tensor* dpred) {
  if (pred.shape() != target.shape()) {
    throw Error(ErrorCode::kInvalidArgument, "mse: prediction " + ShapeToString(pred.shape()) +
                                                 " and target " + ShapeToString(target.shape()) +
                                                 " differ in shape");
  }
  const int64_t n = pred.num_elements();
  const T* y = pred.data<T>();
  const T* t = target.data<T>();
  T* d = nullptr;
  if (dpred != nullptr) {
    if (dpred->shape() != pred.shape() || dpred->dtype() != pred.dtype() ||
        !dpred->owns_storage()) {
      *dpred = Tensor(pred.dtype(), pred.shape());
    }
    d = dpred->data<T>();
  }
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double e = static_cast<double>(y[i]) - static_cast<double>(t[i]);
    total += e * e;
    if (d != nullptr) d[i] = static_cast<T>(2.0 * e / static_cast<double>(n));
  }
  return n == 0 ? 0.0 : total / static_cast<double>(n);
}

template double SoftmaxCrossEntropy<float>(const Tensor&, const Tensor&, Tensor*);
template double SoftmaxCrossEntropy<double>(const Tensor&, const Tensor&, Tensor*);
template double MeanSquaredError<float>(const Tensor&, const Tensor&, Tensor*);
template double MeanSquaredError<double>(const Tensor&, const Tensor&, Tensor*);

}  // namespace shardflow
