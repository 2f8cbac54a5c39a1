#include "core/backend/device_runtime.hpp"

#include <array>
#include <atomic>
#include <string>
#include <vector>

#include "core/cpu/cpu_backend.hpp"
#include "core/error.hpp"
#include "core/thread_annotations.hpp"

namespace shardflow {
namespace {

// The registry. Lookups are on every kernel call (BackendFor), so they take no lock: each
// device's slot is an atomic pointer to an immutable runtime, published with release and read
// with acquire. Writers serialise on `mu`, and every runtime ever registered stays in `kept`
// (a few per process), so a reader holding an old one never sees it freed.
struct Registry {
  Registry() {
    MutexLock lock(mu);
    Publish(cpu::CpuRuntime());
  }
  void Publish(const DeviceRuntime& runtime) REQUIRES(mu) {
    kept.push_back(std::make_unique<const DeviceRuntime>(runtime));
    current[static_cast<size_t>(runtime.device)].store(kept.back().get(),
                                                       std::memory_order_release);
  }

  Mutex mu;
  std::vector<std::unique_ptr<const DeviceRuntime>> kept GUARDED_BY(mu);
  std::array<std::atomic<const DeviceRuntime*>, kDevices> current{};
};

Registry& TheRegistry() {
  static Registry registry;
  return registry;
}

void CheckIndex(Device device, const char* what) {
  if (static_cast<size_t>(device) >= kDevices) {
    throw Error(ErrorCode::kInternal, std::string("cannot ") + what + " a runtime for device " +
                                          std::to_string(static_cast<int>(device)));
  }
}

[[noreturn]] void ThrowIncomplete(const DeviceRuntime& r, const char* missing) {
  throw Error(ErrorCode::kInternal,
              std::string("the runtime of device ") + DeviceName(r.device) + " has no " + missing);
}

template <typename T>
Backend<T>* Pick(const DeviceRuntime& r);
template <>
Backend<float>* Pick<float>(const DeviceRuntime& r) {
  return r.f32;
}
template <>
Backend<double>* Pick<double>(const DeviceRuntime& r) {
  return r.f64;
}

}  // namespace

void RegisterDeviceRuntime(const DeviceRuntime& runtime) {
  CheckIndex(runtime.device, "register");
  if (runtime.f32 == nullptr || runtime.f64 == nullptr) ThrowIncomplete(runtime, "backend");
  if (runtime.memory == nullptr && !runtime.Supports(DeviceFeature::kHostMemory)) {
    ThrowIncomplete(runtime, "memory");
  }
  Registry& r = TheRegistry();
  MutexLock lock(r.mu);
  r.Publish(runtime);
}

void UnregisterDeviceRuntime(Device device) {
  CheckIndex(device, "unregister");
  if (device == Device::kCpu) {
    throw Error(ErrorCode::kInternal, "the CPU's runtime cannot be removed (register it again)");
  }
  Registry& r = TheRegistry();
  MutexLock lock(r.mu);
  r.current[static_cast<size_t>(device)].store(nullptr, std::memory_order_release);
}

const DeviceRuntime* FindDeviceRuntime(Device device) {
  const auto i = static_cast<size_t>(device);
  return i < kDevices ? TheRegistry().current[i].load(std::memory_order_acquire) : nullptr;
}

const DeviceRuntime& DeviceRuntimeFor(Device device) {
  const DeviceRuntime* r = FindDeviceRuntime(device);
  if (r == nullptr) {
    throw Error(ErrorCode::kInternal,
                std::string("no runtime for device ") + DeviceName(device) + " in this build");
  }
  return *r;
}

bool DeviceSupports(Device device, DeviceFeature feature) {
  const DeviceRuntime* r = FindDeviceRuntime(device);
  return r != nullptr && r->Supports(feature);
}

template <typename T>
Backend<T>& BackendFor(Device device) {
  const DeviceRuntime* r = FindDeviceRuntime(device);
  Backend<T>* b = r != nullptr ? Pick<T>(*r) : nullptr;
  if (b == nullptr) {
    throw Error(ErrorCode::kInternal, std::string("no compute backend for device ") +
                                          DeviceName(device) + " in this build");
  }
  return *b;
}

template Backend<float>& BackendFor<float>(Device);
template Backend<double>& BackendFor<double>(Device);

DeviceMemory& DeviceMemoryFor(Device device) {
  const DeviceRuntime* r = FindDeviceRuntime(device);
  if (r == nullptr || r->memory == nullptr) {
    throw Error(ErrorCode::kInternal,
                std::string("no memory for device ") + DeviceName(device) + " in this process");
  }
  return *r->memory;
}

}  // namespace shardflow
