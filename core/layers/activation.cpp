#include "core/layers/activation.hpp"

#include <cmath>

namespace shardflow {

ActivationKind ParseActivation(const std::string& name) {
  for (ActivationKind k : {ActivationKind::kRelu, ActivationKind::kGelu, ActivationKind::kTanh,
                           ActivationKind::kSigmoid}) {
    if (name == ActivationName(k)) return k;
  }
  throw Error(ErrorCode::kInvalidArgument, "unknown activation '" + name + "'",
              {.hint = "use relu, gelu, tanh or sigmoid"});
}

const char* ActivationName(ActivationKind kind) {
  switch (kind) {
    case ActivationKind::kRelu:
      return "relu";
    case ActivationKind::kGelu:
      return "gelu";
    case ActivationKind::kTanh:
      return "tanh";
    case ActivationKind::kSigmoid:
      return "sigmoid";
  }
  return "?";
}

namespace {

template <typename T>
class Activation final : public Layer<T> {
 public:
  explicit Activation(ActivationKind k) : k_(k) {}
  std::string kind() const override { return ActivationName(k_); }
  std::string Describe() const override { return ActivationName(k_); }
  Shape Build(const Shape& in, BuildContext<T>&) override {
    in_ = in;
    return in;
  }

  // x and y have the same shape (B, ...), treated as n flat elements.
  Tensor Forward(const Tensor& x, const ForwardContext&) override {
    CheckInput(x, in_, kind());
    x_ = x;
    Tensor& y = ReuseBuffer(y_, DTypeOf<T>(), x.shape());
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    const int64_t n = x.num_elements();
    switch (k_) {
      case ActivationKind::kRelu:
        for (int64_t i = 0; i < n; ++i) yp[i] = xp[i] > T(0) ? xp[i] : T(0);
        break;
      case ActivationKind::kGelu:
        for (int64_t i = 0; i < n; ++i) {
          const T v = xp[i];
          yp[i] = T(0.5) * v * (T(1) + std::tanh(kGeluScale * (v + kGeluCubic * v * v * v)));
        }
        break;
      case ActivationKind::kTanh:
        for (int64_t i = 0; i < n; ++i) yp[i] = std::tanh(xp[i]);
        break;
      case ActivationKind::kSigmoid:
        for (int64_t i = 0; i < n; ++i) yp[i] = T(1) / (T(1) + std::exp(-xp[i]));
        break;
    }
    return y;
  }

  Tensor Backward(const Tensor& dy, bool need_dx) override {
    if (!need_dx) return Tensor();
    Tensor& dx = ReuseBuffer(dx_, DTypeOf<T>(), x_.shape());
    const T* xp = x_.data<T>();
    const T* yp = y_.data<T>();
    const T* d = dy.data<T>();
    T* o = dx.data<T>();
    const int64_t n = x_.num_elements();
    switch (k_) {
      case ActivationKind::kRelu:
        for (int64_t i = 0; i < n; ++i) o[i] = xp[i] > T(0) ? d[i] : T(0);
        break;
      case ActivationKind::kGelu:
        // d/dv 0.5 v (1 + t), t = tanh(s (v + c v^3)):
        //   0.5 (1 + t) + 0.5 v (1 - t^2) s (1 + 3 c v^2)
        for (int64_t i = 0; i < n; ++i) {
          const T v = xp[i];
          const T t = std::tanh(kGeluScale * (v + kGeluCubic * v * v * v));
          o[i] = d[i] * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * kGeluScale *
                                                   (T(1) + T(3) * kGeluCubic * v * v));
        }
        break;
      case ActivationKind::kTanh:
        for (int64_t i = 0; i < n; ++i) o[i] = d[i] * (T(1) - yp[i] * yp[i]);
        break;
      case ActivationKind::kSigmoid:
        for (int64_t i = 0; i < n; ++i) o[i] = d[i] * yp[i] * (T(1) - yp[i]);
        break;
    }
    return dx;
  }

 private:
  static constexpr T kGeluScale = T(0.7978845608028654);  // sqrt(2 / pi)
  static constexpr T kGeluCubic = T(0.044715);
  ActivationKind k_;
  Shape in_;
  Tensor x_, y_, dx_;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeActivation(ActivationKind kind) {
  return std::make_unique<Activation<T>>(kind);
}
template std::unique_ptr<Layer<float>> MakeActivation<float>(ActivationKind);
template std::unique_ptr<Layer<double>> MakeActivation<double>(ActivationKind);

}  // namespace shardflow
