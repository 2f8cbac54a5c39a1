// Installing the device a program's DeviceChoice named (apps/common/device_choice.hpp), shared by
// shardflow-train, -predict and -serve. Header-only on purpose: the CUDA half compiles only into
// the programs built with SHARDFLOW_APP_CUDA=1 (the *-cuda executables, which link the CUDA
// backend), so the CPU programs never load CUDA's libraries (docs/design.md, decision 48).
// Thread-safety: the main thread, once, in the parse phase.
#pragma once

#include <memory>

#include "apps/common/device_choice.hpp"
#include "core/backend/device_runtime.hpp"
#include "core/backend/host_twin.hpp"
#if defined(SHARDFLOW_APP_CUDA)
#include "core/cuda/cuda_backend.hpp"
#endif

namespace shardflow::apps {

enum class InstalledDevice { kCpu, kSimulated, kGpu };

// What a program adds to the device's runtime beyond what core knows: its collectives
// (comm/device_allreduce.hpp), by the kind of device installed; null: none (prediction and
// serving reduce nothing).
struct DeviceExtras {
  std::shared_ptr<const DeviceCollectives> simulated;  // on the simulated device
  std::shared_ptr<const DeviceCollectives> gpu;        // on a GPU
};

// The CPU: nothing (its runtime is there from the start). The simulated device
// (SHARDFLOW_SIMULATE_CUDA=1): the CUDA backend's host twin, for the process's life. A GPU: the
// CUDA backend on the chosen ordinal, TF32 as asked. Either way one runtime, registered once.
inline InstalledDevice InstallDevice(const DeviceChoice& choice, bool tf32,
                                     const DeviceExtras& extras = {}) {
  if (choice.device == Device::kCpu) return InstalledDevice::kCpu;
  if (ProbeDevices().simulated) {
    static SimulatedCudaDevice simulated(extras.simulated);  // lives until exit, as tensors may
    return InstalledDevice::kSimulated;
  }
#if defined(SHARDFLOW_APP_CUDA)
  cuda::InstallCudaBackend(choice.ordinal, extras.gpu);
  cuda::SetTf32(tf32);
  return InstalledDevice::kGpu;
#else
  (void)tf32;
  // ChooseDevice picks a GPU only for a program with the backend.
  throw Error(ErrorCode::kInternal, "a GPU was chosen for a program without the CUDA backend");
#endif
}

}  // namespace shardflow::apps
