#include "core/layers/conv2d.hpp"

#include <algorithm>

#include "core/backend/conv_geometry.hpp"

namespace shardflow {
namespace {

template <typename T>
class Conv2D final : public Layer<T> {
 public:
  explicit Conv2D(const Conv2DOptions& o) : o_(o) {
    if (o.filters <= 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "conv needs a positive number of filters, got " + std::to_string(o.filters));
    }
  }
  std::string kind() const override { return "conv2d"; }
  std::string Describe() const override {
    return "conv:" + std::to_string(o_.filters) + ":" + std::to_string(o_.kernel_h) + "x" +
           std::to_string(o_.kernel_w) + ":" + (o_.same_padding ? "same" : "valid") +
           (o_.stride != 1 ? ":s" + std::to_string(o_.stride) : "") +
           (o_.use_bias ? "" : ":nobias");
  }

  Shape Build(const Shape& in, BuildContext<T>& ctx) override {
    if (in.size() != 3) {
      throw Error(ErrorCode::kInvalidArgument,
                  "conv expects images (batch, height, width, channels), got per-sample " +
                      ShapeToString(in),
                  {.key = ctx.layer_name});
    }
    in_ = in;
    g_ =
        MakeConvGeometry(in[0], in[1], in[2], o_.kernel_h, o_.kernel_w, o_.stride, o_.same_padding);
    arena_ = ctx.arena;
    tp_ = ctx.tp;
    const int64_t kh = o_.kernel_h, kw = o_.kernel_w;
    filters_ = o_.filters;
    if (o_.split == TpSplit::kColumn) {
      slice_ = TpSliceOf(tp_, o_.filters, ctx.layer_name, "filters");
      filters_ = slice_.size;
      kernel_ = ctx.DeclareSlice("kernel", {kh, kw, g_.c, o_.filters}, 3, slice_, true);
      if (o_.use_bias) bias_ = ctx.DeclareSlice("bias", {o_.filters}, 0, slice_, false);
    } else {
      const int ways = o_.split == TpSplit::kRow ? TpWays(tp_) : 1;
      slice_ = TpSliceOf(o_.split == TpSplit::kRow ? tp_ : nullptr, g_.c * ways, ctx.layer_name,
                         "input channels");
      kernel_ = ctx.DeclareSlice("kernel", {kh, kw, g_.c * ways, o_.filters}, 2, slice_, true);
      if (o_.use_bias) bias_ = ctx.Declare("bias", {o_.filters}, false);
    }
    return {g_.oh, g_.ow, filters_};
  }

  TpRole tp_role() const override {
    if (o_.split == TpSplit::kColumn) return TpRole::kColumn;
    return o_.split == TpSplit::kRow ? TpRole::kRow : TpRole::kReplicated;
  }

  // Fans are those of the whole kernel (KH, KW, C, F); a slice draws the whole kernel's values.
  void Initialize(uint64_t seed) override {
    const int64_t k = o_.kernel_h * o_.kernel_w;
    T* w = arena_->param(kernel_);
    const uint64_t stream = arena_->init_stream(kernel_);
    if (o_.split == TpSplit::kNone || slice_.size == slice_.full) {
      InitKernel(o_.init, w, k * g_.c * filters_, k * g_.c, k * filters_, seed, stream);
    } else if (o_.split == TpSplit::kColumn) {
      InitKernelSlice(o_.init, w,
                      {.outer = k * g_.c,
                       .full = o_.filters,
                       .begin = slice_.begin,
                       .size = slice_.size,
                       .inner = 1},
                      k * g_.c, k * o_.filters, seed, stream);
    } else {
      InitKernelSlice(o_.init, w,
                      {.outer = k,
                       .full = slice_.full,
                       .begin = slice_.begin,
                       .size = slice_.size,
                       .inner = o_.filters},
                      k * slice_.full, k * o_.filters, seed, stream);
    }
  }

  std::unique_ptr<LayerState> NewState() const override { return std::make_unique<State>(); }
  // Per way: a split layer does 1/T of the whole layer's work.
  int64_t FlopsPerSample() const override { return 2 * g_.oh * g_.ow * KKC() * filters_; }

 protected:
  // x is (B, H, W, C); per chunk of samples: cols (R, KKC) = im2col(x), y (R, F) = cols W + b,
  // R = chunk * OH * OW, KKC = KH * KW * C (this way's C and F). A row layer with T > 1 sums y
  // over the ways; only way 0 adds the bias.
  Tensor DoForward(const Tensor& x, const ForwardContext&, LayerState& st) override {
    const int64_t b = CheckInput(x, in_, "conv");
    State& s = StateAs<State>(st, "conv");
    s.x = x;
    Tensor& y = ReuseBuffer(s.y, DTypeOf<T>(), {b, g_.oh, g_.ow, filters_});
    const int64_t f = filters_, kkc = KKC(), pix = g_.oh * g_.ow;
    const bool row_sum = o_.split == TpSplit::kRow && slice_.size != slice_.full;
    const bool add_bias = o_.use_bias && (!row_sum || tp_->way == 0);
    Backend<T>& be = BackendFor<T>(x.device());
    T* yp = y.device_data<T>();
    const T* xp = x.device_data<T>();
    const T* bias = add_bias ? arena_->param(bias_) : nullptr;
    if (be.ConvForward(g_, f, b, xp, arena_->param(kernel_), bias, yp)) {
      if (row_sum) TpSum(tp_, yp, y.num_elements());
      return y;
    }
    if (add_bias) be.BroadcastRows(b * pix, f, bias, yp);
    const int64_t chunk = Chunk(b);
    T* cols = ReuseBuffer(s.cols, DTypeOf<T>(), {chunk * pix, kkc}).template device_data<T>();
    for (int64_t i = 0; i < b; i += chunk) {
      const int64_t n = std::min(chunk, b - i);
      be.Im2Col(g_, n, xp + i * g_.h * g_.w * g_.c, cols);
      be.Gemm(false, false, n * pix, f, kkc, T(1), cols, kkc, arena_->param(kernel_), f,
              add_bias ? T(1) : T(0), yp + i * pix * f, f);
    }
    if (row_sum) TpSum(tp_, yp, y.num_elements());
    return y;
  }

