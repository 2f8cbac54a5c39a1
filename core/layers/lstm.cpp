#include "core/layers/lstm.hpp"

#include <cmath>

#include "core/cpu/gemm.hpp"
#include "core/init.hpp"

namespace shardflow {
namespace {

template <typename T>
T Sigmoid(T v) {
  return T(1) / (T(1) + std::exp(-v));
}

template <typename T>
class Lstm final : public Layer<T> {
 public:
  explicit Lstm(const LstmOptions& o) : o_(o) {
    if (o.units <= 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "lstm needs a positive number of units, got " + std::to_string(o.units));
    }
  }
  std::string kind() const override { return "lstm"; }
  std::string Describe() const override {
    return "lstm:" + std::to_string(o_.units) + (o_.return_sequences ? ":seq" : "");
  }
  Shape Build(const Shape& in, BuildContext<T>& ctx) override {
    if (in.size() != 2) {
      throw Error(
          ErrorCode::kInvalidArgument,
          "lstm expects sequences (batch, time, features), got per-sample " + ShapeToString(in));
    }
    in_ = in;
    t_ = in[0];
    f_ = in[1];
    const int64_t h = o_.units;
    arena_ = ctx.arena;
    w_ = ctx.Declare("kernel", {f_, 4 * h}, true);
    u_ = ctx.Declare("recurrent_kernel", {h, 4 * h}, true);
    b_ = ctx.Declare("bias", {4 * h}, false);
    return o_.return_sequences ? Shape{t_, h} : Shape{h};
  }
  void Initialize(uint64_t seed) override {
    const int64_t h = o_.units;
    InitKernel(InitKind::kGlorotUniform, arena_->param(w_), f_ * 4 * h, f_, 4 * h, seed,
               static_cast<uint64_t>(w_));
    InitKernel(InitKind::kGlorotUniform, arena_->param(u_), h * 4 * h, h, 4 * h, seed,
               static_cast<uint64_t>(u_));
    T* b = arena_->param(b_);
    InitConstant(b, 4 * h, T(0));
    InitConstant(b + h, h, T(1));  // forget gate
  }

  // x is (B, T, F). gates_ (B, T, 4H) holds the activated gates [i f g o]; c_, h_ (B, T, H).
  // The input projection of every step is one GEMM: (B*T, F) x (F, 4H). Step t then adds
  // h_{t-1} U into rows b*T + t (row stride T*4H).
  Tensor Forward(const Tensor& x, const ForwardContext&) override {
    const int64_t b = CheckInput(x, in_, "lstm");
    x_ = x;
    const int64_t h = o_.units, g4 = 4 * h;
    T* z = ReuseBuffer(gates_, DTypeOf<T>(), {b, t_, g4}).template data<T>();
    T* c = ReuseBuffer(c_, DTypeOf<T>(), {b, t_, h}).template data<T>();
    T* hs = ReuseBuffer(h_, DTypeOf<T>(), {b, t_, h}).template data<T>();
    const T* bias = arena_->param(b_);
    for (int64_t r = 0; r < b * t_; ++r)
      for (int64_t j = 0; j < g4; ++j) z[r * g4 + j] = bias[j];
    cpu::Gemm<T>(false, false, b * t_, g4, f_, T(1), x.data<T>(), f_, arena_->param(w_), g4, T(1),
                 z, g4);
    const int64_t zs = t_ * g4, hsr = t_ * h;  // row strides of one time step's slice
    for (int64_t t = 0; t < t_; ++t) {
      T* zt = z + t * g4;
      if (t > 0) {
        cpu::Gemm<T>(false, false, b, g4, h, T(1), hs + (t - 1) * h, hsr, arena_->param(u_), g4,
                     T(1), zt, zs);
      }
      for (int64_t n = 0; n < b; ++n) {
        T* zr = zt + n * zs;
        T* cr = c + (n * t_ + t) * h;
        T* hr = hs + (n * t_ + t) * h;
        const T* cprev = t > 0 ? cr - h : nullptr;
        for (int64_t j = 0; j < h; ++j) {
          const T i = Sigmoid(zr[j]), f = Sigmoid(zr[h + j]);
          const T g = std::tanh(zr[2 * h + j]), o = Sigmoid(zr[3 * h + j]);
          zr[j] = i;
          zr[h + j] = f;
          zr[2 * h + j] = g;
          zr[3 * h + j] = o;
          cr[j] = i * g + (cprev ? f * cprev[j] : T(0));
          hr[j] = o * std::tanh(cr[j]);
        }
      }
    }
    if (o_.return_sequences) return h_;
    Tensor& y = ReuseBuffer(y_, DTypeOf<T>(), {b, h});
    T* yp = y.data<T>();
    for (int64_t n = 0; n < b; ++n)
      for (int64_t j = 0; j < h; ++j) yp[n * h + j] = hs[(n * t_ + t_ - 1) * h + j];
    return y;
  }

