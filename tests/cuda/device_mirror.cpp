#include "tests/cuda/device_mirror.hpp"

#include <cstdint>
#include <string>

#include "core/cuda/cuda_backend.hpp"
#include "core/cuda/cuda_info.hpp"

namespace shardflow::cuda::testing {
namespace {

// Elements spanned by `rows` rows of `cols` elements at row stride ld.
int64_t Span(int64_t rows, int64_t cols, int64_t ld) {
  return rows <= 0 ? 0 : (rows - 1) * ld + cols;
}

// A device copy of the host elements [host - before, host + count): copied in at construction,
// copied back by Back(), freed at scope exit. A null host pointer mirrors to null.
template <typename U>
class Mirrored {
 public:
  Mirrored(const U* host, int64_t count, int64_t before = 0)
      : host_(const_cast<U*>(host)), count_(host == nullptr ? 0 : count + before), before_(before) {
    if (count_ <= 0) return;
    dev_ = static_cast<U*>(DeviceAllocate(Bytes()));
    CopyHostToDevice(dev_, host_ - before_, Bytes());
  }
  ~Mirrored() { DeviceFree(dev_); }
  Mirrored(const Mirrored&) = delete;
  Mirrored& operator=(const Mirrored&) = delete;
  U* get() const { return dev_ == nullptr ? nullptr : dev_ + before_; }
  void Back() {
    if (count_ > 0) CopyDeviceToHost(host_ - before_, dev_, Bytes());
  }

 private:
  size_t Bytes() const { return static_cast<size_t>(count_) * sizeof(U); }
  U* host_;
  int64_t count_;
  int64_t before_;
  U* dev_ = nullptr;
};

template <typename T>
class Mirror final : public Backend<T> {
 public:
  Device device() const override { return Device::kCpu; }
  Backend<T>& Gpu() { return BackendFor<T>(Device::kCuda); }

