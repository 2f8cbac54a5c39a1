// The CUDA backend's one cuDNN handle, on its executor's stream, shared by the convolutions
// (cudnn_conv.hpp) and the pooling, activations and batch norm (cudnn_ops.hpp). Created on first
// use, so a run that never calls cuDNN never pays for cudnnCreate.
// Thread-safety: as the executor's (one call at a time).
#pragma once

#include <cudnn.h>

#include "core/cuda/check_cuda.hpp"
#include "core/cuda/device_exec.cuh"

namespace shardflow::cuda {

class CudnnHandle {
 public:
  explicit CudnnHandle(DeviceExec& exec) : exec_(exec) {}
  ~CudnnHandle() {
    if (handle_ != nullptr) cudnnDestroy(handle_);
  }
  CudnnHandle(const CudnnHandle&) = delete;
  CudnnHandle& operator=(const CudnnHandle&) = delete;

  cudnnHandle_t get() {
    if (handle_ == nullptr) {
      SF_CHECK_CUDNN(cudnnCreate(&handle_));
      SF_CHECK_CUDNN(cudnnSetStream(handle_, exec_.stream()));
    }
    return handle_;
  }

 private:
  DeviceExec& exec_;
  cudnnHandle_t handle_ = nullptr;
};

}  // namespace shardflow::cuda
