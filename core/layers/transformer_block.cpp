#include "core/layers/transformer_block.hpp"

#include <sstream>
#include <vector>

#include "core/layers/activation.hpp"
#include "core/layers/attention.hpp"
#include "core/layers/dense.hpp"
#include "core/layers/dropout.hpp"
#include "core/layers/layer_norm.hpp"

namespace shardflow {
namespace {

// A block's dropouts draw masks as layers index + stride x branch would (dropout.cpp keys its
// stream by the layer index, below 2^16): apart from every real layer's and each other's.
constexpr int kDropoutIndexStride = 4096;

template <typename T>
class TransformerBlock final : public Layer<T> {
 public:
  explicit TransformerBlock(const TransformerBlockOptions& o) : o_(o) {
    attn_path_.push_back({"ln1/", MakeLayerNorm<T>({})});
    attn_path_.push_back({"attention/", MakeAttention<T>({.heads = o.heads, .causal = o.causal})});
    mlp_path_.push_back({"ln2/", MakeLayerNorm<T>({})});
  }
  std::string kind() const override { return "block"; }
  std::string Describe() const override {
    std::string s = "block:" + std::to_string(o_.heads) + (o_.causal ? ":causal" : "");
    if (o_.dropout > 0) {
      std::ostringstream rate;
      rate << o_.dropout;
      s.append(":").append(rate.str());
    }
    return s;
  }

  Shape Build(const Shape& in, BuildContext<T>& ctx) override {
    if (in.size() != 2) {
      throw Error(ErrorCode::kInvalidArgument,
                  Describe() + " needs a sequence (time, features), got " + ShapeToString(in),
                  {.key = "model"});
    }
    in_ = in;
    const int64_t d = in[1];
    mlp_path_.resize(1);
    mlp_path_.push_back({"mlp/fc/", MakeDense<T>({.units = 4 * d,
                                                  .init = InitKind::kGlorotUniform,
                                                  .split = TpSplit::kColumn})});
    mlp_path_.push_back({"mlp/gelu/", MakeActivation<T>(ActivationKind::kGelu)});
    mlp_path_.push_back(
        {"mlp/proj/",
         MakeDense<T>({.units = d, .init = InitKind::kGlorotUniform, .split = TpSplit::kRow})});
    attn_path_.resize(2);
    if (o_.dropout > 0) {
      attn_path_.push_back({"attention/dropout/", MakeDropout<T>(o_.dropout)});
      mlp_path_.push_back({"mlp/dropout/", MakeDropout<T>(o_.dropout)});
    }
    const std::string prefix = ctx.prefix;
    const int index = ctx.layer_index;
    int branch = 0;
    for (Path* path : {&attn_path_, &mlp_path_}) {
      Shape s = in;
      ++branch;
      for (auto& [name, layer] : *path) {
        ctx.prefix = prefix + name;
        // A dropout (no parameters) draws its masks by layer index: each branch's its own.
        if (layer->kind() == "dropout") ctx.layer_index = index + kDropoutIndexStride * branch;
        s = layer->Build(s, ctx);
        ctx.layer_index = index;
      }
    }
    ctx.prefix = prefix;
    return in;
  }

  void Initialize(uint64_t seed) override {
    for (Path* path : {&attn_path_, &mlp_path_}) {
      for (auto& [name, layer] : *path) layer->Initialize(seed);
    }
  }

  std::unique_ptr<LayerState> NewState() const override {
    auto s = std::make_unique<State>();
    for (const auto& [name, layer] : attn_path_) s->attn.push_back(layer->NewState());
    for (const auto& [name, layer] : mlp_path_) s->mlp.push_back(layer->NewState());
    return s;
  }

  int64_t FlopsPerSample() const override {
    int64_t f = 0;
    for (const Path* path : {&attn_path_, &mlp_path_}) {
      for (const auto& [name, layer] : *path) f += layer->FlopsPerSample();
    }
    return f;
  }

 protected:
  // h = x + attn(x); y = h + mlp(h).
  Tensor DoForward(const Tensor& x, const ForwardContext& ctx, LayerState& st) override {
    CheckSequenceInput(x, in_, "block");
    State& s = StateAs<State>(st, "block");
    const Tensor a = Run(attn_path_, s.attn, x, ctx);
    Tensor& h = ReuseBuffer(s.h, DTypeOf<T>(), x.shape());
    Backend<T>& be = BackendFor<T>(x.device());
    be.Add(h.num_elements(), x.template device_data<T>(), a.template device_data<T>(),
           h.template device_data<T>());
    const Tensor m = Run(mlp_path_, s.mlp, h, ctx);
    Tensor& y = ReuseBuffer(s.y, DTypeOf<T>(), x.shape());
    be.Add(y.num_elements(), h.template device_data<T>(), m.template device_data<T>(),
           y.template device_data<T>());
    return y;
  }

  // dh = dy + mlp'(dy); dx = dh + attn'(dh).
  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& st) override {
    State& s = StateAs<State>(st, "block");
    Backend<T>& be = BackendFor<T>(dy.device());
    const Tensor dm = Back(mlp_path_, s.mlp, dy, true);
    Tensor& dh = ReuseBuffer(s.dh, DTypeOf<T>(), dy.shape());
    be.Add(dh.num_elements(), dy.template device_data<T>(), dm.template device_data<T>(),
           dh.template device_data<T>());
    const Tensor da = Back(attn_path_, s.attn, dh, need_dx);
    if (!need_dx) return Tensor();
    Tensor& dx = ReuseBuffer(s.dx, DTypeOf<T>(), dy.shape());
    be.Add(dx.num_elements(), dh.template device_data<T>(), da.template device_data<T>(),
           dx.template device_data<T>());
    return dx;
  }

 private:
  using Path = std::vector<std::pair<std::string, std::unique_ptr<Layer<T>>>>;
  using States = std::vector<std::unique_ptr<LayerState>>;
  struct State final : LayerState {
    States attn, mlp;
    Tensor h, y, dh, dx;
  };

  static Tensor Run(Path& path, States& states, const Tensor& x, const ForwardContext& ctx) {
    Tensor v = x;
    for (size_t i = 0; i < path.size(); ++i) v = path[i].second->Forward(v, ctx, *states[i]);
    return v;
  }

  static Tensor Back(Path& path, States& states, const Tensor& dy, bool need_dx) {
    Tensor g = dy;
    for (size_t i = path.size(); i-- > 0;) {
      g = path[i].second->Backward(g, need_dx || i > 0, *states[i]);
    }
    return g;
  }

  TransformerBlockOptions o_;
  Shape in_;
  Path attn_path_, mlp_path_;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeTransformerBlock(const TransformerBlockOptions& options) {
  return std::make_unique<TransformerBlock<T>>(options);
}
template std::unique_ptr<Layer<float>> MakeTransformerBlock<float>(const TransformerBlockOptions&);
template std::unique_ptr<Layer<double>> MakeTransformerBlock<double>(
    const TransformerBlockOptions&);

}  // namespace shardflow
