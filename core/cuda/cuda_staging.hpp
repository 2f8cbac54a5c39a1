// The CUDA backend's input staging (core/device_staging.hpp), in cuda_staging.cu.
#pragma once

#include "core/device_staging.hpp"

namespace shardflow::cuda {

class DeviceExec;

// The staging of the GPU that `exec` runs on (pinned buffers, a copy stream, events), made once
// and kept until exit; InstallCudaBackend puts it into the device's runtime.
DeviceStaging& CudaInputStaging(DeviceExec& exec);

}  // namespace shardflow::cuda
