#include "core/cuda/cudnn_ops.hpp"

#include <cudnn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>
#include <type_traits>

#include "core/backend/kernel_backend.hpp"
#include "core/cuda/check_cuda.hpp"
#include "core/cuda/cudnn_handle.cuh"
#include "core/cuda/device_exec.cuh"
#include "core/environment.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/thread_annotations.hpp"

namespace shardflow::cuda {
namespace {

constexpr int64_t kIntMax = std::numeric_limits<int>::max();

// The CudnnOp bits cuDNN may take; -1: not read from the environment yet.
std::atomic<int> g_ops{-1};
std::atomic<int64_t> g_refusals{0};
Mutex g_said_mu;
std::set<std::string> g_said GUARDED_BY(g_said_mu);  // what was refused, said once each

#define SF_CUDNN_RAN(call, what) (!CudnnRefused(static_cast<int>(call), what, #call))

template <typename T>
constexpr cudnnDataType_t kType = std::is_same_v<T, double> ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;

bool WithinInt(std::initializer_list<int64_t> sizes, int64_t elements) {
  for (int64_t s : sizes) {
    if (s <= 0 || s > kIntMax) return false;
  }
  return elements <= kIntMax;
}

// RAII over one cuDNN tensor descriptor.
class TensorDesc {
 public:
  TensorDesc() { SF_CHECK_CUDNN(cudnnCreateTensorDescriptor(&d_)); }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d_); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  // NHWC images (n, h, w, c).
  void Nhwc(cudnnDataType_t type, int64_t n, int64_t c, int64_t h, int64_t w) {
    SF_CHECK_CUDNN(cudnnSetTensor4dDescriptor(d_, CUDNN_TENSOR_NHWC, type, static_cast<int>(n),
                                              static_cast<int>(c), static_cast<int>(h),
                                              static_cast<int>(w)));
  }
  // Rows of C channels, (N, C, 1, 1): the same memory as our (N, C).
  void Rows(cudnnDataType_t type, int64_t n, int64_t c) {
    SF_CHECK_CUDNN(cudnnSetTensor4dDescriptor(d_, CUDNN_TENSOR_NCHW, type, static_cast<int>(n),
                                              static_cast<int>(c), 1, 1));
  }
  cudnnTensorDescriptor_t get() const { return d_; }
  std::array<int, 4> Dims() const {
    cudnnDataType_t type;
    std::array<int, 4> d{}, s{};
    SF_CHECK_CUDNN(cudnnGetTensor4dDescriptor(d_, &type, &d[0], &d[1], &d[2], &d[3], &s[0], &s[1],
                                              &s[2], &s[3]));
    return d;
  }

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
};

class PoolDesc {
 public:
  PoolDesc(const PoolGeometry& g, bool max) {
    SF_CHECK_CUDNN(cudnnCreatePoolingDescriptor(&d_));
    const cudnnStatus_t rc = cudnnSetPooling2dDescriptor(
        d_, max ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
        CUDNN_NOT_PROPAGATE_NAN, static_cast<int>(g.k), static_cast<int>(g.k), 0, 0,
        static_cast<int>(g.stride), static_cast<int>(g.stride));
    if (rc != CUDNN_STATUS_SUCCESS) cudnnDestroyPoolingDescriptor(d_);
    SF_CHECK_CUDNN(rc);
  }
  ~PoolDesc() { cudnnDestroyPoolingDescriptor(d_); }
  PoolDesc(const PoolDesc&) = delete;
  PoolDesc& operator=(const PoolDesc&) = delete;
  cudnnPoolingDescriptor_t get() const { return d_; }

