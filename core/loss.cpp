#include "core/loss.hpp"

#include "core/backend/backend.hpp"

namespace shardflow {

int64_t LabelledRows(const Tensor& logits, const Tensor& labels, const char* what) {
  const Shape& z = logits.shape();
  if (z.size() < 2 || labels.shape() != Shape(z.begin(), z.end() - 1)) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(what) +
                    " expects logits (batch, ..., classes) and labels (batch, ...), got " +
                    ShapeToString(logits.shape()) + " and " + ShapeToString(labels.shape()));
  }
  return labels.num_elements();
}

template <typename T>
double SoftmaxCrossEntropy(const Tensor& logits, const Tensor& labels, Tensor* dlogits) {
  const int64_t b = LabelledRows(logits, labels, "cross-entropy"), k = logits.shape().back();
  T* d = nullptr;
  if (dlogits != nullptr) {
    if (dlogits->shape() != logits.shape() || dlogits->dtype() != logits.dtype() ||
        dlogits->device() != logits.device() || !dlogits->owns_storage()) {
      *dlogits = Tensor(logits.dtype(), logits.shape(), logits.device());
    }
    d = dlogits->device_data<T>();
  }
  return BackendFor<T>(logits.device())
      .SoftmaxCrossEntropy(b, k, logits.device_data<T>(), labels.To(logits.device()), d);
}

template <typename T>
double MeanSquaredError(const Tensor& pred, const Tensor& target, Tensor* dpred) {
  if (pred.shape() != target.shape()) {
    throw Error(ErrorCode::kInvalidArgument, "mse: prediction " + ShapeToString(pred.shape()) +
                                                 " and target " + ShapeToString(target.shape()) +
                                                 " differ in shape");
  }
  T* d = nullptr;
  if (dpred != nullptr) {
    if (dpred->shape() != pred.shape() || dpred->dtype() != pred.dtype() ||
        dpred->device() != pred.device() || !dpred->owns_storage()) {
      *dpred = Tensor(pred.dtype(), pred.shape(), pred.device());
    }
    d = dpred->device_data<T>();
  }
  const Tensor t = target.To(pred.device());
  return BackendFor<T>(pred.device())
      .MeanSquaredError(pred.num_elements(), pred.device_data<T>(), t.device_data<T>(), d);
}

template double SoftmaxCrossEntropy<float>(const Tensor&, const Tensor&, Tensor*);
template double SoftmaxCrossEntropy<double>(const Tensor&, const Tensor&, Tensor*);
template double MeanSquaredError<float>(const Tensor&, const Tensor&, Tensor*);
template double MeanSquaredError<double>(const Tensor&, const Tensor&, Tensor*);

}  // namespace shardflow
