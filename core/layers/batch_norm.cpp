#include "core/layers/batch_norm.hpp"

#include <vector>

#include "core/init.hpp"

namespace shardflow {
namespace {

template <typename T>
class BatchNorm final : public Layer<T> {
 public:
  explicit BatchNorm(const BatchNormOptions& o) : o_(o) {
    if (!(o.momentum >= 0.0 && o.momentum < 1.0) || !(o.epsilon > 0.0)) {
      throw Error(ErrorCode::kInvalidArgument, "batchnorm needs 0 <= momentum < 1 and epsilon > 0");
    }
  }
  std::string kind() const override { return "batchnorm"; }
  std::string Describe() const override { return "batchnorm"; }
  Shape Build(const Shape& in, BuildContext<T>& ctx) override {
    if (in.empty()) throw Error(ErrorCode::kInvalidArgument, "batchnorm needs rank >= 1 input");
    in_ = in;
    c_ = in.back();
    arena_ = ctx.arena;
    gamma_ = ctx.Declare("gamma", {c_}, false);
    beta_ = ctx.Declare("beta", {c_}, false);
    moving_mean_ = Tensor(DTypeOf<T>(), {c_}, CurrentDevice());
    moving_var_ = Tensor(DTypeOf<T>(), {c_}, CurrentDevice());
    InitConstant(moving_var_.device_data<T>(), c_, T(1));
    return in;
  }
  void Initialize(uint64_t) override {
    InitConstant(arena_->param(gamma_), c_, T(1));
    InitConstant(arena_->param(beta_), c_, T(0));
    InitConstant(moving_mean_.device_data<T>(), c_, T(0));
    InitConstant(moving_var_.device_data<T>(), c_, T(1));
  }
  std::vector<NamedTensor> Buffers() override {
    return {{"moving_mean", &moving_mean_}, {"moving_variance", &moving_var_}};
  }

  std::unique_ptr<LayerState> NewState() const override { return std::make_unique<State>(); }
  int64_t FlopsPerSample() const override { return 4 * NumElements(in_); }

 protected:
  // x is (N, C) flat with N = B * pixels; the state keeps x (shared, not copied) and the
  // backend's saved statistics (kBatchNormSavedPerChannel x C doubles), what backward needs:
  // xhat is recomputed there, so no activation-sized tensor is kept per layer. The moving
  // statistics are the layer's and are updated by every training forward pass, in the order the
  // passes run.
  Tensor DoForward(const Tensor& x, const ForwardContext& ctx, LayerState& st) override {
    CheckInput(x, in_, "batchnorm");
    State& s = StateAs<State>(st, "batchnorm");
    s.p = {.n = x.num_elements() / c_,
           .c = c_,
           .training = ctx.training,
           .momentum = o_.momentum,
           .epsilon = o_.epsilon};
    s.x = x;
    Tensor& y = ReuseBuffer(s.y, DTypeOf<T>(), x.shape());
    double* saved = ReuseBuffer(s.saved, DType::kFloat64, {kBatchNormSavedPerChannel, c_})
                        .template device_data<double>();
    s.p.saved_form = BackendFor<T>(x.device())
                         .BatchNorm(s.p, x.device_data<T>(), arena_->param(gamma_),
                                    arena_->param(beta_), moving_mean_.device_data<T>(),
                                    moving_var_.device_data<T>(), saved, y.device_data<T>());
    return y;
  }

  // dgamma += sum dy xhat, dbeta += sum dy; dx as cpu::BatchNormGrad.
  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& st) override {
    State& s = StateAs<State>(st, "batchnorm");
    T* dx =
        need_dx ? ReuseBuffer(s.dx, DTypeOf<T>(), dy.shape()).template device_data<T>() : nullptr;
    BackendFor<T>(dy.device())
        .BatchNormGrad(s.p, dy.device_data<T>(), s.x.template device_data<T>(),
                       arena_->param(gamma_), s.saved.template device_data<double>(),
                       arena_->grad(gamma_), arena_->grad(beta_), dx);
    return need_dx ? s.dx : Tensor();
  }

 private:
  struct State final : LayerState {
    BatchNormParams p;
    Tensor x, y, saved, dx;
  };
  BatchNormOptions o_;
  Shape in_;
  int64_t c_ = 0;
  Arena<T>* arena_ = nullptr;
  int gamma_ = -1, beta_ = -1;
  Tensor moving_mean_, moving_var_;
};
}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeBatchNorm(const BatchNormOptions& options) {
  return std::make_unique<BatchNorm<T>>(options);
}
template std::unique_ptr<Layer<float>> MakeBatchNorm<float>(const BatchNormOptions&);
template std::unique_ptr<Layer<double>> MakeBatchNorm<double>(const BatchNormOptions&);

}  // namespace shardflow
