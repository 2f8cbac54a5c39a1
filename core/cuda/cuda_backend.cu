#include "core/cuda/cuda_backend.hpp"

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "core/backend/kernel_backend.hpp"
#include "core/cuda/cuda_staging.hpp"
#include "core/cuda/cudnn_conv.hpp"
#include "core/cuda/cudnn_handle.cuh"
#include "core/cuda/cudnn_ops.hpp"
#include "core/cuda/cudnn_rnn.hpp"
#include "core/cuda/device_exec.cuh"
#include "core/error.hpp"
#include "core/logging.hpp"

namespace shardflow::cuda {

DeviceExec::DeviceExec(int ordinal) : ordinal_(ordinal) {
  SF_CHECK_CUDA(cudaSetDevice(ordinal));
  int sms = 0;
  SF_CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal));
  max_blocks_ = static_cast<int64_t>(sms) * 32;  // enough resident blocks; the rest strides
  SF_CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  SF_CHECK_CUBLAS(cublasCreate(&cublas_));
  SF_CHECK_CUBLAS(cublasSetStream(cublas_, stream_));
  SF_CHECK_CUBLAS(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
  SF_CHECK_CUDA(cudaDeviceGetDefaultMemPool(&pool_, ordinal));
  // Keep freed blocks in the pool between steps instead of returning them at each sync.
  uint64_t keep = std::numeric_limits<uint64_t>::max();
  SF_CHECK_CUDA(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep));
}

DeviceExec::~DeviceExec() {
  if (cublas_ != nullptr) cublasDestroy(cublas_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

namespace {
cublasOperation_t Op(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }
// cuBLAS takes int sizes: a larger one is refused, not wrapped.
int Int(int64_t v) {
  if (v > std::numeric_limits<int>::max()) {
    throw Error(ErrorCode::kInvalidArgument,
                "GEMM dimension " + std::to_string(v) + " exceeds cuBLAS's int range");
  }
  return static_cast<int>(v);
}
int Ld(int64_t ld) { return Int(ld < 1 ? 1 : ld); }
}  // namespace

void DeviceExec::Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                      float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  SF_CHECK_CUBLAS(cublasSgemm(cublas_, Op(trans_b), Op(trans_a), Int(n), Int(m), Int(k), &alpha, b,
                              Ld(ldb), a, Ld(lda), &beta, c, Ld(ldc)));
}

void DeviceExec::Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                      const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
                      double* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  SF_CHECK_CUBLAS(cublasDgemm(cublas_, Op(trans_b), Op(trans_a), Int(n), Int(m), Int(k), &alpha, b,
                              Ld(ldb), a, Ld(lda), &beta, c, Ld(ldc)));
}

void* DeviceExec::Allocate(size_t bytes) {
  void* p = nullptr;
  SF_CHECK_CUDA(cudaMallocAsync(&p, bytes, pool_, stream_));
  return p;
}

// Never throws: it runs in destructors (tensors, scratch). After a sticky CUDA error every free
// fails; the error that caused it is the one to report, so this one is only logged.
void DeviceExec::Release(void* p) noexcept {
  const cudaError_t rc = cudaFreeAsync(p, stream_);
  if (rc != cudaSuccess) {
    SF_LOG(Warn) << "cudaFreeAsync failed: " << cudaGetErrorString(rc);
    cudaGetLastError();
  }
}

void DeviceExec::CopyToHost(void* dst, const void* src, size_t bytes) {
  SF_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  Synchronize();
}

void DeviceExec::CopyToDevice(void* dst, const void* src, size_t bytes) {
  SF_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  Synchronize();
}

void DeviceExec::Synchronize() { SF_CHECK_CUDA(cudaStreamSynchronize(stream_)); }

