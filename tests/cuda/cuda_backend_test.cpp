#include <gtest/gtest.h>

#include "core/cuda/cuda_info.hpp"

namespace shardflow::cuda {
namespace {

TEST(CudaBackendTest, LibrariesReportVersionsWithoutAGpu) {
  const CudaInfo info = QueryCudaInfo();
  EXPECT_GT(info.runtime_version, 0);
  EXPECT_GT(info.cublas_version, 0);
  EXPECT_GT(info.cudnn_version, 0);
  EXPECT_GT(info.nccl_version, 0);
  if (info.device_count == 0) {
    EXPECT_FALSE(info.device_error.empty());
  }
}

TEST(CudaBackendTest, SaxpyOnDevice) {
  const CudaInfo info = QueryCudaInfo();
  if (info.device_count == 0) {
    GTEST_SKIP() << "no usable CUDA device (" << info.device_error << "); skipping device test";
  }
  RunSaxpySelfTest(1 << 20);
}

}  // namespace
}  // namespace shardflow::cuda
