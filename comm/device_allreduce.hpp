// DeviceAllreduce: the all-reduce of gradients that live on a device, bucket by bucket, where
// they are (NCCL on a GPU), instead of staging them through host memory.
//
// The data-parallel strategy starts each gradient bucket as backprop finishes it (Start, which
// returns at once on a GPU: the reduction is queued on a communication stream after the kernels
// already issued) and calls Finish before the optimizer update. Every rank starts the same
// buckets in the same order.
//
// An implementation is part of its device's runtime (core/backend/device_runtime.hpp): core
// never includes comm/, so the runtime carries it opaquely as DeviceCollectives, and the program
// that registers the runtime puts a DeviceAllreduceMaker there (MakeDeviceCollectives):
// NCCL for a GPU (comm/nccl/nccl_allreduce.hpp; bootstrapped over comm/: rank 0's unique id is
// broadcast to the others), or MakeSimulatedDeviceAllreduce, the same seam over comm/'s
// all-reduce in place, for the simulated CUDA device (core/backend/host_twin.hpp), whose memory
// the host can address: it tests the strategy's use of the seam without a GPU.
// Thread-safety: one training thread per instance; the runtime registered before any use.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "comm/allreduce.hpp"
#include "comm/communicator.hpp"
#include "core/backend/device_runtime.hpp"

namespace shardflow::comm {

struct DeviceAllreduceOptions {
  // A reduction not done this long after Finish began ends the job naming the rank (NCCL: the
  // communicator is aborted first).
  double watchdog_seconds = 300.0;
  // The simulated device's all-reduce (comm/allreduce.hpp; mode is always the average).
  AllreduceOptions host;
};

class DeviceAllreduce {
 public:
  virtual ~DeviceAllreduce() = default;
  virtual std::string name() const = 0;
  // Starts averaging `count` floats in place at the device pointer `data` over the ranks,
  // ordered after the device work already issued.
  virtual void Start(float* data, size_t count) = 0;
  // Returns when every started reduction is done (the device's later work is ordered after
  // them), with the seconds the calling thread blocked. Throws Error naming the rank when the
  // watchdog expires or the library reports an error.
  virtual double Finish() = 0;
};

// Collective over `comm` (which it may keep using; the caller passes one of its own).
using DeviceAllreduceFactory = std::function<std::unique_ptr<DeviceAllreduce>(
    Communicator& comm, const DeviceAllreduceOptions& options)>;

// The collectives a device runtime carries (DeviceRuntime::collectives): its all-reduce.
class DeviceAllreduceMaker final : public DeviceCollectives {
 public:
  explicit DeviceAllreduceMaker(DeviceAllreduceFactory make) : make_(std::move(make)) {}
  const DeviceAllreduceFactory& factory() const { return make_; }

 private:
  DeviceAllreduceFactory make_;
};
// `make` as a runtime's collectives.
std::shared_ptr<const DeviceCollectives> MakeDeviceCollectives(DeviceAllreduceFactory make);
// The all-reduce of `device`'s registered runtime; null when it has none (or no runtime).
// Inline: comm/ alone (the SimGrid build, sim/smpi) links no core registry.
inline const DeviceAllreduceFactory* DeviceAllreduceFor(Device device) {
  const DeviceRuntime* runtime = FindDeviceRuntime(device);
  if (runtime == nullptr) return nullptr;
  const auto* maker = dynamic_cast<const DeviceAllreduceMaker*>(runtime->collectives.get());
  return maker != nullptr && maker->factory() ? &maker->factory() : nullptr;
}

// comm/'s all-reduce in place on host-addressable "device" memory, run at Start (blocking).
std::unique_ptr<DeviceAllreduce> MakeSimulatedDeviceAllreduce(
    Communicator& comm, const DeviceAllreduceOptions& options);

}  // namespace shardflow::comm
