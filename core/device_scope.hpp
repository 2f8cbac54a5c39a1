// The device that layers allocate their buffers on and initialise parameters on: the current
// device of this thread, CPU unless a DeviceScope says otherwise (as `with tf.device(...)` or
// torch's current device). A model sets it around its own Build, Forward and Backward, so
// layers, whose buffers come from ReuseBuffer (core/layers/layer.hpp), need no device argument.
// Thread-safety: per thread (thread_local); a scope must end on the thread that began it.
#pragma once

#include "core/tensor.hpp"

namespace shardflow {

namespace internal {
inline Device& CurrentDeviceSlot() {
  thread_local Device device = Device::kCpu;
  return device;
}
}  // namespace internal

inline Device CurrentDevice() { return internal::CurrentDeviceSlot(); }

// Makes `device` current for the scope's life and restores the previous one after.
class DeviceScope {
 public:
  explicit DeviceScope(Device device) : saved_(internal::CurrentDeviceSlot()) {
    internal::CurrentDeviceSlot() = device;
  }
  ~DeviceScope() { internal::CurrentDeviceSlot() = saved_; }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  Device saved_;
};

}  // namespace shardflow
