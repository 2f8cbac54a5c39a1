#include "core/layers/dense.hpp"

#include "core/cpu/gemm.hpp"

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
               static_cast<uint64_t>(kernel_));
  }

  // x is (N, F) with N = B * rows_per_sample; W is (F, U); y is (N, U).
  Tensor Forward(const Tensor& x, const ForwardContext&) override {
    const int64_t b = CheckInput(x, in_, "dense");
    x_ = x;
    const int64_t n = b * rows_per_sample_, u = o_.units;
    Shape out = x.shape();
    out.back() = u;
    Tensor& y = ReuseBuffer(y_, DTypeOf<T>(), out);
    T* yp = y.data<T>();
    if (o_.use_bias) {
      const T* bp = arena_->param(bias_);
      for (int64_t r = 0; r < n; ++r)
        for (int64_t j = 0; j < u; ++j) yp[r * u + j] = bp[j];
    }
    cpu::Gemm<T>(false, false, n, u, f_, T(1), x.data<T>(), f_, arena_->param(kernel_), u,
                 o_.use_bias ? T(1) : T(0), yp, u);
    return y;
  }

  // dy is (N, U): dW += x^T dy (F, U); db += sum over rows of dy; dx = dy W^T (N, F).
  Tensor Backward(const Tensor& dy, bool need_dx) override {
    const int64_t n = x_.num_elements() / f_, u = o_.units;
    const T* d = dy.data<T>();
    cpu::Gemm<T>(true, false, f_, u, n, T(1), x_.data<T>(), f_, d, u, T(1), arena_->grad(kernel_),
                 u);
    if (o_.use_bias) {
      T* db = arena_->grad(bias_);
      for (int64_t r = 0; r < n; ++r)
        for (int64_t j = 0; j < u; ++j) db[j] += d[r * u + j];
    }
    if (!need_dx) return Tensor();
    Tensor& dx = ReuseBuffer(dx_, DTypeOf<T>(), x_.shape());
    cpu::Gemm<T>(false, true, n, f_, u, T(1), d, u, arena_->param(kernel_), u, T(0), dx.data<T>(),
                 f_);
    return dx;
  }

  int64_t FlopsPerSample() const override { return 2 * rows_per_sample_ * f_ * o_.units; }

 private:
  DenseOptions o_;
  Shape in_;
  int64_t f_ = 0, rows_per_sample_ = 1;
  Arena<T>* arena_ = nullptr;
  int kernel_ = -1, bias_ = -1;
  Tensor x_, y_, dx_;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeDense(const DenseOptions& options) {
  return std::make_unique<Dense<T>>(options);
}
template std::unique_ptr<Layer<float>> MakeDense<float>(const DenseOptions&);
template std::unique_ptr<Layer<double>> MakeDense<double>(const DenseOptions&);

}  // namespace shardflow