void DeviceExec::SetTf32(bool on) {
  SF_CHECK_CUBLAS(
      cublasSetMathMode(cublas_, on ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
}

size_t DeviceExec::PeakPoolBytes() const {
  uint64_t high = 0;
  SF_CHECK_CUDA(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &high));
  return static_cast<size_t>(high);
}

namespace {

// Tensor memory on the GPU (core/tensor.hpp's DeviceMemory): the executor's stream-ordered
// pool; zeroing is ordered on the stream before any kernel that uses the memory.
class CudaMemory final : public DeviceMemory {
 public:
  explicit CudaMemory(DeviceExec& exec) : exec_(exec) {}
  void* Allocate(size_t bytes) override { return exec_.Allocate(bytes); }
  void Free(void* p) override { exec_.Release(p); }
  void Zero(void* p, size_t bytes) override {
    SF_CHECK_CUDA(cudaMemsetAsync(p, 0, bytes, exec_.stream()));
  }
  void CopyToDevice(void* dst, const void* src, size_t bytes) override {
    exec_.CopyToDevice(dst, src, bytes);
  }
  void CopyToHost(void* dst, const void* src, size_t bytes) override {
    exec_.CopyToHost(dst, src, bytes);
  }
  void CopyOnDevice(void* dst, const void* src, size_t bytes) override {
    SF_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, exec_.stream()));
  }
  size_t PeakBytes() const override { return exec_.PeakPoolBytes(); }

 private:
  DeviceExec& exec_;
};

// The CUDA backend of one dtype: the index kernels and cuBLAS (KernelBackend), with whole
// convolution passes through cuDNN (cudnn_conv.hpp: the kernel transposed to cuDNN's filter
// layout in scratch, the input padded where our padding is lopsided). A shape cuDNN cannot
// take, or SHARDFLOW_CUDNN_CONV = off, leaves the layer on im2col + cuBLAS. Pooling, activations
// and training batch norm through cuDNN where cudnn_ops.hpp's rules take them, and the LSTM layer
// through cuDNN's RNN (cudnn_rnn.hpp); SHARDFLOW_CUDNN = off keeps those on the index kernels.
template <typename T>
class CudaBackend final : public KernelBackend<T, DeviceExec> {
  using Kernels = KernelBackend<T, DeviceExec>;

 public:
  CudaBackend(DeviceExec& exec, CudnnConv& cudnn, CudnnOps& ops, CudnnRnn& rnn)
      : Kernels(exec), exec_(exec), cudnn_(cudnn), ops_(ops), rnn_(rnn) {}

  bool LstmForward(const LstmShape& s, bool training, const T* x, const T* kernel,
                   const T* recurrent, const T* bias, T* hs,
                   std::unique_ptr<LstmSaved>* saved) override {
    if (!CudnnTakesLstm(s)) return false;
    std::unique_ptr<LstmSaved> pass = rnn_.Forward<T>(s, training, x, kernel, recurrent, bias, hs);
    if (pass == nullptr) return false;  // cuDNN refused: the layer's own path
    *saved = std::move(pass);
    return true;
  }
  void LstmBackward(const LstmShape& s, const T* x, const T* hs, const T* dhs, const T* dlast,
                    LstmSaved& saved, T* dkernel, T* drecurrent, T* dbias, T* dx) override {
    rnn_.Backward<T>(s, x, hs, dhs, dlast, saved, dkernel, drecurrent, dbias, dx);
  }

