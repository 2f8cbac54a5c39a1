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

  TpRole tp_role() const override {
    if (o_.split == TpSplit::kColumn) return TpRole::kColumn;
    return o_.split == TpSplit::kRow ? TpRole::kRow : TpRole::kReplicated;
  }

  // A column layer declares its columns of the kernel (F, U) and bias, a row layer its rows of
  // the kernel (F, U) (the input is already a way's F/T features) and the whole bias.
  Shape Build(const Shape& in, BuildContext<T>& ctx) override {
    if (in.empty()) throw Error(ErrorCode::kInvalidArgument, "dense needs an input of rank >= 1");
    in_ = in;
    f_ = in.back();
    arena_ = ctx.arena;
    tp_ = ctx.tp;
    const int ways = o_.split == TpSplit::kNone ? 1 : TpWays(tp_);
    units_ = o_.units;
    if (o_.split == TpSplit::kColumn) {
      slice_ = TpSliceOf(tp_, o_.units, ctx.layer_name, "units");
      units_ = slice_.size;
      kernel_ = ctx.DeclareSlice("kernel", {f_, o_.units}, 1, slice_, true);
      if (o_.use_bias) bias_ = ctx.DeclareSlice("bias", {o_.units}, 0, slice_, false);
    } else {
      slice_ = TpSliceOf(o_.split == TpSplit::kRow ? tp_ : nullptr, f_ * ways, ctx.layer_name,
                         "input features");
      kernel_ = ctx.DeclareSlice("kernel", {f_ * ways, o_.units}, 0, slice_, true);
      if (o_.use_bias) bias_ = ctx.Declare("bias", {o_.units}, false);
    }
    Shape out = in;
    out.back() = units_;
    rows_per_sample_ = NumElements(in) / f_;
    return out;
  }

  void Initialize(uint64_t seed) override {
    T* w = arena_->param(kernel_);
    const uint64_t stream = arena_->init_stream(kernel_);
    if (o_.split == TpSplit::kNone || slice_.size == slice_.full) {
      InitKernel(o_.init, w, f_ * units_, f_, units_, seed, stream);
    } else if (o_.split == TpSplit::kColumn) {
      InitKernelSlice(
          o_.init, w,
          {.outer = f_, .full = o_.units, .begin = slice_.begin, .size = slice_.size, .inner = 1},
          f_, o_.units, seed, stream);
    } else {
      InitKernelSlice(o_.init, w,
                      {.outer = 1,
                       .full = slice_.full,
                       .begin = slice_.begin,
                       .size = slice_.size,
                       .inner = o_.units},
                      slice_.full, o_.units, seed, stream);
    }
  }

  std::unique_ptr<LayerState> NewState() const override { return std::make_unique<State>(); }
  // Per way: a split layer does 1/T of the whole layer's work.
  int64_t FlopsPerSample() const override { return 2 * rows_per_sample_ * f_ * units_; }

 protected:
  // x is (N, F) with N = B * rows_per_sample (fewer for a shorter sequence); W is (F, U); y is (N,
  // U) (this way's F and U). A row layer with T > 1 sums its output over the ways; only way 0 adds
  // the bias.
  Tensor DoForward(const Tensor& x, const ForwardContext&, LayerState& st) override {
    CheckSequenceInput(x, in_, "dense");
    State& s = StateAs<State>(st, "dense");
    s.x = x;
    const int64_t n = x.num_elements() / f_, u = units_;
    const bool row_sum = o_.split == TpSplit::kRow && slice_.size != slice_.full;
    const bool add_bias = o_.use_bias && (!row_sum || tp_->way == 0);
    Shape out = x.shape();
    out.back() = u;
    Tensor& y = ReuseBuffer(s.y, DTypeOf<T>(), out);
    Backend<T>& be = BackendFor<T>(x.device());
    T* yp = y.device_data<T>();
    if (add_bias) be.BroadcastRows(n, u, arena_->param(bias_), yp);
    be.Gemm(false, false, n, u, f_, T(1), x.device_data<T>(), f_, arena_->param(kernel_), u,
            add_bias ? T(1) : T(0), yp, u);
    if (row_sum) TpSum(tp_, yp, n * u);
    return y;
  }

  // dy is (N, U): dW += x^T dy (F, U); db += sum over rows of dy; dx = dy W^T (N, F). A column
  // layer with T > 1 sums dx over the ways.
  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& st) override {
    State& s = StateAs<State>(st, "dense");
    const int64_t n = s.x.num_elements() / f_, u = units_;
    Backend<T>& be = BackendFor<T>(dy.device());
    const T* d = dy.device_data<T>();
    // dW = x^T dy written over a gradient still marked zero (the first micro-batch of a step),
    // added to it otherwise: the zeros are never written nor read (see core/arena.hpp).
    const auto dw = arena_->GradForOverwrite(kernel_);
    be.Gemm(true, false, f_, u, n, T(1), s.x.template device_data<T>(), f_, d, u,
            dw.overwrite ? T(0) : T(1), dw.data, u);
    if (o_.use_bias) be.AddColumnSums(n, u, d, arena_->grad(bias_));
    if (!need_dx) return Tensor();
    Tensor& dx = ReuseBuffer(s.dx, DTypeOf<T>(), s.x.shape());
    be.Gemm(false, true, n, f_, u, T(1), d, u, arena_->param(kernel_), u, T(0), dx.device_data<T>(),
            f_);
    if (o_.split == TpSplit::kColumn && slice_.size != slice_.full) {
      TpSum(tp_, dx.device_data<T>(), dx.num_elements());
    }
    return dx;
  }

 private:
  struct State final : LayerState {
    Tensor x, y, dx;
  };
  DenseOptions o_;
  Shape in_;
  int64_t f_ = 0, units_ = 0, rows_per_sample_ = 1;  // this way's features and units
  TpSlice slice_;  // column: of the units; otherwise of the input features
  const TensorParallel* tp_ = nullptr;
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