 private:
  cudnnPoolingDescriptor_t d_ = nullptr;
};

class ActivationDesc {
 public:
  explicit ActivationDesc(ActivationKind kind) {
    SF_CHECK_CUDNN(cudnnCreateActivationDescriptor(&d_));
    cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
    switch (kind) {
      case ActivationKind::kRelu:
        break;
      case ActivationKind::kTanh:
        mode = CUDNN_ACTIVATION_TANH;
        break;
      case ActivationKind::kSigmoid:
        mode = CUDNN_ACTIVATION_SIGMOID;
        break;
      default:
        cudnnDestroyActivationDescriptor(d_);
        throw Error(ErrorCode::kInternal,
                    "cuDNN has no activation of kind " + std::to_string(static_cast<int>(kind)));
    }
    // NaN is not propagated by ReLU: pointwise::Relu maps it to 0, and so does cuDNN this way.
    const cudnnStatus_t rc = cudnnSetActivationDescriptor(d_, mode, CUDNN_NOT_PROPAGATE_NAN, 0.0);
    if (rc != CUDNN_STATUS_SUCCESS) cudnnDestroyActivationDescriptor(d_);
    SF_CHECK_CUDNN(rc);
  }
  ~ActivationDesc() { cudnnDestroyActivationDescriptor(d_); }
  ActivationDesc(const ActivationDesc&) = delete;
  ActivationDesc& operator=(const ActivationDesc&) = delete;
  cudnnActivationDescriptor_t get() const { return d_; }

 private:
  cudnnActivationDescriptor_t d_ = nullptr;
};

// The pooling's input and output descriptors.
struct PoolTensors {
  PoolTensors(const PoolGeometry& g, int64_t batch, cudnnDataType_t type) {
    x.Nhwc(type, batch, g.c, g.h, g.w);
    y.Nhwc(type, batch, g.c, g.oh, g.ow);
  }
  TensorDesc x, y;
};

// Batch norm's data (N, C, 1, 1) and per-channel (1, C, 1, 1) descriptors.
struct BatchNormTensors {
  BatchNormTensors(const BatchNormParams& p, cudnnDataType_t type) {
    x.Rows(type, p.n, p.c);
    SF_CHECK_CUDNN(cudnnDeriveBNTensorDescriptor(param.get(), x.get(), CUDNN_BATCHNORM_SPATIAL));
  }
  TensorDesc x, param;
};

}  // namespace

unsigned ParseCudnnOps(const char* value) {
  const std::string want = value == nullptr ? "on" : value;
  if (want == "on" || want.empty()) return kCudnnAll;
  if (want == "off") return 0;
  unsigned ops = 0;
  size_t at = 0;
  while (at <= want.size()) {
    const size_t end = std::min(want.find(',', at), want.size());
    const std::string op = want.substr(at, end - at);
    if (op == "pool") {
      ops |= kCudnnPool;
    } else if (op == "act") {
      ops |= kCudnnActivation;
    } else if (op == "bn") {
      ops |= kCudnnBatchNorm;
    } else if (op == "lstm") {
      ops |= kCudnnLstm;
    } else {
      throw Error(ErrorCode::kInvalidArgument, "unknown SHARDFLOW_CUDNN '" + want + "'",
                  {.hint = "on (pooling, activations, batch norm and the LSTM through cuDNN), "
                           "off (shardflow's kernels), or a comma list of pool, act, bn, lstm"});
    }
    at = end + 1;
  }
  return ops;
}

void SetCudnnOps(bool on) { g_ops.store(on ? int{kCudnnAll} : 0); }
void SetCudnnOps(unsigned ops) { g_ops.store(static_cast<int>(ops & kCudnnAll)); }

bool CudnnOpsOn(CudnnOp op) {
  int ops = g_ops.load();
  if (ops < 0) {
    ops = static_cast<int>(ParseCudnnOps(env::Text("SHARDFLOW_CUDNN").value_or("").c_str()));
    g_ops.store(ops);
  }
  return (static_cast<unsigned>(ops) & op) != 0;
}

int64_t CudnnRefusals() { return g_refusals.load(); }