  void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
            const T* b, int64_t ldb, T beta, T* c, int64_t ldc) override {
    Mirrored<T> da(a, ta ? Span(k, m, lda) : Span(m, k, lda));
    Mirrored<T> db(b, tb ? Span(n, k, ldb) : Span(k, n, ldb));
    Mirrored<T> dc(c, Span(m, n, ldc));
    Gpu().Gemm(ta, tb, m, n, k, alpha, da.get(), lda, db.get(), ldb, beta, dc.get(), ldc);
    dc.Back();
  }
  void Im2Col(const ConvGeometry& g, int64_t batch, const T* x, T* cols) override {
    Mirrored<T> dx(x, batch * g.h * g.w * g.c),
        dcols(cols, batch * g.oh * g.ow * g.kh * g.kw * g.c);
    Gpu().Im2Col(g, batch, dx.get(), dcols.get());
    dcols.Back();
  }
  void Col2ImAdd(const ConvGeometry& g, int64_t batch, const T* cols, T* dx) override {
    Mirrored<T> dcols(cols, batch * g.oh * g.ow * g.kh * g.kw * g.c),
        ddx(dx, batch * g.h * g.w * g.c);
    Gpu().Col2ImAdd(g, batch, dcols.get(), ddx.get());
    ddx.Back();
  }
  // Whole convolution passes (cuDNN on the GPU); false leaves the layer on im2col + GEMM.
  bool ConvForward(const ConvGeometry& g, int64_t f, int64_t batch, const T* x, const T* w,
                   const T* bias, T* y) override {
    Mirrored<T> dx(x, batch * g.h * g.w * g.c), dw(w, g.kh * g.kw * g.c * f), db(bias, f),
        dy(y, batch * g.oh * g.ow * f);
    if (!Gpu().ConvForward(g, f, batch, dx.get(), dw.get(), db.get(), dy.get())) return false;
    dy.Back();
    return true;
  }
  bool ConvBackwardData(const ConvGeometry& g, int64_t f, int64_t batch, const T* dy, const T* w,
                        T* dx) override {
    Mirrored<T> ddy(dy, batch * g.oh * g.ow * f), dw(w, g.kh * g.kw * g.c * f),
        ddx(dx, batch * g.h * g.w * g.c);
    if (!Gpu().ConvBackwardData(g, f, batch, ddy.get(), dw.get(), ddx.get())) return false;
    ddx.Back();
    return true;
  }
  bool ConvBackwardFilter(const ConvGeometry& g, int64_t f, int64_t batch, const T* x, const T* dy,
                          T* dw) override {
    Mirrored<T> dx(x, batch * g.h * g.w * g.c), ddy(dy, batch * g.oh * g.ow * f),
        ddw(dw, g.kh * g.kw * g.c * f);
    if (!Gpu().ConvBackwardFilter(g, f, batch, dx.get(), ddy.get(), ddw.get())) return false;
    ddw.Back();
    return true;
  }
  void Fill(int64_t n, T value, T* y) override {
    Mirrored<T> dy(y, n);
    Gpu().Fill(n, value, dy.get());
    dy.Back();
  }
  void BroadcastRows(int64_t rows, int64_t cols, const T* row, T* y) override {
    Mirrored<T> dr(row, cols), dy(y, rows * cols);
    Gpu().BroadcastRows(rows, cols, dr.get(), dy.get());
    dy.Back();
  }
  void Transpose(int64_t rows, int64_t cols, const T* x, T* y) override {
    Mirrored<T> dx(x, rows * cols), dy(y, rows * cols);
    Gpu().Transpose(rows, cols, dx.get(), dy.get());
    dy.Back();
  }
  void AddRows(int64_t rows, int64_t cols, const T* x, int64_t ldx, T* y) override {
    Mirrored<T> dx(x, Span(rows, cols, ldx)), dy(y, rows * cols);
    Gpu().AddRows(rows, cols, dx.get(), ldx, dy.get());
    dy.Back();
  }
  void Add(int64_t n, const T* a, const T* b, T* y) override {
    Mirrored<T> da(a, n), db(b, n), dy(y, n);
    Gpu().Add(n, da.get(), db.get(), dy.get());
    dy.Back();
  }
  void Mul(int64_t n, const T* a, const T* b, T* y) override {
    Mirrored<T> da(a, n), db(b, n), dy(y, n);
    Gpu().Mul(n, da.get(), db.get(), dy.get());
    dy.Back();
  }
  void Scale(int64_t n, T s, T* y) override {
    Mirrored<T> dy(y, n);
    Gpu().Scale(n, s, dy.get());
    dy.Back();
  }
  void Activation(ActivationKind kind, int64_t n, const T* x, T* y) override {
    Mirrored<T> dx(x, n), dy(y, n);
    Gpu().Activation(kind, n, dx.get(), dy.get());
    dy.Back();
  }
  void ActivationGrad(ActivationKind kind, int64_t n, const T* x, const T* y, const T* dy,
                      T* dx) override {
    Mirrored<T> mx(x, n), my(y, n), mdy(dy, n), mdx(dx, n);
    Gpu().ActivationGrad(kind, n, mx.get(), my.get(), mdy.get(), mdx.get());
    mdx.Back();
  }
  void Repeat(int64_t b, int64_t times, int64_t h, const T* x, T* y) override {
    Mirrored<T> dx(x, b * h), dy(y, b * times * h);
    Gpu().Repeat(b, times, h, dx.get(), dy.get());
    dy.Back();
  }
  void RepeatGrad(int64_t b, int64_t times, int64_t h, const T* dy, T* dx) override {
    Mirrored<T> mdy(dy, b * times * h), mdx(dx, b * h);
    Gpu().RepeatGrad(b, times, h, mdy.get(), mdx.get());
    mdx.Back();
  }
  void AddColumnSums(int64_t rows, int64_t cols, const T* x, T* sums) override {
    Mirrored<T> dx(x, rows * cols), ds(sums, cols);
    Gpu().AddColumnSums(rows, cols, dx.get(), ds.get());
    ds.Back();
  }
  double SumSquares(int64_t n, const T* x) override {
    Mirrored<T> dx(x, n);
    return Gpu().SumSquares(n, dx.get());
  }
  void Pool2D(const PoolGeometry& g, bool max, int64_t batch, const T* x, T* y) override {
    Mirrored<T> dx(x, batch * g.h * g.w * g.c), dy(y, batch * g.oh * g.ow * g.c);
    Gpu().Pool2D(g, max, batch, dx.get(), dy.get());
    dy.Back();
  }
  void Pool2DGrad(const PoolGeometry& g, bool max, bool relu, int64_t batch, const T* x, const T* y,
                  const T* dy, T* dx) override {
    const int64_t in = batch * g.h * g.w * g.c, out = batch * g.oh * g.ow * g.c;
    Mirrored<T> mx(x, in), my(y, out), mdy(dy, out), mdx(dx, in);
    Gpu().Pool2DGrad(g, max, relu, batch, mx.get(), my.get(), mdy.get(), mdx.get());
    mdx.Back();
  }
  void GlobalAvgPool(int64_t b, int64_t p, int64_t c, const T* x, T* y) override {
    Mirrored<T> dx(x, b * p * c), dy(y, b * c);
    Gpu().GlobalAvgPool(b, p, c, dx.get(), dy.get());
    dy.Back();
  }
  void GlobalAvgPoolGrad(int64_t b, int64_t p, int64_t c, const T* dy, T* dx) override {
    Mirrored<T> mdy(dy, b * c), mdx(dx, b * p * c);
    Gpu().GlobalAvgPoolGrad(b, p, c, mdy.get(), mdx.get());
    mdx.Back();
  }
  int BatchNorm(const BatchNormParams& p, const T* x, const T* gamma, const T* beta, T* moving_mean,
                T* moving_var, double* saved, T* y) override {
    const int64_t nc = p.n * p.c;
    Mirrored<T> mx(x, nc), mg(gamma, p.c), mb(beta, p.c), mm(moving_mean, p.c), mv(moving_var, p.c),
        my(y, nc);
    Mirrored<double> ms(saved, kBatchNormSavedPerChannel * p.c);
    const int form =
        Gpu().BatchNorm(p, mx.get(), mg.get(), mb.get(), mm.get(), mv.get(), ms.get(), my.get());
    mm.Back();
    mv.Back();
    ms.Back();
    my.Back();
    return form;
  }
  void BatchNormGrad(const BatchNormParams& p, const T* dy, const T* x, const T* gamma,
                     const double* saved, T* dgamma, T* dbeta, T* dx) override {
    const int64_t nc = p.n * p.c;
    Mirrored<T> mdy(dy, nc), mx(x, nc), mg(gamma, p.c), mdg(dgamma, p.c), mdb(dbeta, p.c),
        mdx(dx, nc);
    Mirrored<double> ms(saved, kBatchNormSavedPerChannel * p.c);
    Gpu().BatchNormGrad(p, mdy.get(), mx.get(), mg.get(), ms.get(), mdg.get(), mdb.get(),
                        mdx.get());
    mdg.Back();
    mdb.Back();
    mdx.Back();
  }
  void LstmCell(int64_t batch, int64_t h, T* z, int64_t ldz, T* c, T* hs, int64_t ldc,
                bool has_prev) override {
    const int64_t before = has_prev ? h : 0;
    Mirrored<T> mz(z, Span(batch, 4 * h, ldz)), mc(c, Span(batch, h, ldc), before),
        mh(hs, Span(batch, h, ldc));
    Gpu().LstmCell(batch, h, mz.get(), ldz, mc.get(), mh.get(), ldc, has_prev);
    mz.Back();
    mc.Back();
    mh.Back();
  }
  void LstmCellGrad(int64_t batch, int64_t h, const T* z, int64_t ldz, const T* c, int64_t ldc,
                    bool has_prev, const T* dh, T* dc, T* dz) override {
    const int64_t before = has_prev ? h : 0;
    Mirrored<T> mz(z, Span(batch, 4 * h, ldz)), mc(c, Span(batch, h, ldc), before),
        mdh(dh, batch * h), mdc(dc, batch * h), mdz(dz, Span(batch, 4 * h, ldz));
    Gpu().LstmCellGrad(batch, h, mz.get(), ldz, mc.get(), ldc, has_prev, mdh.get(), mdc.get(),
                       mdz.get());
    mdc.Back();
    mdz.Back();
  }
  void DropoutMask(int64_t n, float rate, T scale, uint64_t seed, uint64_t stream, const T* x,
                   T* mask, T* y) override {
    Mirrored<T> mx(x, n), mm(mask, n), my(y, n);
    Gpu().DropoutMask(n, rate, scale, seed, stream, mx.get(), mm.get(), my.get());
    mm.Back();
    my.Back();
  }
  void FillNormal(int64_t n, double stddev, uint64_t seed, uint64_t stream, T* w) override {
    Mirrored<T> mw(w, n);
    Gpu().FillNormal(n, stddev, seed, stream, mw.get());
    mw.Back();
  }
  void FillUniform(int64_t n, double limit, uint64_t seed, uint64_t stream, T* w) override {
    Mirrored<T> mw(w, n);
    Gpu().FillUniform(n, limit, seed, stream, mw.get());
    mw.Back();
  }
  void DropoutMaskSlice(const SliceIndex& s, float rate, T scale, uint64_t seed, uint64_t stream,
                        const T* x, T* mask, T* y) override {
    const int64_t n = s.outer * s.size * s.inner;
    Mirrored<T> mx(x, n), mm(mask, n), my(y, n);
    Gpu().DropoutMaskSlice(s, rate, scale, seed, stream, mx.get(), mm.get(), my.get());
    mm.Back();
    my.Back();
  }
  void FillNormalSlice(const SliceIndex& s, double stddev, uint64_t seed, uint64_t stream,
                       T* w) override {
    Mirrored<T> mw(w, s.outer * s.size * s.inner);
    Gpu().FillNormalSlice(s, stddev, seed, stream, mw.get());
    mw.Back();
  }
  void FillUniformSlice(const SliceIndex& s, double limit, uint64_t seed, uint64_t stream,
                        T* w) override {
    Mirrored<T> mw(w, s.outer * s.size * s.inner);
    Gpu().FillUniformSlice(s, limit, seed, stream, mw.get());
    mw.Back();
  }
  void SgdUpdate(const SgdParams& p, int64_t n, T* w, const T* g, T* v) override {
    Mirrored<T> mw(w, n), mg(g, n), mv(v, n);
    Gpu().SgdUpdate(p, n, mw.get(), mg.get(), mv.get());
    mw.Back();
    mv.Back();
  }
  void AdamUpdate(const AdamParams& p, int64_t n, T* w, const T* g, T* m, T* v) override {
    Mirrored<T> mw(w, n), mg(g, n), mm(m, n), mv(v, n);
    Gpu().AdamUpdate(p, n, mw.get(), mg.get(), mm.get(), mv.get());
    mw.Back();
    mm.Back();
    mv.Back();
  }
  double SoftmaxCrossEntropy(int64_t b, int64_t k, const T* z, const Tensor& labels,
                             T* d) override {
    Mirrored<T> mz(z, b * k), md(d, b * k);
    Mirrored<unsigned char> ml(static_cast<const unsigned char*>(labels.raw_data()),
                               static_cast<int64_t>(labels.byte_size()));
    const Tensor dev_labels = Tensor::View(ml.get(), labels.dtype(), labels.shape(), Device::kCuda);
    const double loss = Gpu().SoftmaxCrossEntropy(b, k, mz.get(), dev_labels, md.get());
    md.Back();
    return loss;
  }
  double MeanSquaredError(int64_t n, const T* y, const T* target, T* d) override {
    Mirrored<T> my(y, n), mt(target, n), md(d, n);
    const double loss = Gpu().MeanSquaredError(n, my.get(), mt.get(), md.get());
    md.Back();
    return loss;
  }
};

}  // namespace

bool GpuAvailable(std::string* why) {
  const CudaInfo info = QueryCudaInfo();
  if (info.device_count > 0) return true;
  if (why != nullptr) *why = info.device_error;
  return false;
}

template <typename T>
Backend<T>& DeviceMirror() {
  InstallCudaBackend(0);
  static Mirror<T> mirror;
  return mirror;
}
template Backend<float>& DeviceMirror<float>();
template Backend<double>& DeviceMirror<double>();

}  // namespace shardflow::cuda::testing
