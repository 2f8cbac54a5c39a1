#include "core/layers/reshape.hpp"

namespace shardflow {
namespace {

template <typename T>
class Flatten final : public Layer<T> {
 public:
  std::string kind() const override { return "flatten"; }
  std::string Describe() const override { return "flatten"; }
  Shape Build(const Shape& in, BuildContext<T>&) override {
    in_ = in;
    return {NumElements(in)};
  }

 protected:
  // Flatten saves nothing: both passes are views.
  Tensor DoForward(const Tensor& x, const ForwardContext&, LayerState&) override {
    const int64_t b = CheckInput(x, in_, "flatten");
    return x.Reshaped({b, NumElements(in_)});
  }
  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState&) override {
    if (!need_dx) return Tensor();
    return dy.Reshaped(WithBatch(dy.dim(0), in_));
  }

 private:
  Shape in_;
};

template <typename T>
class RepeatVector final : public Layer<T> {
 public:
  explicit RepeatVector(int64_t times) : times_(times) {
    if (times <= 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "repeat needs a positive count, got " + std::to_string(times));
    }
  }
  std::string kind() const override { return "repeat"; }
  std::string Describe() const override { return "repeat:" + std::to_string(times_); }
  Shape Build(const Shape& in, BuildContext<T>&) override {
    if (in.size() != 1) {
      throw Error(ErrorCode::kInvalidArgument,
                  "repeat expects (batch, features) input, got per-sample " + ShapeToString(in));
    }
    h_ = in[0];
    return {times_, h_};
  }
  std::unique_ptr<LayerState> NewState() const override { return std::make_unique<State>(); }

 protected:
  // x is (B, H); y is (B, T, H).
  Tensor DoForward(const Tensor& x, const ForwardContext&, LayerState& st) override {
    const int64_t b = CheckInput(x, {h_}, "repeat");
    State& s = StateAs<State>(st, "repeat");
    Tensor& y = ReuseBuffer(s.y, DTypeOf<T>(), {b, times_, h_});
    BackendFor<T>(x.device()).Repeat(b, times_, h_, x.device_data<T>(), y.device_data<T>());
    return y;
  }
  // dy is (B, T, H); dx (B, H) sums dy over T.
  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& st) override {
    if (!need_dx) return Tensor();
    State& s = StateAs<State>(st, "repeat");
    const int64_t b = dy.dim(0);
    Tensor& dx = ReuseBuffer(s.dx, DTypeOf<T>(), {b, h_});
    BackendFor<T>(dy.device()).RepeatGrad(b, times_, h_, dy.device_data<T>(), dx.device_data<T>());
    return dx;
  }

 private:
  struct State final : LayerState {
    Tensor y, dx;
  };
  int64_t times_, h_ = 0;
};
}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeFlatten() {
  return std::make_unique<Flatten<T>>();
}
template <typename T>
std::unique_ptr<Layer<T>> MakeRepeatVector(int64_t times) {
  return std::make_unique<RepeatVector<T>>(times);
}
template std::unique_ptr<Layer<float>> MakeFlatten<float>();
template std::unique_ptr<Layer<double>> MakeFlatten<double>();
template std::unique_ptr<Layer<float>> MakeRepeatVector<float>(int64_t);
template std::unique_ptr<Layer<double>> MakeRepeatVector<double>(int64_t);

}  // namespace shardflow
