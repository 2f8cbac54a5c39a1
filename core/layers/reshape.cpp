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
template <typename T>
class ZeroPad final : public Layer<T> {
 public:
  explicit ZeroPad(int64_t pad) : pad_(pad) {
    if (pad <= 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "pad needs a positive width, got " + std::to_string(pad));
    }
  }
  std::string kind() const override { return "pad"; }
  TpRole tp_role() const override { return TpRole::kSliceWise; }  // per channel
  std::string Describe() const override { return "pad:" + std::to_string(pad_); }
  Shape Build(const Shape& in, BuildContext<T>&) override {
    if (in.size() != 3) {
      throw Error(ErrorCode::kInvalidArgument,
                  "pad expects images (batch, height, width, channels), got per-sample " +
                      ShapeToString(in));
    }
    in_ = in;
    // The padded image is a 1x1 window's im2col with padding P on every side.
    g_ = {.h = in[0],
          .w = in[1],
          .c = in[2],
          .pad_top = pad_,
          .pad_left = pad_,
          .oh = in[0] + 2 * pad_,
          .ow = in[1] + 2 * pad_};
    return {g_.oh, g_.ow, g_.c};
  }
  std::unique_ptr<LayerState> NewState() const override { return std::make_unique<State>(); }

 protected:
  // x is (B, H, W, C); y (B, H + 2P, W + 2P, C), zeros around x.
  Tensor DoForward(const Tensor& x, const ForwardContext&, LayerState& st) override {
    const int64_t b = CheckInput(x, in_, "pad");
    State& s = StateAs<State>(st, "pad");
    Tensor& y = ReuseBuffer(s.y, DTypeOf<T>(), {b, g_.oh, g_.ow, g_.c});
    BackendFor<T>(x.device()).Im2Col(g_, b, x.device_data<T>(), y.device_data<T>());
    return y;
  }
  // dx is dy without its border (col2im of the same window adds each element once).
  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& st) override {
    if (!need_dx) return Tensor();
    State& s = StateAs<State>(st, "pad");
    const int64_t b = dy.dim(0);
    Tensor& dx = ReuseBuffer(s.dx, DTypeOf<T>(), WithBatch(b, in_));
    Backend<T>& be = BackendFor<T>(dy.device());
    be.Fill(dx.num_elements(), T(0), dx.device_data<T>());
    be.Col2ImAdd(g_, b, dy.device_data<T>(), dx.device_data<T>());
    return dx;
  }

 private:
  struct State final : LayerState {
    Tensor y, dx;
  };
  int64_t pad_;
  Shape in_;
  ConvGeometry g_;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeZeroPad(int64_t pad) {
  return std::make_unique<ZeroPad<T>>(pad);
}
template std::unique_ptr<Layer<float>> MakeZeroPad<float>(int64_t);
template std::unique_ptr<Layer<double>> MakeZeroPad<double>(int64_t);

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
