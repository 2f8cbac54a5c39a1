#include "core/backend/host_twin.hpp"

#include <cstring>

#include "core/backend/kernel_backend.hpp"

namespace shardflow {

template <typename T>
Backend<T>& HostTwinBackend() {
  static HostExec exec;
  static KernelBackend<T, HostExec> backend(exec);
  return backend;
}

template Backend<float>& HostTwinBackend<float>();
template Backend<double>& HostTwinBackend<double>();

namespace {

class HostMemory final : public DeviceMemory {
 public:
  void* Allocate(size_t bytes) override { return exec_.Allocate(bytes); }
  void Free(void* p) override { exec_.Release(p); }
  void Zero(void* p, size_t bytes) override { std::memset(p, 0, bytes); }
  void CopyToDevice(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void CopyToHost(void* dst, const void* src, size_t bytes) override {
    exec_.CopyToHost(dst, src, bytes);
  }
  void CopyOnDevice(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }

 private:
  HostExec exec_;
};

}  // namespace

SimulatedCudaDevice::SimulatedCudaDevice() {
  static HostMemory memory;
  RegisterDeviceMemory(Device::kCuda, &memory);
  RegisterBackend<float>(Device::kCuda, &HostTwinBackend<float>());
  RegisterBackend<double>(Device::kCuda, &HostTwinBackend<double>());
}

SimulatedCudaDevice::~SimulatedCudaDevice() {
  RegisterBackend<float>(Device::kCuda, nullptr);
  RegisterBackend<double>(Device::kCuda, nullptr);
  RegisterDeviceMemory(Device::kCuda, nullptr);
}

}  // namespace shardflow
