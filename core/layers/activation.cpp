#include "core/layers/activation.hpp"

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
  TpRole tp_role() const override { return TpRole::kSliceWise; }  // per element / channel
  std::string Describe() const override { return ActivationName(k_); }
  Shape Build(const Shape& in, BuildContext<T>&) override {
    in_ = in;
    return in;
  }
  std::unique_ptr<LayerState> NewState() const override { return std::make_unique<State>(); }
  // A ReLU whose next layer applies it (Layer::AbsorbPrecedingRelu).
  bool PassThrough() override {
    if (k_ != ActivationKind::kRelu) return false;
    pass_through_ = true;
    return true;
  }

 protected:
  // x and y have the same shape (B, ...), treated as n flat elements.
  Tensor DoForward(const Tensor& x, const ForwardContext&, LayerState& st) override {
    CheckSequenceInput(x, in_, kind());
    if (pass_through_) return x;
    State& s = StateAs<State>(st, kind());
    s.x = x;
    Tensor& y = ReuseBuffer(s.y, DTypeOf<T>(), x.shape());
    BackendFor<T>(x.device())
        .Activation(k_, x.num_elements(), x.device_data<T>(), y.device_data<T>());
    return y;
  }

  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& st) override {
    if (!need_dx) return Tensor();
    if (pass_through_) return dy;
    State& s = StateAs<State>(st, kind());
    Tensor& dx = ReuseBuffer(s.dx, DTypeOf<T>(), s.x.shape());
    BackendFor<T>(dy.device())
        .ActivationGrad(k_, s.x.num_elements(), s.x.template device_data<T>(),
                        s.y.template device_data<T>(), dy.device_data<T>(), dx.device_data<T>());
    return dx;
  }

 private:
  struct State final : LayerState {
    Tensor x, y, dx;
  };
  ActivationKind k_;
  Shape in_;
  bool pass_through_ = false;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeActivation(ActivationKind kind) {
  return std::make_unique<Activation<T>>(kind);
}
template std::unique_ptr<Layer<float>> MakeActivation<float>(ActivationKind);
template std::unique_ptr<Layer<double>> MakeActivation<double>(ActivationKind);

}  // namespace shardflow
