// Compute backend: the kernels that layers, losses and optimizers run, one implementation per
// device (design decision 3). Callers hold tensors that carry their device; they ask
// BackendFor<T>(tensor.device()) for the backend once per kernel call and pass it pointers from
// Tensor::device_data<T>() (and the arena). The CPU backend is core/cpu; a CUDA backend is a new
// file set in core/cuda that implements this class; a device's backends are part of its runtime,
// registered once at start-up (core/backend/device_runtime.hpp). No device's own types appear
// here: a convolution is described by core/backend/conv_geometry.hpp, and how a backend computes
// it (the CPU's SHARDFLOW_CONV, the GPU's cuDNN) is the backend's business.
//
// Why a virtual class and not device-dispatching free functions (switch (device) in each op):
//  - A new device is one new subclass in its own folder; nothing here or in the layers changes,
//    and the compiler refuses a backend that forgets an op (pure virtuals). With free functions
//    every op's switch would have to learn the device, and a forgotten case fails at run time.
//  - The cost is one indirect call per kernel call (a GEMM, a whole activation pass), never per
//    element: the loops stay inside the backend, where the compiler vectorises them, so the CPU
//    path runs the same machine code as before the seam. No std::function, no per-element
//    dispatch.
//  - Per-element math that a CPU loop and a CUDA kernel must agree on lives in
//    core/backend/pointwise.hpp (SF_HOST_DEVICE functions), so two backends share it.
// Pointers are device pointers: valid on device() only. Shapes are written above each op; all
// arrays are row-major and contiguous unless a leading dimension (ld*) says otherwise.
// Ops that accumulate say "+="; all others overwrite their outputs.
// Thread-safety: backends are stateless apart from their intra-op thread pool; one kernel call
// at a time per thread, any number of threads.
#pragma once

#include <cstdint>
#include <memory>

#include "core/backend/conv_geometry.hpp"
#include "core/tensor.hpp"

namespace shardflow {

enum class ActivationKind { kRelu, kGelu, kTanh, kSigmoid };

// A pooling window geometry over NHWC images: input (H, W, C), window K x K, stride S, valid
// padding, output (OH, OW, C).
struct PoolGeometry {
  int64_t h = 0, w = 0, c = 0, k = 1, stride = 1, oh = 0, ow = 0;
};

// Settings of one batch-normalisation pass over x (N, C); statistics are computed in double
// (cuDNN's, when the CUDA backend takes them, in the data's type).
struct BatchNormParams {
  int64_t n = 0, c = 0;
  bool training = false;  // batch statistics (and update the moving ones) vs moving statistics
  double momentum = 0.99, epsilon = 1e-3;
  // Which path of the backend wrote the saved statistics: Backend::BatchNorm's answer, which the
  // caller sets here for BatchNormGrad (so the backward pass reads them as they were written).
  int saved_form = 0;
};
// Doubles per channel of Backend::BatchNorm's saved statistics.
inline constexpr int64_t kBatchNormSavedPerChannel = 2;
// Backend::BatchNorm's answer for the kernels' saved statistics (mean, inv_std in double).
inline constexpr int kBatchNormSavedByKernels = 0;

// An LSTM layer's sizes for Backend::LstmForward: batch B, steps T, features F, units H.
struct LstmShape {
  int64_t batch = 0, steps = 0, features = 0, units = 0;
};
// What a backend keeps between a library LSTM's forward pass and its backward pass.
class LstmSaved {
 public:
  virtual ~LstmSaved() = default;
};

// A slice of a tensor seen as (outer, full, inner): the elements [begin, begin + size) along the
// middle dimension, stored contiguously as (outer, size, inner). Element (o, j, k) of the slice
// is element (o * full + begin + j) * inner + k of the whole tensor.
struct SliceIndex {
  int64_t outer = 1;
  int64_t full = 0;
  int64_t begin = 0;
  int64_t size = 0;
  int64_t inner = 1;
};

// Constants of one SGD or Adam update of a parameter slice (see core/optim/optimizer.hpp).
struct SgdParams {
  float lr = 0, momentum = 0, weight_decay = 0;
  bool nesterov = false;
};
struct AdamParams {
  float b1, b2, l2, shrink, step, eps;  // as pointwise::AdamConstants
};

template <typename T>
class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;

