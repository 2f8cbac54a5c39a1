// The LSTM layer through cuDNN's RNN API for the CUDA backend (Backend::LstmForward /
// LstmBackward; core/cuda/cuda_backend.cu calls these).
//
// One call runs the whole layer over its sequences (cudnnRNNForward; backward:
// cudnnRNNBackwardData_v8 then cudnnRNNBackwardWeights_v8): one unidirectional layer, no
// projection, the input bias only (CUDNN_RNN_SINGLE_INP_BIAS: our single bias), zero initial
// state, batch-major sequences all of the layer's length (B, T, F). cuDNN's gate order is ours
// (input, forget, cell, output). Its weight space is packed from our kernel (F, 4H), recurrent
// kernel (H, 4H) and bias by kernels::PackLstmWeightsK at every forward pass (the optimizer moved
// them), at the places cudnnGetRNNWeightParams names, whose matrix sizes are checked; the
// backward pass's weight gradient is added back by kernels::UnpackLstmGradsK. Both mappings are
// index kernels tested against cuDNN's documented formulas on every machine
// (tests/core/lstm_weights_test.cpp); the calls themselves only run on a GPU
// (tests/cuda/cudnn_ops_gpu_test.cpp).
// What the backward pass needs (the packed weights, the math type, cuDNN's reserve space) stays
// with the pass (Backend::LstmSaved) and is read by one backward pass; after an inference
// forward pass the backward pass first runs the pass again in training mode for the reserve.
// float runs FMA math unless TF32 is on, as the GEMMs. The sequences are unpacked (batch-major),
// so padded I/O is enabled; one layer applies no dropout, but the descriptor gets a zero-rate
// one, as PyTorch's does.
// Taken when SHARDFLOW_CUDNN allows it (cudnn_ops.hpp) and every size is within cuDNN's int
// range; otherwise, or when cuDNN refuses the shape (counted in CudnnRefusals), the layer runs
// cuBLAS GEMMs and our cell kernel step by step.
// Thread-safety: as the executor's (one call at a time; all work is ordered on its stream).
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "core/backend/backend.hpp"

namespace shardflow::cuda {

class CudnnHandle;
class DeviceExec;

bool CudnnTakesLstm(const LstmShape& s);

// Builds cuDNN's RNN and sequence descriptors for a shape (float or double) and reads back what
// cuDNN made of them: {input size, hidden size, batch, max sequence length}. Needs the library,
// not a GPU; throws Error(kInternal) with cuDNN's message.
std::array<int, 4> CudnnLstmDescriptorSizes(const LstmShape& s, bool is_double);

class CudnnRnn {
 public:
  CudnnRnn(DeviceExec& exec, CudnnHandle& handle);
  ~CudnnRnn();
  CudnnRnn(const CudnnRnn&) = delete;
  CudnnRnn& operator=(const CudnnRnn&) = delete;

  void SetTf32(bool on);
  // As Backend::LstmForward / LstmBackward; REQUIRES CudnnTakesLstm(s).
  template <typename T>
  std::unique_ptr<LstmSaved> Forward(const LstmShape& s, bool training, const T* x, const T* kernel,
                                     const T* recurrent, const T* bias, T* hs);
  template <typename T>
  void Backward(const LstmShape& s, const T* x, const T* hs, const T* dhs, const T* dlast,
                LstmSaved& saved, T* dkernel, T* drecurrent, T* dbias, T* dx);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardflow::cuda