  // Each of these falls back to the kernels when the rule says no or cuDNN refuses the call.
  void Pool2D(const PoolGeometry& g, bool max, int64_t batch, const T* x, T* y) override {
    if (CudnnTakesPool(g, batch) && ops_.Pool2D(g, max, batch, x, y)) return;
    Kernels::Pool2D(g, max, batch, x, y);
  }
  void Pool2DGrad(const PoolGeometry& g, bool max, bool relu, int64_t batch, const T* x, const T* y,
                  const T* dy, T* dx) override {
    if (!CudnnTakesPool(g, batch)) return Kernels::Pool2DGrad(g, max, relu, batch, x, y, dy, dx);
    const int64_t out = batch * g.oh * g.ow * g.c;
    DeviceScratch<DeviceExec, T> dy_relu(exec_, max && relu ? out : 0);
    if (max && relu) Kernels::ActivationGrad(ActivationKind::kRelu, out, y, y, dy, dy_relu.get());
    if (ops_.Pool2DGrad(g, max, batch, x, y, max && relu ? dy_relu.get() : dy, dx)) return;
    Kernels::Pool2DGrad(g, max, relu, batch, x, y, dy, dx);
  }
  void Activation(ActivationKind kind, int64_t n, const T* x, T* y) override {
    if (CudnnTakesActivation(kind, n) && ops_.Activation(kind, n, x, y)) return;
    Kernels::Activation(kind, n, x, y);
  }
  void ActivationGrad(ActivationKind kind, int64_t n, const T* x, const T* y, const T* dy,
                      T* dx) override {
    if (CudnnTakesActivation(kind, n) && ops_.ActivationGrad(kind, n, x, y, dy, dx)) return;
    Kernels::ActivationGrad(kind, n, x, y, dy, dx);
  }
  // The backward pass follows the forward pass's path (p.saved_form), whatever the rule says by
  // then.
  int BatchNorm(const BatchNormParams& p, const T* x, const T* gamma, const T* beta, T* moving_mean,
                T* moving_var, double* saved, T* y) override {
    if (CudnnTakesBatchNorm(p) &&
        ops_.BatchNorm(p, x, gamma, beta, moving_mean, moving_var, saved, y)) {
      return kSavedByCudnn;
    }
    return Kernels::BatchNorm(p, x, gamma, beta, moving_mean, moving_var, saved, y);
  }
  void BatchNormGrad(const BatchNormParams& p, const T* dy, const T* x, const T* gamma,
                     const double* saved, T* dgamma, T* dbeta, T* dx) override {
    if (p.saved_form != kSavedByCudnn) {
      return Kernels::BatchNormGrad(p, dy, x, gamma, saved, dgamma, dbeta, dx);
    }
    ops_.BatchNormGrad(p, dy, x, gamma, saved, dgamma, dbeta, dx);
  }

  bool ConvForward(const ConvGeometry& g, int64_t f, int64_t batch, const T* x, const T* w,
                   const T* bias, T* y) override {
    const CudnnConvShape s = Plan(g, f, batch);
    if (!cudnn_.Ready<T>(s, CudnnPass::kForward)) return false;
    DeviceScratch<DeviceExec, T> wt(exec_, f * Kkc(g)), xp(exec_, PaddedSize(s));
    this->Transpose(Kkc(g), f, w, wt.get());
    if (bias != nullptr) this->BroadcastRows(batch * g.oh * g.ow, f, bias, y);
    cudnn_.Forward(s, Pad(g, s, x, xp.get()), wt.get(), bias != nullptr ? T(1) : T(0), y);
    return true;
  }
  bool ConvBackwardData(const ConvGeometry& g, int64_t f, int64_t batch, const T* dy, const T* w,
                        T* dx) override {
    const CudnnConvShape s = Plan(g, f, batch);
    if (!cudnn_.Ready<T>(s, CudnnPass::kBackwardData)) return false;
    DeviceScratch<DeviceExec, T> wt(exec_, f * Kkc(g)), dxp(exec_, PaddedSize(s));
    this->Transpose(Kkc(g), f, w, wt.get());
    cudnn_.BackwardData(s, dy, wt.get(), Padded(s) ? dxp.get() : dx);
    if (Padded(s)) {
      exec_.Run(batch * g.h * g.w * g.c,
                kernels::CropTopLeftK<T>{g.h, g.w, g.c, s.eh, s.ew, dxp.get(), dx});
    }
    return true;
  }
  bool ConvBackwardFilter(const ConvGeometry& g, int64_t f, int64_t batch, const T* x, const T* dy,
                          T* dw) override {
    const CudnnConvShape s = Plan(g, f, batch);
    if (!cudnn_.Ready<T>(s, CudnnPass::kBackwardFilter)) return false;
    DeviceScratch<DeviceExec, T> dwt(exec_, f * Kkc(g)), xp(exec_, PaddedSize(s));
    cudnn_.BackwardFilter(s, Pad(g, s, x, xp.get()), dy, dwt.get());
    // dw (KKC, F) += the (F, KKC) gradient transposed.
    exec_.Run(Kkc(g) * f, kernels::TransposeAddK<T>{f, Kkc(g), dwt.get(), dw});
    return true;
  }

