// DeviceStaging: how input batches reach a device ahead of the compute that reads them
// (apps/train/device_input.hpp): pinned (page-locked) host buffers, and copies on a stream of
// their own that overlap the device's compute, ordered against it by slot.
//
// A slot is one of a few buffer sets the consumer rotates through (double buffering: 2). For a
// slot, the consumer: waits until the slot's earlier copies have read their host sources
// (WaitCopied) before rewriting them; queues copies into the slot's device buffers (Copy: they
// start once the compute that last read those buffers is done, Release); makes the compute it
// issues next wait for them (Acquire: device-side, the host does not wait); and after issuing
// the step's work, Releases the slot. Device-measured times (TakeTimes) say how long compute
// waited for copies and how long it was active.
//
// A device's staging is part of its runtime (DeviceRuntime::staging, core/backend/
// device_runtime.hpp): the CUDA backend's is core/cuda/cuda_staging.cu (cudaHostAlloc, a copy
// stream, events). A device without one gets the synchronous default: plain host memory, each
// copy done at once through the device's DeviceMemory (the simulated device), nothing timed.
// Thread-safety: one consumer thread per device.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tensor.hpp"

namespace shardflow {

struct StagingTimes {
  bool measured = false;        // false: the device cannot time its streams (the default)
  double compute_stall_s = 0;   // compute waited for input copies
  double compute_active_s = 0;  // from a step's input being ready to its last work's end
  int64_t steps = 0;            // steps measured
};

class DeviceStaging {
 public:
  static constexpr int kMaxSlots = 4;
  virtual ~DeviceStaging() = default;
  virtual void* AllocatePinned(size_t bytes) = 0;  // throws Error on failure
  virtual void FreePinned(void* p) noexcept = 0;
  // REQUIRES: 0 <= slot < kMaxSlots; src stays unchanged until WaitCopied(slot) returns.
  virtual void Copy(int slot, void* dst, const void* src, size_t bytes) = 0;
  virtual void Acquire(int slot) = 0;
  virtual void Release(int slot) = 0;
  virtual void WaitCopied(int slot) = 0;
  // What was measured since the last call (steps whose work has finished).
  virtual StagingTimes TakeTimes() = 0;
};

// The staging of `device`'s runtime, or the synchronous default over DeviceMemoryFor(device).
// Throws Error(kInternal) for a device with host memory (the CPU: nothing to stage).
DeviceStaging& DeviceStagingFor(Device device);

}  // namespace shardflow
