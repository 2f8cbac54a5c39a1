#include "core/layers/pooling.hpp"

#include <algorithm>
#include <sstream>
#include <vector>

namespace shardflow {
namespace {

Shape ImageInput(const Shape& in, const char* layer) {
  if (in.size() != 3) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(layer) +
                    " expects images (batch, height, width, channels), got per-sample " +
                    ShapeToString(in));
  }
  return in;
}

template <typename T>
class Pool2D final : public Layer<T> {
 public:
  explicit Pool2D(const Pool2DOptions& o) : o_(o) {
    if (o_.stride == 0) o_.stride = o_.size;
    if (o_.size <= 0 || o_.stride <= 0) {
      throw Error(ErrorCode::kInvalidArgument, "pool size and stride must be positive, got " +
                                                   std::to_string(o.size) + " and " +
                                                   std::to_string(o.stride));
    }
  }
  std::string kind() const override { return o_.max ? "maxpool" : "avgpool"; }
  std::string Describe() const override {
    // (ostringstream: GCC 12 emits a false -Wrestrict on chained std::string concatenation)
    std::ostringstream s;
    s << kind() << ':' << o_.size;
    if (o_.stride != o_.size) s << ':' << o_.stride;
    return s.str();
  }
  Shape Build(const Shape& in, BuildContext<T>&) override {
    in_ = ImageInput(in, o_.max ? "maxpool" : "avgpool");
    if (in[0] < o_.size || in[1] < o_.size) {
      throw Error(ErrorCode::kInvalidArgument, kind() + " window " + std::to_string(o_.size) +
                                                   " is larger than its input " +
                                                   ShapeToString(in));
    }
    oh_ = (in[0] - o_.size) / o_.stride + 1;
    ow_ = (in[1] - o_.size) / o_.stride + 1;
    return {oh_, ow_, in[2]};
  }

  // x is (B, H, W, C); y is (B, OH, OW, C). Max pooling keeps no argmax array: the backward
  // pass finds the first window element equal to the output again (cheaper than writing an
  // index per output in the forward pass, which the benchmark showed dominating the layer).
  Tensor Forward(const Tensor& x, const ForwardContext&) override {
    const int64_t b = CheckInput(x, in_, kind());
    const int64_t h = in_[0], w = in_[1], c = in_[2], k = o_.size, s = o_.stride;
    Tensor& y = ReuseBuffer(y_, DTypeOf<T>(), {b, oh_, ow_, c});
    x_ = x;
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    // Channels innermost: each window position contributes a contiguous run of C values, so
    // the compare/accumulate loops vectorise. For max pooling the first maximum wins (strict >).
    const T inv = T(1) / static_cast<T>(k * k);
    for (int64_t n = 0; n < b; ++n)
      for (int64_t i = 0; i < oh_; ++i)
        for (int64_t j = 0; j < ow_; ++j) {
          const int64_t o = ((n * oh_ + i) * ow_ + j) * c;
          T* yo = yp + o;
          for (int64_t di = 0; di < k; ++di)
            for (int64_t dj = 0; dj < k; ++dj) {
              const int64_t base = ((n * h + i * s + di) * w + j * s + dj) * c;
              const T* xi = xp + base;
              const bool first = di == 0 && dj == 0;
              if (o_.max) {
                for (int64_t ch = 0; ch < c; ++ch)
                  yo[ch] = first ? xi[ch] : std::max(yo[ch], xi[ch]);
              } else {
                for (int64_t ch = 0; ch < c; ++ch) yo[ch] = (first ? T(0) : yo[ch]) + xi[ch];
              }
            }
          if (!o_.max) {
            for (int64_t ch = 0; ch < c; ++ch) yo[ch] *= inv;
          }
        }
    return y;
  }

