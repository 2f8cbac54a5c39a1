#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/cuda/check_cuda.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/error.hpp"

namespace shardflow::cuda {
namespace {

// x is (n), y is (n): y[i] = a * x[i] + y[i].
__global__ void SaxpyKernel(int n, float a, const float* x, float* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

}  // namespace

CudaInfo QueryCudaInfo() {
  CudaInfo info;
  cudaRuntimeGetVersion(&info.runtime_version);
  if (cudaDriverGetVersion(&info.driver_version) != cudaSuccess) info.driver_version = 0;
  int major = 0, minor = 0, patch = 0;
  cublasGetProperty(MAJOR_VERSION, &major);
  cublasGetProperty(MINOR_VERSION, &minor);
  cublasGetProperty(PATCH_LEVEL, &patch);
  info.cublas_version = major * 10000 + minor * 100 + patch;
  info.cudnn_version = static_cast<int>(cudnnGetVersion());
  ncclGetVersion(&info.nccl_version);
  const cudaError_t rc = cudaGetDeviceCount(&info.device_count);
  if (rc != cudaSuccess) {
    info.device_count = 0;
    info.device_error = cudaGetErrorString(rc);
    cudaGetLastError();  // clear the sticky error so later calls start clean
  } else if (info.device_count == 0) {
    info.device_error = "no CUDA device";
  }
  return info;
}

void RunSaxpySelfTest(int n) {
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 1.0f;
  }
  float* dx = nullptr;
  float* dy = nullptr;
  const size_t bytes = sizeof(float) * static_cast<size_t>(n);
  SF_CHECK_CUDA(cudaMalloc(&dx, bytes));
  SF_CHECK_CUDA(cudaMalloc(&dy, bytes));
  SF_CHECK_CUDA(cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice));
  SF_CHECK_CUDA(cudaMemcpy(dy, y.data(), bytes, cudaMemcpyHostToDevice));
  SaxpyKernel<<<(n + 255) / 256, 256>>>(n, 2.0f, dx, dy);
  SF_CHECK_CUDA(cudaGetLastError());
  SF_CHECK_CUDA(cudaMemcpy(y.data(), dy, bytes, cudaMemcpyDeviceToHost));
  SF_CHECK_CUDA(cudaFree(dx));
  SF_CHECK_CUDA(cudaFree(dy));
  for (int i = 0; i < n; ++i) {
    if (std::fabs(y[i] - (2.0f * static_cast<float>(i) + 1.0f)) > 1e-3f) {
      throw Error(ErrorCode::kInternal, "saxpy self-test: wrong value at index " +
                                            std::to_string(i) + ": " + std::to_string(y[i]));
    }
  }
}

}  // namespace shardflow::cuda
