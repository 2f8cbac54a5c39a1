#include "core/loss.hpp"

#include "core/backend/backend.hpp"

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
  T* d = nullptr;
  if (dlogits != nullptr) {
    if (dlogits->shape() != logits.shape() || dlogits->dtype() != logits.dtype() ||
        !dlogits->owns_storage()) {
      *dlogits = Tensor(logits.dtype(), logits.shape());
    }
    d = dlogits->device_data<T>();
  }
  return BackendFor<T>(logits.device())
      .SoftmaxCrossEntropy(b, k, logits.device_data<T>(), labels, d);
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
        !dpred->owns_storage()) {
      *dpred = Tensor(pred.dtype(), pred.shape());
    }
    d = dpred->device_data<T>();
  }
  return BackendFor<T>(pred.device())
      .MeanSquaredError(pred.num_elements(), pred.device_data<T>(), target.device_data<T>(), d);
}

template double SoftmaxCrossEntropy<float>(const Tensor&, const Tensor&, Tensor*);
template double SoftmaxCrossEntropy<double>(const Tensor&, const Tensor&, Tensor*);
template double MeanSquaredError<float>(const Tensor&, const Tensor&, Tensor*);
template double MeanSquaredError<double>(const Tensor&, const Tensor&, Tensor*);

}  // namespace shardflow