  // --- dense algebra: C (M, N) = alpha op(A) op(B) + beta C, as cpu::Gemm.
  virtual void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
                    const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c,
                    int64_t ldc) = 0;
  // --- convolution data movement (core/backend/conv_geometry.hpp): Im2Col writes cols
  // (B*OH*OW, KH*KW*C), one row per output pixel holding its window in (kh, kw, c) order, zeros
  // over the padding, from x (B, H, W, C); Col2ImAdd is its adjoint, dx += scatter of cols.
  virtual void Im2Col(const ConvGeometry& g, int64_t batch, const T* x, T* cols) = 0;
  virtual void Col2ImAdd(const ConvGeometry& g, int64_t batch, const T* cols, T* dx) = 0;
  // --- a whole convolution pass in one library call, for backends that have one (the CPU's
  // oneDNN or Winograd, cuDNN on a GPU); which passes it takes is the backend's own choice, read
  // by no one else. false: not taken for this shape, pass or type, nothing touched, and the
  // layer runs im2col + GEMM. x (B, H, W, C), y and dy (B, OH, OW, F), w (KH, KW, C, F).
  // Forward overwrites y with conv(x, w) + bias (bias may be null); BackwardData overwrites dx;
  // BackwardFilter adds the kernel's gradient into dw.
  virtual bool ConvForward(const ConvGeometry& /*g*/, int64_t /*f*/, int64_t /*batch*/,
                           const T* /*x*/, const T* /*w*/, const T* /*bias*/, T* /*y*/) {
    return false;
  }
  virtual bool ConvBackwardData(const ConvGeometry& /*g*/, int64_t /*f*/, int64_t /*batch*/,
                                const T* /*dy*/, const T* /*w*/, T* /*dx*/) {
    return false;
  }
  virtual bool ConvBackwardFilter(const ConvGeometry& /*g*/, int64_t /*f*/, int64_t /*batch*/,
                                  const T* /*x*/, const T* /*dy*/, T* /*dw*/) {
    return false;
  }

  // --- element-wise
  virtual void Fill(int64_t n, T value, T* y) = 0;
  // y (rows, cols): every row = row (cols).
  virtual void BroadcastRows(int64_t rows, int64_t cols, const T* row, T* y) = 0;
  // y (rows, cols) += x (rows, cols) with x's row stride ldx.
  virtual void AddRows(int64_t rows, int64_t cols, const T* x, int64_t ldx, T* y) = 0;
  // y (cols, rows) = x (rows, cols) transposed.
  virtual void Transpose(int64_t rows, int64_t cols, const T* x, T* y) = 0;
  virtual void Add(int64_t n, const T* a, const T* b, T* y) = 0;  // y = a + b
  virtual void Mul(int64_t n, const T* a, const T* b, T* y) = 0;  // y = a * b
  virtual void Scale(int64_t n, T s, T* y) = 0;                   // y *= s
  virtual void Activation(ActivationKind kind, int64_t n, const T* x, T* y) = 0;
  // dx from the saved input x, output y and dy (each kind reads what it needs).
  virtual void ActivationGrad(ActivationKind kind, int64_t n, const T* x, const T* y, const T* dy,
                              T* dx) = 0;
  // x (B, H) -> y (B, times, H); adjoint dx (B, H) = sum over times of dy (B, times, H).
  virtual void Repeat(int64_t b, int64_t times, int64_t h, const T* x, T* y) = 0;
  virtual void RepeatGrad(int64_t b, int64_t times, int64_t h, const T* dy, T* dx) = 0;

  // --- reductions
  // sums (cols) += column sums of x (rows, cols).
  virtual void AddColumnSums(int64_t rows, int64_t cols, const T* x, T* sums) = 0;
  virtual double SumSquares(int64_t n, const T* x) = 0;  // in double

  // --- pooling. x (B, H, W, C), y (B, OH, OW, C). Max: the first maximum of a window wins and
  // gets the gradient (the CUDA backend through cuDNN: one maximum, the same every run). dx is
  // overwritten. relu (max only): dy is the gradient of relu(y), so a window passes on relu'(y) dy
  // (a ReLU absorbed by the pooling, with no pass of its own).
  virtual void Pool2D(const PoolGeometry& g, bool max, int64_t batch, const T* x, T* y) = 0;
  virtual void Pool2DGrad(const PoolGeometry& g, bool max, bool relu, int64_t batch, const T* x,
                          const T* y, const T* dy, T* dx) = 0;
  // x (B, P, C) -> y (B, C), the mean over P; and its adjoint.
  virtual void GlobalAvgPool(int64_t b, int64_t p, int64_t c, const T* x, T* y) = 0;
  virtual void GlobalAvgPoolGrad(int64_t b, int64_t p, int64_t c, const T* dy, T* dx) = 0;

  // --- batch normalisation over x (N, C). Forward writes y = gamma xhat + beta with xhat =
  // (x - mean) inv_std, and `saved` (kBatchNormSavedPerChannel C doubles): the statistics the
  // backward pass of the same backend reads, in a form that is the backend's own (the kernel
  // backends: mean (C) then inv_std (C), in double; cuDNN its saved mean and inverse standard
  // deviation). In training it also updates moving_mean/moving_var (C). Nothing of xhat is kept:
  // the backward pass recomputes it from x, as cuDNN does. Returns the form of `saved`
  // (kBatchNormSavedByKernels or one of the backend's own), for BatchNormParams::saved_form.
  virtual int BatchNorm(const BatchNormParams& p, const T* x, const T* gamma, const T* beta,
                        T* moving_mean, T* moving_var, double* saved, T* y) = 0;
  // From the forward pass's x and saved (p.saved_form as BatchNorm answered): dgamma, dbeta (C)
  // +=; dx (N, C) written unless null.
  virtual void BatchNormGrad(const BatchNormParams& p, const T* dy, const T* x, const T* gamma,
                             const double* saved, T* dgamma, T* dbeta, T* dx) = 0;

  // --- recurrent: one LSTM time step over a batch (pointwise::LstmCell per unit). z holds the
  // pre-activations [i f g o] (4H per row, row stride ldz), turned into the gates in place; c and
  // h (H per row, row stride ldc) get the step's cell and output; when has_prev, the previous
  // step's cell is at c - H.
  virtual void LstmCell(int64_t batch, int64_t h, T* z, int64_t ldz, T* c, T* hs, int64_t ldc,
                        bool has_prev) = 0;
  // Its adjoint: reads the gates z and cells c as saved, dh (B, H); dc (B, H) carries in the
  // step t+1 cell gradient and out the one for t-1; writes dz (row stride ldz).
  virtual void LstmCellGrad(int64_t batch, int64_t h, const T* z, int64_t ldz, const T* c,
                            int64_t ldc, bool has_prev, const T* dh, T* dc, T* dz) = 0;

  // --- a whole LSTM layer over its sequences in one library call (cuDNN's RNN), for backends
  // that have one. x (B, T, F), kernel (F, 4H), recurrent (H, 4H) and bias (4H) as
  // core/layers/lstm.hpp; hs (B, T, H) gets every step's output. What the backward pass needs
  // (the weights as the library packed them, its reserve space) goes into *saved, which the
  // caller keeps with the pass. false: not taken, nothing touched; the layer then runs its GEMMs
  // and LstmCell step by step.
  virtual bool LstmForward(const LstmShape& /*s*/, bool /*training*/, const T* /*x*/,
                           const T* /*kernel*/, const T* /*recurrent*/, const T* /*bias*/,
                           T* /*hs*/, std::unique_ptr<LstmSaved>* /*saved*/) {
    return false;
  }
  // From a training forward pass's x, hs and saved: dhs (B, T, H) the gradient of every step's
  // output and dlast (B, H) that of the last step's (either may be null: zero); dkernel,
  // drecurrent, dbias +=; dx (B, T, F) written unless null.
  virtual void LstmBackward(const LstmShape& /*s*/, const T* /*x*/, const T* /*hs*/,
                            const T* /*dhs*/, const T* /*dlast*/, LstmSaved& /*saved*/,
                            T* /*dkernel*/, T* /*drecurrent*/, T* /*dbias*/, T* /*dx*/) {
    throw Error(ErrorCode::kInternal, "LstmBackward on a backend whose LstmForward takes nothing");
  }

  // --- random fills, counter-based (core/random.hpp): element i draws (seed, stream, i).
  // Inverted dropout: mask[i] = uniform >= rate ? scale : 0, y = x mask.
  virtual void DropoutMask(int64_t n, float rate, T scale, uint64_t seed, uint64_t stream,
                           const T* x, T* mask, T* y) = 0;
  virtual void FillNormal(int64_t n, double stddev, uint64_t seed, uint64_t stream, T* w) = 0;
  // Uniform in [-limit, limit).
  virtual void FillUniform(int64_t n, double limit, uint64_t seed, uint64_t stream, T* w) = 0;
  // The same three on a slice of a tensor (tensor parallelism): each element draws the counter
  // of its index in the whole tensor, so a slice gets exactly the whole tensor's values there.
  virtual void DropoutMaskSlice(const SliceIndex& s, float rate, T scale, uint64_t seed,
                                uint64_t stream, const T* x, T* mask, T* y) = 0;
  virtual void FillNormalSlice(const SliceIndex& s, double stddev, uint64_t seed, uint64_t stream,
                               T* w) = 0;
  virtual void FillUniformSlice(const SliceIndex& s, double limit, uint64_t seed, uint64_t stream,
                                T* w) = 0;

  // --- optimizer updates of one slice: w, g, state (n).
  virtual void SgdUpdate(const SgdParams& p, int64_t n, T* w, const T* g, T* v) = 0;
  virtual void AdamUpdate(const AdamParams& p, int64_t n, T* w, const T* g, T* m, T* v) = 0;

  // --- losses, returning the mean loss (double); d (same shape as the prediction) is written
  // unless null. Cross-entropy: logits z (B, K), labels an integer tensor (B,) on this device;
  // throws Error(kInvalidArgument) for a label outside [0, K).
  virtual double SoftmaxCrossEntropy(int64_t b, int64_t k, const T* z, const Tensor& labels,
                                     T* d) = 0;
  virtual double MeanSquaredError(int64_t n, const T* y, const T* target, T* d) = 0;
};

// The backend of a device's registered runtime (core/backend/device_runtime.hpp). Throws
// Error(kInternal) naming the device when this build has none for it (a CUDA tensor in a
// CPU-only build).
template <typename T>
Backend<T>& BackendFor(Device device);

// The error of every backend's SoftmaxCrossEntropy for a label outside [0, K) in batch row
// `row`: Error(kInvalidArgument) naming the label, the row and K.
[[noreturn]] void ThrowLabelOutOfRange(int64_t label, int64_t row, int64_t k);

}  // namespace shardflow
