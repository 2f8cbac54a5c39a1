// ProbeDevices and SelectDevice (apps/common/device_choice.hpp): the one file of the apps that
// calls into CUDA, compiled with SHARDFLOW_DEVICE_PROBE_CUDA=1 when the build has the CUDA
// backend (apps/common/CMakeLists.txt). Its library links the shared CUDA runtime alone, never
// the driver stub, so the programs start on a machine without a GPU. Not core/cuda's
// QueryCudaInfo: that also asks cuBLAS, cuDNN and NCCL for their versions, and linking those
// into every program raised the peak memory of `shardflow-train --help` from 28 to 241 MB.
#include <cstdlib>
#include <string>

#include "apps/common/device_choice.hpp"
#include "core/environment.hpp"
#include "core/logging.hpp"

#ifdef SHARDFLOW_DEVICE_PROBE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace shardflow::apps {

DeviceProbe ProbeDevices() {
  DeviceProbe probe;
  if (env::Flag("SHARDFLOW_SIMULATE_CUDA")) {
    return {.device_count = 1, .cuda_visible_devices = "(simulated)", .simulated = true};
  }
  probe.cuda_visible_devices = VisibleDevicesText(std::getenv("CUDA_VISIBLE_DEVICES"));
#ifdef SHARDFLOW_DEVICE_PROBE_CUDA
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    probe.error = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(rc);
    cudaGetLastError();  // clear the sticky error, as core/cuda's QueryCudaInfo does
    count = 0;
  } else if (count == 0) {
    probe.error = "cudaGetDeviceCount: no CUDA device";
  }
  probe.device_count = count;
#else
  probe.error = "this build has no CUDA backend (built with SHARDFLOW_CUDA=OFF or without nvcc)";
#endif
  return probe;
}

DeviceChoice SelectDevice(DeviceRequest request) {
  if (request.host.empty()) request.host = HostName();
  const DeviceChoice choice =
      ChooseDevice(request, request.device == "cpu" ? DeviceProbe{} : ProbeDevices());
  if (choice.warn) {
    SF_LOG0(Warn) << choice.note;
  } else {
    SF_LOG0(Info) << choice.note;
  }
  return choice;
}

}  // namespace shardflow::apps
