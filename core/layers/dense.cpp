#include "core/layers/dense.hpp"

namespace shardflow {
namespace {

template <typename T>
class Dense final : public Layer<T> {
 public:
  explicit Dense(const DenseOptions& o) : o_(o) {
    if (o.units <= 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "dense needs a positive number of units, got " + std::to_string(o.units));
    }
  }
  std::string kind() const override { return "dense"; }
  std::string Describe() const override { return "dense:" + std::to_string(o_.units); }

  Shape Build(const Shape& in, BuildContext<T>& ctx) override {
    if (in.empty()) throw Error(ErrorCode::kInvalidArgument, "dense needs an input of rank >= 1");
    in_ = in;
    f_ = in.back();
    arena_ = ctx.arena;
    kernel_ = ctx.Declare("kernel", {f_, o_.units}, true);
    if (o_.use_bias) bias_ = ctx.Declare("bias", {o_.units}, false);
    Shape out = in;
    out.back() = o_.units;
    rows_per_sample_ = NumElements(in) / f_;
    return out;
  }

  void Initialize(uint64_t seed) override {
    InitKernel(o_.init, arena_->param(kernel_), f_ * o_.units, f_, o_.units, seed,
               arena_->init_stream(kernel_));
  }

  std::unique_ptr<LayerState> NewState() const override { return std::make_unique<State>(); }
  int64_t FlopsPerSample() const override { return 2 * rows_per_sample_ * f_ * o_.units; }

 protected:
  // x is (N, F) with N = B * rows_per_sample; W is (F, U); y is (N, U).
  Tensor DoForward(const Tensor& x, const ForwardContext&, LayerState& st) override {
    const int64_t b = CheckInput(x, in_, "dense");
    State& s = StateAs<State>(st, "dense");
    s.x = x;
    const int64_t n = b * rows_per_sample_, u = o_.units;
    Shape out = x.shape();
    out.back() = u;
    Tensor& y = ReuseBuffer(s.y, DTypeOf<T>(), out);
    Backend<T>& be = BackendFor<T>(x.device());
    T* yp = y.device_data<T>();
    if (o_.use_bias) be.BroadcastRows(n, u, arena_->param(bias_), yp);
    be.Gemm(false, false, n, u, f_, T(1), x.device_data<T>(), f_, arena_->param(kernel_), u,
            o_.use_bias ? T(1) : T(0), yp, u);
    return y;
  }

  // dy is (N, U): dW += x^T dy (F, U); db += sum over rows of dy; dx = dy W^T (N, F).
  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& st) override {
    State& s = StateAs<State>(st, "dense");
    const int64_t n = s.x.num_elements() / f_, u = o_.units;
    Backend<T>& be = BackendFor<T>(dy.device());
    const T* d = dy.device_data<T>();
    be.Gemm(true, false, f_, u, n, T(1), s.x.template device_data<T>(), f_, d, u, T(1),
            arena_->grad(kernel_), u);
    if (o_.use_bias) be.AddColumnSums(n, u, d, arena_->grad(bias_));
    if (!need_dx) return Tensor();
    Tensor& dx = ReuseBuffer(s.dx, DTypeOf<T>(), s.x.shape());
    be.Gemm(false, true, n, f_, u, T(1), d, u, arena_->param(kernel_), u, T(0), dx.device_data<T>(),
            f_);
    return dx;
  }

 private:
  struct State final : LayerState {
    Tensor x, y, dx;
  };
  DenseOptions o_;
  Shape in_;
  int64_t f_ = 0, rows_per_sample_ = 1;
  Arena<T>* arena_ = nullptr;
  int kernel_ = -1, bias_ = -1;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeDense(const DenseOptions& options) {
  return std::make_unique<Dense<T>>(options);
}
template std::unique_ptr<Layer<float>> MakeDense<float>(const DenseOptions&);
template std::unique_ptr<Layer<double>> MakeDense<double>(const DenseOptions&);

}  // namespace shardflow
