// What the CUDA toolchain and the machine provide. Every function works on a machine without a
// GPU or driver: device_count is 0 and device_error says why.
#pragma once

#include <string>

namespace shardflow::cuda {

struct CudaInfo {
  int runtime_version = 0;  // e.g. 13000 for CUDA 13.0
  int driver_version = 0;   // 0 when no driver is installed
  int cublas_version = 0;   // major*10000 + minor*100 + patch
  int cudnn_version = 0;    // cudnnGetVersion()
  int nccl_version = 0;     // ncclGetVersion()
  int device_count = 0;
  std::string device_error;  // why device_count is 0, if it is
};

CudaInfo QueryCudaInfo();

// Runs y = a*x + y for n elements on device 0 and checks the result on the host.
// REQUIRES: QueryCudaInfo().device_count > 0. Throws Error on any failure.
void RunSaxpySelfTest(int n);

}  // namespace shardflow::cuda
