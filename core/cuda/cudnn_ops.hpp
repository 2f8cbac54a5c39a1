// Pooling, activations and batch normalisation through cuDNN for the CUDA backend
// (core/cuda/cuda_backend.cu calls these for Backend::Pool2D / Pool2DGrad, Activation /
// ActivationGrad and BatchNorm / BatchNormGrad; convolutions are core/cuda/cudnn_conv.hpp).
//
// What cuDNN takes (a rule of the shape and settings, never a timing, so every rank and every
// pass of a job computes with the same code; anything else runs on the index kernels of
// core/backend/kernels, which the host twin tests on every machine):
//  - pooling: our windows are valid (no padding), so every PoolGeometry is a cuDNN pooling of
//    the same NHWC tensors, max as CUDNN_POOLING_MAX_DETERMINISTIC (a window's gradient goes to
//    one element, the same every run), average over the K x K window. A ReLU absorbed by the
//    pooling (Backend::Pool2DGrad's relu) is applied to dy by an index kernel first.
//  - activations: ReLU, tanh and sigmoid (cuDNN has no tanh-approximated GELU: ours runs it).
//  - batch normalisation in training on N >= 2 rows (CUDNN_BATCHNORM_SPATIAL over x (N, C) seen
//    as (N, C, 1, 1)): statistics, moving statistics (cuDNN's running variance is the unbiased
//    one, as ours; its factor is 1 - momentum), y, and the backward pass from x and cuDNN's
//    saved mean and inverse standard deviation, which it keeps in Backend::BatchNorm's `saved`
//    buffer (2C values of T: they fit in its 2C doubles). cuDNN computes a float model's
//    statistics in float, where ours are double. Inference is one pointwise pass: the kernels.
// Every tensor must be within cuDNN's int range (elements and each size), else the kernels.
// Switch: SHARDFLOW_CUDNN = on (default) | off | a list such as pool,act,lstm, read on first use,
// or SetCudnnOps: what it leaves out, the LSTM (cudnn_rnn.hpp) included, runs on the index
// kernels (SHARDFLOW_CUDNN_CONV = off does the same for convolutions). Batch norm's forward pass
// tells its backward pass which path wrote the saved statistics (BatchNormParams::saved_form), so a
// switch between the two is harmless. A shape or call cuDNN refuses (NOT_SUPPORTED, BAD_PARAM)
// is logged once and runs on the kernels.
// Nothing here has run on a GPU yet in this project (none was available); what runs without one
// is the choice rules and cuDNN's own descriptors (tests/cuda/cudnn_ops_plan_test.cpp), and the GPU
// suite compares every path with a double reference (tests/cuda/cudnn_ops_gpu_test.cpp).
// Thread-safety: as the executor's (one call at a time; all work is ordered on its stream);
// SetCudnnOps before the first kernel call.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "core/backend/backend.hpp"

namespace shardflow::cuda {

class CudnnHandle;
class DeviceExec;

// What cuDNN may take, as bits of a set.
enum CudnnOp : unsigned {
  kCudnnPool = 1,
  kCudnnActivation = 2,
  kCudnnBatchNorm = 4,
  kCudnnLstm = 8,
  kCudnnAll = 15,
};
// SHARDFLOW_CUDNN's value: "on" / unset -> all, "off" -> none, or a comma list of pool, act, bn
// and lstm (what cuDNN may take; the rest runs on our kernels). Anything else throws
// Error(kInvalidArgument) naming the value.
unsigned ParseCudnnOps(const char* value);
void SetCudnnOps(bool on);  // all or none
void SetCudnnOps(unsigned ops);
bool CudnnOpsOn(CudnnOp op);  // the setting, from the environment on first use
// How many calls cuDNN refused (NOT_SUPPORTED, BAD_PARAM) and our kernels ran instead, since
// start: the GPU tests hold it at 0, so a refused path cannot pass as a tested one.
int64_t CudnnRefusals();
// For a cuDNN status (a cudnnStatus_t): false on success; true when cuDNN refused the call
// (NOT_SUPPORTED, BAD_PARAM), counted in CudnnRefusals and logged once per `what`, so the caller
// runs our kernels; throws Error(kInternal) naming `call` on any other failure.
bool CudnnRefused(int status, const char* what, const char* call);

// Whether cuDNN computes these under the current setting (the rules above).
bool CudnnTakesPool(const PoolGeometry& g, int64_t batch);
bool CudnnTakesActivation(ActivationKind kind, int64_t n);
bool CudnnTakesBatchNorm(const BatchNormParams& p);

// What cuDNN's descriptors make of a pooling (n, c, oh, ow) and of batch norm's per-channel
// tensors (n, c, h, w): needs the library, not a GPU (the tests hold them to ours).
std::array<int, 4> CudnnPoolOutputDims(const PoolGeometry& g, int64_t batch, bool max);
std::array<int, 4> CudnnBatchNormParamDims(const BatchNormParams& p, bool is_double);

class CudnnOps {
 public:
  CudnnOps(DeviceExec& exec, CudnnHandle& handle);
  ~CudnnOps();
  CudnnOps(const CudnnOps&) = delete;
  CudnnOps& operator=(const CudnnOps&) = delete;

  // Each as the Backend op of the same name; REQUIRES the matching CudnnTakes* to be true.
  // false: cuDNN refused the call (counted, logged once per op) and the caller runs the kernels.
  template <typename T>
  bool Pool2D(const PoolGeometry& g, bool max, int64_t batch, const T* x, T* y);
  // dy_pool: the gradient of the pooled output itself (any absorbed ReLU already applied).
  template <typename T>
  bool Pool2DGrad(const PoolGeometry& g, bool max, int64_t batch, const T* x, const T* y,
                  const T* dy_pool, T* dx);
  template <typename T>
  bool Activation(ActivationKind kind, int64_t n, const T* x, T* y);
  template <typename T>
  bool ActivationGrad(ActivationKind kind, int64_t n, const T* x, const T* y, const T* dy, T* dx);
  template <typename T>
  bool BatchNorm(const BatchNormParams& p, const T* x, const T* gamma, const T* beta,
                 T* moving_mean, T* moving_var, double* saved, T* y);
  // Only after a BatchNorm that returned true (its saved statistics); a refusal here throws.
  template <typename T>
  void BatchNormGrad(const BatchNormParams& p, const T* dy, const T* x, const T* gamma,
                     const double* saved, T* dgamma, T* dbeta, T* dx);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardflow::cuda
