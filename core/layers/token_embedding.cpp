#include "core/layers/token_embedding.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/backend/device_runtime.hpp"

namespace shardflow {
namespace {

template <typename T>
class TokenEmbedding final : public Layer<T> {
 public:
  explicit TokenEmbedding(const TokenEmbeddingOptions& o) : o_(o) {
    if (o.vocabulary <= 0 || o.dim <= 0 || o.pad < -1 || o.pad >= o.vocabulary) {
      throw Error(ErrorCode::kInvalidArgument,
                  "tokens needs a vocabulary V > 0, D > 0 dimensions and a pad id in [0, V), "
                  "got " +
                      Describe());
    }
  }
  std::string kind() const override { return "tokens"; }
  std::string Describe() const override {
    std::string s = "tokens:" + std::to_string(o_.vocabulary) + ":" + std::to_string(o_.dim);
    if (o_.pad >= 0) s.append(":").append(std::to_string(o_.pad));
    return s;
  }

  bool SequenceLengths(const Tensor& x, std::vector<int64_t>* lengths) const override {
    if (o_.pad < 0) return false;
    const int64_t b = x.dim(0), time = x.num_elements() / std::max<int64_t>(b, 1);
    lengths->assign(static_cast<size_t>(b), time);
    const T* xp = x.template data<T>();
    for (int64_t i = 0; i < b; ++i) {
      for (int64_t t = 0; t < time; ++t) {
        if (xp[i * time + t] == static_cast<T>(o_.pad)) {
          (*lengths)[static_cast<size_t>(i)] = std::max<int64_t>(t, 1);
          break;
        }
      }
    }
    return true;
  }

  Shape Build(const Shape& in, BuildContext<T>& ctx) override {
    if (in.size() != 1) {
      throw Error(
          ErrorCode::kInvalidArgument,
          Describe() + " needs a flat input of T token ids per sample, got " + ShapeToString(in),
          {.key = "model"});
    }
    time_ = in[0];
    arena_ = ctx.arena;
    table_ = ctx.Declare("table", {o_.vocabulary, o_.dim}, true);
    position_ = ctx.Declare("position", {time_, o_.dim}, false);
    return {time_, o_.dim};
  }

  void Initialize(uint64_t seed) override {
    Backend<T>& be = BackendFor<T>(arena_->device());
    be.FillNormal(o_.vocabulary * o_.dim, 0.02, seed, arena_->init_stream(table_),
                  arena_->param(table_));
    be.FillNormal(time_ * o_.dim, 0.02, seed, arena_->init_stream(position_),
                  arena_->param(position_));
  }

  std::unique_ptr<LayerState> NewState() const override { return std::make_unique<State>(); }

 protected:
  Tensor DoForward(const Tensor& x, const ForwardContext&, LayerState& st) override {
    const int64_t b = CheckSequenceInput(x, {time_}, "tokens", 1);
    CheckHostTensor(x, "tokens");
    State& s = StateAs<State>(st, "tokens");
    const int64_t d = o_.dim, time = x.dim(1);  // the context, or a shorter batch's
    Tensor& y = ReuseBuffer(s.y, DTypeOf<T>(), {b, time, d});
    s.ids.resize(static_cast<size_t>(b * time));
    s.batch = b;
    s.time = time;
    const T* xp = x.template data<T>();
    const T* table = arena_->param(table_);
    const T* pos = arena_->param(position_);
    T* yp = y.template data<T>();
    for (int64_t r = 0; r < b * time; ++r) {
      const int64_t id = Id(xp[r], r, time);
      s.ids[static_cast<size_t>(r)] = id;
      const T* e = table + id * d;
      const T* p = pos + (r % time) * d;
      T* out = yp + r * d;
      for (int64_t c = 0; c < d; ++c) out[c] = e[c] + p[c];
    }
    return y;
  }

  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& st) override {
    CheckHostTensor(dy, "tokens");
    State& s = StateAs<State>(st, "tokens");
    const int64_t d = o_.dim;
    const T* g = dy.template data<T>();
    T* table = arena_->grad(table_);
    T* pos = arena_->grad(position_);
    for (int64_t r = 0; r < s.batch * s.time; ++r) {
      T* e = table + s.ids[static_cast<size_t>(r)] * d;
      T* p = pos + (r % s.time) * d;
      const T* src = g + r * d;
      for (int64_t c = 0; c < d; ++c) {
        e[c] += src[c];
        p[c] += src[c];
      }
    }
    if (!need_dx) return Tensor();
    Tensor& dx = ReuseBuffer(s.dx, DTypeOf<T>(), {s.batch, s.time});
    BackendFor<T>(dy.device()).Fill(dx.num_elements(), T(0), dx.template data<T>());
    return dx;
  }

 private:
  struct State final : LayerState {
    Tensor y, dx;
    std::vector<int64_t> ids;
    int64_t batch = 0, time = 0;  // of the forward pass
  };

  int64_t Id(T value, int64_t flat, int64_t time) const {
    const double v = static_cast<double>(value);
    if (!(v >= 0 && v < static_cast<double>(o_.vocabulary)) || std::floor(v) != v) {
      throw Error(ErrorCode::kInvalidArgument,
                  Describe() + ": sample " + std::to_string(flat / time) + " position " +
                      std::to_string(flat % time) + " holds " + std::to_string(v) +
                      ", expected a token id in [0, " + std::to_string(o_.vocabulary) + ")",
                  {.key = "model"});
    }
    return static_cast<int64_t>(v);
  }

  TokenEmbeddingOptions o_;
  int64_t time_ = 0;
  Arena<T>* arena_ = nullptr;
  int table_ = -1, position_ = -1;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeTokenEmbedding(const TokenEmbeddingOptions& options) {
  return std::make_unique<TokenEmbedding<T>>(options);
}
template std::unique_ptr<Layer<float>> MakeTokenEmbedding<float>(const TokenEmbeddingOptions&);
template std::unique_ptr<Layer<double>> MakeTokenEmbedding<double>(const TokenEmbeddingOptions&);

}  // namespace shardflow
