#include "core/device_staging.hpp"

#include <array>
#include <cstdlib>
#include <new>
#include <string>

#include "core/backend/device_runtime.hpp"
#include "core/error.hpp"

namespace shardflow {
namespace {

// Plain host memory and copies done at once: nothing to order, nothing to time.
class SynchronousStaging final : public DeviceStaging {
 public:
  void set_device(Device device) { device_ = device; }
  void* AllocatePinned(size_t bytes) override {
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  void FreePinned(void* p) noexcept override { std::free(p); }
  void Copy(int /*slot*/, void* dst, const void* src, size_t bytes) override {
    if (bytes > 0) DeviceMemoryFor(device_).CopyToDevice(dst, src, bytes);
  }
  void Acquire(int /*slot*/) override {}
  void Release(int /*slot*/) override {}
  void WaitCopied(int /*slot*/) override {}
  StagingTimes TakeTimes() override { return {}; }

 private:
  Device device_ = Device::kCpu;
};

}  // namespace

DeviceStaging& DeviceStagingFor(Device device) {
  const DeviceRuntime* runtime = FindDeviceRuntime(device);
  if (runtime != nullptr && runtime->Supports(DeviceFeature::kHostMemory)) {
    throw Error(ErrorCode::kInternal,
                std::string("the ") + DeviceName(device) + " has no input staging");
  }
  if (runtime != nullptr && runtime->staging != nullptr) return *runtime->staging;
  static std::array<SynchronousStaging, kDevices> defaults;
  static const bool named = [] {
    for (size_t i = 0; i < kDevices; ++i) defaults[i].set_device(static_cast<Device>(i));
    return true;
  }();
  (void)named;
  return defaults.at(static_cast<size_t>(device));
}

}  // namespace shardflow