 private:
  static int64_t Kkc(const ConvGeometry& g) { return g.kh * g.kw * g.c; }
  static bool Padded(const CudnnConvShape& s) { return s.eh > 0 || s.ew > 0; }
  static int64_t PaddedSize(const CudnnConvShape& s) {
    return Padded(s) ? static_cast<int64_t>(s.n) * s.h * s.w * s.c : 0;
  }
  static CudnnConvShape Plan(const ConvGeometry& g, int64_t f, int64_t batch) {
    if (!CudnnConvOn()) return CudnnConvShape{};  // SHARDFLOW_CUDNN_CONV = off
    return PlanCudnnConv(g, f, batch);
  }
  // x as cuDNN takes it: padded into `scratch` when the plan adds rows or columns.
  const T* Pad(const ConvGeometry& g, const CudnnConvShape& s, const T* x, T* scratch) {
    if (!Padded(s)) return x;
    exec_.Run(PaddedSize(s), kernels::PadBottomRightK<T>{g.h, g.w, g.c, s.eh, s.ew, x, scratch});
    return scratch;
  }

  static constexpr int kSavedByCudnn = 1;  // BatchNormParams::saved_form of cuDNN's statistics

  DeviceExec& exec_;
  CudnnConv& cudnn_;
  CudnnOps& ops_;
  CudnnRnn& rnn_;
};

// The installed backend: one executor, the two typed backends and the tensor memory over it.
// Kept for the process's life (a backend registered for Device::kCuda must outlive every kernel
// call and every device tensor).
struct Installed {
  explicit Installed(int ordinal)
      : exec(ordinal),
        cudnn_handle(exec),
        cudnn(exec, cudnn_handle),
        ops(exec, cudnn_handle),
        rnn(exec, cudnn_handle),
        f32(exec, cudnn, ops, rnn),
        f64(exec, cudnn, ops, rnn),
        memory(exec) {}
  DeviceExec exec;
  CudnnHandle cudnn_handle;  // before its users: destroyed after them
  CudnnConv cudnn;
  CudnnOps ops;
  CudnnRnn rnn;
  CudaBackend<float> f32;
  CudaBackend<double> f64;
  CudaMemory memory;
};
Installed* installed = nullptr;

}  // namespace

DeviceExec& InstalledExec() {
  if (installed == nullptr) {
    throw Error(ErrorCode::kInternal, "the CUDA backend is not installed (InstallCudaBackend)");
  }
  return installed->exec;
}

void InstallCudaBackend(int ordinal, std::shared_ptr<const DeviceCollectives> collectives) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess || ordinal < 0 || ordinal >= count) {
    const std::string why =
        rc != cudaSuccess ? cudaGetErrorString(rc) : std::to_string(count) + " device(s) visible";
    cudaGetLastError();
    throw Error(ErrorCode::kInternal,
                "cannot use CUDA device " + std::to_string(ordinal) + ": " + why);
  }
  if (installed == nullptr || installed->exec.ordinal() != ordinal) {
    installed = new Installed(ordinal);  // lives until exit: backends outlive their callers
  }
  RegisterDeviceRuntime({.device = Device::kCuda,
                         .name = "cuda",
                         .f32 = &installed->f32,
                         .f64 = &installed->f64,
                         .memory = &installed->memory,
                         .staging = &CudaInputStaging(installed->exec),
                         .collectives = std::move(collectives)});
}

void UseOnThisThread() { SF_CHECK_CUDA(cudaSetDevice(InstalledExec().ordinal())); }

void* DeviceAllocate(size_t bytes) {
  return bytes == 0 ? nullptr : InstalledExec().Allocate(bytes);
}
void DeviceFree(void* p) {
  if (p != nullptr) InstalledExec().Release(p);
}
void CopyHostToDevice(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) InstalledExec().CopyToDevice(dst, src, bytes);
}
void CopyDeviceToHost(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) InstalledExec().CopyToHost(dst, src, bytes);
}
size_t PeakDeviceBytes() { return InstalledExec().PeakPoolBytes(); }
void SetTf32(bool on) {
  InstalledExec().SetTf32(on);
  installed->cudnn.SetTf32(on);
  installed->rnn.SetTf32(on);
}

}  // namespace shardflow::cuda
