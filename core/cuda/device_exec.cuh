// DeviceExec: the executor that runs KernelBackend (core/backend/kernel_backend.hpp) on a GPU.
// This file and cuda_backend.cu are the only GPU-only code of the backend: a grid-stride launch
// of an index kernel, the cuBLAS GEMM, and stream-ordered scratch memory. Everything a kernel
// computes is in core/backend/kernels, which the host twin runs on every CI machine.
//
// One stream per executor: kernels, copies and scratch allocations are ordered on it, so a
// caller sees results after CopyToHost (which synchronises) or Synchronize(). Scratch comes from
// the device's stream-ordered memory pool (cudaMallocAsync), which CUDA keeps cached between
// steps once the pool's release threshold is raised (done in the constructor).
// Thread-safety: one thread at a time per executor, and that thread's current device must be
// the executor's (cudaSetDevice is per thread; the constructor sets it for the thread that
// installs the backend, which is the thread the programs run every kernel call on).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/backend/backend.hpp"
#include "core/cuda/check_cuda.hpp"

namespace shardflow::cuda {

// k(i) for i in [0, n), grid-stride.
template <typename K>
__global__ void RunIndexKernel(int64_t n, K k) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    k(i);
  }
}

class DeviceExec {
 public:
  // Creates a stream and a cuBLAS handle on device `ordinal` (made current).
  explicit DeviceExec(int ordinal);
  ~DeviceExec();
  DeviceExec(const DeviceExec&) = delete;
  DeviceExec& operator=(const DeviceExec&) = delete;

  template <typename K>
  void Run(int64_t n, const K& k) {
    if (n <= 0) return;
    constexpr int kThreads = 256;
    const int64_t want = (n + kThreads - 1) / kThreads;
    const unsigned blocks = static_cast<unsigned>(want < max_blocks_ ? want : max_blocks_);
    RunIndexKernel<<<blocks, kThreads, 0, stream_>>>(n, k);
    SF_CHECK_CUDA(cudaGetLastError());
  }

  // Row-major C = alpha op(A) op(B) + beta C through column-major cuBLAS: C^T = op(B)^T op(A)^T.
  void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
            const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
            int64_t ldc);
  void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
            const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
            int64_t ldc);

  void* Allocate(size_t bytes);
  void Release(void* p) noexcept;
  void CopyToHost(void* dst, const void* src, size_t bytes);
  void CopyToDevice(void* dst, const void* src, size_t bytes);  // synchronous
  void Synchronize();
  Device device() const { return Device::kCuda; }
  int ordinal() const { return ordinal_; }
  cudaStream_t stream() const { return stream_; }
  // TF32 tensor cores for float GEMMs (off by default, so results track the CPU).
  void SetTf32(bool on);
  // The most device memory the pool has handed out at once (cudaMemPoolAttrUsedMemHigh).
  size_t PeakPoolBytes() const;

 private:
  int ordinal_;
  int64_t max_blocks_ = 65535;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudaMemPool_t pool_ = nullptr;
};

// The executor of the installed CUDA backend (cuda_backend.hpp's InstallCudaBackend). Throws
// Error(kInternal) when none is installed.
DeviceExec& InstalledExec();

}  // namespace shardflow::cuda
