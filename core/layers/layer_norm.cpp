#include "core/layers/layer_norm.hpp"

#include <cmath>
#include <vector>

#include "core/backend/device_runtime.hpp"
#include "core/cpu/parallel.hpp"
#include "core/init.hpp"

namespace shardflow {
namespace {

template <typename T>
class LayerNorm final : public Layer<T> {
 public:
  explicit LayerNorm(const LayerNormOptions& o) : o_(o) {
    if (!(o.epsilon > 0)) {
      throw Error(ErrorCode::kInvalidArgument,
                  "layernorm needs epsilon > 0, got " + std::to_string(o.epsilon));
    }
  }
  std::string kind() const override { return "layernorm"; }
  std::string Describe() const override { return "layernorm"; }

  Shape Build(const Shape& in, BuildContext<T>& ctx) override {
    if (in.empty() || in.back() <= 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "layernorm needs an input with a last dimension, got " + ShapeToString(in),
                  {.key = "model"});
    }
    in_ = in;
    f_ = in.back();
    rows_per_sample_ = NumElements(in) / f_;
    arena_ = ctx.arena;
    gamma_ = ctx.Declare("gamma", {f_}, false);
    beta_ = ctx.Declare("beta", {f_}, false);
    return in;
  }

  void Initialize(uint64_t) override {
    InitConstant(arena_->param(gamma_), f_, T(1));
    InitConstant(arena_->param(beta_), f_, T(0));
  }

  std::unique_ptr<LayerState> NewState() const override { return std::make_unique<State>(); }
  int64_t FlopsPerSample() const override { return 8 * rows_per_sample_ * f_; }

 protected:
  // Per row: mean, rstd = 1 / sqrt(var + eps), xhat = (x - mean) rstd, y = gamma xhat + beta.
  // The state keeps xhat and rstd.
  Tensor DoForward(const Tensor& x, const ForwardContext&, LayerState& st) override {
    CheckSequenceInput(x, in_, "layernorm");
    CheckHostTensor(x, "layernorm");
    State& s = StateAs<State>(st, "layernorm");
    const int64_t n = x.num_elements() / f_;
    Tensor& y = ReuseBuffer(s.y, DTypeOf<T>(), x.shape());
    Tensor& xhat = ReuseBuffer(s.xhat, DTypeOf<T>(), x.shape());
    s.rstd.resize(static_cast<size_t>(n));
    const T* xp = x.template data<T>();
    const T* gamma = arena_->param(gamma_);
    const T* beta = arena_->param(beta_);
    T* yp = y.template data<T>();
    T* hp = xhat.template data<T>();
    cpu::ParallelFor(n, 16, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* in = xp + r * f_;
        double sum = 0, sq = 0;
        for (int64_t c = 0; c < f_; ++c) sum += static_cast<double>(in[c]);
        const double mean = sum / static_cast<double>(f_);
        for (int64_t c = 0; c < f_; ++c) {
          const double d = static_cast<double>(in[c]) - mean;
          sq += d * d;
        }
        const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(f_) + o_.epsilon);
        s.rstd[static_cast<size_t>(r)] = rstd;
        T* h = hp + r * f_;
        T* out = yp + r * f_;
        for (int64_t c = 0; c < f_; ++c) {
          h[c] = static_cast<T>((static_cast<double>(in[c]) - mean) * rstd);
          out[c] = gamma[c] * h[c] + beta[c];
        }
      }
    });
    return y;
  }

  // g = dy gamma; dx = rstd (g - mean(g) - xhat mean(g xhat)); dgamma += sum dy xhat; dbeta +=
  // sum dy (over rows).
  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& st) override {
    CheckHostTensor(dy, "layernorm");
    State& s = StateAs<State>(st, "layernorm");
    const int64_t n = static_cast<int64_t>(s.rstd.size());
    const T* d = dy.template data<T>();
    const T* hp = s.xhat.template data<T>();
    T* dgamma = arena_->grad(gamma_);
    T* dbeta = arena_->grad(beta_);
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t c = 0; c < f_; ++c) {
        dgamma[c] += d[r * f_ + c] * hp[r * f_ + c];
        dbeta[c] += d[r * f_ + c];
      }
    }
    if (!need_dx) return Tensor();
    Tensor& dx = ReuseBuffer(s.dx, DTypeOf<T>(), s.xhat.shape());
    const T* gamma = arena_->param(gamma_);
    T* dxp = dx.template data<T>();
    cpu::ParallelFor(n, 16, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* dr = d + r * f_;
        const T* h = hp + r * f_;
        double mg = 0, mgh = 0;
        for (int64_t c = 0; c < f_; ++c) {
          const double g = static_cast<double>(dr[c]) * static_cast<double>(gamma[c]);
          mg += g;
          mgh += g * static_cast<double>(h[c]);
        }
        mg /= static_cast<double>(f_);
        mgh /= static_cast<double>(f_);
        const double rstd = s.rstd[static_cast<size_t>(r)];
        for (int64_t c = 0; c < f_; ++c) {
          const double g = static_cast<double>(dr[c]) * static_cast<double>(gamma[c]);
          dxp[r * f_ + c] = static_cast<T>(rstd * (g - mg - static_cast<double>(h[c]) * mgh));
        }
      }
    });
    return dx;
  }

 private:
  struct State final : LayerState {
    Tensor y, xhat, dx;
    std::vector<double> rstd;
  };

  LayerNormOptions o_;
  Shape in_;
  int64_t f_ = 0, rows_per_sample_ = 1;
  Arena<T>* arena_ = nullptr;
  int gamma_ = -1, beta_ = -1;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeLayerNorm(const LayerNormOptions& options) {
  return std::make_unique<LayerNorm<T>>(options);
}
template std::unique_ptr<Layer<float>> MakeLayerNorm<float>(const LayerNormOptions&);
template std::unique_ptr<Layer<double>> MakeLayerNorm<double>(const LayerNormOptions&);

}  // namespace shardflow