bool CudnnRefused(int status, const char* what, const char* call) {
  const auto rc = static_cast<cudnnStatus_t>(status);
  if (rc == CUDNN_STATUS_SUCCESS) return false;
  if (rc != CUDNN_STATUS_NOT_SUPPORTED && rc != CUDNN_STATUS_BAD_PARAM) {
    internal::ThrowCudaError("cuDNN", cudnnGetErrorString(rc), call, __FILE__, __LINE__);
  }
  g_refusals.fetch_add(1);
  bool first = false;
  {
    MutexLock lock(g_said_mu);
    first = g_said.insert(what).second;
  }
  if (first) {
    SF_LOG(Warn) << "cuDNN refused a " << what << " (" << cudnnGetErrorString(rc) << " from "
                 << call << "): it runs on shardflow's kernels";
  }
  return true;
}

bool CudnnTakesPool(const PoolGeometry& g, int64_t batch) {
  if (!CudnnOpsOn(kCudnnPool) || g.stride < 1 || g.k < 1) return false;
  // Valid windows: cuDNN's output size floor((in - k) / stride) + 1 must be ours.
  if (g.oh != (g.h - g.k) / g.stride + 1 || g.ow != (g.w - g.k) / g.stride + 1) return false;
  return WithinInt({batch, g.c, g.h, g.w, g.oh, g.ow, g.k}, batch * g.h * g.w * g.c);
}

bool CudnnTakesActivation(ActivationKind kind, int64_t n) {
  if (!CudnnOpsOn(kCudnnActivation) || kind == ActivationKind::kGelu) return false;
  return WithinInt({n}, n);
}

bool CudnnTakesBatchNorm(const BatchNormParams& p) {
  if (!CudnnOpsOn(kCudnnBatchNorm) || !p.training || p.n < 2) return false;
  return p.epsilon >= CUDNN_BN_MIN_EPSILON && WithinInt({p.n, p.c}, p.n * p.c);
}

std::array<int, 4> CudnnPoolOutputDims(const PoolGeometry& g, int64_t batch, bool max) {
  const PoolDesc pool(g, max);
  TensorDesc x;
  x.Nhwc(CUDNN_DATA_FLOAT, batch, g.c, g.h, g.w);
  std::array<int, 4> out{};
  SF_CHECK_CUDNN(
      cudnnGetPooling2dForwardOutputDim(pool.get(), x.get(), &out[0], &out[1], &out[2], &out[3]));
  return out;
}

std::array<int, 4> CudnnBatchNormParamDims(const BatchNormParams& p, bool is_double) {
  const BatchNormTensors t(p, is_double ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT);
  return t.param.Dims();
}

struct CudnnOps::Impl {
  cudnnHandle_t Handle() { return handle.get(); }
  DeviceExec& exec;
  CudnnHandle& handle;
};

CudnnOps::CudnnOps(DeviceExec& exec, CudnnHandle& handle)
    : impl_(std::make_unique<Impl>(Impl{exec, handle})) {}
CudnnOps::~CudnnOps() = default;

template <typename T>
bool CudnnOps::Pool2D(const PoolGeometry& g, bool max, int64_t batch, const T* x, T* y) {
  const PoolDesc pool(g, max);
  const PoolTensors t(g, batch, kType<T>);
  const T one = T(1), zero = T(0);
  return SF_CUDNN_RAN(
      cudnnPoolingForward(impl_->Handle(), pool.get(), &one, t.x.get(), x, &zero, t.y.get(), y),
      "pooling");
}

template <typename T>
bool CudnnOps::Pool2DGrad(const PoolGeometry& g, bool max, int64_t batch, const T* x, const T* y,
                          const T* dy_pool, T* dx) {
  const PoolDesc pool(g, max);
  const PoolTensors t(g, batch, kType<T>);
  const T one = T(1), zero = T(0);
  return SF_CUDNN_RAN(cudnnPoolingBackward(impl_->Handle(), pool.get(), &one, t.y.get(), y,
                                           t.y.get(), dy_pool, t.x.get(), x, &zero, t.x.get(), dx),
                      "pooling gradient");
}

