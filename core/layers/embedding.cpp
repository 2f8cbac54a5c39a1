#include "core/layers/embedding.hpp"

#include <cmath>
#include <cstring>

#include "core/backend/device_runtime.hpp"
#include "core/init.hpp"

namespace shardflow {
namespace {

template <typename T>
class Embedding final : public Layer<T> {
 public:
  explicit Embedding(const EmbeddingOptions& o) : o_(o) {
    if (o.rows <= 0 || o.dim <= 0 || o.at < 0) {
      throw Error(
          ErrorCode::kInvalidArgument,
          "embedding needs N > 0 rows, D > 0 dimensions and a column >= 0, got " + Describe());
    }
  }
  std::string kind() const override { return "embedding"; }
  std::string Describe() const override {
    return "embedding:" + std::to_string(o_.rows) + ":" + std::to_string(o_.dim) + ":" +
           std::to_string(o_.at);
  }

  Shape Build(const Shape& in, BuildContext<T>& ctx) override {
    if (in.size() != 1 || in[0] <= o_.at) {
      throw Error(ErrorCode::kInvalidArgument,
                  Describe() + " needs a flat input with a column " + std::to_string(o_.at) +
                      ", got " + ShapeToString(in),
                  {.key = "model"});
    }
    w_ = in[0];
    arena_ = ctx.arena;
    table_ = ctx.Declare("table", {o_.rows, o_.dim}, true);
    return {w_ - 1 + o_.dim};
  }

  void Initialize(uint64_t seed) override {
    InitKernel(InitKind::kGlorotUniform, arena_->param(table_), o_.rows * o_.dim, o_.rows, o_.dim,
               seed, arena_->init_stream(table_));
  }

  std::unique_ptr<LayerState> NewState() const override { return std::make_unique<State>(); }

 protected:
  // x (B, W) -> y (B, W - 1 + D): the row is copied around column AT, which becomes table[i].
  Tensor DoForward(const Tensor& x, const ForwardContext&, LayerState& st) override {
    const int64_t b = CheckInput(x, {w_}, "embedding");
    CheckHostTensor(x, "embedding");
    State& s = StateAs<State>(st, "embedding");
    const int64_t out_w = w_ - 1 + o_.dim, at = o_.at, after = w_ - at - 1;
    Tensor& y = ReuseBuffer(s.y, DTypeOf<T>(), {b, out_w});
    s.index.resize(static_cast<size_t>(b));
    const T* xp = x.template data<T>();
    const T* table = arena_->param(table_);
    T* yp = y.template data<T>();
    for (int64_t r = 0; r < b; ++r) {
      const T* in = xp + r * w_;
      T* out = yp + r * out_w;
      const int64_t i = Index(in[at], r);
      s.index[static_cast<size_t>(r)] = i;
      std::memcpy(out, in, sizeof(T) * static_cast<size_t>(at));
      std::memcpy(out + at, table + i * o_.dim, sizeof(T) * static_cast<size_t>(o_.dim));
      std::memcpy(out + at + o_.dim, in + at + 1, sizeof(T) * static_cast<size_t>(after));
    }
    return y;
  }

  // dtable[index] += dy[:, AT:AT+D]; dx = dy around it, 0 at AT.
  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& st) override {
    CheckHostTensor(dy, "embedding");
    State& s = StateAs<State>(st, "embedding");
    const int64_t b = static_cast<int64_t>(s.index.size());
    const int64_t out_w = w_ - 1 + o_.dim, at = o_.at, after = w_ - at - 1;
    const T* d = dy.template data<T>();
    T* grad = arena_->grad(table_);
    for (int64_t r = 0; r < b; ++r) {
      T* g = grad + s.index[static_cast<size_t>(r)] * o_.dim;
      const T* src = d + r * out_w + at;
      for (int64_t k = 0; k < o_.dim; ++k) g[k] += src[k];
    }
    if (!need_dx) return Tensor();
    Tensor& dx = ReuseBuffer(s.dx, DTypeOf<T>(), {b, w_});
    T* dxp = dx.template data<T>();
    for (int64_t r = 0; r < b; ++r) {
      const T* src = d + r * out_w;
      T* out = dxp + r * w_;
      std::memcpy(out, src, sizeof(T) * static_cast<size_t>(at));
      out[at] = T(0);
      std::memcpy(out + at + 1, src + at + o_.dim, sizeof(T) * static_cast<size_t>(after));
    }
    return dx;
  }

 private:
  struct State final : LayerState {
    Tensor y, dx;
    std::vector<int64_t> index;
  };

  int64_t Index(T value, int64_t row) const {
    const double v = static_cast<double>(value);
    if (!(v >= 0 && v < static_cast<double>(o_.rows)) || std::floor(v) != v) {
      throw Error(ErrorCode::kInvalidArgument,
                  Describe() + ": row " + std::to_string(row) + " holds " + std::to_string(v) +
                      " in column " + std::to_string(o_.at) + ", expected an index in [0, " +
                      std::to_string(o_.rows) + ")",
                  {.key = "model"});
    }
    return static_cast<int64_t>(v);
  }

  EmbeddingOptions o_;
  int64_t w_ = 0;
  Arena<T>* arena_ = nullptr;
  int table_ = -1;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeEmbedding(const EmbeddingOptions& options) {
  return std::make_unique<Embedding<T>>(options);
}
template std::unique_ptr<Layer<float>> MakeEmbedding<float>(const EmbeddingOptions&);
template std::unique_ptr<Layer<double>> MakeEmbedding<double>(const EmbeddingOptions&);

}  // namespace shardflow