  Tensor Backward(const Tensor& dy, bool need_dx) override {
    if (!need_dx) return Tensor();
    const int64_t b = dy.dim(0), h = in_[0], w = in_[1], c = in_[2], k = o_.size, s = o_.stride;
    Tensor& dx = ReuseBuffer(dx_, DTypeOf<T>(), WithBatch(b, in_));
    T* o = dx.data<T>();
    std::fill(o, o + dx.num_elements(), T(0));
    const T* d = dy.data<T>();
    if (o_.max) {
      // Route each output's gradient to the first window element equal to the maximum.
      const T* xp = x_.data<T>();
      const T* yp = y_.data<T>();
      for (int64_t n = 0; n < b; ++n)
        for (int64_t i = 0; i < oh_; ++i)
          for (int64_t j = 0; j < ow_; ++j) {
            const int64_t out = ((n * oh_ + i) * ow_ + j) * c;
            for (int64_t ch = 0; ch < c; ++ch) {
              const T m = yp[out + ch];
              bool found = false;
              for (int64_t di = 0; di < k && !found; ++di)
                for (int64_t dj = 0; dj < k && !found; ++dj) {
                  const int64_t idx = ((n * h + i * s + di) * w + j * s + dj) * c + ch;
                  if (xp[idx] == m) {
                    o[idx] += d[out + ch];
                    found = true;
                  }
                }
            }
          }
      return dx;
    }
    const T inv = T(1) / static_cast<T>(k * k);
    for (int64_t n = 0; n < b; ++n)
      for (int64_t i = 0; i < oh_; ++i)
        for (int64_t j = 0; j < ow_; ++j)
          for (int64_t ch = 0; ch < c; ++ch) {
            const T g = d[((n * oh_ + i) * ow_ + j) * c + ch] * inv;
            for (int64_t di = 0; di < k; ++di)
              for (int64_t dj = 0; dj < k; ++dj)
                o[((n * h + i * s + di) * w + j * s + dj) * c + ch] += g;
          }
    return dx;
  }

 private:
  Pool2DOptions o_;
  Shape in_;
  int64_t oh_ = 0, ow_ = 0;
  Tensor x_, y_, dx_;
};

template <typename T>
class GlobalAvgPool final : public Layer<T> {
 public:
  std::string kind() const override { return "gap"; }
  std::string Describe() const override { return "gap"; }
  Shape Build(const Shape& in, BuildContext<T>&) override {
    in_ = ImageInput(in, "gap");
    return {in[2]};
  }
  // x is (B, H*W, C) flat; y is (B, C).
  Tensor Forward(const Tensor& x, const ForwardContext&) override {
    const int64_t b = CheckInput(x, in_, "gap");
    const int64_t p = in_[0] * in_[1], c = in_[2];
    Tensor& y = ReuseBuffer(y_, DTypeOf<T>(), {b, c});
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    const T inv = T(1) / static_cast<T>(p);
    for (int64_t n = 0; n < b; ++n) {
      for (int64_t ch = 0; ch < c; ++ch) yp[n * c + ch] = T(0);
      for (int64_t q = 0; q < p; ++q)
        for (int64_t ch = 0; ch < c; ++ch) yp[n * c + ch] += xp[(n * p + q) * c + ch];
      for (int64_t ch = 0; ch < c; ++ch) yp[n * c + ch] *= inv;
    }
    return y;
  }
  Tensor Backward(const Tensor& dy, bool need_dx) override {
    if (!need_dx) return Tensor();
    const int64_t b = dy.dim(0), p = in_[0] * in_[1], c = in_[2];
    Tensor& dx = ReuseBuffer(dx_, DTypeOf<T>(), WithBatch(b, in_));
    const T* d = dy.data<T>();
    T* o = dx.data<T>();
    const T inv = T(1) / static_cast<T>(p);
    for (int64_t n = 0; n < b; ++n)
      for (int64_t q = 0; q < p; ++q)
        for (int64_t ch = 0; ch < c; ++ch) o[(n * p + q) * c + ch] = d[n * c + ch] * inv;
    return dx;
  }

 private:
  Shape in_;
  Tensor y_, dx_;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakePool2D(const Pool2DOptions& options) {
  return std::make_unique<Pool2D<T>>(options);
}
template <typename T>
std::unique_ptr<Layer<T>> MakeGlobalAvgPool() {
  return std::make_unique<GlobalAvgPool<T>>();
}
template std::unique_ptr<Layer<float>> MakePool2D<float>(const Pool2DOptions&);
template std::unique_ptr<Layer<double>> MakePool2D<double>(const Pool2DOptions&);
template std::unique_ptr<Layer<float>> MakeGlobalAvgPool<float>();
template std::unique_ptr<Layer<double>> MakeGlobalAvgPool<double>();

}  // namespace shardflow