template <typename T>
bool CudnnOps::Activation(ActivationKind kind, int64_t n, const T* x, T* y) {
  const ActivationDesc act(kind);
  TensorDesc d;
  d.Rows(kType<T>, n, 1);
  const T one = T(1), zero = T(0);
  return SF_CUDNN_RAN(
      cudnnActivationForward(impl_->Handle(), act.get(), &one, d.get(), x, &zero, d.get(), y),
      "activation");
}

template <typename T>
bool CudnnOps::ActivationGrad(ActivationKind kind, int64_t n, const T* x, const T* y, const T* dy,
                              T* dx) {
  const ActivationDesc act(kind);
  TensorDesc d;
  d.Rows(kType<T>, n, 1);
  const T one = T(1), zero = T(0);
  return SF_CUDNN_RAN(cudnnActivationBackward(impl_->Handle(), act.get(), &one, d.get(), y, d.get(),
                                              dy, d.get(), x, &zero, d.get(), dx),
                      "activation gradient");
}

// saved holds cuDNN's saved mean (C) then inverse standard deviation (C), in T.
template <typename T>
bool CudnnOps::BatchNorm(const BatchNormParams& p, const T* x, const T* gamma, const T* beta,
                         T* moving_mean, T* moving_var, double* saved, T* y) {
  const BatchNormTensors t(p, kType<T>);
  T* save_mean = reinterpret_cast<T*>(saved);
  const T one = T(1), zero = T(0);
  return SF_CUDNN_RAN(cudnnBatchNormalizationForwardTraining(
                          impl_->Handle(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, t.x.get(), x,
                          t.x.get(), y, t.param.get(), gamma, beta, 1.0 - p.momentum, moving_mean,
                          moving_var, p.epsilon, save_mean, save_mean + p.c),
                      "batch normalisation");
}

template <typename T>
void CudnnOps::BatchNormGrad(const BatchNormParams& p, const T* dy, const T* x, const T* gamma,
                             const double* saved, T* dgamma, T* dbeta, T* dx) {
  const BatchNormTensors t(p, kType<T>);
  const T* save_mean = reinterpret_cast<const T*>(saved);
  // cuDNN always writes an input gradient: the first layer's goes to scratch.
  DeviceScratch<DeviceExec, T> unused(impl_->exec, dx == nullptr ? p.n * p.c : 0);
  const T one = T(1), zero = T(0);
  SF_CHECK_CUDNN(cudnnBatchNormalizationBackward(
      impl_->Handle(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &one, t.x.get(), x, t.x.get(),
      dy, t.x.get(), dx != nullptr ? dx : unused.get(), t.param.get(), gamma, dgamma, dbeta,
      p.epsilon, save_mean, save_mean + p.c));
}

#define SF_INSTANTIATE(T)                                                                          \
  template bool CudnnOps::Pool2D<T>(const PoolGeometry&, bool, int64_t, const T*, T*);             \
  template bool CudnnOps::Pool2DGrad<T>(const PoolGeometry&, bool, int64_t, const T*, const T*,    \
                                        const T*, T*);                                             \
  template bool CudnnOps::Activation<T>(ActivationKind, int64_t, const T*, T*);                    \
  template bool CudnnOps::ActivationGrad<T>(ActivationKind, int64_t, const T*, const T*, const T*, \
                                            T*);                                                   \
  template bool CudnnOps::BatchNorm<T>(const BatchNormParams&, const T*, const T*, const T*, T*,   \
                                       T*, double*, T*);                                           \
  template void CudnnOps::BatchNormGrad<T>(const BatchNormParams&, const T*, const T*, const T*,   \
                                           const double*, T*, T*, T*);
SF_INSTANTIATE(float)
SF_INSTANTIATE(double)
#undef SF_INSTANTIATE

}  // namespace shardflow::cuda
