// HostStateScope: a model's state (parameters, layer buffers such as batch-norm statistics, and
// the optimizer's slots) in host memory for the scope's life, so host code that reads or writes
// it by host pointer (checkpoints, io/checkpoint/) works unchanged for a model on a device.
// Checkpoints stay device-independent this way: a device-trained checkpoint loads into a CPU
// model and back.
//
// For each state tensor not on the CPU, the scope swaps in a host copy; at the end it swaps the
// device tensor back. CopyBack() first writes the host copies into the device tensors (after a
// load); without it the device state is as before (after a save). A CPU model costs nothing.
// Thread-safety: the model must not run while the scope is alive.
#pragma once

#include <utility>
#include <vector>

#include "core/backend/device_runtime.hpp"
#include "core/model.hpp"
#include "core/optim/optimizer.hpp"

namespace shardflow {

class HostStateScope {
 public:
  enum class What { kAll, kBuffersOnly };  // kBuffersOnly: the layer buffers alone
  HostStateScope(Sequential<float>& model, Optimizer* optimizer, What what = What::kAll) {
    try {
      if (what == What::kAll) Swap(&model.arena().params_tensor());
      for (const NamedTensor& b : model.Buffers()) Swap(b.tensor);
      if (optimizer != nullptr) {
        for (const NamedTensor& s : optimizer->Slots()) Swap(s.tensor);
      }
    } catch (...) {
      Restore();  // a copy failed part way: the model gets its device tensors back
      throw;
    }
  }
  ~HostStateScope() { Restore(); }
  HostStateScope(const HostStateScope&) = delete;
  HostStateScope& operator=(const HostStateScope&) = delete;

  // Writes the host copies into the device tensors they stand for. On failure (a CUDA error)
  // the device state may be part old, part new; the error says so by itself.
  void CopyBack() {
    for (auto& [slot, device] : swapped_) {
      if (slot->byte_size() == 0) continue;
      DeviceMemoryFor(device.device())
          .CopyToDevice(device.raw_data(), slot->raw_data(), slot->byte_size());
    }
  }

 private:
  void Restore() noexcept {
    for (auto& [slot, device] : swapped_) *slot = std::move(device);
    swapped_.clear();
  }
  void Swap(Tensor* t) {
    if (t == nullptr || DeviceSupports(t->device(), DeviceFeature::kHostMemory)) return;
    Tensor host = t->To(Device::kCpu);
    swapped_.emplace_back(t, std::move(*t));
    *t = std::move(host);
  }
  std::vector<std::pair<Tensor*, Tensor>> swapped_;  // the slot and the device tensor it held
};

}  // namespace shardflow
