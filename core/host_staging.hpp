// HostStaging: the one way values on a device reach host code and come back. Where a strategy
// or a stage hands data to comm/ (which works on host memory: MPI need not be CUDA-aware) it asks
// for a host view of a device range, and writes the host range back when the reduction or the
// receive has changed it. On a device whose tensors are host memory (the CPU:
// DeviceFeature::kHostMemory) every call passes through: the host view is the range itself and
// nothing is copied. Elsewhere values are copied through the device's DeviceMemory into host
// memory (the caller's, when it gives a host range, such as a shared-memory window; else this
// object's own buffer) and back.
//
//   HostStaging staging(arena.device());
//   float* host = staging.ToHost(arena.device_grads(), n);  // the range itself on the CPU
//   comm::Allreduce(comm, host, n, average);
//   staging.ToDevice(arena.device_grads(), host, n);       // nothing on the CPU
//
// Counts of zero copy nothing. Pointers are element pointers: `range` on the device, `host` in
// host memory, each holding n values.
// Thread-safety: one thread per instance (its buffer); instances are independent.
#pragma once

#include <cstddef>
#include <vector>

#include "core/tensor.hpp"

namespace shardflow {

class HostStaging {
 public:
  // Copies go through the memory of `device`'s runtime as registered when they run (a copy on a
  // device without a runtime throws Error(kInternal) naming it).
  explicit HostStaging(Device device = Device::kCpu);

  // True when host views are the device ranges themselves (nothing is ever copied): the device's
  // tensors are host memory (DeviceFeature::kHostMemory).
  bool pass_through() const { return pass_through_; }

  // A host view of the n values at `range`: `range` itself when pass_through(); else `host`
  // (or, when null, this object's buffer, valid until its next use) holding a copy of them.
  float* ToHost(float* range, size_t n, float* host = nullptr);
  const float* ToHost(const float* range, size_t n, float* host = nullptr);
  // Where host code writes n values meant for `range` (ToDevice puts them there): `range` itself
  // when pass_through(); else `host` or this object's buffer, nothing copied into it (the
  // buffer, when it grows, grows with zeros).
  float* HostSpace(float* range, size_t n, float* host = nullptr);
  // Copies the n host values at `host` into `range`; nothing when pass_through() (they are there).
  void ToDevice(float* range, const float* host, size_t n);

 private:
  float* Buffer(float* host, size_t n);

  Device device_;
  bool pass_through_;
  std::vector<float> buffer_;  // the host copy when the caller gives no host range
};

}  // namespace shardflow
