// What of the CUDA backend runs on a machine without a GPU: the libraries load and report their
// versions, and asking for a device that is not there is an error that names it.
#include <gtest/gtest.h>

#include <string>

#include "core/cuda/cuda_backend.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/error.hpp"

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

TEST(CudaBackendTest, InstallingOnADeviceThatIsNotThereNamesIt) {
  const CudaInfo info = QueryCudaInfo();
  const int missing = info.device_count;  // one past the last visible device
  try {
    InstallCudaBackend(missing);
    FAIL() << "installed the CUDA backend on device " << missing;
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cannot use CUDA device " + std::to_string(missing)), std::string::npos)
        << what;
  }
  // Nothing was registered: a CUDA tensor still has no backend.
  EXPECT_THROW(BackendFor<float>(Device::kCuda), Error);
  EXPECT_THROW(DeviceAllocate(16), Error);
}

}  // namespace
}  // namespace shardflow::cuda
