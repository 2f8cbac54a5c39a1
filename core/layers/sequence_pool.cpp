#include "core/layers/sequence_pool.hpp"

#include <algorithm>
#include <vector>

#include "core/backend/device_runtime.hpp"

namespace shardflow {
namespace {

template <typename T>
class SequencePool final : public Layer<T> {
 public:
  explicit SequencePool(SequencePoolKind kind) : kind_(kind) {}
  std::string kind() const override { return "seqpool"; }
  std::string Describe() const override {
    return kind_ == SequencePoolKind::kMean ? "seqpool:mean" : "seqpool:first";
  }
  TpRole tp_role() const override { return TpRole::kSliceWise; }

  Shape Build(const Shape& in, BuildContext<T>&) override {
    if (in.size() != 2) {
      throw Error(ErrorCode::kInvalidArgument,
                  Describe() + " needs a sequence (time, features), got " + ShapeToString(in),
                  {.key = "model"});
    }
    in_ = in;
    return {in[1]};
  }

  std::unique_ptr<LayerState> NewState() const override { return std::make_unique<State>(); }

 protected:
  Tensor DoForward(const Tensor& x, const ForwardContext& ctx, LayerState& st) override {
    const int64_t b = CheckSequenceInput(x, in_, "seqpool");
    CheckHostTensor(x, "seqpool");
    State& s = StateAs<State>(st, "seqpool");
    s.batch = b;
    s.time = x.dim(1);
    const int64_t t = s.time, d = in_[1];
    s.lengths.assign(static_cast<size_t>(b), t);
    if (ctx.lengths != nullptr) {
      for (int64_t i = 0; i < b; ++i) {
        s.lengths[static_cast<size_t>(i)] =
            std::clamp<int64_t>((*ctx.lengths)[static_cast<size_t>(i)], 1, t);
      }
    }
    Tensor& y = ReuseBuffer(s.y, DTypeOf<T>(), {b, d});
    const T* xp = x.template data<T>();
    T* yp = y.template data<T>();
    for (int64_t i = 0; i < b; ++i) {
      T* out = yp + i * d;
      const T* in = xp + i * t * d;
      if (kind_ == SequencePoolKind::kFirst) {
        for (int64_t c = 0; c < d; ++c) out[c] = in[c];
        continue;
      }
      const int64_t n = s.lengths[static_cast<size_t>(i)];
      for (int64_t c = 0; c < d; ++c) out[c] = T(0);
      for (int64_t p = 0; p < n; ++p) {
        for (int64_t c = 0; c < d; ++c) out[c] += in[p * d + c];
      }
      for (int64_t c = 0; c < d; ++c) out[c] /= static_cast<T>(n);
    }
    return y;
  }

  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& st) override {
    if (!need_dx) return Tensor();
    CheckHostTensor(dy, "seqpool");
    State& s = StateAs<State>(st, "seqpool");
    const int64_t t = s.time, d = in_[1];
    Tensor& dx = ReuseBuffer(s.dx, DTypeOf<T>(), {s.batch, t, d});
    const T* g = dy.template data<T>();
    T* dxp = dx.template data<T>();
    for (int64_t i = 0; i < s.batch; ++i) {
      const int64_t n = s.lengths[static_cast<size_t>(i)];
      const T share = kind_ == SequencePoolKind::kMean ? T(1) / static_cast<T>(n) : T(1);
      for (int64_t p = 0; p < t; ++p) {
        T* out = dxp + (i * t + p) * d;
        const bool gets = kind_ == SequencePoolKind::kMean ? p < n : p == 0;
        for (int64_t c = 0; c < d; ++c) out[c] = gets ? g[i * d + c] * share : T(0);
      }
    }
    return dx;
  }

 private:
  struct State final : LayerState {
    Tensor y, dx;
    int64_t batch = 0, time = 0;   // of the forward pass
    std::vector<int64_t> lengths;  // positions averaged per sample
  };

  SequencePoolKind kind_;
  Shape in_;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeSequencePool(SequencePoolKind kind) {
  return std::make_unique<SequencePool<T>>(kind);
}
template std::unique_ptr<Layer<float>> MakeSequencePool<float>(SequencePoolKind);
template std::unique_ptr<Layer<double>> MakeSequencePool<double>(SequencePoolKind);

}  // namespace shardflow
