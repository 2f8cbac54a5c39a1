#include "core/layers/lm_head.hpp"

namespace shardflow {
namespace {

template <typename T>
class LmHead final : public Layer<T> {
 public:
  std::string kind() const override { return "lmhead"; }
  std::string Describe() const override { return "lmhead"; }

  // Finds the table a tokens layer of this model part declared.
  Shape Build(const Shape& in, BuildContext<T>& ctx) override {
    arena_ = ctx.arena;
    for (int id = 0; id < arena_->num_params(); ++id) {
      const ParamSpec& s = arena_->spec(id);
      const std::string& owner = s.layer_name;
      if (s.name == "table" && owner.size() >= 7 && owner.ends_with("_tokens")) table_ = id;
    }
    if (table_ < 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "lmhead ties its weights to a tokens:V:D layer before it in the same part of "
                  "the model, and there is none (or a pipeline stage boundary lies between them)",
                  {.key = "model", .hint = "keep tokens and lmhead in one stage, or use dense:V"});
    }
    const Shape& table = arena_->spec(table_).shape;
    vocabulary_ = table[0];
    dim_ = table[1];
    if (in.size() != 2 || in[1] != dim_) {
      throw Error(ErrorCode::kInvalidArgument,
                  "lmhead needs (time, " + std::to_string(dim_) +
                      ") features, the tokens table's width, got " + ShapeToString(in),
                  {.key = "model"});
    }
    in_ = in;
    return {in[0], vocabulary_};
  }

  std::unique_ptr<LayerState> NewState() const override { return std::make_unique<State>(); }
  int64_t FlopsPerSample() const override { return 2 * in_[0] * dim_ * vocabulary_; }

 protected:
  Tensor DoForward(const Tensor& x, const ForwardContext&, LayerState& st) override {
    const int64_t b = CheckSequenceInput(x, in_, "lmhead");
    State& s = StateAs<State>(st, "lmhead");
    s.x = x;
    const int64_t n = x.num_elements() / dim_;
    Tensor& y = ReuseBuffer(s.y, DTypeOf<T>(), {b, x.dim(1), vocabulary_});
    BackendFor<T>(x.device())
        .Gemm(false, true, n, vocabulary_, dim_, T(1), x.template device_data<T>(), dim_,
              arena_->param(table_), dim_, T(0), y.template device_data<T>(), vocabulary_);
    return y;
  }

  // dE += dy^T x (V, D); dx = dy E (N, D).
  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& st) override {
    State& s = StateAs<State>(st, "lmhead");
    const int64_t n = s.x.num_elements() / dim_;
    Backend<T>& be = BackendFor<T>(dy.device());
    const T* d = dy.template device_data<T>();
    // The head's backward runs before the embedding's: it may write a gradient marked zero.
    const auto dw = arena_->GradForOverwrite(table_);
    be.Gemm(true, false, vocabulary_, dim_, n, T(1), d, vocabulary_, s.x.template device_data<T>(),
            dim_, dw.overwrite ? T(0) : T(1), dw.data, dim_);
    if (!need_dx) return Tensor();
    Tensor& dx = ReuseBuffer(s.dx, DTypeOf<T>(), s.x.shape());
    be.Gemm(false, false, n, dim_, vocabulary_, T(1), d, vocabulary_, arena_->param(table_), dim_,
            T(0), dx.template device_data<T>(), dim_);
    return dx;
  }

 private:
  struct State final : LayerState {
    Tensor x, y, dx;
  };
  Arena<T>* arena_ = nullptr;
  int table_ = -1;
  int64_t vocabulary_ = 0, dim_ = 0;
  Shape in_;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeLmHead() {
  return std::make_unique<LmHead<T>>();
}
template std::unique_ptr<Layer<float>> MakeLmHead<float>();
template std::unique_ptr<Layer<double>> MakeLmHead<double>();

}  // namespace shardflow
