// DeviceRuntime: what a device is, registered once (docs/design.md decision 65). A device is a
// small table, as a ggml backend is: its name, its compute backends (float and double), the
// memory its tensors live in, how input batches reach it (staging), its collectives (the
// device all-reduce), and what it offers beyond the ops every backend has (features). The CPU's
// runtime is there from the start; another device's library builds its runtime, the program
// adds what only the program can know (the collectives, which live in comm/), and
// RegisterDeviceRuntime installs the whole at start-up. Every lookup (BackendFor,
// DeviceMemoryFor, DeviceStagingFor, comm::DeviceAllreduceFor, DeviceSupports) reads the one
// registry, so a device cannot be half installed.
//
// Callers ask a runtime what it can do (DeviceSupports) instead of comparing Device values;
// values crossing to host code (comm/, MPI) go through core/host_staging.hpp.
// Thread-safety: registration and lookup may run on any threads. A lookup sees a runtime whole,
// the old one or the new one; a replaced runtime is kept until exit, so references taken
// from it stay valid. What a runtime points to (backends, memory, staging) must outlive every
// use, device tensors included.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/backend/backend.hpp"
#include "core/device_staging.hpp"
#include "core/tensor.hpp"

namespace shardflow {

// What a device offers beyond the ops of Backend<T>, which every device has.
enum class DeviceFeature : uint32_t {
  // Its tensors are host memory that host code reads through Tensor::data<T>() (the CPU): host
  // loops and host-only layers (embedding lookups) run on it, a caller's host buffer may back its
  // arena, and values handed to comm/ need no staging (HostStaging passes them through).
  kHostMemory = 1u << 0,
};

// A device's collectives, opaque to core: core never includes comm/ (the dependency runs
// comm -> core), so a runtime carries them as this base class, and comm/device_allreduce.hpp
// defines the one kind there is (comm::DeviceAllreduceMaker: the device all-reduce) and reads it
// back (comm::DeviceAllreduceFor).
class DeviceCollectives {
 public:
  virtual ~DeviceCollectives() = default;
};

struct DeviceRuntime {
  Device device = Device::kCpu;
  // What logs call it: "cpu", "cuda", "cuda (simulated: the host twin)".
  std::string name;
  // The compute backends. Both are required.
  Backend<float>* f32 = nullptr;
  Backend<double>* f64 = nullptr;
  // Allocation and copies of its tensors. Required unless it has kHostMemory (the CPU's tensors
  // allocate themselves, core/tensor.cpp).
  DeviceMemory* memory = nullptr;
  // How input batches reach it ahead of its compute; null: the synchronous default over
  // `memory` (core/device_staging.hpp). Unused with kHostMemory (nothing to stage).
  DeviceStaging* staging = nullptr;
  // Its collectives; null: values it reduces go through host memory (HostStaging).
  std::shared_ptr<const DeviceCollectives> collectives;
  uint32_t features = 0;  // DeviceFeature bits

  bool Supports(DeviceFeature f) const { return (features & static_cast<uint32_t>(f)) != 0; }
};

// Installs `runtime` for runtime.device, replacing the one there (a test may replace the CPU's
// and put CpuRuntime() back). Throws Error(kInternal) naming the device when a backend is
// missing, or the memory of a device without kHostMemory.
void RegisterDeviceRuntime(const DeviceRuntime& runtime);
// Removes the runtime of `device` (a device that goes away: a test's). The CPU's cannot be
// removed: throws Error(kInternal).
void UnregisterDeviceRuntime(Device device);
// The registered runtime; null when `device` has none.
const DeviceRuntime* FindDeviceRuntime(Device device);
// The registered runtime; throws Error(kInternal) naming the device when it has none ("in this
// build": a CUDA tensor in a CPU-only program).
const DeviceRuntime& DeviceRuntimeFor(Device device);
// Whether `device`'s runtime has `feature`; false when it has no runtime.
bool DeviceSupports(Device device, DeviceFeature feature);

}  // namespace shardflow