  // Backward through time, t = T-1 .. 0, carrying dh (from step t+1 via U) and dc:
  //   dh_t = dy_t + dz_{t+1} U^T        do = dh tanh(c)      dc = dh o (1 - tanh^2 c) + dc_{t+1}
  //   f_{t+1} di = dc g   dg = dc i   df = dc c_{t-1} dz = [di i(1-i), df f(1-f), dg (1-g^2), do
  //   o(1-o)]   (stored in dz_ (B, T, 4H))
  // then dU += h_{t-1}^T dz_t per step and, once, dW += x^T dz, db += sum dz, dx = dz W^T.
  Tensor Backward(const Tensor& dy, bool need_dx) override {
    const int64_t b = x_.dim(0), h = o_.units, g4 = 4 * h, zs = t_ * g4, hsr = t_ * h;
    const T* z = gates_.data<T>();
    const T* c = c_.data<T>();
    const T* hs = h_.data<T>();
    const T* d = dy.data<T>();
    T* dz = ReuseBuffer(dz_, DTypeOf<T>(), {b, t_, g4}).template data<T>();
    T* dh = ReuseBuffer(dh_, DTypeOf<T>(), {b, h}).template data<T>();
    T* dc = ReuseBuffer(dc_, DTypeOf<T>(), {b, h}).template data<T>();
    for (int64_t i = 0; i < b * h; ++i) dh[i] = dc[i] = T(0);
    for (int64_t t = t_ - 1; t >= 0; --t) {
      // dh currently holds dz_{t+1} U^T (zero at the last step); add the output gradient.
      for (int64_t n = 0; n < b; ++n)
        for (int64_t j = 0; j < h; ++j) {
          if (o_.return_sequences) {
            dh[n * h + j] += d[(n * t_ + t) * h + j];
          } else if (t == t_ - 1) {
            dh[n * h + j] += d[n * h + j];
          }
        }
      for (int64_t n = 0; n < b; ++n) {
        const T* zr = z + n * zs + t * g4;
        T* dzr = dz + n * zs + t * g4;
        const T* cr = c + (n * t_ + t) * h;
        for (int64_t j = 0; j < h; ++j) {
          const T i = zr[j], f = zr[h + j], g = zr[2 * h + j], o = zr[3 * h + j];
          const T tc = std::tanh(cr[j]);
          const T dhj = dh[n * h + j];
          const T dcj = dhj * o * (T(1) - tc * tc) + dc[n * h + j];
          const T cprev = t > 0 ? cr[j - h] : T(0);
          dzr[j] = dcj * g * i * (T(1) - i);
          dzr[h + j] = dcj * cprev * f * (T(1) - f);
          dzr[2 * h + j] = dcj * i * (T(1) - g * g);
          dzr[3 * h + j] = dhj * tc * o * (T(1) - o);
          dc[n * h + j] = dcj * f;
        }
      }
      if (t > 0) {
        // dU += h_{t-1}^T dz_t ; dh = dz_t U^T
        cpu::Gemm<T>(true, false, h, g4, b, T(1), hs + (t - 1) * h, hsr, dz + t * g4, zs, T(1),
                     arena_->grad(u_), g4);
        cpu::Gemm<T>(false, true, b, h, g4, T(1), dz + t * g4, zs, arena_->param(u_), g4, T(0), dh,
                     h);
      }
    }
    cpu::Gemm<T>(true, false, f_, g4, b * t_, T(1), x_.data<T>(), f_, dz, g4, T(1),
                 arena_->grad(w_), g4);
    T* db = arena_->grad(b_);
    for (int64_t r = 0; r < b * t_; ++r)
      for (int64_t j = 0; j < g4; ++j) db[j] += dz[r * g4 + j];
    if (!need_dx) return Tensor();
    Tensor& dx = ReuseBuffer(dx_, DTypeOf<T>(), x_.shape());
    cpu::Gemm<T>(false, true, b * t_, f_, g4, T(1), dz, g4, arena_->param(w_), g4, T(0),
                 dx.data<T>(), f_);
    return dx;
  }

  int64_t FlopsPerSample() const override {
    const int64_t h = o_.units;
    return 2 * t_ * (f_ + h) * 4 * h;
  }

 private:
  LstmOptions o_;
  Shape in_;
  int64_t t_ = 0, f_ = 0;
  Arena<T>* arena_ = nullptr;
  int w_ = -1, u_ = -1, b_ = -1;
  Tensor x_, gates_, c_, h_, y_, dz_, dh_, dc_, dx_;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeLstm(const LstmOptions& options) {
  return std::make_unique<Lstm<T>>(options);
}
template std::unique_ptr<Layer<float>> MakeLstm<float>(const LstmOptions&);
template std::unique_ptr<Layer<double>> MakeLstm<double>(const LstmOptions&);

}  // namespace shardflow
