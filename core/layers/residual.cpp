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
    Conv2DOptions c{.filters = o.filters, .kernel_h = 3, .kernel_w = 3, .stride = o.stride};
    main_.push_back({"conv1/", MakeConv2D<T>(c)});
    main_.push_back({"bn1/", MakeBatchNorm<T>({})});
    main_.push_back({"relu1/", MakeActivation<T>(ActivationKind::kRelu)});
    c.stride = 1;
    main_.push_back({"conv2/", MakeConv2D<T>(c)});
    main_.push_back({"bn2/", MakeBatchNorm<T>({})});
    out_relu_ = MakeActivation<T>(ActivationKind::kRelu);
  }
  std::string kind() const override { return "residual"; }
  std::string Describe() const override {
    std::string s = "residual:" + std::to_string(o_.filters);
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
    if (o_.stride != 1 || in[2] != o_.filters) {
      shortcut_ = MakeConv2D<T>({.filters = o_.filters,
                                 .kernel_h = 1,
                                 .kernel_w = 1,
                                 .stride = o_.stride,
                                 .same_padding = true});
      ctx.prefix = prefix + "shortcut/";
      shortcut_->Build(in, ctx);
    }
    ctx.prefix = prefix;
    out_relu_->Build(s, ctx);
    out_ = s;
    return s;
  }

  void Initialize(uint64_t seed) override {
    for (auto& [name, layer] : main_) layer->Initialize(seed);
    if (shortcut_) shortcut_->Initialize(seed);
  }

  std::vector<NamedTensor> Buffers() override {
    std::vector<NamedTensor> out;
    for (auto& [name, layer] : main_)
      for (NamedTensor b : layer->Buffers()) out.push_back({name + b.name, b.tensor});
    return out;
  }

  // x is (B, H, W, C); sum_ is (B, OH, OW, F) = main(x) + shortcut(x).
  Tensor Forward(const Tensor& x, const ForwardContext& ctx) override {
    const int64_t b = CheckInput(x, in_, "residual");
    Tensor h = x;
    for (auto& [name, layer] : main_) h = layer->Forward(h, ctx);
    const Tensor s = shortcut_ ? shortcut_->Forward(x, ctx) : x;
    Tensor& sum = ReuseBuffer(sum_, DTypeOf<T>(), WithBatch(b, out_));
    const T* hp = h.data<T>();
    const T* sp = s.data<T>();
    T* o = sum.data<T>();
    const int64_t n = sum.num_elements();
    for (int64_t i = 0; i < n; ++i) o[i] = hp[i] + sp[i];
    return out_relu_->Forward(sum, ctx);
  }

  // dsum = relu'(dy); dx = main'(dsum) + shortcut'(dsum) (identity: dsum itself).
  Tensor Backward(const Tensor& dy, bool need_dx) override {
    const Tensor dsum = out_relu_->Backward(dy, true);
    Tensor g = dsum;
    for (size_t i = main_.size(); i-- > 0;) g = main_[i].second->Backward(g, need_dx || i > 0);
    if (shortcut_) {
      const Tensor ds = shortcut_->Backward(dsum, need_dx);
      if (!need_dx) return Tensor();
      Tensor& dx = ReuseBuffer(dx_, DTypeOf<T>(), g.shape());
      const T* a = g.data<T>();
      const T* c = ds.data<T>();
      T* o = dx.data<T>();
      const int64_t n = dx.num_elements();
      for (int64_t i = 0; i < n; ++i) o[i] = a[i] + c[i];
      return dx;
    }
    if (!need_dx) return Tensor();
    Tensor& dx = ReuseBuffer(dx_, DTypeOf<T>(), g.shape());
    const T* a = g.data<T>();
    const T* c = dsum.data<T>();
    T* o = dx.data<T>();
    const int64_t n = dx.num_elements();
    for (int64_t i = 0; i < n; ++i) o[i] = a[i] + c[i];
    return dx;
  }

  int64_t FlopsPerSample() const override {
    int64_t f = 0;
    for (const auto& [name, layer] : main_) f += layer->FlopsPerSample();
    return f + (shortcut_ ? shortcut_->FlopsPerSample() : 0);
  }

 private:
  ResidualOptions o_;
  Shape in_, out_;
  std::vector<std::pair<std::string, std::unique_ptr<Layer<T>>>> main_;
  std::unique_ptr<Layer<T>> shortcut_;
  std::unique_ptr<Layer<T>> out_relu_;
  Tensor sum_, dx_;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeResidual(const ResidualOptions& options) {
  return std::make_unique<Residual<T>>(options);
}
template std::unique_ptr<Layer<float>> MakeResidual<float>(const ResidualOptions&);
template std::unique_ptr<Layer<double>> MakeResidual<double>(const ResidualOptions&);

}  // namespace shardflow
