#include "core/layers/dropout.hpp"

#include <sstream>

#include "core/random.hpp"

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
  Shape Build(const Shape& in, BuildContext<T>& ctx) override {
    in_ = in;
    layer_ = ctx.layer_index;
    return in;
  }
  // x and y are (B, ...), n flat elements; mask_ keeps the scale (0 or 1/(1-rate)) per element.
  Tensor Forward(const Tensor& x, const ForwardContext& ctx) override {
    CheckInput(x, in_, "dropout");
    training_ = ctx.training && rate_ > 0.0;
    if (!training_) return x;
    const int64_t n = x.num_elements();
    Tensor& y = ReuseBuffer(y_, DTypeOf<T>(), x.shape());
    Tensor& m = ReuseBuffer(mask_, DTypeOf<T>(), x.shape());
    const uint64_t stream = (ctx.step << 16) ^ static_cast<uint64_t>(layer_);
    const T scale = static_cast<T>(1.0 / (1.0 - rate_));
    const float rate = static_cast<float>(rate_);
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    T* mp = m.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      mp[i] = RandomUniform(ctx.seed, stream, static_cast<uint64_t>(i)) >= rate ? scale : T(0);
      yp[i] = xp[i] * mp[i];
    }
    return y;
  }
  Tensor Backward(const Tensor& dy, bool need_dx) override {
    if (!need_dx) return Tensor();
    if (!training_) return dy;
    Tensor& dx = ReuseBuffer(dx_, DTypeOf<T>(), dy.shape());
    const T* d = dy.data<T>();
    const T* mp = mask_.data<T>();
    T* o = dx.data<T>();
    const int64_t n = dy.num_elements();
    for (int64_t i = 0; i < n; ++i) o[i] = d[i] * mp[i];
    return dx;
  }

 private:
  double rate_;
  Shape in_;
  int layer_ = 0;
  bool training_ = false;
  Tensor y_, mask_, dx_;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeDropout(double rate) {
  return std::make_unique<Dropout<T>>(rate);
}
template std::unique_ptr<Layer<float>> MakeDropout<float>(double);
template std::unique_ptr<Layer<double>> MakeDropout<double>(double);

}  // namespace shardflow