  // dy is (B, OH, OW, F). db += sum of dy over all pixels; dW and dx in one library call each
  // where the backend has one (Backend::ConvBackwardFilter / ConvBackwardData), otherwise per
  // chunk: dW (KKC, F) += cols^T dy; dcols (R, KKC) = dy W^T (W^T made once), dx +=
  // col2im(dcols). A column layer with T > 1 sums dx over the ways.
  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& st) override {
    State& s = StateAs<State>(st, "conv");
    const int64_t b = s.x.dim(0), f = filters_, pix = g_.oh * g_.ow;
    Backend<T>& be = BackendFor<T>(dy.device());
    const T* d = dy.device_data<T>();
    const T* xp = s.x.template device_data<T>();
    if (o_.use_bias) be.AddColumnSums(b * pix, f, d, arena_->grad(bias_));
    T* dxp = nullptr;
    if (need_dx) dxp = ReuseBuffer(s.dx, DTypeOf<T>(), s.x.shape()).template device_data<T>();
    const bool dw_done = be.ConvBackwardFilter(g_, f, b, xp, d, arena_->grad(kernel_));
    const bool dx_done = !need_dx || be.ConvBackwardData(g_, f, b, d, arena_->param(kernel_), dxp);
    if (!dw_done || !dx_done)
      BackwardByGemm(be, s, d, dw_done ? nullptr : xp, dx_done ? nullptr : dxp);
    if (!need_dx) return Tensor();
    if (o_.split == TpSplit::kColumn && slice_.size != slice_.full) {
      TpSum(tp_, dxp, s.dx.num_elements());
    }
    return s.dx;
  }

 private:
  // The im2col + GEMM backward: dW += cols^T dy when xp is set, dx (overwritten) from dy W^T
  // when dxp is set.
  void BackwardByGemm(Backend<T>& be, LayerState& st, const T* d, const T* xp, T* dxp) {
    State& s = StateAs<State>(st, "conv");
    const int64_t b = s.x.dim(0), f = filters_, kkc = KKC(), pix = g_.oh * g_.ow;
    if (dxp != nullptr) be.Fill(s.dx.num_elements(), T(0), dxp);
    const int64_t chunk = Chunk(b);
    T* cols = xp != nullptr
                  ? ReuseBuffer(s.cols, DTypeOf<T>(), {chunk * pix, kkc}).template device_data<T>()
                  : nullptr;
    T* dcols =
        dxp != nullptr
            ? ReuseBuffer(s.dcols, DTypeOf<T>(), {chunk * pix, kkc}).template device_data<T>()
            : nullptr;
    // W^T once per pass: each chunk's dcols = dy W^T then reads it in place (a GEMM with a
    // transposed operand would rearrange W for every chunk).
    T* wt = nullptr;
    if (dxp != nullptr) {
      wt = ReuseBuffer(s.wt, DTypeOf<T>(), {f, kkc}).template device_data<T>();
      be.Transpose(kkc, f, arena_->param(kernel_), wt);
    }
    for (int64_t i = 0; i < b; i += chunk) {
      const int64_t n = std::min(chunk, b - i);
      const T* dchunk = d + i * pix * f;
      if (xp != nullptr) {
        be.Im2Col(g_, n, xp + i * g_.h * g_.w * g_.c, cols);
        be.Gemm(true, false, kkc, f, n * pix, T(1), cols, kkc, dchunk, f, T(1),
                arena_->grad(kernel_), f);
      }
      if (dxp != nullptr) {
        be.Gemm(false, false, n * pix, kkc, f, T(1), dchunk, f, wt, kkc, T(0), dcols, kkc);
        be.Col2ImAdd(g_, n, dcols, dxp + i * g_.h * g_.w * g_.c);
      }
    }
  }

  // cols and dcols are scratch, per state only so that two micro-batches never share a buffer
  // across threads later; they are rebuilt by every pass.
  struct State final : LayerState {
    Tensor x, y, dx, cols, dcols, wt;
  };
  int64_t KKC() const { return o_.kernel_h * o_.kernel_w * g_.c; }
  int64_t Chunk(int64_t b) const {
    const int64_t per_sample = std::max<int64_t>(g_.oh * g_.ow * KKC(), 1);
    const int64_t budget = o_.im2col_budget > 0 ? o_.im2col_budget : kDefaultIm2ColBudget;
    return std::max<int64_t>(1, std::min(b, budget / per_sample));
  }

  Conv2DOptions o_;
  Shape in_;
  ConvGeometry g_;       // this way's input channels
  int64_t filters_ = 0;  // this way's filters
  TpSlice slice_;        // column: of the filters; otherwise of the input channels
  const TensorParallel* tp_ = nullptr;
  Arena<T>* arena_ = nullptr;
  int kernel_ = -1, bias_ = -1;
};
}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeConv2D(const Conv2DOptions& options) {
  return std::make_unique<Conv2D<T>>(options);
}
template std::unique_ptr<Layer<float>> MakeConv2D<float>(const Conv2DOptions&);
template std::unique_ptr<Layer<double>> MakeConv2D<double>(const Conv2DOptions&);

}  // namespace shardflow
