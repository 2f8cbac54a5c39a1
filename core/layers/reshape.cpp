#include "core/layers/reshape.hpp"

#include <cstring>

namespace shardflow {
namespace {

template <typename T>
class Flatten final : public Layer<T> {
 public:
  std::string kind() const override { return "flatten"; }
  std::string Describe() const override { return "flatten"; }
  Shape Build(const Shape& in, BuildContext<T>&) override {
    in_ = in;
    return {NumElements(in)};
  }
  Tensor Forward(const Tensor& x, const ForwardContext&) override {
    const int64_t b = CheckInput(x, in_, "flatten");
    return x.Reshaped({b, NumElements(in_)});
  }
  Tensor Backward(const Tensor& dy, bool need_dx) override {
    if (!need_dx) return Tensor();
    return dy.Reshaped(WithBatch(dy.dim(0), in_));
  }

 private:
  Shape in_;
};

template <typename T>
class RepeatVector final : public Layer<T> {
 public:
  explicit RepeatVector(int64_t times) : times_(times) {
    if (times <= 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "repeat needs a positive count, got " + std::to_string(times));
    }
  }
  std::string kind() const override { return "repeat"; }
  std::string Describe() const override { return "repeat:" + std::to_string(times_); }
  Shape Build(const Shape& in, BuildContext<T>&) override {
    if (in.size() != 1) {
      throw Error(ErrorCode::kInvalidArgument,
                  "repeat expects (batch, features) input, got per-sample " + ShapeToString(in));
    }
    h_ = in[0];
    return {times_, h_};
  }
  // x is (B, H); y is (B, T, H).
  Tensor Forward(const Tensor& x, const ForwardContext&) override {
    const int64_t b = CheckInput(x, {h_}, "repeat");
    Tensor& y = ReuseBuffer(y_, DTypeOf<T>(), {b, times_, h_});
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    for (int64_t i = 0; i < b; ++i)
      for (int64_t t = 0; t < times_; ++t)
        std::memcpy(yp + (i * times_ + t) * h_, xp + i * h_, static_cast<size_t>(h_) * sizeof(T));
    return y;
  }
  // dy is (B, T, H); dx (B, H) sums dy over T.
  Tensor Backward(const Tensor& dy, bool need_dx) override {
    if (!need_dx) return Tensor();
    const int64_t b = dy.dim(0);
    Tensor& dx = ReuseBuffer(dx_, DTypeOf<T>(), {b, h_});
    const T* d = dy.data<T>();
    T* o = dx.data<T>();
    for (int64_t i = 0; i < b; ++i) {
      for (int64_t j = 0; j < h_; ++j) o[i * h_ + j] = T(0);
      for (int64_t t = 0; t < times_; ++t)
        for (int64_t j = 0; j < h_; ++j) o[i * h_ + j] += d[(i * times_ + t) * h_ + j];
    }
    return dx;
  }

 private:
  int64_t times_, h_ = 0;
  Tensor y_, dx_;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeFlatten() {
  return std::make_unique<Flatten<T>>();
}
template <typename T>
std::unique_ptr<Layer<T>> MakeRepeatVector(int64_t times) {
  return std::make_unique<RepeatVector<T>>(times);
}
template std::unique_ptr<Layer<float>> MakeFlatten<float>();
template std::unique_ptr<Layer<double>> MakeFlatten<double>();
template std::unique_ptr<Layer<float>> MakeRepeatVector<float>(int64_t);
template std::unique_ptr<Layer<double>> MakeRepeatVector<double>(int64_t);

}  // namespace shardflow
