// The CUDA backend's input staging (core/device_staging.hpp), in cuda_staging.cu.
#pragma once

namespace shardflow::cuda {

// Registers it for Device::kCuda on the installed backend's device (InstallCudaBackend calls
// it). REQUIRES: the backend is installed.
void InstallCudaStaging();

}  // namespace shardflow::cuda
