#include "core/device_staging.hpp"

#include <array>
#include <cstdlib>
#include <new>

#include "core/error.hpp"

namespace shardflow {
namespace {

// Plain host memory and copies done at once: nothing to order, nothing to time.
class SynchronousStaging final : public DeviceStaging {
 public:
  explicit SynchronousStaging(Device device) : device_(device) {}
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
  Device device_;
};

constexpr size_t kDevices = static_cast<size_t>(Device::kCuda) + 1;
std::array<DeviceStaging*, kDevices> registered{};

}  // namespace

void RegisterDeviceStaging(Device device, DeviceStaging* staging) {
  if (device == Device::kCpu) throw Error(ErrorCode::kInternal, "the CPU has no input staging");
  registered[static_cast<size_t>(device)] = staging;
}

DeviceStaging& DeviceStagingFor(Device device) {
  if (device == Device::kCpu) throw Error(ErrorCode::kInternal, "the CPU has no input staging");
  if (DeviceStaging* s = registered[static_cast<size_t>(device)]; s != nullptr) return *s;
  static SynchronousStaging cuda_default(Device::kCuda);
  return cuda_default;
}

}  // namespace shardflow
