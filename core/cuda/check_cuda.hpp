// Check macros for the CUDA runtime, cuBLAS, cuDNN and NCCL: each throws
// Error(kInternal) naming the call, the source line, the rank and the library's error text.
#pragma once

namespace shardflow::cuda::internal {
[[noreturn]] void ThrowCudaError(const char* library, const char* text, const char* call,
                                 const char* file, int line);
const char* CudaErrorText(int rc);
const char* CublasErrorText(int rc);
const char* CudnnErrorText(int rc);
const char* NcclErrorText(int rc);
}  // namespace shardflow::cuda::internal

#define SF_CUDA_CHECK_IMPL_(library, text_fn, call)                                               \
  do {                                                                                            \
    const int sf_cuda_rc_ = static_cast<int>(call);                                               \
    if (sf_cuda_rc_ != 0) {                                                                       \
      ::shardflow::cuda::internal::ThrowCudaError(                                                \
          library, ::shardflow::cuda::internal::text_fn(sf_cuda_rc_), #call, __FILE__, __LINE__); \
    }                                                                                             \
  } while (0)

#define SF_CHECK_CUDA(call) SF_CUDA_CHECK_IMPL_("CUDA", CudaErrorText, call)
#define SF_CHECK_CUBLAS(call) SF_CUDA_CHECK_IMPL_("cuBLAS", CublasErrorText, call)
#define SF_CHECK_CUDNN(call) SF_CUDA_CHECK_IMPL_("cuDNN", CudnnErrorText, call)
#define SF_CHECK_NCCL(call) SF_CUDA_CHECK_IMPL_("NCCL", NcclErrorText, call)
