#include "core/host_staging.hpp"

#include "core/backend/device_runtime.hpp"

namespace shardflow {

HostStaging::HostStaging(Device device)
    : device_(device), pass_through_(DeviceSupports(device, DeviceFeature::kHostMemory)) {}

float* HostStaging::Buffer(float* host, size_t n) {
  if (host != nullptr) return host;
  if (buffer_.size() < n || buffer_.empty()) buffer_.resize(n > 0 ? n : 1);  // never null
  return buffer_.data();
}

float* HostStaging::ToHost(float* range, size_t n, float* host) {
  if (pass_through()) return range;
  float* out = Buffer(host, n);
  if (n > 0) DeviceMemoryFor(device_).CopyToHost(out, range, n * sizeof(float));
  return out;
}

const float* HostStaging::ToHost(const float* range, size_t n, float* host) {
  if (pass_through()) return range;
  float* out = Buffer(host, n);
  if (n > 0) DeviceMemoryFor(device_).CopyToHost(out, range, n * sizeof(float));
  return out;
}

float* HostStaging::HostSpace(float* range, size_t n, float* host) {
  return pass_through() ? range : Buffer(host, n);
}

void HostStaging::ToDevice(float* range, const float* host, size_t n) {
  if (pass_through() || n == 0) return;
  DeviceMemoryFor(device_).CopyToDevice(range, host, n * sizeof(float));
}

}  // namespace shardflow
