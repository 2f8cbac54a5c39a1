#include "core/backend/host_twin.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <utility>

#include "core/backend/kernel_backend.hpp"
#include "core/thread_annotations.hpp"

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

// Host memory standing in for a device's; it counts the bytes it holds, so the run report's
// device memory can be tested without a GPU (tensors only: the kernels' scratch comes from the
// executor directly).
class HostMemory final : public DeviceMemory {
 public:
  void* Allocate(size_t bytes) override {
    void* p = exec_.Allocate(bytes);
    MutexLock lock(mu_);
    sizes_[p] = bytes;
    held_ += bytes;
    peak_ = std::max(peak_, held_);
    return p;
  }
  void Free(void* p) override {
    {
      MutexLock lock(mu_);
      const auto it = sizes_.find(p);
      if (it != sizes_.end()) {
        held_ -= it->second;
        sizes_.erase(it);
      }
    }
    exec_.Release(p);
  }
  size_t PeakBytes() const override {
    MutexLock lock(mu_);
    return peak_;
  }
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
  mutable Mutex mu_;
  std::unordered_map<void*, size_t> sizes_ GUARDED_BY(mu_);
  size_t held_ GUARDED_BY(mu_) = 0;
  size_t peak_ GUARDED_BY(mu_) = 0;
};

}  // namespace

SimulatedCudaDevice::SimulatedCudaDevice(std::shared_ptr<const DeviceCollectives> collectives) {
  static HostMemory memory;
  RegisterDeviceRuntime({.device = Device::kCuda,
                         .name = "cuda (simulated: the host twin)",
                         .f32 = &HostTwinBackend<float>(),
                         .f64 = &HostTwinBackend<double>(),
                         .memory = &memory,
                         .collectives = std::move(collectives)});
}

SimulatedCudaDevice::~SimulatedCudaDevice() { UnregisterDeviceRuntime(Device::kCuda); }

}  // namespace shardflow
