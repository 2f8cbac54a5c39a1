#include "core/layers/residual.hpp"

#include <vector>

#include "core/layers/activation.hpp"
#include "core/layers/batch_norm.hpp"
#include "core/layers/conv2d.hpp"

namespace shardflow {
namespace {

template <typename T>
class Residual final : public Layer<T> {
 public:
  explicit Residual(const ResidualOptions& o) : o_(o) {
    if (o.filters <= 0 || o.stride <= 0) {
      throw Error(ErrorCode::kInvalidArgument, "residual needs positive filters and stride, got " +
                                                   std::to_string(o.filters) + " and " +
                                                   std::to_string(o.stride));
    }
    if (o.bottleneck) {
      MakeBottleneckPath();
    } else {
      Conv2DOptions c{.filters = o.filters, .kernel_h = 3, .kernel_w = 3, .stride = o.stride};
      main_.push_back({"conv1/", MakeConv2D<T>(c)});
      main_.push_back({"bn1/", MakeBatchNorm<T>({})});
      main_.push_back({"relu1/", MakeActivation<T>(ActivationKind::kRelu)});
      c.stride = 1;
      main_.push_back({"conv2/", MakeConv2D<T>(c)});
      main_.push_back({"bn2/", MakeBatchNorm<T>({})});
    }
    out_relu_ = MakeActivation<T>(ActivationKind::kRelu);
  }
  std::string kind() const override { return o_.bottleneck ? "bottleneck" : "residual"; }
  std::string Describe() const override {
    std::string s = kind() + ":" + std::to_string(o_.filters);
    if (o_.stride != 1) s += std::string(":") += std::to_string(o_.stride);
    return s;
  }

  Shape Build(const Shape& in, BuildContext<T>& ctx) override {
    if (in.size() != 3) {
      throw Error(ErrorCode::kInvalidArgument,
                  "residual expects images (batch, height, width, channels), got per-sample " +
                      ShapeToString(in));
    }
    in_ = in;
    const std::string prefix = ctx.prefix;
    Shape s = in;
    for (auto& [name, layer] : main_) {
      ctx.prefix = prefix + name;
      s = layer->Build(s, ctx);
    }
    const int64_t out_channels = o_.bottleneck ? 4 * o_.filters : o_.filters;
    shortcut_.clear();
    if (o_.stride != 1 || in[2] != out_channels) {
      shortcut_.push_back({"shortcut/", MakeConv2D<T>({.filters = out_channels,
                                                       .kernel_h = 1,
                                                       .kernel_w = 1,
                                                       .stride = o_.stride,
                                                       .same_padding = true,
                                                       .use_bias = !o_.bottleneck})});
      if (o_.bottleneck) shortcut_.push_back({"shortcut_bn/", MakeBatchNorm<T>({})});
      Shape sc = in;
      for (auto& [name, layer] : shortcut_) {
        ctx.prefix = prefix + name;
        sc = layer->Build(sc, ctx);
      }
    }
    ctx.prefix = prefix;
    out_relu_->Build(s, ctx);
    out_ = s;
    return s;
  }

  void Initialize(uint64_t seed) override {
    for (auto& [name, layer] : main_) layer->Initialize(seed);
    for (auto& [name, layer] : shortcut_) layer->Initialize(seed);
  }

  std::vector<NamedTensor> Buffers() override {
    std::vector<NamedTensor> out;
    for (auto* path : {&main_, &shortcut_}) {
      for (auto& [name, layer] : *path)
        for (NamedTensor b : layer->Buffers()) out.push_back({name + b.name, b.tensor});
    }
    return out;
  }

  std::unique_ptr<LayerState> NewState() const override {
    auto s = std::make_unique<State>();
    for (auto& [name, layer] : main_) s->main.push_back(layer->NewState());
    for (auto& [name, layer] : shortcut_) s->shortcut.push_back(layer->NewState());
    s->out_relu = out_relu_->NewState();
    return s;
  }

  int64_t FlopsPerSample() const override {
    int64_t f = 0;
    for (auto* path : {&main_, &shortcut_}) {
      for (const auto& [name, layer] : *path) f += layer->FlopsPerSample();
    }
    return f;
  }

