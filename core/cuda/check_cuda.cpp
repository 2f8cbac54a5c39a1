#include "core/cuda/check_cuda.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <string>

#include "core/error.hpp"
#include "core/mpi_env.hpp"

namespace shardflow::cuda::internal {

void ThrowCudaError(const char* library, const char* text, const char* call, const char* file,
                    int line) {
  ErrorContext ctx;
  if (WorldRank() >= 0) ctx.rank = WorldRank();
  throw Error(ErrorCode::kInternal,
              std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                  library + ": " + text,
              std::move(ctx));
}

const char* CudaErrorText(int rc) { return cudaGetErrorString(static_cast<cudaError_t>(rc)); }
const char* CublasErrorText(int rc) {
  return cublasGetStatusString(static_cast<cublasStatus_t>(rc));
}
const char* CudnnErrorText(int rc) { return cudnnGetErrorString(static_cast<cudnnStatus_t>(rc)); }
const char* NcclErrorText(int rc) { return ncclGetErrorString(static_cast<ncclResult_t>(rc)); }

}  // namespace shardflow::cuda::internal
