#include "core/layers/lstm.hpp"

#include <memory>

#include "core/init.hpp"

namespace shardflow {
namespace {

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
               arena_->init_stream(w_));
    InitKernel(InitKind::kGlorotUniform, arena_->param(u_), h * 4 * h, h, 4 * h, seed,
               arena_->init_stream(u_));
    T* b = arena_->param(b_);
    InitConstant(b, 4 * h, T(0));
    InitConstant(b + h, h, T(1));  // forget gate
  }

  std::unique_ptr<LayerState> NewState() const override { return std::make_unique<State>(); }
  int64_t FlopsPerSample() const override {
    const int64_t h = o_.units;
    return 2 * t_ * (f_ + h) * 4 * h;
  }

 protected:
  // x is (B, T, F). A backend with a library LSTM (cuDNN) runs the whole layer in one call and
  // keeps what its backward pass needs in s.library. Otherwise: gates (B, T, 4H) holds the
  // activated gates [i f g o]; c, h (B, T, H). The input projection of every step is one GEMM:
  // (B*T, F) x (F, 4H). Step t then adds h_{t-1} U into rows b*T + t (row stride T*4H).
  Tensor DoForward(const Tensor& x, const ForwardContext& ctx, LayerState& st) override {
    const int64_t b = CheckInput(x, in_, "lstm");
    State& s = StateAs<State>(st, "lstm");
    s.x = x;
    const int64_t h = o_.units;
    Backend<T>& be = BackendFor<T>(x.device());
    T* hs = ReuseBuffer(s.h, DTypeOf<T>(), {b, t_, h}).template device_data<T>();
    if (be.LstmForward(Dims(b), ctx.training, x.device_data<T>(), arena_->param(w_),
                       arena_->param(u_), arena_->param(b_), hs, &s.library)) {
      s.gates = Tensor();  // the step-by-step path's, not needed now
      s.c = Tensor();
    } else {
      s.library.reset();
      StepByStep(be, b, x.device_data<T>(), s, hs);
    }
    if (o_.return_sequences) return s.h;
    Tensor& y = ReuseBuffer(s.y, DTypeOf<T>(), {b, h});
    // y = h at the last step: (B, H) rows of stride T*H.
    T* yp = y.device_data<T>();
    be.Fill(b * h, T(0), yp);
    be.AddRows(b, h, hs + (t_ - 1) * h, t_ * h, yp);
    return y;
  }

  // Backward through time, t = T-1 .. 0, carrying dh (from step t+1 via U) and dc:
  //   dh_t = dy_t + dz_{t+1} U^T        do = dh tanh(c)      dc = dh o (1 - tanh^2 c) + dc_{t+1}
  //   f_{t+1} di = dc g   dg = dc i   df = dc c_{t-1} dz = [di i(1-i), df f(1-f), dg (1-g^2), do
  //   o(1-o)]   (stored in dz (B, T, 4H); pointwise::LstmCellGrad)
  // then dU += h_{t-1}^T dz_t per step and, once, dW += x^T dz, db += sum dz, dx = dz W^T.
  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& st) override {
    State& s = StateAs<State>(st, "lstm");
    const int64_t b = s.x.dim(0), h = o_.units, g4 = 4 * h, zs = t_ * g4, hsr = t_ * h;
    Backend<T>& be = BackendFor<T>(dy.device());
    if (s.library) {  // dy is every step's output gradient, or the last step's
      T* dx = need_dx ? ReuseBuffer(s.dx, DTypeOf<T>(), s.x.shape()).template device_data<T>()
                      : nullptr;
      const T* d = dy.device_data<T>();
      be.LstmBackward(Dims(b), s.x.template device_data<T>(), s.h.template device_data<T>(),
                      o_.return_sequences ? d : nullptr, o_.return_sequences ? nullptr : d,
                      *s.library, arena_->grad(w_), arena_->grad(u_), arena_->grad(b_), dx);
      return need_dx ? s.dx : Tensor();
    }
    const T* z = s.gates.template device_data<T>();
    const T* c = s.c.template device_data<T>();
    const T* hs = s.h.template device_data<T>();
    const T* d = dy.device_data<T>();
    T* dz = ReuseBuffer(s.dz, DTypeOf<T>(), {b, t_, g4}).template device_data<T>();
    T* dh = ReuseBuffer(s.dh, DTypeOf<T>(), {b, h}).template device_data<T>();
    T* dc = ReuseBuffer(s.dc, DTypeOf<T>(), {b, h}).template device_data<T>();
    be.Fill(b * h, T(0), dh);
    be.Fill(b * h, T(0), dc);
    for (int64_t t = t_ - 1; t >= 0; --t) {
      // dh currently holds dz_{t+1} U^T (zero at the last step); add the output gradient.
      if (o_.return_sequences) {
        be.AddRows(b, h, d + t * h, hsr, dh);
      } else if (t == t_ - 1) {
        be.AddRows(b, h, d, h, dh);
      }
      be.LstmCellGrad(b, h, z + t * g4, zs, c + t * h, hsr, t > 0, dh, dc, dz + t * g4);
      if (t > 0) {
        // dU += h_{t-1}^T dz_t ; dh = dz_t U^T
        be.Gemm(true, false, h, g4, b, T(1), hs + (t - 1) * h, hsr, dz + t * g4, zs, T(1),
                arena_->grad(u_), g4);
        be.Gemm(false, true, b, h, g4, T(1), dz + t * g4, zs, arena_->param(u_), g4, T(0), dh, h);
      }
    }
    be.Gemm(true, false, f_, g4, b * t_, T(1), s.x.template device_data<T>(), f_, dz, g4, T(1),
            arena_->grad(w_), g4);
    be.AddColumnSums(b * t_, g4, dz, arena_->grad(b_));
    if (!need_dx) return Tensor();
    Tensor& dx = ReuseBuffer(s.dx, DTypeOf<T>(), s.x.shape());
    be.Gemm(false, true, b * t_, f_, g4, T(1), dz, g4, arena_->param(w_), g4, T(0),
            dx.device_data<T>(), f_);
    return dx;
  }

 private:
  struct State final : LayerState {
    Tensor x, gates, c, h, y, dz, dh, dc, dx;
    std::unique_ptr<LstmSaved> library;  // the backend's, when its library ran the pass
  };
  LstmShape Dims(int64_t b) const {
    return {.batch = b, .steps = t_, .features = f_, .units = o_.units};
  }
  // The forward pass on the backend's GEMMs and LstmCell, one step at a time.
  void StepByStep(Backend<T>& be, int64_t b, const T* x, State& s, T* hs) {
    const int64_t h = o_.units, g4 = 4 * h;
    T* z = ReuseBuffer(s.gates, DTypeOf<T>(), {b, t_, g4}).template device_data<T>();
    T* c = ReuseBuffer(s.c, DTypeOf<T>(), {b, t_, h}).template device_data<T>();
    be.BroadcastRows(b * t_, g4, arena_->param(b_), z);
    be.Gemm(false, false, b * t_, g4, f_, T(1), x, f_, arena_->param(w_), g4, T(1), z, g4);
    const int64_t zs = t_ * g4, hsr = t_ * h;  // row strides of one time step's slice
    for (int64_t t = 0; t < t_; ++t) {
      T* zt = z + t * g4;
      if (t > 0) {
        be.Gemm(false, false, b, g4, h, T(1), hs + (t - 1) * h, hsr, arena_->param(u_), g4, T(1),
                zt, zs);
      }
      be.LstmCell(b, h, zt, zs, c + t * h, hs + t * h, hsr, t > 0);
    }
  }
  LstmOptions o_;
  Shape in_;
  int64_t t_ = 0, f_ = 0;
  Arena<T>* arena_ = nullptr;
  int w_ = -1, u_ = -1, b_ = -1;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeLstm(const LstmOptions& options) {
  return std::make_unique<Lstm<T>>(options);
}
template std::unique_ptr<Layer<float>> MakeLstm<float>(const LstmOptions&);
template std::unique_ptr<Layer<double>> MakeLstm<double>(const LstmOptions&);

}  // namespace shardflow
