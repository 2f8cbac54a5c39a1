#include "core/layers/attention.hpp"

#include "core/backend/device_runtime.hpp"
#include "core/cpu/attention.hpp"
#include "core/layers/dense.hpp"

namespace shardflow {
namespace {

template <typename T>
class Attention final : public Layer<T> {
 public:
  explicit Attention(const AttentionOptions& o) : o_(o) {
    if (o.heads <= 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "attention needs a positive number of heads, got " + std::to_string(o.heads));
    }
  }
  std::string kind() const override { return "attention"; }
  std::string Describe() const override {
    return "attention:" + std::to_string(o_.heads) + (o_.causal ? ":causal" : "");
  }

  Shape Build(const Shape& in, BuildContext<T>& ctx) override {
    if (in.size() != 2 || in[1] % o_.heads != 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  Describe() + " needs a sequence (time, features) with features divisible by " +
                      std::to_string(o_.heads) + " heads, got " + ShapeToString(in),
                  {.key = "model"});
    }
    const int ways = TpWays(ctx.tp);
    if (o_.heads % ways != 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  ctx.layer_name + " (" + Describe() + "): " + std::to_string(o_.heads) +
                      " heads cannot be divided among " + std::to_string(ways) +
                      " tensor-parallel ways",
                  {.key = kTensorParallelKey});
    }
    in_ = in;
    const int64_t d = in[1];
    head_dim_ = d / o_.heads;
    way_heads_ = o_.heads / ways;
    qkv_ = MakeDense<T>({.units = 3 * d, .init = o_.init, .split = TpSplit::kColumn});
    out_ = MakeDense<T>({.units = d, .init = o_.init, .split = TpSplit::kRow});
    const std::string prefix = ctx.prefix;
    ctx.prefix = prefix + "qkv/";
    const Shape qkv = qkv_->Build(in, ctx);
    ctx.prefix = prefix + "output/";
    out_->Build({in[0], qkv[1] / 3}, ctx);
    ctx.prefix = prefix;
    return in;
  }

  void Initialize(uint64_t seed) override {
    qkv_->Initialize(seed);
    out_->Initialize(seed);
  }

  std::unique_ptr<LayerState> NewState() const override {
    auto s = std::make_unique<State>();
    s->qkv = qkv_->NewState();
    s->out = out_->NewState();
    return s;
  }

  // Per way: the projections of its heads, and the scores (causal: about half of them).
  int64_t FlopsPerSample() const override {
    const int64_t t = in_[0], scores = 4 * t * t * way_heads_ * head_dim_;
    return qkv_->FlopsPerSample() + out_->FlopsPerSample() + (o_.causal ? scores / 2 : scores);
  }

 protected:
  Tensor DoForward(const Tensor& x, const ForwardContext& ctx, LayerState& st) override {
    const int64_t b = CheckSequenceInput(x, in_, "attention");
    CheckHostTensor(x, "attention");
    State& s = StateAs<State>(st, "attention");
    s.qkv_y = qkv_->Forward(x, ctx, *s.qkv);
    if (ctx.lengths != nullptr) {
      s.lengths = *ctx.lengths;
    } else {
      s.lengths.clear();
    }
    const int64_t t = x.dim(1);  // the model's context, or a shorter batch's
    const cpu::AttentionShape shape = ShapeOf(b, t, s);
    Tensor& o = ReuseBuffer(s.o, DTypeOf<T>(), {b, t, way_heads_ * head_dim_});
    Tensor& lse = ReuseBuffer(s.lse, DTypeOf<T>(), {b, way_heads_, t});
    cpu::AttentionForward(shape, s.qkv_y.template data<T>(), o.template data<T>(),
                          lse.template data<T>());
    return out_->Forward(o, ctx, *s.out);
  }

  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& st) override {
    CheckHostTensor(dy, "attention");
    State& s = StateAs<State>(st, "attention");
    const Tensor dout = out_->Backward(dy, true, *s.out);
    Tensor& dqkv = ReuseBuffer(s.dqkv, DTypeOf<T>(), s.qkv_y.shape());
    cpu::AttentionBackward(ShapeOf(s.o.dim(0), s.o.dim(1), s), s.qkv_y.template data<T>(),
                           s.o.template data<T>(), s.lse.template data<T>(),
                           dout.template data<T>(), dqkv.template data<T>());
    return qkv_->Backward(dqkv, need_dx, *s.qkv);
  }

 private:
  struct State final : LayerState {
    std::unique_ptr<LayerState> qkv, out;
    Tensor qkv_y, o, lse, dqkv;
    std::vector<int64_t> lengths;  // of the forward pass; empty: not padded
  };

  cpu::AttentionShape ShapeOf(int64_t batch, int64_t time, const State& s) const {
    if (!s.lengths.empty() && static_cast<int64_t>(s.lengths.size()) != batch) {
      throw Error(ErrorCode::kInternal, "attention got " + std::to_string(s.lengths.size()) +
                                            " sequence lengths for a batch of " +
                                            std::to_string(batch));
    }
    return {.batch = batch,
            .time = time,
            .heads = way_heads_,
            .head_dim = head_dim_,
            .ld_qkv = 3 * way_heads_ * head_dim_,
            .causal = o_.causal,
            .lengths = s.lengths.empty() ? nullptr : s.lengths.data()};
  }

  AttentionOptions o_;
  Shape in_;
  int64_t head_dim_ = 0, way_heads_ = 0;
  std::unique_ptr<Layer<T>> qkv_, out_;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeAttention(const AttentionOptions& options) {
  return std::make_unique<Attention<T>>(options);
}
template std::unique_ptr<Layer<float>> MakeAttention<float>(const AttentionOptions&);
template std::unique_ptr<Layer<double>> MakeAttention<double>(const AttentionOptions&);

}  // namespace shardflow
