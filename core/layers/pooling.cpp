#include "core/layers/pooling.hpp"

#include <sstream>

#include "core/layers/activation.hpp"

namespace shardflow {
namespace {

Shape ImageInput(const Shape& in, const char* layer) {
  if (in.size() != 3) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(layer) +
                    " expects images (batch, height, width, channels), got per-sample " +
                    ShapeToString(in));
  }
  return in;
}

template <typename T>
class Pool2D final : public Layer<T> {
 public:
  explicit Pool2D(const Pool2DOptions& o) : o_(o) {
    if (o_.stride == 0) o_.stride = o_.size;
    if (o_.size <= 0 || o_.stride <= 0) {
      throw Error(ErrorCode::kInvalidArgument, "pool size and stride must be positive, got " +
                                                   std::to_string(o.size) + " and " +
                                                   std::to_string(o.stride));
    }
  }
  std::string kind() const override { return o_.max ? "maxpool" : "avgpool"; }
  TpRole tp_role() const override { return TpRole::kSliceWise; }  // per element / channel
  std::string Describe() const override {
    // (ostringstream: GCC 12 emits a false -Wrestrict on chained std::string concatenation)
    std::ostringstream s;
    s << kind() << ':' << o_.size;
    if (o_.stride != o_.size) s << ':' << o_.stride;
    return s.str();
  }
  Shape Build(const Shape& in, BuildContext<T>&) override {
    in_ = ImageInput(in, o_.max ? "maxpool" : "avgpool");
    if (in[0] < o_.size || in[1] < o_.size) {
      throw Error(ErrorCode::kInvalidArgument, kind() + " window " + std::to_string(o_.size) +
                                                   " is larger than its input " +
                                                   ShapeToString(in));
    }
    g_ = {.h = in[0],
          .w = in[1],
          .c = in[2],
          .k = o_.size,
          .stride = o_.stride,
          .oh = (in[0] - o_.size) / o_.stride + 1,
          .ow = (in[1] - o_.size) / o_.stride + 1};
    return {g_.oh, g_.ow, in[2]};
  }

  std::unique_ptr<LayerState> NewState() const override { return std::make_unique<State>(); }
  // Max pooling takes the ReLU before it: relu(max x) = max relu(x), and its gradient reaches
  // the same element (the window's first maximum, when that maximum is positive; none
  // otherwise), so the ReLU runs on the pooled output, a quarter of the elements for 2x2.
  bool AbsorbPrecedingRelu() override {
    if (!o_.max) return false;
    relu_ = true;
    return true;
  }

 protected:
  // x is (B, H, W, C); y is (B, OH, OW, C); see cpu::Pool2D for the loop order. With the ReLU
  // absorbed, m = pool(x) and y = relu(m).
  Tensor DoForward(const Tensor& x, const ForwardContext&, LayerState& st) override {
    const int64_t b = CheckInput(x, in_, kind());
    State& s = StateAs<State>(st, kind());
    Tensor& m = ReuseBuffer(relu_ ? s.m : s.y, DTypeOf<T>(), {b, g_.oh, g_.ow, g_.c});
    s.x = x;
    Backend<T>& be = BackendFor<T>(x.device());
    be.Pool2D(g_, o_.max, b, x.device_data<T>(), m.device_data<T>());
    if (!relu_) return m;
    Tensor& y = ReuseBuffer(s.y, DTypeOf<T>(), m.shape());
    be.Activation(ActivationKind::kRelu, m.num_elements(), m.device_data<T>(), y.device_data<T>());
    return y;
  }

  // Max pooling finds each window's maximum again in the saved x and the pooled m (y without
  // the ReLU); with the ReLU absorbed, the pooling passes on relu'(m) dy (no pass of its own).
  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& st) override {
    if (!need_dx) return Tensor();
    State& s = StateAs<State>(st, kind());
    const int64_t b = dy.dim(0);
    Backend<T>& be = BackendFor<T>(dy.device());
    const Tensor& m = relu_ ? s.m : s.y;
    Tensor& dx = ReuseBuffer(s.dx, DTypeOf<T>(), WithBatch(b, in_));
    be.Pool2DGrad(g_, o_.max, relu_, b, s.x.template device_data<T>(), m.template device_data<T>(),
                  dy.device_data<T>(), dx.device_data<T>());
    return dx;
  }

 private:
  struct State final : LayerState {
    Tensor x, y, dx, m;
  };
  Pool2DOptions o_;
  Shape in_;
  PoolGeometry g_;
  bool relu_ = false;  // a ReLU absorbed (AbsorbPrecedingRelu)
};

template <typename T>
class GlobalAvgPool final : public Layer<T> {
 public:
  std::string kind() const override { return "gap"; }
  TpRole tp_role() const override { return TpRole::kSliceWise; }  // per channel
  std::string Describe() const override { return "gap"; }
  Shape Build(const Shape& in, BuildContext<T>&) override {
    in_ = ImageInput(in, "gap");
    return {in[2]};
  }
  std::unique_ptr<LayerState> NewState() const override { return std::make_unique<State>(); }

 protected:
  // x is (B, H*W, C) flat; y is (B, C).
  Tensor DoForward(const Tensor& x, const ForwardContext&, LayerState& st) override {
    const int64_t b = CheckInput(x, in_, "gap");
    State& s = StateAs<State>(st, "gap");
    Tensor& y = ReuseBuffer(s.y, DTypeOf<T>(), {b, in_[2]});
    BackendFor<T>(x.device())
        .GlobalAvgPool(b, in_[0] * in_[1], in_[2], x.device_data<T>(), y.device_data<T>());
    return y;
  }
  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& st) override {
    if (!need_dx) return Tensor();
    State& s = StateAs<State>(st, "gap");
    const int64_t b = dy.dim(0);
    Tensor& dx = ReuseBuffer(s.dx, DTypeOf<T>(), WithBatch(b, in_));
    BackendFor<T>(dy.device())
        .GlobalAvgPoolGrad(b, in_[0] * in_[1], in_[2], dy.device_data<T>(), dx.device_data<T>());
    return dx;
  }

 private:
  struct State final : LayerState {
    Tensor y, dx;
  };
  Shape in_;
};
}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakePool2D(const Pool2DOptions& options) {
  return std::make_unique<Pool2D<T>>(options);
}
template <typename T>
std::unique_ptr<Layer<T>> MakeGlobalAvgPool() {
  return std::make_unique<GlobalAvgPool<T>>();
}
template std::unique_ptr<Layer<float>> MakePool2D<float>(const Pool2DOptions&);
template std::unique_ptr<Layer<double>> MakePool2D<double>(const Pool2DOptions&);
template std::unique_ptr<Layer<float>> MakeGlobalAvgPool<float>();
template std::unique_ptr<Layer<double>> MakeGlobalAvgPool<double>();

}  // namespace shardflow
