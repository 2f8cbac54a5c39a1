#include "core/layers/batch_norm.hpp"

#include <cmath>
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
    moving_mean_ = Tensor(DTypeOf<T>(), {c_});
    moving_var_ = Tensor(DTypeOf<T>(), {c_});
    InitConstant(moving_var_.data<T>(), c_, T(1));
    return in;
  }
  void Initialize(uint64_t) override {
    InitConstant(arena_->param(gamma_), c_, T(1));
    InitConstant(arena_->param(beta_), c_, T(0));
    InitConstant(moving_mean_.data<T>(), c_, T(0));
    InitConstant(moving_var_.data<T>(), c_, T(1));
  }
  std::vector<NamedTensor> Buffers() override {
    return {{"moving_mean", &moving_mean_}, {"moving_variance", &moving_var_}};
  }

  // x is (N, C) flat with N = B * pixels; xhat_ (N, C); inv_std_ (C).
  Tensor Forward(const Tensor& x, const ForwardContext& ctx) override {
    CheckInput(x, in_, "batchnorm");
    const int64_t n = x.num_elements() / c_;
    training_ = ctx.training;
    Tensor& y = ReuseBuffer(y_, DTypeOf<T>(), x.shape());
    Tensor& xhat = ReuseBuffer(xhat_, DTypeOf<T>(), x.shape());
    inv_std_.assign(static_cast<size_t>(c_), 0.0);
    std::vector<double> mean(static_cast<size_t>(c_), 0.0), var(static_cast<size_t>(c_), 0.0);
    const T* xp = x.data<T>();
    T* mm = moving_mean_.data<T>();
    T* mv = moving_var_.data<T>();
    if (training_ && n > 0) {
      for (int64_t r = 0; r < n; ++r)
        for (int64_t ch = 0; ch < c_; ++ch) mean[ch] += xp[r * c_ + ch];
      for (auto& m : mean) m /= static_cast<double>(n);
      for (int64_t r = 0; r < n; ++r)
        for (int64_t ch = 0; ch < c_; ++ch) {
          const double e = xp[r * c_ + ch] - mean[ch];
          var[ch] += e * e;
        }
      for (int64_t ch = 0; ch < c_; ++ch) {
        const double biased = var[ch] / static_cast<double>(n);
        const double unbiased = n > 1 ? var[ch] / static_cast<double>(n - 1) : biased;
        mm[ch] = static_cast<T>(o_.momentum * mm[ch] + (1.0 - o_.momentum) * mean[ch]);
        mv[ch] = static_cast<T>(o_.momentum * mv[ch] + (1.0 - o_.momentum) * unbiased);
        var[ch] = biased;
      }
    } else {
      for (int64_t ch = 0; ch < c_; ++ch) {
        mean[ch] = mm[ch];
        var[ch] = mv[ch];
      }
    }
    for (int64_t ch = 0; ch < c_; ++ch) inv_std_[ch] = 1.0 / std::sqrt(var[ch] + o_.epsilon);
    const T* g = arena_->param(gamma_);
    const T* be = arena_->param(beta_);
    T* yp = y.data<T>();
    T* hp = xhat.data<T>();
    for (int64_t r = 0; r < n; ++r)
      for (int64_t ch = 0; ch < c_; ++ch) {
        const int64_t i = r * c_ + ch;
        hp[i] = static_cast<T>((xp[i] - mean[ch]) * inv_std_[ch]);
        yp[i] = g[ch] * hp[i] + be[ch];
      }
    return y;
  }

  // Training: dx = inv_std / N * (N dxhat - sum(dxhat) - xhat sum(dxhat xhat)), dxhat = dy gamma.
  // Inference: the statistics are constants, dx = dy gamma inv_std.
  Tensor Backward(const Tensor& dy, bool need_dx) override {
    const int64_t n = dy.num_elements() / c_;
    const T* d = dy.data<T>();
    const T* hp = xhat_.data<T>();
    const T* g = arena_->param(gamma_);
    std::vector<double> sum_d(static_cast<size_t>(c_), 0.0), sum_dh(static_cast<size_t>(c_), 0.0);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t ch = 0; ch < c_; ++ch) {
        sum_d[ch] += d[r * c_ + ch];
        sum_dh[ch] += d[r * c_ + ch] * hp[r * c_ + ch];
      }
    T* dg = arena_->grad(gamma_);
    T* db = arena_->grad(beta_);
    for (int64_t ch = 0; ch < c_; ++ch) {
      dg[ch] += static_cast<T>(sum_dh[ch]);
      db[ch] += static_cast<T>(sum_d[ch]);
    }
    if (!need_dx) return Tensor();
    Tensor& dx = ReuseBuffer(dx_, DTypeOf<T>(), dy.shape());
    T* o = dx.data<T>();
    for (int64_t r = 0; r < n; ++r)
      for (int64_t ch = 0; ch < c_; ++ch) {
        const int64_t i = r * c_ + ch;
        if (training_) {
          // sums of dxhat = gamma * sums of dy
          o[i] = static_cast<T>(g[ch] * inv_std_[ch] / static_cast<double>(n) *
                                (static_cast<double>(n) * d[i] - sum_d[ch] - hp[i] * sum_dh[ch]));
        } else {
          o[i] = static_cast<T>(d[i] * g[ch] * inv_std_[ch]);
        }
      }
    return dx;
  }

  int64_t FlopsPerSample() const override { return 4 * NumElements(in_); }

 private:
  BatchNormOptions o_;
  Shape in_;
  int64_t c_ = 0;
  Arena<T>* arena_ = nullptr;
  int gamma_ = -1, beta_ = -1;
  bool training_ = false;
  Tensor moving_mean_, moving_var_;
  std::vector<double> inv_std_;
  Tensor y_, xhat_, dx_;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeBatchNorm(const BatchNormOptions& options) {
  return std::make_unique<BatchNorm<T>>(options);
}
template std::unique_ptr<Layer<float>> MakeBatchNorm<float>(const BatchNormOptions&);
template std::unique_ptr<Layer<double>> MakeBatchNorm<double>(const BatchNormOptions&);

}  // namespace shardflow
