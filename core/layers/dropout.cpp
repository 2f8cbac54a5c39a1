#include "core/layers/dropout.hpp"

#include <sstream>

namespace shardflow {
namespace {

template <typename T>
class Dropout final : public Layer<T> {
 public:
  explicit Dropout(double rate) : rate_(rate) {
    if (!(rate >= 0.0 && rate < 1.0)) {
      throw Error(ErrorCode::kInvalidArgument,
                  "dropout rate must be in [0, 1), got " + std::to_string(rate));
    }
  }
  std::string kind() const override { return "dropout"; }
  std::string Describe() const override {
    std::ostringstream s;
    s << "dropout:" << rate_;
    return s.str();
  }
  // On a way's slice of a tensor-split activation the masks are the whole activation's at the
  // slice's elements.
  Shape Build(const Shape& in, BuildContext<T>& ctx) override {
    in_ = in;
    layer_ = ctx.layer_index;
    const int ways = TpWays(ctx.tp);
    if (ctx.input_split && ways > 1 && !in.empty()) {
      slice_ = {.begin = ctx.tp->way * in.back(), .size = in.back(), .full = in.back() * ways};
    }
    return in;
  }
  TpRole tp_role() const override { return TpRole::kSliceWise; }
  std::unique_ptr<LayerState> NewState() const override { return std::make_unique<State>(); }

 protected:
  // x and y are (B, ...), n flat elements; the mask keeps the scale (0 or 1/(1-rate)) per
  // element. The mask is a pure function of (seed, step, layer, micro-batch, element): the
  // stream is (step << 16) ^ layer, plus micro_batch times an odd constant, so micro-batch 0
  // draws exactly the masks of a whole batch before micro-batches existed (resumed runs stay
  // bit-identical) and the mask of a micro-batch does not depend on when it runs.
  Tensor DoForward(const Tensor& x, const ForwardContext& ctx, LayerState& st) override {
    CheckSequenceInput(x, in_, "dropout");
    State& s = StateAs<State>(st, "dropout");
    s.training = ctx.training && rate_ > 0.0;
    if (!s.training) return x;
    const int64_t n = x.num_elements();
    Tensor& y = ReuseBuffer(s.y, DTypeOf<T>(), x.shape());
    Tensor& m = ReuseBuffer(s.mask, DTypeOf<T>(), x.shape());
    const uint64_t stream = ((ctx.step << 16) ^ static_cast<uint64_t>(layer_)) +
                            ctx.micro_batch * 0x9e3779b97f4a7c15ULL;
    const T scale = static_cast<T>(1.0 / (1.0 - rate_));
    Backend<T>& be = BackendFor<T>(x.device());
    if (slice_.size == slice_.full) {
      be.DropoutMask(n, static_cast<float>(rate_), scale, ctx.seed, stream, x.device_data<T>(),
                     m.device_data<T>(), y.device_data<T>());
    } else {
      const SliceIndex si{.outer = n / slice_.size,
                          .full = slice_.full,
                          .begin = slice_.begin,
                          .size = slice_.size};
      be.DropoutMaskSlice(si, static_cast<float>(rate_), scale, ctx.seed, stream,
                          x.device_data<T>(), m.device_data<T>(), y.device_data<T>());
    }
    return y;
  }
  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& st) override {
    if (!need_dx) return Tensor();
    State& s = StateAs<State>(st, "dropout");
    if (!s.training) return dy;
    Tensor& dx = ReuseBuffer(s.dx, DTypeOf<T>(), dy.shape());
    BackendFor<T>(dy.device())
        .Mul(dy.num_elements(), dy.device_data<T>(), s.mask.template device_data<T>(),
             dx.device_data<T>());
    return dx;
  }

 private:
  struct State final : LayerState {
    bool training = false;
    Tensor y, mask, dx;
  };
  double rate_;
  Shape in_;
  int layer_ = 0;
  TpSlice slice_;  // of the last dimension, when the input is a way's slice
};
}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeDropout(double rate) {
  return std::make_unique<Dropout<T>>(rate);
}
template std::unique_ptr<Layer<float>> MakeDropout<float>(double);
template std::unique_ptr<Layer<double>> MakeDropout<double>(double);

}  // namespace shardflow