 protected:
  // x is (B, H, W, C); sum (B, OH, OW, F) = main(x) + shortcut(x); y = relu(sum). The state
  // holds one sub-state per inner layer.
  Tensor DoForward(const Tensor& x, const ForwardContext& ctx, LayerState& st) override {
    const int64_t b = CheckInput(x, in_, "residual");
    State& s = StateAs<State>(st, "residual");
    Tensor h = x;
    for (size_t i = 0; i < main_.size(); ++i) h = main_[i].second->Forward(h, ctx, *s.main[i]);
    Tensor sc = x;
    for (size_t i = 0; i < shortcut_.size(); ++i) {
      sc = shortcut_[i].second->Forward(sc, ctx, *s.shortcut[i]);
    }
    Tensor& sum = ReuseBuffer(s.sum, DTypeOf<T>(), WithBatch(b, out_));
    BackendFor<T>(x.device())
        .Add(sum.num_elements(), h.device_data<T>(), sc.device_data<T>(), sum.device_data<T>());
    return out_relu_->Forward(sum, ctx, *s.out_relu);
  }

  // dsum = relu'(dy); dx = main'(dsum) + shortcut'(dsum) (identity: dsum itself).
  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& st) override {
    State& s = StateAs<State>(st, "residual");
    const Tensor dsum = out_relu_->Backward(dy, true, *s.out_relu);
    Tensor g = dsum;
    for (size_t i = main_.size(); i-- > 0;) {
      g = main_[i].second->Backward(g, need_dx || i > 0, *s.main[i]);
    }
    Tensor ds = dsum;
    for (size_t i = shortcut_.size(); i-- > 0;) {
      ds = shortcut_[i].second->Backward(ds, need_dx || i > 0, *s.shortcut[i]);
    }
    if (!need_dx) return Tensor();
    Tensor& dx = ReuseBuffer(s.dx, DTypeOf<T>(), g.shape());
    BackendFor<T>(dy.device())
        .Add(dx.num_elements(), g.device_data<T>(), ds.device_data<T>(), dx.device_data<T>());
    return dx;
  }

 private:
  using Path = std::vector<std::pair<std::string, std::unique_ptr<Layer<T>>>>;
  struct State final : LayerState {
    std::vector<std::unique_ptr<LayerState>> main, shortcut;
    std::unique_ptr<LayerState> out_relu;
    Tensor sum, dx;
  };

  // conv 1x1 F, bn, relu, conv 3x3 F stride s, bn, relu, conv 1x1 4F, bn; no biases.
  void MakeBottleneckPath() {
    Conv2DOptions c{.filters = o_.filters, .kernel_h = 1, .kernel_w = 1, .use_bias = false};
    main_.push_back({"conv1/", MakeConv2D<T>(c)});
    main_.push_back({"bn1/", MakeBatchNorm<T>({})});
    main_.push_back({"relu1/", MakeActivation<T>(ActivationKind::kRelu)});
    c.kernel_h = c.kernel_w = 3;
    c.stride = o_.stride;
    main_.push_back({"conv2/", MakeConv2D<T>(c)});
    main_.push_back({"bn2/", MakeBatchNorm<T>({})});
    main_.push_back({"relu2/", MakeActivation<T>(ActivationKind::kRelu)});
    c.kernel_h = c.kernel_w = 1;
    c.stride = 1;
    c.filters = 4 * o_.filters;
    main_.push_back({"conv3/", MakeConv2D<T>(c)});
    main_.push_back({"bn3/", MakeBatchNorm<T>({})});
  }

  ResidualOptions o_;
  Shape in_, out_;
  Path main_;
  Path shortcut_;  // empty: identity
  std::unique_ptr<Layer<T>> out_relu_;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeResidual(const ResidualOptions& options) {
  return std::make_unique<Residual<T>>(options);
}
template std::unique_ptr<Layer<float>> MakeResidual<float>(const ResidualOptions&);
template std::unique_ptr<Layer<double>> MakeResidual<double>(const ResidualOptions&);

}  // namespace shardflow
